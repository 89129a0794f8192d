#!/usr/bin/env bash
# Build jobhandlers/galaxy:<series> (default 26.1: Galaxy 26.1.2; 25.1: the latest 25.1.x,
# requirements-25.1.txt) with no container registry: the Debian base of the reference
# workload (tests/images/rootfs-image.sh), wheels from the requirements file fetched on the
# host with pip download into $JH_CACHE/wheels (reused while the pins, the base's Python and
# the architecture stay the same). The few pure-Python source distributions (SDISTS) are
# built into py3 wheels on the host. Skips a build whose inputs (label jobhandlers.inputs)
# have not changed, so a warm run takes about a second.
#
# Usage: build-image.sh [26.1|25.1]
# Env: APP_BASE_IMAGE  use this base instead of the Debian-built one
#      PY              the Python whose pip downloads wheels (default .venv)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
source "$root/tests/images/lib.sh"
py=${PY:-$root/.venv/bin/python}
series=${1:-26.1}
case $series in
  26.1) reqs=$here/requirements.txt ;;
  25.1) reqs=$here/requirements-25.1.txt ;;
  *) die "unknown Galaxy series '$series' (26.1 or 25.1)" ;;
esac
[[ -f $reqs ]] || die "$reqs not found"
SDISTS=(bagit beaker dictobj docopt)  # no wheel served; pure Python
image=jobhandlers/galaxy:$series
ctx=$here/.build/$series
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
key=$(inputs_hash "$base_id" "$reqs" "$here/pip-check-allowed.txt" "$here/Dockerfile" "$here/build-image.sh" \
  "$here/config" "$here/tools" "$here/jhgalaxy.py")
if [[ $(image_label "$image" jobhandlers.inputs) == "$key" ]]; then
  log "$image is up to date (inputs $key, $((SECONDS - t0)) s)"; exit 0
fi
take_lock "galaxy-image-$series"

pyver=$(docker run --rm --network none --entrypoint python3 "$base" -c 'import sys; print("%d%d" % sys.version_info[:2])') \
  || die "$base has no working python3"
arch=$(docker info -f '{{.Architecture}}')
case $arch in x86_64|amd64) arch=x86_64 ;; aarch64|arm64) arch=aarch64 ;; *) die "unsupported architecture $arch" ;; esac
wheels=$JH_CACHE/wheels/galaxy-$(inputs_hash "$reqs" "${SDISTS[*]}" "cp$pyver" "$arch")
if [[ ! -f $wheels/.complete ]]; then
  log "pip download (cp$pyver/$arch) into $wheels"
  rm -rf "$wheels" && mkdir -p "$wheels"
  sdist_re="^($(IFS='|'; echo "${SDISTS[*]}"))=="
  grep -v '^#' "$reqs" | grep -v -i -E "$sdist_re" > "$wheels.binary.txt"
  grep -i -E "$sdist_re" "$reqs" > "$wheels.sdist.txt"
  plat=()
  for p in manylinux_2_28 manylinux_2_17 manylinux2014 manylinux_2_5 manylinux1; do plat+=(--platform "${p}_$arch"); done
  "$py" -m pip download -q --no-deps --only-binary=:all: --implementation cp --python-version "$pyver" \
    "${plat[@]}" -d "$wheels" -r "$wheels.binary.txt"
  "$py" -m pip wheel -q --no-deps -w "$wheels" -r "$wheels.sdist.txt"
  for n in "${SDISTS[@]}"; do  # built here, so it must be pure Python
    find "$wheels" -iname "${n}-*-none-any.whl" | grep -q . || die "no pure-Python wheel built for $n"
  done
  rm -f "$wheels.binary.txt" "$wheels.sdist.txt"
  touch "$wheels/.complete"
fi

rm -rf "$ctx" && mkdir -p "$ctx"
cp -r "$wheels" "$ctx/wheels" && rm -f "$ctx/wheels/.complete"
cp "$reqs" "$ctx/requirements.txt"
cp "$here/pip-check-allowed.txt" "$here/jhgalaxy.py" "$ctx/"
cp -r "$here/config" "$here/tools" "$ctx/"
find "$ctx" -name __pycache__ -prune -exec rm -rf {} +
log "docker build $image (base $base)"
old_id=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)
DOCKER_BUILDKIT=0 docker build -q -f "$here/Dockerfile" --build-arg BASE_IMAGE="$base" \
  --label "jobhandlers.inputs=$key" --label "jobhandlers.galaxy.series=$series" -t "$image" "$ctx" >/dev/null
drop_if_dangling "$old_id"
docker run --rm --network none "$image" jhgalaxy exec galaxy-main --help >/dev/null
rm -rf "$ctx"
log "built $image in $((SECONDS - t0)) s ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'), inputs $key)"
