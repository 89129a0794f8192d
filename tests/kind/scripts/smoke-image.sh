#!/usr/bin/env bash
# Build the smoke-test image (static smoke-agent binary on an empty rootfs,
# no registry) and print its reference. Tag = hash of the sources.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../smoke-agent" && pwd)
source "$here/../../images/lib.sh"
tag=$(inputs_hash "$src" "$0" "$(go env GOVERSION)")
ref=jobhandlers/kind-smoke:$tag
if ! docker image inspect "$ref" >/dev/null 2>&1; then
  r=$(mktemp -d); trap 'rm -rf "$r"' EXIT
  chmod 0755 "$r"
  mkdir -p "$r/tmp" "$r/etc" "$r/usr/local/bin" && chmod 1777 "$r/tmp"
  printf 'root:x:0:0::/:/sbin/nologin\nnobody:x:65534:65534::/:/sbin/nologin\n' > "$r/etc/passwd"
  (cd "$src" && go build -trimpath -ldflags '-s -w' -o "$r/usr/local/bin/smoke-agent" .)
  tar --numeric-owner -C "$r" -c . | docker import \
    --change 'ENTRYPOINT ["/usr/local/bin/smoke-agent"]' --change 'USER 65534' - "$ref" >/dev/null
  log "built $ref"
fi
echo "$ref"
