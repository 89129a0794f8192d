#!/usr/bin/env bash
# Build jobhandlers/workload-noshell:1 from jobhandlers/workload:1 (make workload-image first):
# no sh, dash, bash or sleep in it. Skips the build when its inputs have not changed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
source "$root/tests/images/lib.sh"
image=jobhandlers/workload-noshell:1 base=jobhandlers/workload:1
t0=$SECONDS
"$root/tests/images/docker-up.sh"
if ! docker image inspect "$base" >/dev/null 2>&1; then  # `make image` may run this first
  PY=${PY:-$root/.venv/bin/python} "$root/tests/workload/build-images.sh" workload
fi
key=$(inputs_hash "$(docker image inspect -f '{{.Id}}' "$base")" "$here/Dockerfile" "$here/build-image.sh")
if [[ $(image_label "$image" jobhandlers.inputs) == "$key" ]]; then
  log "$image is up to date (inputs $key, $((SECONDS - t0)) s)"; exit 0
fi
take_lock noshell-image
old_id=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)
DOCKER_BUILDKIT=0 docker build -q --build-arg BASE_IMAGE="$base" --label "jobhandlers.inputs=$key" -t "$image" "$here" >/dev/null
drop_if_dangling "$old_id"
for shell in sh dash bash sleep; do
  if docker run --rm --network none --entrypoint "$shell" "$image" -c true >/dev/null 2>&1; then die "$image still runs $shell"; fi
done
docker run --rm --network none "$image" workload --help >/dev/null
log "built $image (no shell) in $((SECONDS - t0)) s (inputs $key)"
