#!/usr/bin/env bash
# A throwaway Kubernetes control plane on loopback for the chart's cluster test: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and kwok, which plays the kubelet of fake nodes (their pods turn
# Running and Ready without any container being run). No kubelet, container runtime, kube-proxy or CNI:
# nothing touches the host's network, iptables or cgroups.
#
#   deploy/cluster/control-plane.sh up STATE_DIR     starts it, writes STATE_DIR/kubeconfig, waits until ready
#                                                    (kubectl: <install-control-plane.sh's directory>/bin/kubectl)
#   deploy/cluster/control-plane.sh down STATE_DIR   stops what `up` started (by the pids it recorded), removes STATE_DIR
#
# The binaries come from deploy/cluster/install-control-plane.sh (built once, cached).
#
# Environment (defaults):
#   CLUSTER_PORT_BASE   26000: etcd +379/+380, kube-apiserver +443, controller-manager +257, scheduler +259
set -euo pipefail
cd "$(dirname "$0")/../.."

readonly PORT_BASE="${CLUSTER_PORT_BASE:-26000}"
readonly ETCD_PORT=$((PORT_BASE + 379)) ETCD_PEER_PORT=$((PORT_BASE + 380))
readonly APISERVER_PORT=$((PORT_BASE + 443))
readonly CONTROLLER_MANAGER_PORT=$((PORT_BASE + 257)) SCHEDULER_PORT=$((PORT_BASE + 259))
readonly COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)

