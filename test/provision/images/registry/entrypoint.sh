#!/bin/sh
# Entrypoint of the registry:2 stand-in (Debian's docker-registry: the Distribution registry 2.8),
# the official image's own: a config file runs `registry serve FILE`; `serve`, `garbage-collect`,
# `help` or a flag run `registry ...`; anything else is run as it is.
set -e

case "$1" in
  *.yaml | *.yml) set -- registry serve "$@" ;;
  serve | garbage-collect | help | -*) set -- registry "$@" ;;
esac

exec "$@"
