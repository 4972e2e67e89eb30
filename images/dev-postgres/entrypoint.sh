#!/bin/bash
# dev-postgres (a dev backend, never for production): initialise a cluster in $PGDATA
# (first start), create the application role and database, then run PostgreSQL in the
# foreground.
#   APP_USER, APP_DB       role and database to create (default hive / metastore)
#   APP_USER_FILE          or: a file holding the role's name (a mounted Secret key)
#   APP_PASSWORD_FILE      file holding the role's password (required)
# Network clients authenticate with scram-sha-256; the local socket trusts the
# `postgres` superuser (for `podman exec ... psql`).
set -euo pipefail
bin=/usr/local/lib/postgresql-bin
if [ -n "${APP_USER_FILE:-}" ]; then
  user="$(cat -- "$APP_USER_FILE")"
else
  user="${APP_USER:-hive}"
fi
db="${APP_DB:-metastore}"
: "${APP_PASSWORD_FILE:?APP_PASSWORD_FILE (a file holding the role password) is required}"

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  "$bin/initdb" --pgdata="$PGDATA" --username=postgres --auth-local=trust \
    --auth-host=scram-sha-256 --encoding=UTF8 --no-locale >/dev/null
  {
    echo "listen_addresses = '*'"
    echo "unix_socket_directories = '/tmp'"
    echo "password_encryption = 'scram-sha-256'"
  } >>"$PGDATA/postgresql.conf"
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
  "$bin/pg_ctl" --pgdata="$PGDATA" --options="-c listen_addresses=''" --wait start >/dev/null
  password="$(cat -- "$APP_PASSWORD_FILE")"
  "$bin/psql" --host=/tmp --username=postgres --dbname=postgres --quiet --set ON_ERROR_STOP=1 \
    --set user="$user" --set db="$db" --set password="$password" <<'SQL'
CREATE ROLE :"user" LOGIN PASSWORD :'password';
CREATE DATABASE :"db" OWNER :"user";
SQL
  "$bin/pg_ctl" --pgdata="$PGDATA" --mode=fast --wait stop >/dev/null
fi
exec "$bin/postgres" -D "$PGDATA"
