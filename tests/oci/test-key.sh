#!/bin/sh
# A throwaway signing key for the signed chart's tests (tests/packaging/test_signing.py, kind
# scenario 12) and for trying `make package SIGN_KEY=… KEYRING=…` by hand: an ed25519 key with
# no passphrase, valid one day, in a new GNUPGHOME under DIR, exported in the legacy format helm
# reads: DIR/secring.gpg (helm package --sign --keyring) and DIR/pubring.gpg (helm verify,
# helm pull/install --verify --keyring). Prints the key's name. Never commit what it writes.
# Usage: tests/oci/test-key.sh DIR [NAME]
set -eu
dir=${1:?usage: tests/oci/test-key.sh DIR [NAME]}
name=${2:-jobhandlers test key}
command -v gpg >/dev/null || { echo "test-key.sh: gpg missing: run \`make deps\` (Debian's gnupg)" >&2; exit 2; }
mkdir -p "$dir"
GNUPGHOME=$(cd "$dir" && pwd)/gnupg
export GNUPGHOME
mkdir -p -m 700 "$GNUPGHOME"
# the agent gpg starts for the key is this key's alone: stopped however the script ends
trap 'gpgconf --kill gpg-agent >/dev/null 2>&1 || true' EXIT
gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
  --quick-gen-key "$name <test@jobhandlers.invalid>" ed25519 sign 1d 2>/dev/null
gpg --batch --export-secret-keys > "$dir/secring.gpg"
gpg --batch --export > "$dir/pubring.gpg"
echo "$name"
