#!/usr/bin/env bash
# Build the non-Kubernetes node binaries from the Go module proxy: etcd,
# coredns, pause and crictl. Usage: build-extras.sh OUTDIR (skips when unchanged)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../images/lib.sh"
out=${1:?usage: build-extras.sh OUTDIR}
mods=(etcd coredns pause crictl)
inputs=("$0" "$(go env GOVERSION)")
for m in "${mods[@]}"; do inputs+=("$here/$m"); done
take_lock extras-build
key=$(inputs_hash "${inputs[@]}")
if [[ -f $out/.inputs && $(cat "$out/.inputs") == "$key" ]]; then
  log "etcd/coredns/pause/crictl up to date in $out"; exit 0
fi
mkdir -p "$out"; rm -f "$out/.inputs"
for m in "${mods[@]}"; do
  t0=$SECONDS
  pkg=.; [[ $m == crictl ]] && pkg=sigs.k8s.io/cri-tools/cmd/crictl
  (cd "$here/$m" && go build -trimpath -ldflags "-s -w" -o "$out/$m" "$pkg")
  log "built $m in $((SECONDS - t0)) s"
done
echo "$key" > "$out/.inputs"
