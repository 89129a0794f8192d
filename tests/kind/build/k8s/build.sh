#!/usr/bin/env bash
# Build the Kubernetes node binaries (kubelet, kubeadm, kubectl, kube-apiserver,
# kube-controller-manager, kube-scheduler, kube-proxy) from the Go module proxy.
# Usage: build.sh MINOR OUTDIR [CMD...]   (MINOR: 1.37 builds the module in v1.37/; CMD: only
# these commands, e.g. kube-apiserver for tests/apiserver's older minor; skips the build when
# OUTDIR/.inputs matches)
set -euo pipefail
script_dir=$(cd "$(dirname "$0")" && pwd)
source "$script_dir/../../../images/lib.sh"
minor=${1:?usage: build.sh MINOR OUTDIR}
out=${2:?usage: build.sh MINOR OUTDIR}
shift 2
cmds=("$@")
((${#cmds[@]})) || cmds=(kubelet kubeadm kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy)
here=$script_dir/v$minor
[[ -f $here/go.mod ]] || die "no wrapper module for Kubernetes $minor: $here/go.mod (one per minor: copy the newest and run go mod tidy)"
k8s_version=$(cd "$here" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
[[ -n $k8s_version ]] || die "$here/go.mod: no k8s.io/kubernetes requirement"
take_lock "k8s-build-$minor"
key=$(inputs_hash "$here/go.mod" "$here/go.sum" "$here/deps.go" "$0" "$(go env GOVERSION)" "${cmds[*]}")
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
pkgs=(); for c in "${cmds[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
log "building kubernetes $k8s_version: ${cmds[*]}"
(cd "$here" && go build -trimpath -ldflags "$ld" -o "$out/" "${pkgs[@]}")
got=$("$out/${cmds[0]}" --version 2>/dev/null || "$out/${cmds[0]}" version -o short)
[[ $got == *"$k8s_version" ]] || die "${cmds[0]} reports $got, want $k8s_version"
echo "$k8s_version" > "$out/VERSION"
echo "$key" > "$out/.inputs"
log "kubernetes binaries done: $(du -sh "$out" | cut -f1)"
