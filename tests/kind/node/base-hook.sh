#!/usr/bin/env bash
# ROOTFS_HOOK for the kind base image: install our node files into the rootfs
# and set up systemd the way a container init wants it. Usage: base-hook.sh ROOTFS
set -euo pipefail
root=${1:?usage: base-hook.sh ROOTFS}
files=$(cd "$(dirname "$0")" && pwd)/files
cp -a "$files/." "$root/"
mkdir -p "$root/kind/bin"
chmod 0755 "$root/usr/local/bin/entrypoint" "$root/kind" "$root/kind/bin"
# units that make no sense in a container
find "$root/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
rm -f "$root"/lib/systemd/system/multi-user.target.wants/* \
      "$root"/etc/systemd/system/*.wants/* \
      "$root"/lib/systemd/system/local-fs.target.wants/* \
      "$root"/lib/systemd/system/sockets.target.wants/*udev* \
      "$root"/lib/systemd/system/sockets.target.wants/*initctl* \
      "$root"/lib/systemd/system/basic.target.wants/*
echo "ReadKMsg=no" >> "$root/etc/systemd/journald.conf"
ln -sf /lib/systemd/systemd "$root/sbin/init"
chroot "$root" systemctl enable containerd.service kubelet.service undo-mount-hacks.service
chroot "$root" systemctl mask systemd-binfmt.service
# default OCI spec for CRI containers without containerd's fixed rlimits
chroot "$root" ctr oci spec | jq 'del(.process.rlimits)' > "$root/etc/containerd/cri-base.json"
mkdir -p "$root/etc/kubernetes/manifests" "$root/etc/cni/net.d" "$root/opt/cni" 
ln -sfn /usr/lib/cni "$root/opt/cni/bin"
