#!/usr/bin/env bash
# kubectl for the tests: the one built with the node image, else the host's.
set -euo pipefail
source "$(cd "$(dirname "$0")" && pwd)/../../images/lib.sh"
kbin=$JH_CACHE/k8s-bin-v${KIND_K8S:-1.37}/kubectl
if [[ -x $kbin ]]; then exec "$kbin" "$@"; fi
command -v kubectl >/dev/null || die "no kubectl: run 'make kind-node-image' (it builds one) or install kubectl"
exec kubectl "$@"
