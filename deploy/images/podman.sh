# Sourced by the image scripts: podman installed from Debian when missing, and run the way that works on
# hosts without a systemd user session or full cgroup delegation (runc; crun fails there on rlimits).
# shellcheck shell=bash

apt_install() {
  ((EUID == 0)) || die "$* must be installed (apt-get install $*), and installing needs root"
  log "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2 ||
    die "apt-get install $* failed"
}

command -v podman >/dev/null || apt_install podman runc uidmap
command -v runc >/dev/null || apt_install runc

podman() { command podman --runtime runc "$@"; }
