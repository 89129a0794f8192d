#!/usr/bin/env bash
# Build jobhandlers/pgbouncer:1 with no container registry: Debian's pgbouncer package in a
# debootstrapped base (tests/images/rootfs-image.sh), plus entrypoint.sh. Skips the build
# when its inputs (label jobhandlers.inputs) have not changed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
source "$root/tests/images/lib.sh"
image=jobhandlers/pgbouncer:1
t0=$SECONDS
"$root/tests/images/docker-up.sh"
base=${PGBOUNCER_BASE_IMAGE:-}
if [[ -z $base ]]; then
  base=jobhandlers/pgbouncer-base:bookworm
  "$root/tests/images/rootfs-image.sh" "$base" pgbouncer --change 'ENV LANG=C.UTF-8'
fi
base_id=$(docker image inspect -f '{{.Id}}' "$base")
key=$(inputs_hash "$base_id" "$here/Dockerfile" "$here/entrypoint.sh" "$here/build-image.sh")
if [[ $(image_label "$image" jobhandlers.inputs) == "$key" ]]; then
  log "$image is up to date (inputs $key, $((SECONDS - t0)) s)"; exit 0
fi
take_lock pgbouncer-image
old_id=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)
ctx=$(mktemp -d)
cp "$here/Dockerfile" "$here/entrypoint.sh" "$ctx/"
DOCKER_BUILDKIT=0 docker build -q --build-arg BASE_IMAGE="$base" --label "jobhandlers.inputs=$key" -t "$image" "$ctx" >/dev/null
rm -rf "$ctx"
drop_if_dangling "$old_id"
docker run --rm --network none --entrypoint pgbouncer "$image" --version >/dev/null
log "built $image in $((SECONDS - t0)) s (inputs $key)"
