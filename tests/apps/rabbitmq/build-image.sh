#!/usr/bin/env bash
# Build jobhandlers/rabbitmq:1 with no container registry: Debian's rabbitmq-server package in a
# debootstrapped base (tests/images/rootfs-image.sh), plus rabbitmq.conf. Skips the build
# when its inputs (label jobhandlers.inputs) have not changed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
source "$root/tests/images/lib.sh"
image=jobhandlers/rabbitmq:1
t0=$SECONDS
"$root/tests/images/docker-up.sh"
base=${RABBITMQ_BASE_IMAGE:-}
if [[ -z $base ]]; then
  base=jobhandlers/rabbitmq-base:bookworm
  "$root/tests/images/rootfs-image.sh" "$base" rabbitmq-server --change 'ENV LANG=C.UTF-8'
fi
base_id=$(docker image inspect -f '{{.Id}}' "$base")
key=$(inputs_hash "$base_id" "$here/Dockerfile" "$here/rabbitmq.conf" "$here/build-image.sh")
if [[ $(image_label "$image" jobhandlers.inputs) == "$key" ]]; then
  log "$image is up to date (inputs $key, $((SECONDS - t0)) s)"; exit 0
fi
take_lock rabbitmq-image
old_id=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)
ctx=$(mktemp -d)
cp "$here/Dockerfile" "$here/rabbitmq.conf" "$ctx/"
DOCKER_BUILDKIT=0 docker build -q --build-arg BASE_IMAGE="$base" --label "jobhandlers.inputs=$key" -t "$image" "$ctx" >/dev/null
rm -rf "$ctx"
drop_if_dangling "$old_id"
# a real boot: the node starts with our config and answers on 5672 (~10 s)
docker run --rm --network none "$image" sh -c 'rabbitmq-server >/tmp/boot.log 2>&1 & n=0
  until rabbitmq-diagnostics -q check_port_connectivity >/dev/null 2>&1; do
    n=$((n + 1)); [ $n -lt 60 ] || { tail -n 30 /tmp/boot.log; exit 1; }; sleep 1; done
  rabbitmqctl -q shutdown' >/dev/null || die "$image does not boot"
log "built $image in $((SECONDS - t0)) s (inputs $key)"
