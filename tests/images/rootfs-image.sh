#!/usr/bin/env bash
# Build a minimal Debian bookworm image without any container registry:
# debootstrap a rootfs with the given packages and `docker import` it.
#
# Usage: rootfs-image.sh IMAGE:TAG PKG1,PKG2,... [docker-import --change args...]
#   e.g. rootfs-image.sh jobhandlers/python-base:1 python3,ca-certificates \
#          --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]'
# Env:   ROOTFS_HOOK=script   run as `script ROOTFS_DIR` before import (its content
#                             is part of the cache key)
#        ROOTFS_INPUTS="path..."  extra files/dirs the hook reads (hashed into the key)
#        ROOTFS_SUITE=bookworm, ROOTFS_VARIANT=minbase, JH_CACHE=/var/cache/jobhandlers
# The image carries LABEL jobhandlers.inputs=<hash of all inputs>; when an image
# with that tag and label exists, nothing is rebuilt. Downloaded .debs are
# cached in $JH_CACHE/debs. The Debian mirror is read from the host's apt config.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
[[ $# -ge 2 ]] || die "usage: $0 IMAGE:TAG PKG1,PKG2,... [--change 'INSTR' ...]"
image=$1 pkgs=$2; shift 2
[[ $image == *:* ]] || die "image '$image' needs an explicit :tag"
[[ $pkgs =~ ^[a-z0-9.+,-]*$ ]] || die "package list '$pkgs' must be comma separated Debian package names"
suite=${ROOTFS_SUITE:-bookworm} variant=${ROOTFS_VARIANT:-minbase} hook=${ROOTFS_HOOK:-}
[[ -z $hook || -x $hook ]] || die "ROOTFS_HOOK=$hook is not an executable file"

# shellcheck disable=SC2086
key=$(inputs_hash "$suite" "$variant" "$pkgs" "$*" "$here/rootfs-image.sh" ${hook:+"$hook"} ${ROOTFS_INPUTS:-})
if [[ $(image_label "$image" jobhandlers.inputs) == "$key" ]]; then
  log "$image is up to date (inputs $key)"; exit 0
fi

"$here/docker-up.sh"
mkdir -p "$JH_CACHE/debs" "$JH_CACHE/locks" "$JH_CACHE/rootfs"
exec 9>"$JH_CACHE/locks/rootfs-$key.lock"
flock 9
if [[ $(image_label "$image" jobhandlers.inputs) == "$key" ]]; then
  log "$image was built meanwhile"; exit 0
fi

mirror=$(debian_mirror)
root=$(mktemp -d "$JH_CACHE/rootfs/$key.XXXX")
trap 'rm -rf "$root"' EXIT
chmod 0755 "$root"  # mktemp made it 0700; it becomes the image's /
t0=$SECONDS
log "debootstrap $suite ($variant) + [$pkgs] for $image"
if ! debootstrap --variant="$variant" ${pkgs:+--include="$pkgs"} \
     --cache-dir="$JH_CACHE/debs" "$suite" "$root" "$mirror" > "$root.log" 2>&1; then
  tail -n 40 "$root.log" >&2
  [[ -f $root/debootstrap/debootstrap.log ]] && tail -n 40 "$root/debootstrap/debootstrap.log" >&2
  die "debootstrap failed for $image (full log: $root.log)"
fi
rm -f "$root.log"
# keep the image small and free of host specifics
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/*.log
rm -f "$root/etc/apt/sources.list" && : > "$root/etc/resolv.conf"
printf '%s\n' "${image%%:*}" > "$root/etc/hostname"
if [[ -n $hook ]]; then log "running hook $hook"; "$hook" "$root"; fi
log "importing $image"
old_id=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)
tar --numeric-owner -C "$root" -c . | docker import \
  --change "LABEL jobhandlers.inputs=$key" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  "$@" - "$image" >/dev/null
drop_if_dangling "$old_id"
log "$image built in $((SECONDS - t0)) s (inputs $key)"
