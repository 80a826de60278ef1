#!/bin/sh
# Entrypoint of the mysql:8.4 stand-in (Debian's MariaDB 10.11), after the official image's:
# `mysqld ARGS...` (or just `--flags`) starts the server as the mysql user, PID 1, on 3306 from any
# host; on first start into an empty /var/lib/mysql it sets MYSQL_ROOT_PASSWORD (root@localhost and
# root@MYSQL_ROOT_HOST, default '%'), creates MYSQL_DATABASE and MYSQL_USER/MYSQL_PASSWORD@'%' with
# all privileges on it, and runs /docker-entrypoint-initdb.d (*.sql, *.sh). Any other command is run
# as it is.
set -eu

case ${1:-} in -*) set -- mysqld "$@" ;; esac
case ${1:-} in mysqld | mariadbd) ;; *) exec "$@" ;; esac

DATADIR=/var/lib/mysql
SOCKET=/run/mysqld/mysqld.sock

if [ "$(id -u)" = 0 ]; then
  mkdir -p "$DATADIR" /run/mysqld
  find "$DATADIR" /run/mysqld \! -user mysql -exec chown mysql:mysql '{}' +
  exec setpriv --reuid=mysql --regid=mysql --init-groups "$0" "$@"
fi

# SQL string and identifier literals; sql prints a statement as it is (dash's echo would read backslashes).
sql() { printf '%s\n' "$*"; }
str() { printf "'%s'" "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e "s/'/''/g")"; }
ident() { printf '`%s`' "$(printf '%s' "$1" | sed -e 's/`/``/g')"; }

if [ ! -d "$DATADIR/mysql" ]; then
  if [ -z "${MYSQL_ROOT_PASSWORD:-}" ] && [ -z "${MYSQL_ALLOW_EMPTY_PASSWORD:-}" ] && [ -z "${MYSQL_RANDOM_ROOT_PASSWORD:-}" ]; then
    echo "error: database is uninitialized and password option is not specified" >&2
    echo "  You need to specify one of MYSQL_ROOT_PASSWORD, MYSQL_ALLOW_EMPTY_PASSWORD and MYSQL_RANDOM_ROOT_PASSWORD" >&2
    exit 1
  fi
  if [ -n "${MYSQL_RANDOM_ROOT_PASSWORD:-}" ] && [ -z "${MYSQL_ROOT_PASSWORD:-}" ]; then
    MYSQL_ROOT_PASSWORD=$(od -An -N18 -tx1 /dev/urandom | tr -d ' \n')
    echo "GENERATED ROOT PASSWORD: $MYSQL_ROOT_PASSWORD"
  fi
  root_pw=${MYSQL_ROOT_PASSWORD:-}
  root_host=${MYSQL_ROOT_HOST:-%}

  echo "mysql-standin: initializing $DATADIR"
  mariadb-install-db --datadir="$DATADIR" --auth-root-authentication-method=normal --skip-test-db \
    --skip-name-resolve --skip-log-bin --default-time-zone=SYSTEM >/dev/null
  # A server on the socket only while initializing: nothing connects before it is ready.
  "$@" --skip-networking --socket="$SOCKET" --skip-log-bin &
  pid=$!
  i=0
  until mariadb --protocol=socket --socket="$SOCKET" -uroot -e 'SELECT 1' >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || { echo "mysql-standin: the server stopped while initializing" >&2; exit 1; }
    i=$((i + 1))
    [ "$i" -lt 300 ] || { echo "mysql-standin: the server did not start in 30 s" >&2; exit 1; }
    sleep 0.1
  done

  {
    # Only root@localhost (with the password) and root@MYSQL_ROOT_HOST; no anonymous users.
    sql "DELETE FROM mysql.global_priv WHERE User = '' OR (User = 'root' AND Host <> 'localhost');"
    sql "DELETE FROM mysql.proxies_priv WHERE NOT (User = 'root' AND Host = 'localhost');"
    sql "FLUSH PRIVILEGES;"
    sql "ALTER USER 'root'@'localhost' IDENTIFIED BY $(str "$root_pw");"
    if [ "$root_host" != localhost ]; then
      sql "CREATE USER 'root'@$(str "$root_host") IDENTIFIED BY $(str "$root_pw");"
      sql "GRANT ALL ON *.* TO 'root'@$(str "$root_host") WITH GRANT OPTION;"
    fi
    if [ -n "${MYSQL_DATABASE:-}" ]; then
      sql "CREATE DATABASE IF NOT EXISTS $(ident "$MYSQL_DATABASE");"
    fi
    if [ -n "${MYSQL_USER:-}" ] && [ -n "${MYSQL_PASSWORD:-}" ]; then
      sql "CREATE USER $(str "$MYSQL_USER")@'%' IDENTIFIED BY $(str "$MYSQL_PASSWORD");"
      if [ -n "${MYSQL_DATABASE:-}" ]; then
        sql "GRANT ALL ON $(ident "$MYSQL_DATABASE").* TO $(str "$MYSQL_USER")@'%';"
      fi
    fi
    sql "FLUSH PRIVILEGES;"
  } | mariadb --protocol=socket --socket="$SOCKET" -uroot

  for f in /docker-entrypoint-initdb.d/*; do
    case $f in
      *.sql)
        echo "mysql-standin: running $f"
        MYSQL_PWD=$root_pw mariadb --protocol=socket --socket="$SOCKET" -uroot ${MYSQL_DATABASE:+"$MYSQL_DATABASE"} <"$f"
        ;;
      *.sh) echo "mysql-standin: running $f"; . "$f" ;;
      *) ;;
    esac
  done

  kill -TERM "$pid"
  wait "$pid" || true
  echo "mysql-standin: init done; starting"
fi

exec "$@"
