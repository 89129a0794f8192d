#!/usr/bin/env bash
# Smoke test of the built images (make test-image): read-only, caps dropped, uid 10001.
# PostgreSQL from jobhandlers/postgres:15; the workload's schema gate, migrations v1 -> v2,
# the probe files, a job drained by `docker stop`, the web role. Exit 0 when all pass.
set -euo pipefail
id=wlsmoke$$
net=$id pg=$id-pg
fail() { echo "FAIL: $*" >&2; docker logs "$pg" 2>&1 | tail -n 20 >&2 || true; exit 1; }
cleanup() { docker rm -f "$pg" "$id-job" >/dev/null 2>&1 || true; docker network rm "$net" >/dev/null 2>&1 || true; }
trap cleanup EXIT
for img in jobhandlers/workload:1 jobhandlers/workload:2 jobhandlers/workload:3 jobhandlers/postgres:15; do
  docker image inspect "$img" >/dev/null 2>&1 || fail "$img is missing; run 'make image'"
done
secure=(--read-only --cap-drop ALL --security-opt no-new-privileges)
url=postgresql://jobs:secret@$pg:5432/jobs
wl() { local v=$1; shift; docker run --rm --network "$net" "${secure[@]}" \
         --tmpfs /run/jobhandlers:uid=10001,gid=10001 -e DATABASE_URL="$url" "jobhandlers/workload:$v" "$@"; }
expect() { local want=$1; shift; local got=0; "$@" >/dev/null 2>&1 || got=$?; [[ $got == "$want" ]] || fail "'$*' exited $got, want $want"; echo "ok  exit $want: ${*: -3}"; }

docker run --rm jobhandlers/workload:1 workload --help >/dev/null || fail "workload --help"
[[ $(docker run --rm jobhandlers/workload:1 id -u) == 10001 ]] || fail "workload image does not run as uid 10001"
docker network create "$net" >/dev/null
docker run -d --name "$pg" --network "$net" "${secure[@]}" --tmpfs /var/lib/postgresql/data:uid=10001,gid=10001 \
  -e POSTGRES_USER=jobs -e POSTGRES_PASSWORD=secret -e POSTGRES_DB=jobs jobhandlers/postgres:15 >/dev/null
for _ in $(seq 60); do wl 1 workload db ping >/dev/null 2>&1 && break; sleep 1; done
expect 0 wl 1 workload db ping
expect 3 wl 1 workload db check
expect 3 wl 1 workload job
expect 0 wl 1 workload migrate
expect 0 wl 1 workload db check
expect 3 wl 2 workload db check
expect 0 wl 2 workload migrate --slow 1
expect 4 wl 1 workload db check
expect 4 wl 1 workload web

docker run -d --name "$id-job" --network "$net" "${secure[@]}" --tmpfs /run/jobhandlers:uid=10001,gid=10001 \
  -e DATABASE_URL="$url" -e HEARTBEAT_INTERVAL_SECONDS=1 jobhandlers/workload:2 workload job >/dev/null
ready='S=/run/jobhandlers; test ! -e $S/drain && test ! -e $S/stopping && test $(( $(date +%s) - $(stat -c %Y $S/heartbeat) )) -le 20'
for _ in $(seq 30); do docker exec "$id-job" sh -c "$ready" 2>/dev/null && break; sleep 1; done
docker exec "$id-job" sh -c "$ready" || fail "readiness probe (sh, date, stat) does not pass"
docker exec "$id-job" workload drain >/dev/null
! docker exec "$id-job" sh -c "$ready" || fail "readiness passes in drain mode"
docker exec "$id-job" workload undrain >/dev/null
wl 2 workload submit --duration 3 >/dev/null
for _ in $(seq 30); do docker logs "$id-job" 2>/dev/null | grep -q '"event":"claimed"' && break; sleep 0.5; done
docker stop -t 30 "$id-job" >/dev/null
[[ $(docker inspect -f '{{.State.ExitCode}}' "$id-job") == 0 ]] || fail "job handler did not drain cleanly"
docker logs "$id-job" 2>/dev/null | grep -q '"event":"finished".*"outcome":"done"' || fail "in-flight job not finished on docker stop"
[[ $(wl 2 workload counts) == *'"done": 1'* ]] || fail "job not done"
echo "ok  docker stop drained the in-flight job (exit 0)"
echo "image smoke test passed"
