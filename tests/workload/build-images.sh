#!/usr/bin/env bash
# Build jobhandlers/workload:1, :2, :3 and jobhandlers/postgres:15 with no
# container registry: bases come from Debian packages (tests/images/rootfs-image.sh),
# Python wheels are fetched on the host with pip into the build context.
#
# Usage: build-images.sh [all|workload|postgres]
# Env:   WORKLOAD_BASE_IMAGE  use this base instead of the Debian-built one (e.g. a stock
#                             Python slim image); its python3 decides the wheels fetched
#        POSTGRES_BASE_IMAGE  likewise for the postgres image (needs Debian postgresql-15)
#        PY                   the Python whose pip builds/downloads wheels (default .venv)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=${PY:-$root/.venv/bin/python}
ctx=$here/.build
what=${1:-all}
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 2; }
[[ $what =~ ^(all|workload|postgres)$ ]] || die "unknown target '$what'; use all, workload or postgres"
[[ -x $py ]] || die "$py not found; run 'make venv' or set PY"
rootfs=$root/tests/images/rootfs-image.sh
docker_up() {
  docker info >/dev/null 2>&1 && return 0
  [[ -x $root/tests/images/docker-up.sh ]] || die "docker is not running and tests/images/docker-up.sh is missing"
  "$root/tests/images/docker-up.sh"
}
debian_base() {  # IMAGE PKGS
  [[ -x $rootfs ]] || die "$rootfs is missing (owned by the kind helper); set WORKLOAD_BASE_IMAGE/POSTGRES_BASE_IMAGE instead"
  "$rootfs" "$1" "$2" --change 'ENV LANG=C.UTF-8'
}

build_workload() {
  local base=${WORKLOAD_BASE_IMAGE:-}
  if [[ -z $base ]]; then
    base=jobhandlers/workload-base:bookworm
    debian_base "$base" python3,python3-venv
  fi
  docker image inspect "$base" >/dev/null 2>&1 || docker pull "$base"
  local pyver arch plat=()
  pyver=$(docker run --rm --network none --entrypoint python3 "$base" -c 'import sys; print("%d%d" % sys.version_info[:2])') \
    || die "$base has no working python3"
  arch=$(docker info -f '{{.Architecture}}')
  case $arch in x86_64|amd64) arch=x86_64 ;; aarch64|arm64) arch=aarch64 ;; *) die "unsupported architecture $arch" ;; esac
  for p in manylinux_2_28 manylinux_2_17 manylinux2014; do plat+=(--platform "${p}_$arch"); done
  rm -rf "$ctx/workload"
  mkdir -p "$ctx/workload/wheels"
  log "wheels for cp$pyver/$arch"
  # Build from a copy: setuptools writes build/ and *.egg-info next to the sources.
  mkdir -p "$ctx/workload/src"
  cp -r "$here/pyproject.toml" "$here/README.md" "$here/workload" "$ctx/workload/src/"
  find "$ctx/workload/src" -name __pycache__ -prune -exec rm -rf {} +
  # A fixed SOURCE_DATE_EPOCH (zip timestamps): the same sources give the same wheel bytes, so a
  # rebuild hits docker's layer cache, the image keeps its ID and kind load has nothing to redo.
  SOURCE_DATE_EPOCH=315532800 "$py" -m pip wheel -q --no-deps -w "$ctx/workload/wheels" "$ctx/workload/src"
  rm -rf "$ctx/workload/src"
  "$py" -m pip download -q --only-binary=:all: --implementation cp --python-version "$pyver" "${plat[@]}" \
    -d "$ctx/workload/wheels" 'psycopg[binary]==3.3.9'
  for v in 1 2 3; do
    log "docker build jobhandlers/workload:$v (base $base)"
    DOCKER_BUILDKIT=0 docker build -q -f "$here/Dockerfile" --build-arg BASE_IMAGE="$base" \
      --build-arg WORKLOAD_VERSION="$v" -t "jobhandlers/workload:$v" "$ctx/workload" >/dev/null
  done
  docker run --rm --network none jobhandlers/workload:1 workload --help >/dev/null
}

build_postgres() {
  local base=${POSTGRES_BASE_IMAGE:-}
  if [[ -z $base ]]; then
    base=jobhandlers/postgres-base:15
    debian_base "$base" postgresql-15
  fi
  rm -rf "$ctx/postgres"
  mkdir -p "$ctx/postgres"
  cp "$here/postgres-entrypoint.sh" "$ctx/postgres/"
  log "docker build jobhandlers/postgres:15 (base $base)"
  DOCKER_BUILDKIT=0 docker build -q -f "$here/postgres.Dockerfile" --build-arg BASE_IMAGE="$base" \
    -t jobhandlers/postgres:15 "$ctx/postgres" >/dev/null
}

docker_up
case $what in
  all) build_workload; build_postgres ;;
  workload) build_workload ;;
  postgres) build_postgres ;;
esac
log "built: $(docker images --format '{{.Repository}}:{{.Tag}}' | grep -E '^jobhandlers/(workload:[123]|postgres:15)$' | sort | tr '\n' ' ')"
