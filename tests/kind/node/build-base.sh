#!/usr/bin/env bash
# Build the kind base image (systemd + containerd + runc + iptables + CNI
# plugins on Debian bookworm) without a registry. Usage: build-base.sh IMAGE:TAG
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
image=${1:?usage: build-base.sh IMAGE:TAG}
pkgs=systemd,dbus-bin,containerd,runc,iptables,nftables,iproute2,ethtool,socat,conntrack
pkgs+=,util-linux,mount,kmod,libseccomp2,pigz,bash,ca-certificates,curl,jq,procps
pkgs+=,containernetworking-plugins,e2fsprogs,iputils-ping,less
ROOTFS_HOOK=$here/base-hook.sh ROOTFS_INPUTS="$here/files $here/build-base.sh" \
  exec "$here/../../images/rootfs-image.sh" "$image" "$pkgs" \
  --change 'ENV container=docker' \
  --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]'
