#!/bin/sh
# Initialise $PGDATA on first start (POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB),
# then exec postgres in the foreground (SIGINT/SIGTERM go straight to it). Non-root only.
set -eu
log() { printf 'postgres-entrypoint: %s\n' "$*" >&2; }
if [ "$(id -u)" = 0 ]; then log "refusing to run as root; run as a non-root uid (the image uses 10001)"; exit 2; fi
: "${PGDATA:=/var/lib/postgresql/data/pgdata}"
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
if [ -z "${POSTGRES_PASSWORD:-}" ]; then log "POSTGRES_PASSWORD is not set; set it (clients connect with a password over TCP)"; exit 2; fi
# Unix socket only where writable (a read-only root filesystem has no writable /var/run).
sockets=""
for dir in "${PG_SOCKET_DIR:-/var/run/postgresql}" /tmp; do
  if [ -d "$dir" ] && [ -w "$dir" ]; then sockets=$dir; break; fi
done
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  log "initialising $PGDATA for user $POSTGRES_USER, database $POSTGRES_DB"
  mkdir -p "$PGDATA"
  chmod 0700 "$PGDATA"
  pwfile=$(mktemp "${PGDATA%/*}/.pw.XXXXXX")
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" -E UTF8 --locale=C \
         --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  printf 'host all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256\n' >> "$PGDATA/pg_hba.conf"
  if [ "$POSTGRES_DB" != postgres ]; then
    printf 'CREATE DATABASE "%s" OWNER "%s";\n' "$POSTGRES_DB" "$POSTGRES_USER" |
      postgres --single -D "$PGDATA" -c unix_socket_directories= postgres >/dev/null
  fi
  log "initialised"
fi
log "starting postgres (socket dir: ${sockets:-none, TCP only})"
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories="$sockets" "$@"
