#!/usr/bin/env bash
# Build the non-Kubernetes node binaries from the Go module proxy: etcd,
# coredns, pause, crictl and the container runtime (containerd v2: containerd,
# containerd-shim-runc-v2, ctr). Usage: build-extras.sh OUTDIR (skips when unchanged)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../images/lib.sh"
out=${1:?usage: build-extras.sh OUTDIR}
mods=(etcd coredns pause crictl containerd)
inputs=("$0" "$(go env GOVERSION)")
for m in "${mods[@]}"; do inputs+=("$here/$m"); done
take_lock extras-build
key=$(inputs_hash "${inputs[@]}")
if [[ -f $out/.inputs && $(cat "$out/.inputs") == "$key" ]]; then
  log "etcd/coredns/pause/crictl/containerd up to date in $out"; exit 0
fi
mkdir -p "$out"; rm -f "$out/.inputs"
for m in "${mods[@]}"; do
  t0=$SECONDS
  case $m in
    crictl) (cd "$here/$m" && go build -trimpath -ldflags "-s -w" -o "$out/$m" sigs.k8s.io/cri-tools/cmd/crictl) ;;
    # static, without the btrfs/devmapper/zfs snapshotters (cgo; the node uses overlayfs)
    containerd) v=$(cd "$here/$m" && go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
      (cd "$here/$m" && CGO_ENABLED=0 go build -trimpath -tags no_btrfs,no_devmapper,no_zfs \
      -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=${v#v}" -o "$out/" github.com/containerd/containerd/v2/cmd/containerd \
      github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/ctr) ;;
    *) (cd "$here/$m" && go build -trimpath -ldflags "-s -w" -o "$out/$m" .) ;;
  esac
  log "built $m in $((SECONDS - t0)) s"
done
echo "$key" > "$out/.inputs"
