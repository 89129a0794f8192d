#!/usr/bin/env bash
# Make sure a working dockerd is running (idempotent): install Debian's docker.io
# when dockerd is missing, start dockerd in the background (no systemd here) with
# the runc-nocap wrapper as default runtime, and wait for the socket.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
state=$JH_CACHE/docker
mkdir -p "$state"

need_pkgs=()
command -v dockerd >/dev/null || need_pkgs+=(docker.io)
command -v jq >/dev/null || need_pkgs+=(jq)
command -v debootstrap >/dev/null || need_pkgs+=(debootstrap)
if ((${#need_pkgs[@]})); then
  log "installing ${need_pkgs[*]}"
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need_pkgs[@]}" >&2
fi

if docker info >/dev/null 2>&1; then
  rt=$(docker info -f '{{.DefaultRuntime}}' 2>/dev/null || true)
  [[ $rt == runc-nocap ]] || log "warning: dockerd already running with default runtime '$rt' (privileged containers may fail on this kernel)"
  exit 0
fi

install -m 0755 "$here/runc-nocap" "$state/runc-nocap"
real_runc=$(command -v runc || echo /usr/sbin/runc)
driver=overlay2
fs=$(stat -f -c %T /var/lib 2>/dev/null || echo unknown)
case "$fs" in
  ext2/ext3|xfs|btrfs) ;;
  overlayfs|tmpfs) command -v fuse-overlayfs >/dev/null && driver=fuse-overlayfs || driver=vfs ;;
esac
cat > "$state/daemon.json.tmp" <<JSON
{
  "storage-driver": "$driver",
  "runtimes": {"runc-nocap": {"path": "$state/runc-nocap"}},
  "default-runtime": "runc-nocap",
  "log-driver": "json-file",
  "log-opts": {"max-size": "10m", "max-file": "2"}
}
JSON
mv "$state/daemon.json.tmp" "$state/daemon.json"
log "starting dockerd (storage driver $driver, log $state/dockerd.log)"
JH_REAL_RUNC=$real_runc nohup setsid dockerd --config-file "$state/daemon.json" >>"$state/dockerd.log" 2>&1 </dev/null &
echo $! > "$state/dockerd.pid"
for _ in $(seq 1 60); do
  docker info >/dev/null 2>&1 && { log "dockerd is up"; exit 0; }
  kill -0 "$(cat "$state/dockerd.pid")" 2>/dev/null || break
  sleep 1
done
tail -n 30 "$state/dockerd.log" >&2
die "dockerd did not come up within 60 s (log: $state/dockerd.log)"
