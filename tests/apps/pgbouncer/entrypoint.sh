#!/bin/sh
# pgbouncer on $LISTEN_ADDR:$LISTEN_PORT (default 0.0.0.0:6432: the kubelet's tcpSocket probe
# dials the pod IP; clients still need the SCRAM password) in front of $UPSTREAM_HOST:$UPSTREAM_PORT, for the
# one user and password of $DATABASE_URL (postgresql://user:password@host:port/db; the
# host part is where the application connects, i.e. this proxy). Session pooling, so
# advisory locks (migrations) keep their meaning. Config goes to $PGBOUNCER_DIR (a tmp
# emptyDir: the root filesystem is read-only). SIGTERM = immediate shutdown: as a native
# sidecar it only comes after the handler container has exited.
set -eu
: "${DATABASE_URL:?DATABASE_URL is required}" "${UPSTREAM_HOST:?UPSTREAM_HOST is required}"
url=${DATABASE_URL#*://}
creds=${url%%@*}
user=${creds%%:*}
pass=${creds#*:}
dir=${PGBOUNCER_DIR:-/tmp/pgbouncer}
mkdir -p "$dir"
umask 077
printf '"%s" "%s"\n' "$user" "$pass" > "$dir/userlist.txt"
cat > "$dir/pgbouncer.ini" <<INI
[databases]
* = host=$UPSTREAM_HOST port=${UPSTREAM_PORT:-5432}

[pgbouncer]
listen_addr = ${LISTEN_ADDR:-0.0.0.0}
listen_port = ${LISTEN_PORT:-6432}
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $dir/userlist.txt
pool_mode = session
max_client_conn = 200
default_pool_size = 40
ignore_startup_parameters = extra_float_digits,options
log_connections = 0
log_disconnections = 0
INI
echo "pgbouncer: ${LISTEN_ADDR:-0.0.0.0}:${LISTEN_PORT:-6432} -> $UPSTREAM_HOST:${UPSTREAM_PORT:-5432} as $user"
exec pgbouncer "$dir/pgbouncer.ini"
