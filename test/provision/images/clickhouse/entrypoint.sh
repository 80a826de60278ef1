#!/bin/sh
# Entrypoint of the clickhouse/clickhouse-server:24 stand-in (Debian's ClickHouse 18.16), after the
# official image's: no arguments or `--flags` run clickhouse-server as the clickhouse user, PID 1.
# CLICKHOUSE_USER / CLICKHOUSE_PASSWORD (set, or a user other than `default`) replace the `default`
# user by that one, with the password, reachable from any host (a users.d/ file written here: 18.16
# has no SQL users, so CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT is accepted and has no effect). On first
# start (no /var/lib/clickhouse/data yet) a server on 127.0.0.1 only creates CLICKHOUSE_DB and runs
# /docker-entrypoint-initdb.d (*.sql, *.sh). Any other command is run as it is.
set -eu

CONFIG=${CLICKHOUSE_CONFIG:-/etc/clickhouse-server/config.xml}
DATA_DIR=/var/lib/clickhouse

if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then exec "$@"; fi

if [ "$(id -u)" = 0 ]; then
  CLICKHOUSE_USER=${CLICKHOUSE_USER:-default}
  CLICKHOUSE_PASSWORD=${CLICKHOUSE_PASSWORD:-}
  xml() { printf '%s' "$1" | sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g'; }
  users_file=/etc/clickhouse-server/users.d/default-user.xml
  if [ "$CLICKHOUSE_USER" != default ] || [ -n "$CLICKHOUSE_PASSWORD" ]; then
    case $CLICKHOUSE_USER in
      *[!A-Za-z0-9_.-]* | [!A-Za-z_]*) echo "clickhouse-standin: CLICKHOUSE_USER '$CLICKHOUSE_USER' is not a usable name" >&2; exit 1 ;;
    esac
    echo "clickhouse-standin: create new user '$CLICKHOUSE_USER' instead of 'default'"
    mkdir -p "${users_file%/*}"
    {
      echo '<yandex>'
      echo '  <users>'
      echo '    <default remove="remove"></default>'
      echo "    <$CLICKHOUSE_USER>"
      echo '      <profile>default</profile>'
      echo '      <networks><ip>::/0</ip></networks>'
      printf '      <password>%s</password>\n' "$(xml "$CLICKHOUSE_PASSWORD")"
      echo '      <quota>default</quota>'
      echo "    </$CLICKHOUSE_USER>"
      echo '  </users>'
      echo '</yandex>'
    } >"$users_file"
    chown root:clickhouse "$users_file"
    chmod 0640 "$users_file"
  else
    rm -f "$users_file"
  fi
  mkdir -p "$DATA_DIR" /var/log/clickhouse-server
  find "$DATA_DIR" /var/log/clickhouse-server \! -user clickhouse -exec chown clickhouse:clickhouse '{}' +
  cd "$DATA_DIR"
  exec setpriv --reuid=clickhouse --regid=clickhouse --init-groups "$0" "$@"
fi

if [ ! -d "$DATA_DIR/data" ] && { [ -n "${CLICKHOUSE_DB:-}" ] || [ -n "$(ls -A /docker-entrypoint-initdb.d 2>/dev/null)" ]; }; then
  echo "clickhouse-standin: initializing $DATA_DIR"
  # A server on 127.0.0.1 only while initializing: nothing connects from outside before it is ready.
  clickhouse-server --config-file="$CONFIG" -- --listen_host=127.0.0.1 &
  pid=$!
  client() { clickhouse-client --host 127.0.0.1 --user "${CLICKHOUSE_USER:-default}" --password "${CLICKHOUSE_PASSWORD:-}" "$@"; }
  i=0
  until client -q 'SELECT 1' >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || { echo "clickhouse-standin: the server stopped while initializing" >&2; exit 1; }
    i=$((i + 1))
    [ "$i" -lt 300 ] || { echo "clickhouse-standin: the server did not start in 30 s" >&2; exit 1; }
    sleep 0.1
  done
  if [ -n "${CLICKHOUSE_DB:-}" ]; then
    client -q "CREATE DATABASE IF NOT EXISTS \`$(printf '%s' "$CLICKHOUSE_DB" | sed 's/`/\\`/g')\`"
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case $f in
      *.sql) echo "clickhouse-standin: running $f"; client --multiquery <"$f" ;;
      *.sh) echo "clickhouse-standin: running $f"; . "$f" ;;
      *) ;;
    esac
  done
  kill -TERM "$pid"
  wait "$pid" || true
  echo "clickhouse-standin: init done; starting"
fi

exec clickhouse-server --config-file="$CONFIG" "$@"
