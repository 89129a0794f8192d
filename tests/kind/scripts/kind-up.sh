#!/usr/bin/env bash
# Create the kind cluster (idempotent) and wait for every node to be Ready.
# Offline path (KIND_OFFLINE=1, or no registry reachable): the node image is
# built locally (build-node.sh), the default CNI is replaced by a static ptp
# conflist per node plus routes between nodes. Online path: kind's stock image.
# Env: KIND (kind binary), KIND_CLUSTER_NAME, KIND_WORKERS (default 2; 0 = one node),
#      KIND_NODE_IMAGE, KIND_OFFLINE, KIND_KUBECONFIG, KIND_READY_TIMEOUT (s),
#      KIND_SHARED_DIR (host directory mounted into every node at /jobhandlers-shared: the
#      scenarios' ReadWriteMany volume, a hostPath PV every node sees; default
#      tests/kind/.work/shared-<cluster>, the default one removed by kind-down.sh),
#      KIND_REGISTRY (default 1: the nodes pull docker.io images from the local registry,
#      registry.sh; 0: they get them by `kind load`),
#      KIND_REPAIR=1: never create or delete a cluster: the existing one's static CNI routes and
#      registry mirror are installed again and its nodes waited for (a node container restarted
#      by a scenario, scenario 8z: the other passes on the same cluster keep running; without it,
#      a worker count that differs from KIND_WORKERS + KIND_POOL_WORKERS recreates the cluster).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kind_dir=$(cd "$here/.." && pwd)
source "$kind_dir/../images/lib.sh"
KIND=${KIND:-kind}
name=${KIND_CLUSTER_NAME:-jobhandlers}
workers=${KIND_WORKERS:-2}
# KIND_POOL_WORKERS more workers, labelled and tainted jobhandlers.test/pool=nodes (NoSchedule):
# the node scenarios' own workers inside this cluster (drains, node loss), which nothing else uses
pool_workers=${KIND_POOL_WORKERS:-0}
pool_key=jobhandlers.test/pool
kubeconfig=${KIND_KUBECONFIG:-$kind_dir/.work/kubeconfig}
node_image=${KIND_NODE_IMAGE:-jobhandlers/kind-node:v${KIND_K8S:-1.37}}
timeout=${KIND_READY_TIMEOUT:-300}
shared_dir=${KIND_SHARED_DIR:-$kind_dir/.work/shared-$name}
shared_mount=/jobhandlers-shared  # test_22_galaxy_k8s.py: NODE_DIR
pod_subnet=10.244.0.0/16
use_registry=${KIND_REGISTRY:-1}
[[ $use_registry == 0 || $use_registry == 1 ]] || die "KIND_REGISTRY=$use_registry: use 1 (local registry) or 0 (kind load)"
[[ $workers =~ ^[0-9]+$ ]] || die "KIND_WORKERS=$workers must be a number"
[[ $pool_workers =~ ^[0-9]+$ ]] || die "KIND_POOL_WORKERS=$pool_workers must be a number"
repair=${KIND_REPAIR:-0}
[[ $repair == 0 || $repair == 1 ]] || die "KIND_REPAIR=$repair: use 1 (repair the existing cluster) or 0"
command -v "$KIND" >/dev/null || die "kind binary '$KIND' not found (run: make tools)"
t0=$SECONDS
"$kind_dir/../images/docker-up.sh"
mkdir -p "$(dirname "$kubeconfig")"

offline=${KIND_OFFLINE:-}
if [[ $repair == 1 ]]; then
  # the existing cluster says which path made it: the offline one wrote the static CNI
  docker ps -q --filter "label=io.x-k8s.kind.cluster=$name" --filter "label=io.x-k8s.kind.role=control-plane" | grep -q . \
    || die "KIND_REPAIR=1: cluster $name has no running control plane to repair"
  if docker exec "$name-control-plane" test -e /etc/cni/net.d/10-kind-static.conflist; then offline=1; else offline=0; fi
fi
if [[ -z $offline ]]; then
  # a registry answers a search only when it is reachable
  if timeout 15 docker search --limit 1 kindest/node >/dev/null 2>&1; then offline=0; else offline=1; fi
  log "registry reachable: $([[ $offline == 0 ]] && echo yes || echo no)"
fi
[[ $offline == 0 || $offline == 1 ]] || die "KIND_OFFLINE=$offline: use 1 (build the node image here) or 0 (stock kind image)"

kubectl() { "$kind_dir/scripts/kubectl.sh" --kubeconfig "$kubeconfig" "$@"; }

# Whether the cluster's control-plane container exists. Asked of docker by label, not parsed from
# `kind get clusters`: that listing came back without this cluster once while another cluster was
# being created beside it (.ci/run: the node scenarios' cluster), and kind-up then tried to
# create a cluster that existed ("node(s) already exist"). Three tries on a docker error.
cluster_exists() {
  local out i
  for i in 1 2 3; do
    if out=$(docker ps -a -q --filter "label=io.x-k8s.kind.cluster=$name" \
                              --filter "label=io.x-k8s.kind.role=control-plane"); then
      [[ -n $out ]]
      return
    fi
    sleep 2
  done
  die "docker ps failed three times: cannot tell whether cluster $name exists"
}

