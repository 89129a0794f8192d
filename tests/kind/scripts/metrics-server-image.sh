#!/usr/bin/env bash
# Build the metrics-server image of scenario 26e, no registry: metrics-server v0.8.0 (pinned in
# tests/kind/build/metrics-server/go.mod as a Go tool) as a static binary in an image FROM scratch
# (it needs no shell; its self-signed serving certificate goes to an emptyDir at /tmp). Prints the
# image reference (tag = hash of the inputs). Cold: ~1,300 Go packages, a few minutes on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../build/metrics-server" && pwd)
source "$here/../../images/lib.sh"
tag=$(inputs_hash "$src" "$0" "$(go env GOVERSION)")
ref=jobhandlers/metrics-server:$tag
take_lock metrics-server-image
if ! docker image inspect "$ref" >/dev/null 2>&1; then
  ctx=$(mktemp -d); trap 'rm -rf "$ctx"' EXIT
  t0=$SECONDS
  (cd "$src" && go build -trimpath -ldflags '-s -w' -o "$ctx/metrics-server" sigs.k8s.io/metrics-server/cmd/metrics-server)
  log "built metrics-server in $((SECONDS - t0)) s"
  printf 'FROM scratch\nCOPY metrics-server /metrics-server\nUSER 65534:65534\nENTRYPOINT ["/metrics-server"]\n' > "$ctx/Dockerfile"
  DOCKER_BUILDKIT=0 docker build -q -t "$ref" "$ctx" >/dev/null
  log "built $ref"
fi
echo "$ref"
