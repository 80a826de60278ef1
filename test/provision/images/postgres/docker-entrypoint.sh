#!/bin/sh
# Entrypoint of the postgres:17 stand-in (Debian's PostgreSQL 15), after the official image's:
# `postgres ARGS...` (or just `-c ...` flags) starts the server as the postgres user, PID 1; on first
# start into an empty $PGDATA it runs initdb for POSTGRES_USER / POSTGRES_PASSWORD (password auth,
# scram-sha-256, from any host over TCP), creates POSTGRES_DB, and runs /docker-entrypoint-initdb.d
# (*.sql, *.sh). Any other command is run as it is.
set -eu

case ${1:-} in -*) set -- postgres "$@" ;; esac
[ "${1:-}" = postgres ] || exec "$@"

: "${PGDATA:=/var/lib/postgresql/data}"
export PGDATA

if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chmod 00700 "$PGDATA"
  find "$PGDATA" /var/run/postgresql \! -user postgres -exec chown postgres:postgres '{}' +
  chmod 03777 /var/run/postgresql
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_USER:=postgres}"
  : "${POSTGRES_DB:=$POSTGRES_USER}"
  : "${POSTGRES_HOST_AUTH_METHOD:=scram-sha-256}"
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != trust ]; then
    echo "Error: Database is uninitialized and superuser password is not specified." >&2
    echo "       Set POSTGRES_PASSWORD (or POSTGRES_HOST_AUTH_METHOD=trust)." >&2
    exit 1
  fi
  echo "postgres-standin: initializing $PGDATA (user $POSTGRES_USER, database $POSTGRES_DB)"
  pwfile=""
  if [ -n "${POSTGRES_PASSWORD:-}" ]; then
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  fi
  # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of flags, as in the official image
  initdb --username="$POSTGRES_USER" ${pwfile:+--pwfile="$pwfile"} ${POSTGRES_INITDB_ARGS:-} -D "$PGDATA"
  [ -z "$pwfile" ] || rm -f "$pwfile"
  # initdb trusts local socket and loopback connections; every other host gives a password.
  printf '\nhost all all all %s\n' "$POSTGRES_HOST_AUTH_METHOD" >>"$PGDATA/pg_hba.conf"

  # A server on the socket only while initializing: nothing connects before it is ready.
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p ${PGPORT:-5432}" -w start
  run_psql() { psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc "$@"; }
  if [ "$POSTGRES_DB" != postgres ]; then
    echo 'CREATE DATABASE :"db";' | run_psql --dbname postgres --set db="$POSTGRES_DB"
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case $f in
      *.sql) echo "postgres-standin: running $f"; run_psql --dbname "$POSTGRES_DB" -f "$f" ;;
      *.sh) echo "postgres-standin: running $f"; . "$f" ;;
      *) ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop
  echo "postgres-standin: init done; starting"
fi

exec "$@"
