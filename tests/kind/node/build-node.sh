#!/usr/bin/env bash
# Assemble the offline kind node image: base image + Kubernetes binaries +
# every image kubeadm asks for, preloaded into containerd's k8s.io namespace.
# No registry is contacted. Usage: build-node.sh IMAGE:TAG [MINOR]
# MINOR (default $KIND_K8S, else 1.37) picks the Kubernetes wrapper module build/k8s/vMINOR.
# The image is labelled with a hash of its inputs and not rebuilt when unchanged.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kind_dir=$(cd "$here/.." && pwd)
source "$kind_dir/../images/lib.sh"
image=${1:?usage: build-node.sh IMAGE:TAG [MINOR]}
minor=${2:-${KIND_K8S:-1.37}}
base=${KIND_BASE_IMAGE:-jobhandlers/kind-base:bookworm}
proxy_base=${KIND_PROXY_BASE_IMAGE:-jobhandlers/kind-kube-proxy-base:bookworm}
k8s_bin=$JH_CACHE/k8s-bin-v$minor extra_bin=$JH_CACHE/extras-bin
containerd=${KIND_CONTAINERD:-2}
[[ $containerd == 1 || $containerd == 2 ]] || { echo "KIND_CONTAINERD must be 1 or 2, not $containerd" >&2; exit 2; }
timing() { log "phase $1: $2 s"; }
mkdir -p "$JH_CACHE/logs"

"$kind_dir/../images/docker-up.sh"
take_lock "node-build-${image//[^a-zA-Z0-9]/_}"
# the two debootstraps are mostly download and unpack: run them (one after the
# other) in the background while the Go builds use the CPU
t_all=$SECONDS
(
  t=$SECONDS; "$here/build-base.sh" "$base"; timing base $((SECONDS - t))
  t=$SECONDS
  ROOTFS_HOOK=$here/images/kube-proxy-hook.sh ROOTFS_INPUTS="$here/images/iptables-wrapper" \
    "$kind_dir/../images/rootfs-image.sh" "$proxy_base" iptables,conntrack,kmod,ipset
  timing kube-proxy-base $((SECONDS - t))
) &
rootfs_pid=$!
t=$SECONDS; "$kind_dir/build/k8s/build.sh" "$minor" "$k8s_bin"; timing kubernetes $((SECONDS - t))
t=$SECONDS; "$kind_dir/build/build-extras.sh" "$extra_bin"; timing extras $((SECONDS - t))
runtime_inputs="containerd=1"
if [[ $containerd == 2 ]]; then
  ctr_bin=$JH_CACHE/containerd-bin
  t=$SECONDS; "$kind_dir/build/build-containerd.sh" "$ctr_bin"; timing containerd $((SECONDS - t))
  runtime_inputs=$ctr_bin/.inputs
fi
wait "$rootfs_pid" || die "building the base images failed (see above)"
timing inputs-total $((SECONDS - t_all))

version=$(cat "$k8s_bin/VERSION")
key=$(inputs_hash "$(docker image inspect -f '{{.Id}}' "$base")" \
  "$(docker image inspect -f '{{.Id}}' "$proxy_base")" \
  "$k8s_bin/.inputs" "$extra_bin/.inputs" "$0" "$here/images" "$runtime_inputs")
if [[ $(image_label "$image" jobhandlers.inputs) == "$key" ]]; then
  log "$image is up to date (kubernetes $version, inputs $key)"; exit 0
fi
t=$SECONDS
work=$(mktemp -d "$JH_CACHE/node-build.XXXX")
cid=""
cleanup() { [[ -n $cid ]] && docker rm -f "$cid" >/dev/null 2>&1; rm -rf "$work"; }
trap cleanup EXIT