log() { printf 'control-plane: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

usage() { die "usage: $0 up|down STATE_DIR"; }
(($# == 2)) || usage
readonly COMMAND=$1
STATE="$(realpath -m "$2")"
readonly STATE

pid_alive() { [[ -f $STATE/run/$1.pid ]] && kill -0 "$(cat "$STATE/run/$1.pid")" 2>/dev/null; }

stop_component() {
  local name=$1 pid
  [[ -f $STATE/run/$name.pid ]] || return 0
  pid="$(cat "$STATE/run/$name.pid")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$STATE/run/$name.pid"
}

down() {
  local index
  # Reverse order of start: nothing is left talking to an API server that went away.
  for ((index = ${#COMPONENTS[@]} - 1; index >= 0; index--)); do stop_component "${COMPONENTS[index]}"; done
  rm -rf "$STATE"
}

# Starts one component in its own session, its output in STATE/logs, its pid in STATE/run.
start_component() {
  local name=$1
  shift
  setsid "$@" >"$STATE/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$STATE/run/$name.pid"
}

wait_for() {
  local what=$1 seconds=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    local component
    for component in "${COMPONENTS[@]}"; do
      if [[ -f $STATE/run/$component.pid ]] && ! pid_alive "$component"; then
        tail -30 "$STATE/logs/$component.log" >&2
        die "$component exited while waiting for $what"
      fi
    done
    ((SECONDS < deadline)) || die "$what not ready after $seconds s"
    sleep 0.5
  done
}

up() {
  local bin_dir tools
  tools="$(bash deploy/cluster/install-control-plane.sh)"
  bin_dir="$tools/bin"
  kubectl() { "$bin_dir/kubectl" "$@"; }
  command -v etcd >/dev/null || die "etcd is not installed"
  command -v openssl >/dev/null || die "openssl is not installed"
  for port in "$ETCD_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT" "$CONTROLLER_MANAGER_PORT" "$SCHEDULER_PORT"; do
    if (: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then die "port $port is in use: another cluster test running?"; fi
  done
  [[ ! -e $STATE/run ]] || die "$STATE is in use; run down first"
  mkdir -p "$STATE/run" "$STATE/logs" "$STATE/pki" "$STATE/etcd"

  # Credentials: a service-account signing key and one static token of a cluster administrator, used by
  # the test and every component. The API server's serving certificate also names the in-cluster Service
  # (10.96.0.1, kubernetes.default.svc) and is the cluster's root CA, so that pods on a real node
  # (deploy/node/node.sh) can verify it through the kube-root-ca.crt ConfigMap of their namespace.
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=kube-apiserver \
    -keyout "$STATE/pki/apiserver.key" -out "$STATE/pki/apiserver.crt" \
    -addext "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" \
    2>/dev/null
  openssl genrsa -out "$STATE/pki/service-account.key" 2048 2>/dev/null
  openssl rsa -in "$STATE/pki/service-account.key" -pubout -out "$STATE/pki/service-account.pub" 2>/dev/null
  local token
  token="$(openssl rand -hex 24)"
  printf '%s,cluster-admin,cluster-admin,"system:masters"\n' "$token" >"$STATE/pki/tokens.csv"
  cat >"$STATE/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: loopback
    cluster:
      server: https://127.0.0.1:$APISERVER_PORT
      insecure-skip-tls-verify: true
users:
  - name: cluster-admin
    user:
      token: $token
contexts:
  - name: loopback
    context: { cluster: loopback, user: cluster-admin }
current-context: loopback
EOF
  chmod 600 "$STATE/kubeconfig" "$STATE/pki/"*

  start_component etcd etcd --name cluster-test --data-dir "$STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "cluster-test=http://127.0.0.1:$ETCD_PEER_PORT" \
    --quota-backend-bytes 536870912
  wait_for etcd 30 bash -c ": </dev/tcp/127.0.0.1/$ETCD_PORT"

  start_component kube-apiserver "$bin_dir/kube-apiserver" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
    --tls-cert-file "$STATE/pki/apiserver.crt" --tls-private-key-file "$STATE/pki/apiserver.key" \
    --kubelet-preferred-address-types Hostname,InternalIP \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --token-auth-file "$STATE/pki/tokens.csv" --authorization-mode RBAC \
    --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$STATE/pki/service-account.pub" \
    --service-account-signing-key-file "$STATE/pki/service-account.key" \
    --service-cluster-ip-range 10.96.0.0/16 \
    --enable-priority-and-fairness=false --profiling=false \
    --endpoint-reconciler-type none
  wait_for kube-apiserver 120 kubectl --kubeconfig "$STATE/kubeconfig" get --raw /readyz

  start_component kube-controller-manager "$bin_dir/kube-controller-manager" \
    --kubeconfig "$STATE/kubeconfig" --authentication-kubeconfig "$STATE/kubeconfig" \
    --authorization-kubeconfig "$STATE/kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$CONTROLLER_MANAGER_PORT" --cert-dir "$STATE/pki/controller-manager" \
    --leader-elect=false --use-service-account-credentials=false --profiling=false \
    --service-account-private-key-file "$STATE/pki/service-account.key" --root-ca-file "$STATE/pki/apiserver.crt" \
    --controllers '*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-route'
  start_component kube-scheduler "$bin_dir/kube-scheduler" \
    --kubeconfig "$STATE/kubeconfig" --authentication-kubeconfig "$STATE/kubeconfig" \
    --authorization-kubeconfig "$STATE/kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" --cert-dir "$STATE/pki/scheduler" \
    --leader-elect=false --profiling=false
  # kwok manages only nodes it is told to (the annotation the test's nodes carry), with the stages that
  # make nodes Ready and renew their leases, make pods Ready, complete Jobs' pods, delete pods, and
  # provision and release volumes of the storage class kwok-volume.
  local stages=()
  local stage
  for stage in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
    pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete \
    volume/fast/pvc-provision volume/fast/pv-bind volume/fast/pvc-delete volume/fast/pv-delete; do
    [[ -f $tools/kwok-stages/$stage.yaml ]] || die "kwok stage $stage is missing"
    stages+=(--config "$tools/kwok-stages/$stage.yaml")
  done
  start_component kwok "$bin_dir/kwok" --kubeconfig "$STATE/kubeconfig" \
    "${stages[@]}" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
    --node-lease-duration-seconds 40 --server-address '' --cidr 10.244.0.0/16 --node-ip 127.0.0.1
  wait_for kube-controller-manager 60 bash -c ": </dev/tcp/127.0.0.1/$CONTROLLER_MANAGER_PORT"
  wait_for kube-scheduler 60 bash -c ": </dev/tcp/127.0.0.1/$SCHEDULER_PORT"
  # The controller manager is working once it made the default namespace's service account.
  wait_for "the default service account" 60 kubectl --kubeconfig "$STATE/kubeconfig" get serviceaccount default
  log "ready: kubeconfig $STATE/kubeconfig"
}

case $COMMAND in
  up)
    trap 'status=$?; ((status == 0)) || down; exit $status' EXIT
    up
    ;;
  down) down ;;
  *) usage ;;
esac
