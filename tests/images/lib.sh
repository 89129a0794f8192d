# shellcheck shell=bash
# Shared shell helpers for the image builders (source me; bash only).
# Everything built is cached under $JH_CACHE (outside the repo) so warm runs on
# the same machine reuse Go module/build caches, rootfs tarballs and binaries.

: "${JH_CACHE:=/var/cache/jobhandlers}"
export JH_CACHE
export GOMODCACHE="${GOMODCACHE_OVERRIDE:-$JH_CACHE/gomod}"
export GOCACHE="${GOCACHE_OVERRIDE:-$JH_CACHE/gocache}"
export GOFLAGS="-mod=mod -buildvcs=false"
export CGO_ENABLED=0
mkdir -p "$JH_CACHE" "$GOMODCACHE" "$GOCACHE"

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 2; }

# inputs_hash FILE|STRING... -> short sha256 over file contents and literal strings
inputs_hash() {
  local x
  for x in "$@"; do
    if [[ -f $x ]]; then printf 'file:%s\n' "$(basename "$x")"; cat "$x"
    elif [[ -d $x ]]; then (cd "$x" && find . -type f ! -path '*/.work/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
    else printf 'str:%s\n' "$x"; fi
  done | sha256sum | cut -c1-16
}

# image_label IMAGE LABEL -> value of the label, empty when image or label missing
image_label() {
  docker image inspect -f "{{ index .Config.Labels \"$2\" }}" "$1" 2>/dev/null | grep -v '^<no value>$' || true
}

# debian_mirror -> the first Debian mirror URI configured on this host (read at run time)
debian_mirror() {
  local f uri=""
  for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] || continue
    uri=$(awk '/^URIs:/{for(i=2;i<=NF;i++) if ($i !~ /security/) {print $i; exit}}' "$f")
    [[ -n $uri ]] && break
  done
  if [[ -z $uri && -f /etc/apt/sources.list ]]; then
    uri=$(awk '$1=="deb" && $0 !~ /security/ {for(i=2;i<=NF;i++) if ($i ~ /^https?:/) {print $i; exit}}' /etc/apt/sources.list)
  fi
  [[ -n $uri ]] || die "no Debian mirror found in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list"
  printf '%s\n' "$uri"
}

# take_lock NAME: hold an exclusive lock for the rest of the calling script, so
# concurrent builders (CI + helpers on one machine) do not race on one output
take_lock() {
  mkdir -p "$JH_CACHE/locks"
  exec 8>"$JH_CACHE/locks/$1.lock"
  flock 8
}

# drop_if_dangling IMAGE_ID: remove a replaced image once nothing uses or tags it
drop_if_dangling() {
  [[ -n $1 ]] || return 0
  [[ -z $(docker image inspect -f '{{join .RepoTags ","}}' "$1" 2>/dev/null) ]] || return 0
  docker rmi "$1" >/dev/null 2>&1 || true
}
