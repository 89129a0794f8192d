#!/usr/bin/env bash
# The local image registry of the kind clusters (replaces `kind load`): the CNCF distribution
# registry that `make tools` builds for the OCI scenario (bin/registry), in a FROM-scratch image,
# as one container per machine, shared by every kind cluster on it. Images are pushed to it once;
# each node's containerd uses it as a mirror for docker.io (the chart's and the scenarios'
# `jobhandlers/...:tag` images), so a node pulls only the images its pods use, when they use them.
#
#   registry.sh up               start the container (idempotent), on the kind network
#   registry.sh push IMAGE...    push the local images not already there (same manifest digest)
#   registry.sh hosts NODE...    point the nodes' containerd at it (certs.d/docker.io/hosts.toml)
#
# Offline: the container is attached to the kind docker network only (the nodes reach it there
# by name, jh-registry:5000) and publishes its port on the host's loopback only (docker push
# goes there; docker allows plain HTTP to 127.0.0.0/8). Its storage is $JH_CACHE/registry, so a
# warm run pushes nothing. It survives `make kind-down` (other clusters may use it; it holds no
# cluster state); `registry.sh down` removes the container, keeping the storage.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
source "$here/../../images/lib.sh"
name=${JH_REGISTRY_NAME:-jh-registry}
port=${JH_REGISTRY_PORT:-5001}           # on the host's loopback, for docker push
network=${KIND_EXPERIMENTAL_DOCKER_NETWORK:-kind}
storage=$JH_CACHE/registry
bin=${JOBHANDLERS_REGISTRY:-$root/bin/registry}
# a cache: past this size (GB) it is emptied (by the next push or kind-up)
max_gb=${JH_REGISTRY_MAX_GB:-10}
push_host=127.0.0.1:$port

registry_image() {
  [[ -x $bin ]] || die "$bin missing: run \`make tools\` (it builds the pinned registry)"
  local config='version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: /var/lib/registry}, delete: {enabled: false}}
http: {addr: ":5000"}
'
  local dockerfile='FROM scratch
COPY registry /registry
COPY config.yml /etc/registry.yml
EXPOSE 5000
ENTRYPOINT ["/registry", "serve", "/etc/registry.yml"]
'
  local tag ref ctx out
  # keyed by what is in it (not this script: editing it must not replace a running registry)
  tag=$(inputs_hash "$bin" "$config" "$dockerfile")
  ref=jobhandlers/kind-registry:$tag
  if ! docker image inspect "$ref" >/dev/null 2>&1; then
    ctx=$(mktemp -d)
    cp "$bin" "$ctx/registry"; printf '%s' "$config" > "$ctx/config.yml"; printf '%s' "$dockerfile" > "$ctx/Dockerfile"
    out=$(DOCKER_BUILDKIT=0 docker build -q --label "jobhandlers.inputs=$tag" -t "$ref" "$ctx" 2>&1) || { echo "$out" >&2; die "docker build $ref failed"; }
    rm -rf "$ctx"
    log "built $ref"
  fi
  echo "$ref"
}

answers() { curl -fsS -o /dev/null --max-time 5 "http://$push_host/v2/"; }

up() {
  local image running old
  image=$(registry_image)
  take_lock registry
  # kind creates its network with the first cluster (and keeps it)
  docker network inspect "$network" >/dev/null 2>&1 || die "no docker network $network: run \`make kind-up\` first"
  running=$(docker inspect -f '{{.Config.Image}} {{.State.Running}}' "$name" 2>/dev/null || true)
  if [[ -n $running && $running != "$image true" ]]; then
    # another registry build, or stopped (dockerd restarted): the storage is kept
    log "replacing container $name ($running)"
    docker rm -f "$name" >/dev/null
    old=${running% *}
    [[ $old == "$image" ]] || docker rmi "$old" >/dev/null 2>&1 || true
    running=
  fi
  mkdir -p "$storage"
  if (( $(du -s --block-size=1G "$storage" | cut -f1) > max_gb )); then
    # every rebuilt image adds its new layers and nothing collects the old ones
    log "$storage is over $max_gb GB: emptying it (the images are pushed again)"
    docker rm -f "$name" >/dev/null 2>&1 || true
    find "$storage" -mindepth 1 -delete
    running=
  fi
  if [[ -z $running ]]; then
    docker run -d --name "$name" --restart unless-stopped --network "$network" \
      -p "127.0.0.1:$port:5000" -v "$storage:/var/lib/registry" "$image" >/dev/null
    log "started $name ($image) on network $network, pushes to $push_host"
  fi
  # a kind network deleted and created again since the container started
  [[ -n $(docker inspect -f "{{with index .NetworkSettings.Networks \"$network\"}}x{{end}}" "$name") ]] || \
    docker network connect "$network" "$name"
  local i
  for ((i = 0; i < 50; i++)); do answers && return 0; sleep 0.2; done
  docker logs --tail 20 "$name" >&2 || true
  die "registry $name does not answer on $push_host"
}

# the manifest digest the registry has for REPO:TAG (empty when none)
remote_digest() {
  curl -fsSI --max-time 10 -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
    "http://$push_host/v2/$1/manifests/$2" 2>/dev/null | tr -d '\r' | awk -F': ' 'tolower($1)=="docker-content-digest"{print $2}'
}

push() {
  up
  local img repo tag digest t pushed=0 kept=0 t0=$SECONDS
  for img in "$@"; do
    repo=${img%:*}; tag=${img##*:}
    [[ $repo == */* ]] || repo=library/$repo
    docker image inspect "$img" >/dev/null 2>&1 || die "no local image $img (make image builds them)"
    # docker keeps, per image ID, the digest each registry gave it: the same digest under the
    # tag there means this very image is there (a rebuilt image has another ID, and no digest)
    digest=$(docker image inspect -f '{{range .RepoDigests}}{{println .}}{{end}}' "$img" \
             | sed -n "s|^$push_host/$repo@||p" | head -n1)
    if [[ -n $digest && $(remote_digest "$repo" "$tag") == "$digest" ]]; then kept=$((kept + 1)); continue; fi
    docker tag "$img" "$push_host/$repo:$tag"
    t=$SECONDS
    docker push -q "$push_host/$repo:$tag" >/dev/null || die "docker push $push_host/$repo:$tag failed"
    log "pushed $img in $((SECONDS - t)) s"
    pushed=$((pushed + 1))
  done
  log "registry $name: pushed $pushed, already there $kept, in $((SECONDS - t0)) s"
}

hosts() {
  local n
  # config_path (kind-up's containerdConfigPatches) makes containerd read this directory on
  # every pull: no restart. No `server` line: docker.io's default stays the fallback (offline:
  # it fails, as it did before).
  for n in "$@"; do
    docker exec -i "$n" sh -ec 'mkdir -p /etc/containerd/certs.d/docker.io
      cat > /etc/containerd/certs.d/docker.io/.hosts.toml.tmp
      mv /etc/containerd/certs.d/docker.io/.hosts.toml.tmp /etc/containerd/certs.d/docker.io/hosts.toml' <<EOF
# written by tests/kind/scripts/registry.sh: pull docker.io images from the local registry
[host."http://$name:5000"]
  capabilities = ["pull", "resolve"]
EOF
  done
}

down() { docker rm -f "$name" >/dev/null 2>&1 || true; log "removed container $name (storage $storage kept)"; }

cmd=${1:-}; shift || true
case $cmd in
  up) up ;;
  push) push "$@" ;;
  hosts) hosts "$@" ;;
  down) down ;;
  *) die "usage: registry.sh up | push IMAGE... | hosts NODE... | down" ;;
esac
