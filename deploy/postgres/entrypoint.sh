#!/bin/sh
# What the postgres image from Docker Hub does with its variables, for Debian's PostgreSQL 15: on
# an empty data folder, initdb with POSTGRES_USER and POSTGRES_PASSWORD, and POSTGRES_DB created;
# then the server, listening on every address, password-checked (scram-sha-256).
set -eu
BIN=/usr/lib/postgresql/15/bin
PGDATA=${PGDATA:-/var/lib/postgresql/data}
user=${POSTGRES_USER:-postgres}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
  password_file=$(mktemp)
  printf '%s' "$POSTGRES_PASSWORD" >"$password_file"
  "$BIN/initdb" -D "$PGDATA" -U "$user" --pwfile="$password_file" -E UTF8 \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$password_file"
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
  database=${POSTGRES_DB:-$user}
  if [ "$database" != postgres ]; then
    echo "CREATE DATABASE \"$database\" OWNER \"$user\";" | "$BIN/postgres" --single -D "$PGDATA" postgres >/dev/null
  fi
fi
exec "$BIN/postgres" -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp "$@"
