#!/bin/sh
# Entrypoint of the redis:7 stand-in (Debian's Redis 7.0), after the official image's: flags or a
# *.conf first run redis-server with them; `redis-server ...` runs as the redis user, PID 1, in
# /data; any other command (the platform's `sh -c 'exec redis-server ...'`) is run as it is, as root,
# as there. redis-server on PATH is a wrapper that turns protected mode off, as the official build does.
set -e

case ${1:-} in -* | *.conf) set -- redis-server "$@" ;; esac

if [ "${1:-}" = redis-server ] && [ "$(id -u)" = 0 ]; then
  find . \! -user redis -exec chown redis '{}' +
  exec setpriv --reuid=redis --regid=redis --init-groups "$0" "$@"
fi

# As the official image: a umask that keeps the data private unless one was set.
um=$(umask)
if [ "$um" = 0022 ]; then umask 0077; fi

exec "$@"
