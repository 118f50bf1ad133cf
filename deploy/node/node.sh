#!/usr/bin/env bash
# A real Kubernetes node on this host, joined to a loopback control plane (deploy/cluster/control-plane.sh),
# for the real-pods cluster test: containerd + runc with a CNI bridge, the kubelet, kube-proxy (iptables
# mode) and CoreDNS, all built or installed by deploy/node/install-node.sh. Pods run for real: their images
# are imported into containerd from podman's storage (no registry), their probes are the kubelet's, and
# Services work through kube-proxy's rules.
#
#   deploy/node/node.sh up [IMAGE...]   sweeps what an earlier run may have left, starts the node, imports
#                                       the images (podman names), prints the kubeconfig's path
#   deploy/node/node.sh down            stops everything by the pids it recorded and undoes every change
#
# The node changes the host while it runs, and `down` undoes each change: a bridge (gw-cni0) and the
# pods' veths and network namespaces, iptables rules (kube-proxy's KUBE-* chains and GWNODE-APISERVER, in
# the nat, filter and mangle tables, and the nft tables iptables made for them), sysctls (net.ipv4.ip_forward,
# route_localnet on the bridge only, and vm.overcommit_memory, kernel.panic, kernel.panic_on_oops, which
# the kubelet sets), mounts (overlay root filesystems, shm, network namespaces, volumes), cgroups
# (kubepods in every hierarchy) and host directories (/run/containerd, /var/lib/cni, /var/log/pods,
# /var/log/containers, /var/lib/kubelet). `up` runs `down` first, so a run killed midway is swept by the
# next; it runs `down` itself when it fails. Every server listens on 127.0.0.1 or inside the pods' network.
#
# Environment (defaults):
#   GW_NODE_STATE      /var/lib/gateway-node (fixed, so that any later run finds what an earlier one left)
#   NODE_PORT_BASE     27000: the control plane's ports (CLUSTER_PORT_BASE), kubelet +250, kube-proxy +256
set -euo pipefail
cd "$(dirname "$0")/../.."

readonly STATE="${GW_NODE_STATE:-/var/lib/gateway-node}"
readonly PORT_BASE="${NODE_PORT_BASE:-27000}"
readonly APISERVER_PORT=$((PORT_BASE + 443))
readonly KUBELET_PORT=$((PORT_BASE + 250)) KUBELET_HEALTHZ_PORT=$((PORT_BASE + 248))
readonly PROXY_HEALTHZ_PORT=$((PORT_BASE + 256)) PROXY_METRICS_PORT=$((PORT_BASE + 249))
readonly BRIDGE=gw-cni0
readonly POD_CIDR=10.244.0.0/24 BRIDGE_IP=10.244.0.1
readonly CLUSTER_DNS=10.96.0.10 APISERVER_SERVICE_IP=10.96.0.1
readonly NODE_NAME="$(hostname)"
readonly SOCKET="$STATE/containerd/containerd.sock"
readonly SYSCTLS=(net.ipv4.ip_forward vm.overcommit_memory kernel.panic kernel.panic_on_oops)
readonly HOST_DIRS=(/run/containerd /var/lib/cni /var/log/pods /var/log/containers /var/lib/kubelet)