# --- component images. They are built under temporary local names (so no tag
# of the host's docker is touched) and renamed to exactly what kubeadm asks
# for inside the node's containerd.
mapfile -t wanted < <("$k8s_bin/kubeadm" config images list --kubernetes-version "$version")
log "images kubeadm wants: ${wanted[*]}"
tmp_name() { local n=${1##*/}; echo "jobhandlers.local/kind-tmp-${n%%:*}:${n##*:}"; }
scratch_image() { # NAME BINARY DEST ENTRYPOINT-JSON
  local name=$1 bin=$2 dest=$3 ep=$4 r=$work/rootfs-$RANDOM
  mkdir -p "$r/tmp" "$r/etc" "$r$(dirname "$dest")"
  chmod 1777 "$r/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' > "$r/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$r/etc/group"
  echo 'hosts: files dns' > "$r/etc/nsswitch.conf"
  install -m 0755 "$bin" "$r$dest"
  tar --numeric-owner -C "$r" -c . | docker import \
    --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' ${ep:+--change "ENTRYPOINT $ep"} - "$name" >/dev/null
  rm -rf "$r"
}
tmp_refs=()
for ref in "${wanted[@]}"; do
  name=${ref##*/}; name=${name%%:*}
  tmp=$(tmp_name "$ref"); tmp_refs+=("$tmp")
  case $name in
    kube-apiserver|kube-controller-manager|kube-scheduler)
      scratch_image "$tmp" "$k8s_bin/$name" "/usr/local/bin/$name" "" ;;
    etcd) scratch_image "$tmp" "$extra_bin/etcd" /usr/local/bin/etcd "" ;;
    coredns) scratch_image "$tmp" "$extra_bin/coredns" /coredns '["/coredns"]' ;;
    pause) scratch_image "$tmp" "$extra_bin/pause" /pause '["/pause"]'
      pause_ref=$ref ;;
    kube-proxy)
      c=$(docker create "$proxy_base" true)
      docker cp "$k8s_bin/kube-proxy" "$c:/usr/local/bin/kube-proxy"
      docker commit -c 'ENTRYPOINT []' -c 'CMD []' "$c" "$tmp" >/dev/null
      docker rm "$c" >/dev/null ;;
    *) die "kubeadm wants image $ref and there is no recipe for it in $0" ;;
  esac
done
[[ -n ${pause_ref:-} ]] || die "kubeadm listed no pause image"
docker save -o "$work/images.tar" "${tmp_refs[@]}"
docker rmi "${tmp_refs[@]}" >/dev/null
timing component-images $((SECONDS - t))

# --- the node: run the base without init, add binaries and preload images
t=$SECONDS
cid=$(docker run -d --init --privileged --entrypoint sleep "$base" infinity)
for b in kubelet kubeadm kubectl; do docker cp "$k8s_bin/$b" "$cid:/usr/bin/$b"; done
docker cp "$extra_bin/crictl" "$cid:/usr/bin/crictl"
# KIND_CONTAINERD=2 (the default): containerd v2 from its Go module over Debian's 1.6, which
# Kubernetes supports only up to 1.35 and which ignores lifecycle.stopSignal (scenario 13d); it
# reads the version 2 config of files/etc/containerd and migrates it in memory. KIND_CONTAINERD=1
# keeps 1.6 (the version suite's 1.29 cluster).
if [[ $containerd == 2 ]]; then
  for b in containerd containerd-shim-runc-v2 ctr; do docker cp "$ctr_bin/$b" "$cid:/usr/bin/$b"; done
fi
docker exec "$cid" sh -ec "
  echo '$version' > /kind/version
  sed -i 's|^\( *sandbox_image = \).*|\1\"$pause_ref\"|' /etc/containerd/config.toml
  grep -q 'sandbox_image = \"$pause_ref\"' /etc/containerd/config.toml
  mkdir -p /var/lib/containerd
  nohup containerd >/tmp/containerd.log 2>&1 &
  for i in \$(seq 1 60); do ctr version >/dev/null 2>&1 && exit 0; sleep 0.5; done
  cat /tmp/containerd.log; exit 1"
docker exec -i "$cid" ctr -n k8s.io images import --label=io.cri-containerd.pinned=pinned \
  --all-platforms --no-unpack - < "$work/images.tar" >/dev/null
for ref in "${wanted[@]}"; do
  tmp=$(tmp_name "$ref")
  docker exec "$cid" ctr -n k8s.io images tag --force "$tmp" "$ref" >/dev/null
  docker exec "$cid" ctr -n k8s.io images rm "$tmp" >/dev/null
  # pinned: kubelet's image garbage collection never removes it
  docker exec "$cid" ctr -n k8s.io images label "$ref" io.cri-containerd.pinned=pinned >/dev/null
done
have=$(docker exec "$cid" ctr -n k8s.io images ls -q)
for ref in "${wanted[@]}"; do
  grep -qx "$ref" <<<"$have" || die "image $ref missing in the node's containerd after import"
done
named=$(grep -v '^sha256:' <<<"$have")  # CRI adds sha256:<id> references itself
[[ $(wc -l <<<"$named") == "${#wanted[@]}" ]] || die "unexpected images in the node's containerd: $named"
docker exec "$cid" sh -c 'pkill containerd; for i in $(seq 1 40); do pgrep -x containerd >/dev/null || exit 0; sleep 0.25; done; exit 1'
docker exec "$cid" rm -f /tmp/containerd.log
docker stop -t 1 "$cid" >/dev/null
old_id=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)
docker commit \
  -c 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' -c 'CMD []' \
  -c "LABEL jobhandlers.inputs=$key" -c "LABEL jobhandlers.kubernetes-version=$version" \
  "$cid" "$image" >/dev/null
timing node-assemble $((SECONDS - t))
drop_if_dangling "$old_id"
log "$image built (kubernetes $version, inputs $key)"
