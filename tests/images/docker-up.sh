#!/usr/bin/env bash
# Make sure a working dockerd is running (idempotent). Installs Debian's
# docker.io (plus jq, debootstrap) when missing, registers the runc-nocap
# wrapper as dockerd's default runtime in /etc/docker/daemon.json (merged with
# what is there), starts dockerd in the background (no systemd here) and waits
# for it to answer.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
state=$JH_CACHE/docker
wrapper=/usr/local/sbin/runc-nocap
conf=/etc/docker/daemon.json
mkdir -p "$state"

# Every kind node runs systemd, which takes inotify instances: the kernel default of 128 lets about
# six nodes start, so a second cluster (make test-kind-versions beside the main one) fails with
# "container is not running" (kind's known issue). Raised here, idempotent (root on our machines).
if (( $(cat /proc/sys/fs/inotify/max_user_instances 2>/dev/null || echo 1024) < 1024 )); then
  sysctl -q -w fs.inotify.max_user_instances=1024 fs.inotify.max_user_watches=1048576 || \
    log "warning: could not raise fs.inotify limits; more than one kind cluster may fail to start"
fi

if docker info >/dev/null 2>&1; then
  rt=$(docker info -f '{{.DefaultRuntime}}' 2>/dev/null || true)
  [[ $rt == runc-nocap ]] || log "warning: dockerd is running with default runtime '$rt', not runc-nocap: privileged containers fail on kernels without CAP_SYS_RESOURCE; restart dockerd to pick up $conf"
  exit 0
fi

install_pkgs() {
  log "installing $*"
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >&2
}
command -v jq >/dev/null || install_pkgs jq
# the wrapper and the daemon config go in first, so a dockerd that the package
# scripts may start already uses them
install -D -m 0755 "$here/runc-nocap" "$wrapper"
driver=overlay2
data=/var/lib/docker; [[ -d $data ]] || data=/var/lib
case "$(stat -f -c %T "$data" 2>/dev/null || echo unknown)" in
  overlayfs|tmpfs|fuseblk) command -v fuse-overlayfs >/dev/null && driver=fuse-overlayfs || driver=vfs ;;
esac
mkdir -p "$(dirname "$conf")"
[[ -s $conf ]] || echo '{}' > "$conf"
jq --arg w "$wrapper" --arg d "$driver" '
  .runtimes["runc-nocap"] = {"path": $w}
  | ."default-runtime" = "runc-nocap"
  | if has("storage-driver") then . else ."storage-driver" = $d end
  | if has("log-opts") then . else ."log-driver" = "json-file" | ."log-opts" = {"max-size": "10m", "max-file": "2"} end
' "$conf" > "$conf.tmp"
mv "$conf.tmp" "$conf"

need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
((${#need[@]} == 0)) || install_pkgs "${need[@]}"

if ! docker info >/dev/null 2>&1; then
  log "starting dockerd (config $conf, log $state/dockerd.log)"
  nohup setsid dockerd >>"$state/dockerd.log" 2>&1 </dev/null &
  echo $! > "$state/dockerd.pid"
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    kill -0 "$(cat "$state/dockerd.pid")" 2>/dev/null || break
    sleep 1
  done
  docker info >/dev/null 2>&1 || {
    tail -n 30 "$state/dockerd.log" >&2
    die "dockerd did not come up within 60 s (log: $state/dockerd.log)"
  }
fi
log "dockerd is up (default runtime: $(docker info -f '{{.DefaultRuntime}}'))"
