#!/usr/bin/env bash
# ROOTFS_HOOK for the kube-proxy base: route iptables* through iptables-wrapper.
set -euo pipefail
root=${1:?usage: kube-proxy-hook.sh ROOTFS}
install -m 0755 "$(dirname "$0")/iptables-wrapper" "$root/usr/sbin/iptables-wrapper"
for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
  ln -sf iptables-wrapper "$root/usr/sbin/$t"
done
