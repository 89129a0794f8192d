#!/usr/bin/env bash
# Build the NetworkPolicy engine image of scenario 19, no registry: kube-router's firewall alone
# (tests/kind/build/kube-router: its main.go runs kube-router's NetworkPolicy controller, pinned in
# its go.mod; why kube-router, and why not its whole command: see main.go) as a static binary on a
# Debian bookworm rootfs with iptables and ipset, which it runs. Prints the image reference
# (tag = hash of the inputs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../build/kube-router" && pwd)
source "$here/../../images/lib.sh"
base=jobhandlers/kube-router-base:bookworm
tag=$(inputs_hash "$src" "$0" "$(go env GOVERSION)" "$here/../../images/rootfs-image.sh")
ref=jobhandlers/kind-netpol:$tag
take_lock netpol-image
if ! docker image inspect "$ref" >/dev/null 2>&1; then
  "$here/../../images/rootfs-image.sh" "$base" iptables,ipset >&2
  ctx=$(mktemp -d); trap 'rm -rf "$ctx"' EXIT
  t0=$SECONDS
  (cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$ctx/netpol" .)
  log "built kube-router's firewall in $((SECONDS - t0)) s"
  printf 'ARG BASE\nFROM $BASE\nCOPY netpol /usr/local/bin/netpol\nENTRYPOINT ["/usr/local/bin/netpol"]\n' > "$ctx/Dockerfile"
  DOCKER_BUILDKIT=0 docker build -q --build-arg BASE="$base" -t "$ref" "$ctx" >/dev/null
  log "built $ref"
fi
echo "$ref"