log() { printf 'node: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

((EUID == 0)) || die "a node needs root"

pid_of() { [[ -f $STATE/run/$1.pid ]] && cat "$STATE/run/$1.pid"; }

stop_pid() {
  local pid=$1 seconds=${2:-20}
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq $((seconds * 10))); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

stop_component() {
  local name=$1 pid
  pid="$(pid_of "$name" || true)"
  [[ -n $pid ]] && stop_pid "$pid" "${2:-20}"
  rm -f "$STATE/run/$name.pid"
}

start_component() {
  local name=$1
  shift
  setsid "$@" >"$STATE/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$STATE/run/$name.pid"
}

wait_for() {
  local what=$1 seconds=$2 name=$3
  shift 3
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if [[ -n $name ]] && ! kill -0 "$(pid_of "$name")" 2>/dev/null; then
      tail -30 "$STATE/logs/$name.log" >&2
      die "$name exited while waiting for $what"
    fi
    ((SECONDS < deadline)) || die "$what not ready after $seconds s"
    sleep 0.5
  done
}

tools_dir() { bash deploy/node/install-node.sh; }
kubectl_bin() { echo "$(bash deploy/cluster/install-control-plane.sh)/bin/kubectl"; }
kube() { "$(kubectl_bin)" --kubeconfig "$STATE/cp/kubeconfig" "$@"; }
ctr_() { ctr --address "$SOCKET" -n k8s.io "$@"; }

# ---- down: every step tolerates what is already gone ----

# Pids of processes in the pods' cgroups (kubepods), should a container outlive its shim.
processes_in_pods() {
  local dir
  for dir in /proc/[0-9]*; do
    grep -q ':/kubepods' "$dir/cgroup" 2>/dev/null && echo "${dir#/proc/}"
  done
  return 0
}

# Pids of processes whose command line names this node's state directory (containerd's shims, by the
# socket address they were given), so that they are stopped by id.
processes_of_state() {
  local dir
  for dir in /proc/[0-9]*; do
    tr '\0' ' ' 2>/dev/null <"$dir/cmdline" | grep -qF -- "$STATE/" && echo "${dir#/proc/}"
  done
  return 0
}

delete_workloads() {
  [[ -f $STATE/cp/kubeconfig ]] && kube get --raw /readyz >/dev/null 2>&1 || return 0
  log "deleting every workload, then every pod (the kubelet tears their sandboxes down)"
  local namespaces
  namespaces="$(kube get namespaces -o jsonpath='{.items[*].metadata.name}' 2>/dev/null || true)"
  for namespace in $namespaces; do
    kube -n "$namespace" delete deployments,statefulsets,daemonsets,replicasets,jobs,cronjobs --all \
      --wait=false >/dev/null 2>&1 || true
  done
  kube delete pods --all --all-namespaces --grace-period=2 --wait=false >/dev/null 2>&1 || true
  # The kubelet kills the containers and stops each sandbox (CNI DEL); wait until no task runs. Their
  # stopped containers are removed with containerd's state (the kubelet's garbage collection would take
  # a minute more).
  local deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)); do
    [[ -S $SOCKET ]] || break
    [[ -z "$(ctr_ tasks ls -q 2>/dev/null)" ]] && break
    sleep 1
  done
}

