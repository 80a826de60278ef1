#!/bin/sh
# Entrypoint of the mongo:7 stand-in (a MongoDB wire-protocol server in Node, test/standins/mongo-wire,
# in /opt/mongo-wire), after the official image's: `mongod ARGS...` (or just `--flags`) runs it as the
# mongodb user, PID 1, with mongod's container defaults unless given: --port 27017, --dbpath /data/db,
# --bind_ip_all. The server itself reads MONGO_INITDB_ROOT_USERNAME / MONGO_INITDB_ROOT_PASSWORD.
# Any other command is run as it is.
set -eu

case ${1:-} in -*) set -- mongod "$@" ;; esac
[ "${1:-}" = mongod ] || exec "$@"

if [ "$(id -u)" = 0 ]; then
  mkdir -p /data/db /data/configdb
  find /data/db /data/configdb \! -user mongodb -exec chown mongodb:mongodb '{}' +
  exec setpriv --reuid=mongodb --regid=mongodb --init-groups "$0" "$@"
fi

shift
port=1 dbpath=1 bind=1
for a in "$@"; do
  case $a in
    --port | --port=*) port=0 ;;
    --dbpath | --dbpath=*) dbpath=0 ;;
    --bind_ip | --bind_ip=* | --bind_ip_all) bind=0 ;;
  esac
done
[ "$bind" = 0 ] || set -- --bind_ip_all "$@"
[ "$dbpath" = 0 ] || set -- --dbpath /data/db "$@"
[ "$port" = 0 ] || set -- --port 27017 "$@"
exec mongod "$@"
