#!/usr/bin/env bash
# Build the Kubernetes node binaries (kubelet, kubeadm, kubectl, kube-apiserver,
# kube-controller-manager, kube-scheduler, kube-proxy) from the Go module proxy.
# Usage: build.sh OUTDIR   (skips the build when OUTDIR/.inputs matches)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../../images/lib.sh"
out=${1:?usage: build.sh OUTDIR}
k8s_version=$(cd "$here" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
[[ -n $k8s_version ]] || die "$here/go.mod: no k8s.io/kubernetes requirement"
take_lock k8s-build
key=$(inputs_hash "$here/go.mod" "$here/go.sum" "$0" "$(go env GOVERSION)")
if [[ -f $out/.inputs && $(cat "$out/.inputs") == "$key" ]]; then
  log "kubernetes $k8s_version binaries up to date in $out"; exit 0
fi
ver=${k8s_version#v}; major=${ver%%.*}; rest=${ver#*.}; minor=${rest%%.*}
ld="-s -w"
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  ld+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  ld+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
mkdir -p "$out"; rm -f "$out/.inputs"
cmds=(kubelet kubeadm kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy)
pkgs=(); for c in "${cmds[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
log "building kubernetes $k8s_version: ${cmds[*]}"
(cd "$here" && go build -trimpath -ldflags "$ld" -o "$out/" "${pkgs[@]}")
"$out/kubeadm" version -o short | grep -qx "$k8s_version" || die "kubeadm reports $("$out/kubeadm" version -o short), want $k8s_version"
echo "$k8s_version" > "$out/VERSION"
echo "$key" > "$out/.inputs"
log "kubernetes binaries done: $(du -sh "$out" | cut -f1)"