if [[ $repair == 0 ]] && cluster_exists && \
   [[ -n $(docker ps -a -q --filter "label=io.x-k8s.kind.cluster=$name" --filter status=exited --filter status=created) ]]; then
  log "cluster $name has stopped nodes (dockerd or host restarted?): recreating it"
  "$KIND" delete cluster --name "$name" --kubeconfig "$kubeconfig.delete" >&2
  rm -f "$kubeconfig.delete"
fi

if [[ $repair == 0 ]] && cluster_exists; then
  have=$(docker ps -a -q --filter "label=io.x-k8s.kind.cluster=$name" --filter "label=io.x-k8s.kind.role=worker" | wc -l)
  if [[ $have -ne $((workers + pool_workers)) ]]; then
    log "cluster $name has $have workers, KIND_WORKERS=$workers + KIND_POOL_WORKERS=$pool_workers: recreating it"
    "$KIND" delete cluster --name "$name" --kubeconfig "$kubeconfig.delete" >&2
    rm -f "$kubeconfig.delete"
  fi
fi

# nodes whose kubelet reports another InternalIP than their container has: the API server
# would send logs and exec for their pods to whichever node holds that IP now
ip_mismatch() {
  local n want have
  for n in $(docker ps --filter "label=io.x-k8s.kind.cluster=$name" --format '{{.Names}}' \
             | grep -v -- '-external-load-balancer$'); do
    want=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$n")
    have=$(kubectl get node "$n" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}' 2>/dev/null || true)
    [[ $have == "$want" ]] || echo "$n:${have:-?}->$want"
  done
}

if cluster_exists; then
  "$KIND" get kubeconfig --name "$name" > "$kubeconfig.tmp" && mv "$kubeconfig.tmp" "$kubeconfig"
  deadline=$((SECONDS + 90))
  # a just-restarted node's kubelet reports its new IP within seconds
  while mismatch=$(ip_mismatch) && [[ -n $mismatch ]] && ((SECONDS < deadline)); do sleep 3; done
  if [[ -n $mismatch && $repair == 1 ]]; then
    die "KIND_REPAIR=1: cluster $name: node IPs still differ from what the API server knows after 90 s ($(echo $mismatch))"
  fi
  if [[ -n $mismatch ]]; then
    log "cluster $name: node IPs differ from what the API server knows ($(echo $mismatch)): recreating it"
    "$KIND" delete cluster --name "$name" --kubeconfig "$kubeconfig.delete" >&2
    rm -f "$kubeconfig.delete"
  fi
fi

if cluster_exists; then
  log "cluster $name exists"
  docker exec "$name-control-plane" test -d "$shared_mount" || \
    log "warning: cluster $name has no $shared_mount (created before its extraMounts): the scenarios that share a ReadWriteMany volume fail (make kind-down kind-up)"
  if [[ $offline == 1 ]]; then
    running=$(docker inspect -f '{{.Image}}' "$name-control-plane" 2>/dev/null || true)
    current=$(docker image inspect -f '{{.Id}}' "$node_image" 2>/dev/null || true)
    [[ -z $current || $running == "$current" ]] || \
      log "warning: cluster $name runs an older node image than $node_image (make kind-down kind-up to refresh)"
  fi
  "$KIND" get kubeconfig --name "$name" > "$kubeconfig.tmp" && mv "$kubeconfig.tmp" "$kubeconfig"
