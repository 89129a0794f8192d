#!/usr/bin/env bash
# Build jobhandlers/celery:1 with no container registry: the Debian base of the reference
# workload (tests/images/rootfs-image.sh), wheels from requirements.txt fetched on the host
# with pip download into $JH_CACHE/wheels (reused while the pins, the base's Python and the
# architecture stay the same). Skips a build whose inputs (label jobhandlers.inputs) have
# not changed, so a warm run takes about a second.
#
# Env: APP_BASE_IMAGE  use this base instead of the Debian-built one
#      PY              the Python whose pip downloads wheels (default .venv)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
source "$root/tests/images/lib.sh"
py=${PY:-$root/.venv/bin/python}
ctx=$here/.build
image=jobhandlers/celery:1
[[ -x $py ]] || die "$py not found; run 'make venv' or set PY"
t0=$SECONDS

"$root/tests/images/docker-up.sh"
base=${APP_BASE_IMAGE:-}
if [[ -z $base ]]; then
  base=jobhandlers/workload-base:bookworm  # the same call as tests/workload/build-images.sh: one cached base
  "$root/tests/images/rootfs-image.sh" "$base" python3,python3-venv --change 'ENV LANG=C.UTF-8'
fi
docker image inspect "$base" >/dev/null 2>&1 || die "base image $base is missing"
base_id=$(docker image inspect -f '{{.Id}}' "$base")
key=$(inputs_hash "$base_id" "$here/requirements.txt" "$here/Dockerfile" "$here/build-image.sh" "$here/project")
if [[ $(image_label "$image" jobhandlers.inputs) == "$key" ]]; then
  log "$image is up to date (inputs $key, $((SECONDS - t0)) s)"; exit 0
fi
take_lock celery-image

pyver=$(docker run --rm --network none --entrypoint python3 "$base" -c 'import sys; print("%d%d" % sys.version_info[:2])') \
  || die "$base has no working python3"
arch=$(docker info -f '{{.Architecture}}')
case $arch in x86_64|amd64) arch=x86_64 ;; aarch64|arm64) arch=aarch64 ;; *) die "unsupported architecture $arch" ;; esac
wheels=$JH_CACHE/wheels/celery-$(inputs_hash "$here/requirements.txt" "cp$pyver" "$arch")
if [[ ! -f $wheels/.complete ]]; then
  log "pip download (cp$pyver/$arch) into $wheels"
  rm -rf "$wheels" && mkdir -p "$wheels"
  plat=()
  for p in manylinux_2_28 manylinux_2_17 manylinux2014; do plat+=(--platform "${p}_$arch"); done
  "$py" -m pip download -q --no-deps --only-binary=:all: --implementation cp --python-version "$pyver" \
    "${plat[@]}" -d "$wheels" -r "$here/requirements.txt"
  touch "$wheels/.complete"
fi

rm -rf "$ctx" && mkdir -p "$ctx"
cp -r "$wheels" "$ctx/wheels" && rm -f "$ctx/wheels/.complete"
cp "$here/requirements.txt" "$ctx/"
cp -r "$here/project" "$ctx/project"
find "$ctx" -name __pycache__ -prune -exec rm -rf {} +
log "docker build $image (base $base)"
old_id=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)
DOCKER_BUILDKIT=0 docker build -q -f "$here/Dockerfile" --build-arg BASE_IMAGE="$base" \
  --label "jobhandlers.inputs=$key" -t "$image" "$ctx" >/dev/null
drop_if_dangling "$old_id"
docker run --rm --network none -e DATABASE_URL=postgresql://x@127.0.0.1/x "$image" \
  sh -c "django-admin migrate --help >/dev/null && celery -A jhcelery report | grep -q \"^software -> celery:5\""
rm -rf "$ctx"
log "built $image in $((SECONDS - t0)) s (inputs $key)"
