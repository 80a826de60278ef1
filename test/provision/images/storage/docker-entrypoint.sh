#!/bin/sh
# Entrypoint of the versity/versitygw stand-in, after the official image's contract: with arguments it
# runs `versitygw ARGS` (the platform passes `posix /data`); without, it builds them from VGW_ARGS
# (global flags), VGW_BACKEND (posix only here), VGW_BACKEND_ARG (the directory) and VGW_BACKEND_ARGS.
# Runs as root, PID 1, as the official image does.
set -eu

if [ "$#" -gt 0 ]; then
  exec versitygw "$@"
fi
if [ -z "${VGW_BACKEND:-}" ]; then
  echo "No command arguments were provided and VGW_BACKEND is unset (posix is the stand-in's only backend)." >&2
  exit 1
fi
# shellcheck disable=SC2086
set -- ${VGW_ARGS:-} "$VGW_BACKEND"
[ -n "${VGW_BACKEND_ARG:-}" ] && set -- "$@" "$VGW_BACKEND_ARG"
# shellcheck disable=SC2086
[ -n "${VGW_BACKEND_ARGS:-}" ] && set -- "$@" ${VGW_BACKEND_ARGS}
exec versitygw "$@"