else
  cfg=$kind_dir/.work/kind-$name.yaml
  {
    echo "kind: Cluster"
    echo "apiVersion: kind.x-k8s.io/v1alpha4"
    echo "name: $name"
    echo "networking:"
    echo "  podSubnet: $pod_subnet"
    if [[ $offline == 1 ]]; then echo "  disableDefaultCNI: true"; fi
    minor=${KIND_K8S:-1.37}; minor=${minor#*.}
    # ContainerStopSignals (KEP-4960, alpha from 1.33 through 1.37): lifecycle.stopSignal is
    # honoured only when the gate is on in kube-apiserver and the kubelet; kind sets it on both.
    # An older kube-apiserver refuses to start on a gate it does not know.
    if ((minor >= 33)); then
      echo "featureGates:"
      echo "  ContainerStopSignals: true"
    fi
    # Kubernetes 1.35+: the kubelet refuses to start on a cgroup v1 host unless failCgroupV1
    # is false (KEP-5573; the field exists from 1.31). This machine's docker runs cgroup v1.
    if [[ $(stat -fc %T /sys/fs/cgroup) != cgroup2fs ]] && ((minor >= 31)); then
      echo "kubeadmConfigPatches:"
      echo "- |"
      echo "  kind: KubeletConfiguration"
      echo "  failCgroupV1: false"
    fi
    # containerd reads /etc/containerd/certs.d/<host>/hosts.toml on every pull (registry.sh
    # hosts writes docker.io's below). The same version 2 key in containerd 1.6 and 2.x (2.x
    # migrates it in memory); kind merges it into the node's config.toml and restarts containerd.
    if [[ $use_registry == 1 ]]; then
      echo "containerdConfigPatches:"
      echo "- |-"
      echo "  [plugins.\"io.containerd.grpc.v1.cri\".registry]"
      echo "    config_path = \"/etc/containerd/certs.d\""
    fi
    echo "nodes:"
    for ((i = 0; i <= workers + pool_workers; i++)); do
      if ((i == 0)); then echo "- role: control-plane"; else echo "- role: worker"; fi
      if ((i > workers)); then
        echo "  labels:"
        echo "    $pool_key: nodes"
        echo "  kubeadmConfigPatches:"
        echo "  - |"
        echo "    kind: JoinConfiguration"
        echo "    nodeRegistration:"
        echo "      taints:"
        echo "      - {key: $pool_key, value: nodes, effect: NoSchedule}"
      fi
      if [[ $offline == 1 ]]; then echo "  image: $node_image"; fi
      echo "  extraMounts:"
      echo "  - hostPath: $shared_dir"
      echo "    containerPath: $shared_mount"
    done
  } > "$cfg"
  # world-writable like /tmp (sticky): the scenarios make a directory per namespace in it,
  # owned by the app's uid, from a node (test_22_galaxy_k8s.py)
  mkdir -p "$shared_dir" && chmod 1777 "$shared_dir"
  if [[ $offline == 1 ]]; then
    t=$SECONDS; "$kind_dir/node/build-node.sh" "$node_image" "${KIND_K8S:-1.37}"
    log "node image ready in $((SECONDS - t)) s"
  fi
  t=$SECONDS
  KUBECONFIG=$kubeconfig "$KIND" create cluster --config "$cfg" --retain=false
  log "kind create cluster took $((SECONDS - t)) s"
fi

nodes=$(docker ps --filter "label=io.x-k8s.kind.cluster=$name" --format '{{.Names}}' \
        | grep -v -- '-external-load-balancer$' | sort)
[[ -n $nodes ]] || die "no node containers found for cluster $name"

if [[ $offline == 1 ]]; then
  # static CNI: each node routes its own podCIDR to ptp veths, other nodes' via their IP
  deadline=$((SECONDS + timeout))
  declare -A cidr ip
  for n in $nodes; do
    until cidr[$n]=$(kubectl get node "$n" -o jsonpath='{.spec.podCIDR}' 2>/dev/null) && [[ -n ${cidr[$n]} ]]; do
      ((SECONDS < deadline)) || die "node $n got no podCIDR within ${timeout}s"
      sleep 2
    done
    ip[$n]=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$n")
  done
  for n in $nodes; do
    conf='{"cniVersion":"1.0.0","name":"kind-static","plugins":[
  {"type":"ptp","ipMasq":true,"mtu":1500,
   "ipam":{"type":"host-local","ranges":[[{"subnet":"'"${cidr[$n]}"'"}]],"routes":[{"dst":"0.0.0.0/0"}]}},
  {"type":"portmap","capabilities":{"portMappings":true}}]}'
    docker exec -i "$n" sh -ec 'cat > /etc/cni/net.d/.10-kind-static.tmp && mv /etc/cni/net.d/.10-kind-static.tmp /etc/cni/net.d/10-kind-static.conflist' <<<"$conf"
    for m in $nodes; do
      [[ $m == "$n" ]] && continue
      docker exec "$n" ip route replace "${cidr[$m]}" via "${ip[$m]}"
    done
  done
  log "static CNI installed on: ${nodes//$'\n'/ }"
fi

# the local registry as docker.io's mirror, on nodes whose containerd reads certs.d (a cluster
# created with KIND_REGISTRY=0, or before the registry, gets its images by `kind load`)
if [[ $use_registry == 1 ]]; then
  mirrored=()
  for n in $nodes; do
    if docker exec "$n" grep -q '^ *config_path = "/etc/containerd/certs.d"' /etc/containerd/config.toml; then mirrored+=("$n"); fi
  done
  if ((${#mirrored[@]})); then
    "$here/registry.sh" up
    "$here/registry.sh" hosts "${mirrored[@]}"
    log "local registry mirrors docker.io on: ${mirrored[*]}"
  fi
fi

log "waiting up to ${timeout}s for nodes Ready"
kubectl wait --for=condition=Ready node --all --timeout="${timeout}s" >/dev/null
kubectl -n kube-system rollout status deployment/coredns --timeout="${timeout}s" >/dev/null
log "cluster $name Ready in $((SECONDS - t0)) s; KUBECONFIG=$kubeconfig"
