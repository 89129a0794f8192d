#!/usr/bin/env bash
# Build containerd v2 (containerd, containerd-shim-runc-v2, ctr) from its Go module, pinned by
# the wrapper module containerd/, static (CGO off, without the btrfs/devmapper/zfs snapshotters:
# the node uses overlayfs). For node images with KIND_CONTAINERD=2, the default.
# Usage: build-containerd.sh OUTDIR (skips when unchanged)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../images/lib.sh"
out=${1:?usage: build-containerd.sh OUTDIR}
take_lock containerd-build
key=$(inputs_hash "$0" "$(go env GOVERSION)" "$here/containerd")
if [[ -f $out/.inputs && $(cat "$out/.inputs") == "$key" ]]; then
  log "containerd up to date in $out"; exit 0
fi
mkdir -p "$out"; rm -f "$out/.inputs"
t0=$SECONDS
mod=github.com/containerd/containerd/v2
v=$(cd "$here/containerd" && go list -m -f '{{.Version}}' "$mod")
(cd "$here/containerd" && CGO_ENABLED=0 go build -trimpath -tags no_btrfs,no_devmapper,no_zfs \
  -ldflags "-s -w -X $mod/version.Version=${v#v}" -o "$out/" \
  "$mod/cmd/containerd" "$mod/cmd/containerd-shim-runc-v2" "$mod/cmd/ctr")
log "built containerd $v in $((SECONDS - t0)) s"
echo "$key" > "$out/.inputs"
