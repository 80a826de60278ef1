#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the tests on 127.0.0.1:$PG_TEST_PORT (installing
# Debian's server when missing) and prints its URL. Idempotent: a server already up is reused.
set -euo pipefail
PORT="${PG_TEST_PORT:-54329}"
DIR="${PG_TEST_DIR:-/tmp/slipway-test-pg}"
URL="postgres://slipway:slipway@127.0.0.1:${PORT}/slipway"

find_bin() {
  local name=$1
  command -v "$name" 2>/dev/null && return 0
  ls /usr/lib/postgresql/*/bin/"$name" 2>/dev/null | sort -V | tail -n 1
}

if ! pg_isready -h 127.0.0.1 -p "$PORT" -q 2>/dev/null; then
  if [ -z "$(find_bin initdb)" ] || [ -z "$(find_bin pg_ctl)" ]; then
    echo "provision: installing PostgreSQL (apt-get)" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) >&2
  fi
  INITDB=$(find_bin initdb); PG_CTL=$(find_bin pg_ctl)
  [ -n "$INITDB" ] && [ -n "$PG_CTL" ] || { echo "provision: PostgreSQL is not installable here" >&2; exit 1; }
  RUN_AS=()
  [ "$(id -u)" = 0 ] && RUN_AS=(runuser -u postgres --)
  if [ ! -f "$DIR/PG_VERSION" ]; then
    rm -rf "$DIR"; mkdir -p "$DIR"; [ "$(id -u)" = 0 ] && chown postgres "$DIR"
    echo slipway > "$DIR.pw"; [ "$(id -u)" = 0 ] && chown postgres "$DIR.pw"
    "${RUN_AS[@]}" "$INITDB" -D "$DIR" -U slipway --pwfile="$DIR.pw" -A scram-sha-256 >/dev/null
  fi
  "${RUN_AS[@]}" "$PG_CTL" -D "$DIR" -l "$DIR/server.log" -w -t 30 \
    -o "-p $PORT -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start >/dev/null
  PGPASSWORD=slipway psql -h 127.0.0.1 -p "$PORT" -U slipway -d postgres -tAc "select 1 from pg_database where datname='slipway'" | grep -q 1 \
    || PGPASSWORD=slipway psql -h 127.0.0.1 -p "$PORT" -U slipway -d postgres -qc "create database slipway" >/dev/null
fi
echo "$URL"
