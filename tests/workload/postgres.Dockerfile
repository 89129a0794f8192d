# PostgreSQL 15 for the kind tests, from Debian's postgresql-15 package.
# Runs as uid 10001; the data directory ($PGDATA, default under /var/lib/postgresql/data,
# mount an emptyDir there) is initialised on first start from POSTGRES_USER,
# POSTGRES_PASSWORD (required) and POSTGRES_DB (default: POSTGRES_USER).
#   BASE_IMAGE  an image with Debian's postgresql-15 installed
#               (offline: jobhandlers/postgres-base:15 built from Debian packages).
ARG BASE_IMAGE=jobhandlers/postgres-base:15
FROM ${BASE_IMAGE}
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint
RUN set -eu; \
    chmod 0755 /usr/local/bin/postgres-entrypoint; \
    rm -rf /var/lib/postgresql/15/main /etc/postgresql/15/main; \
    grep -q ':10001:' /etc/group || echo 'pgdata:x:10001:' >> /etc/group; \
    grep -q ':10001:' /etc/passwd || echo 'pgdata:x:10001:10001:postgres data:/var/lib/postgresql/data:/usr/sbin/nologin' >> /etc/passwd; \
    mkdir -p /var/lib/postgresql/data /var/run/postgresql; \
    chown 10001:10001 /var/lib/postgresql/data /var/run/postgresql; \
    chmod 0777 /var/lib/postgresql/data; chmod 2775 /var/run/postgresql; \
    test -x /usr/lib/postgresql/15/bin/postgres
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PGDATA=/var/lib/postgresql/data/pgdata \
    LANG=C.UTF-8
VOLUME ["/var/lib/postgresql/data"]
USER 10001:10001
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["postgres-entrypoint"]
CMD []
