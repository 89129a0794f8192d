#!/usr/bin/env bash
# Delete the kind cluster and check that none of its containers are left.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kind_dir=$(cd "$here/.." && pwd)
source "$kind_dir/../images/lib.sh"
KIND=${KIND:-kind}
name=${KIND_CLUSTER_NAME:-jobhandlers}
kubeconfig=${KIND_KUBECONFIG:-$kind_dir/.work/kubeconfig}
docker info >/dev/null 2>&1 || { log "dockerd not running: nothing to delete"; exit 0; }
"$KIND" delete cluster --name "$name" --kubeconfig "$kubeconfig.delete" >&2
rm -f "$kubeconfig.delete" "$kind_dir/.work/kind-$name.yaml"
# the nodes' shared volume (kind-up.sh), when it is the default one; files of other uids may stay
rm -rf "$kind_dir/.work/shared-$name" 2>/dev/null || log "warning: could not remove $kind_dir/.work/shared-$name"
# the kubeconfig path may hold another cluster's credentials: remove it only when it is this one's
if [[ -f $kubeconfig ]] && grep -q "^  name: kind-$name\$" "$kubeconfig"; then rm -f "$kubeconfig"; fi
left=$(docker ps -aq --filter "label=io.x-k8s.kind.cluster=$name")
[[ -z $left ]] || die "containers of cluster $name still exist: $left"
log "cluster $name deleted, no containers left"