purge_iptables() {
  local tool table chain
  for tool in iptables ip6tables; do
    command -v "$tool" >/dev/null || continue
    for table in nat filter mangle; do
      "$tool" -t "$table" -S >/dev/null 2>&1 || continue
      # Jumps into our chains from the built-in ones first, then our chains themselves.
      { "$tool" -t "$table" -S 2>/dev/null | grep -E '^-A [A-Z]+ .*-j (KUBE-|GWNODE-)' | grep -Ev '^-A (KUBE-|GWNODE-)' ||
        true; } | while read -r rule; do
        # shellcheck disable=SC2086
        "$tool" -t "$table" -D ${rule#-A } 2>/dev/null || true
      done
      for chain in $("$tool" -t "$table" -S 2>/dev/null | sed -n 's/^-N \(\(KUBE-\|GWNODE-\)[^ ]*\)$/\1/p'); do
        "$tool" -t "$table" -F "$chain" 2>/dev/null || true
      done
      for chain in $("$tool" -t "$table" -S 2>/dev/null | sed -n 's/^-N \(\(KUBE-\|GWNODE-\)[^ ]*\)$/\1/p'); do
        "$tool" -t "$table" -X "$chain" 2>/dev/null || true
      done
    done
  done
  # iptables-nft made these nft tables; those the host did not have before are deleted once empty.
  if command -v nft >/dev/null && [[ -f $STATE/host/nft-tables ]]; then
    local family name
    { nft list tables 2>/dev/null || true; } | while read -r _ family name; do
      grep -qx "table $family $name" "$STATE/host/nft-tables" && continue
      nft delete table "$family" "$name" 2>/dev/null || log "warning: nft table $family $name not deleted"
    done
  fi
}

unmount_all() {
  local prefixes=("$STATE/" /run/containerd/ /var/lib/kubelet/ /run/netns/) mountpoint prefix
  # Deepest first.
  awk '{print $5}' /proc/self/mountinfo | sort -r | while read -r mountpoint; do
    for prefix in "${prefixes[@]}"; do
      if [[ $mountpoint == "$prefix"* ]]; then umount -l "$mountpoint" 2>/dev/null || true; fi
    done
  done
}

remove_cgroups() {
  local hierarchy
  for hierarchy in /sys/fs/cgroup/*/; do
    [[ -d ${hierarchy}kubepods ]] || continue
    find "${hierarchy}kubepods" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
}

restore_host() {
  [[ -f $STATE/host/sysctls ]] || return 0
  local name value dir
  while read -r name value; do sysctl -qw "$name=$value" >/dev/null 2>&1 || true; done <"$STATE/host/sysctls"
  for dir in "${HOST_DIRS[@]}"; do
    grep -qx "$dir" "$STATE/host/dirs" 2>/dev/null || rm -rf "$dir"
  done
}

down() {
  [[ -d $STATE ]] || return 0
  log "stopping the node and undoing its changes to the host"
  local started=$SECONDS
  delete_workloads
  log "workloads deleted after $((SECONDS - started)) s"
  stop_component kube-proxy
  stop_component kubelet
  # Whatever the kubelet left running: killed through containerd, then containerd itself and its shims.
  if [[ -S $SOCKET ]]; then
    local task
    for task in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$task" >/dev/null 2>&1 || true; done
    sleep 1
    for task in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete -f "$task" >/dev/null 2>&1 || true; done
  fi
  stop_component containerd
  log "kube-proxy, kubelet and containerd stopped after $((SECONDS - started)) s"
  local pid
  for pid in $(processes_of_state); do stop_pid "$pid" 5; done
  for pid in $(processes_in_pods); do kill -KILL "$pid" 2>/dev/null || true; done
  if [[ -f $STATE/cp/kubeconfig || -d $STATE/cp/run ]]; then
    CLUSTER_PORT_BASE=$PORT_BASE bash deploy/cluster/control-plane.sh down "$STATE/cp" || true
  fi
  purge_iptables
  unmount_all
  ip link delete "$BRIDGE" 2>/dev/null || true
  # Network namespaces of pods the kubelet did not tear down took their veths with them when unmounted.
  remove_cgroups
  restore_host
  rm -rf "$STATE"
  log "host restored after $((SECONDS - started)) s"
}

# ---- up ----

record_host() {
  mkdir -p "$STATE/host"
  local name dir
  for name in "${SYSCTLS[@]}"; do echo "$name $(sysctl -n "$name")"; done >"$STATE/host/sysctls"
  for dir in "${HOST_DIRS[@]}"; do [[ -e $dir ]] && echo "$dir"; done >"$STATE/host/dirs"
  nft list tables 2>/dev/null >"$STATE/host/nft-tables" || true
}

write_configs() {
  mkdir -p "$STATE/containerd" "$STATE/cni/net.d" "$STATE/kubelet" "$STATE/kube-proxy"
  cat >"$STATE/containerd/config.toml" <<EOF
version = 2
root = "$STATE/containerd/root"
state = "$STATE/containerd/state"
oom_score = 0
[grpc]
  address = "$SOCKET"
[ttrpc]
  address = "$SOCKET.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/gateway-node/pause:3.10"
  # Without CAP_SYS_RESOURCE (containers, VMs) runc cannot lower a process's oom_score_adj.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "$(command -v runc)"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
    max_conf_num = 1
EOF
  # No masquerade: pods reach the host and each other, nothing beyond (no rule of the CNI's own).
  cat >"$STATE/cni/net.d/10-gateway-node.conflist" <<EOF
{ "cniVersion": "0.4.0", "name": "gateway-node",
  "plugins": [ { "type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": { "type": "host-local", "dataDir": "$STATE/cni/ipam",
                "ranges": [[{ "subnet": "$POD_CIDR", "gateway": "$BRIDGE_IP" }]],
                "routes": [{ "dst": "0.0.0.0/0" }] } } ] }
EOF
  cat >"$STATE/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
# Loopback only, for this test's node: anyone on the host may use its API.
authentication: { anonymous: { enabled: true }, webhook: { enabled: false } }
authorization: { mode: AlwaysAllow }
cgroupDriver: cgroupfs
cgroupsPerQOS: true
containerRuntimeEndpoint: unix://$SOCKET
failSwapOn: false
# Else the kubelet adds KUBE-FIREWALL and canary chains of its own.
makeIPTablesUtilChains: false
podCIDR: $POD_CIDR
resolvConf: /etc/resolv.conf
podLogsDir: $STATE/kubelet/pod-logs
serializeImagePulls: false
evictionHard: { memory.available: "100Mi", nodefs.available: "2%", imagefs.available: "2%" }
imageGCHighThresholdPercent: 98
imageGCLowThresholdPercent: 95
enableServer: true
clusterDNS: ["$CLUSTER_DNS"]
clusterDomain: cluster.local
EOF
  cat >"$STATE/kube-proxy/config.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: { kubeconfig: $STATE/cp/kubeconfig }
hostnameOverride: $NODE_NAME
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:$PROXY_HEALTHZ_PORT
metricsBindAddress: 127.0.0.1:$PROXY_METRICS_PORT
clusterCIDR: $POD_CIDR
# NodePorts only on the pod bridge, never on the host's own interfaces or loopback.
nodePortAddresses: ["$BRIDGE_IP/32"]
iptables: { localhostNodePorts: false, masqueradeAll: false }
# The host's conntrack sysctls are left alone.
conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s }
EOF
}

# One archive for every image: the layers they share (the Node base image of the six services) are written
# and imported once, not once per image.
import_images() {
  (($#)) || return 0
  podman --runtime runc save --multi-image-archive --format docker-archive "$@" | ctr_ images import - >/dev/null ||
    die "importing $* into containerd failed"
}

up() {
  local images=("$@") tools cp_bin started=$SECONDS
  tools="$(tools_dir)"
  cp_bin="$(bash deploy/cluster/install-control-plane.sh)/bin"
  mkdir -p "$STATE/run" "$STATE/logs"
  record_host
  write_configs
  # containerd's image store and snapshots on a tmpfs: the images unpack into memory, and `down` drops them
  # with one unmount instead of deleting their hundred thousand files from a busy disk (over a minute).
  mkdir -p "$STATE/containerd/root"
  mount -t tmpfs -o size=8g,mode=0700 gateway-node-containerd "$STATE/containerd/root"

  # The control plane starts while containerd takes the images (the longest step of `up`).
  CLUSTER_PORT_BASE=$PORT_BASE bash deploy/cluster/control-plane.sh up "$STATE/cp" >"$STATE/logs/control-plane-up.log" 2>&1 &
  local control_plane=$!
  start_component containerd containerd --config "$STATE/containerd/config.toml"
  wait_for containerd 30 containerd ctr_ version
  ctr_ images import "$tools/images/pause.tar" >/dev/null
  ctr_ images import "$tools/images/coredns.tar" >/dev/null
  import_images "${images[@]}"
  log "containerd and $((${#images[@]} + 2)) images ready after $((SECONDS - started)) s"
  if ! wait "$control_plane"; then
    tail -30 "$STATE/logs/control-plane-up.log" >&2
    die "the control plane did not start"
  fi
  log "control plane ready after $((SECONDS - started)) s"

  # Pods reach the API server (loopback only) at kubernetes.default.svc: the bridge is made before the
  # CNI would, with route_localnet on it alone, and a DNAT from the bridge to the loopback port.
  ip link add "$BRIDGE" type bridge
  ip link set "$BRIDGE" up
  sysctl -qw "net.ipv4.conf.$BRIDGE.route_localnet=1"
  iptables -t nat -N GWNODE-APISERVER
  iptables -t nat -A GWNODE-APISERVER -d "$APISERVER_SERVICE_IP/32" -p tcp --dport 443 \
    -j DNAT --to-destination "127.0.0.1:$APISERVER_PORT"
  iptables -t nat -I PREROUTING 1 -i "$BRIDGE" -j GWNODE-APISERVER

  start_component kubelet "$tools/bin/kubelet" --config "$STATE/kubelet/config.yaml" \
    --kubeconfig "$STATE/cp/kubeconfig" --root-dir "$STATE/kubelet/root" --cert-dir "$STATE/kubelet/pki" \
    --hostname-override "$NODE_NAME" --v 1
  wait_for "node $NODE_NAME Ready" 120 kubelet \
    bash -c "'$cp_bin/kubectl' --kubeconfig '$STATE/cp/kubeconfig' get node '$NODE_NAME' -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
  log "node $NODE_NAME Ready after $((SECONDS - started)) s"
  start_component kube-proxy "$tools/bin/kube-proxy" --config "$STATE/kube-proxy/config.yaml"
  wait_for kube-proxy 60 kube-proxy bash -c ": </dev/tcp/127.0.0.1/$PROXY_HEALTHZ_PORT"
  kube apply -f deploy/node/coredns.yaml >/dev/null
  kube -n kube-system rollout status deployment/coredns --timeout=120s >&2 || die "CoreDNS did not become ready"
  log "ready after $((SECONDS - started)) s: kubeconfig $STATE/cp/kubeconfig"
  echo "$STATE/cp/kubeconfig"
}

case ${1:-} in
  up)
    shift
    down
    trap 'status=$?; ((status == 0)) || down; exit $status' EXIT
    up "$@"
    ;;
  down) down ;;
  *) die "usage: $0 up [IMAGE...] | down" ;;
esac
