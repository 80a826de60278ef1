#!/usr/bin/env bash
# Makes a Docker Engine reachable (for `npm start` as root on Debian, and for the tests): installs Debian's docker.io when missing and starts
# dockerd in the background when nothing answers. Fails loudly when it cannot: never a silent skip.
set -euo pipefail
LOG=${DOCKERD_LOG:-/tmp/slipway-dockerd.log}

if docker info >/dev/null 2>&1; then exit 0; fi

if ! command -v dockerd >/dev/null 2>&1; then
  echo "provision: installing docker.io (apt-get)" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null) >&2
fi
command -v dockerd >/dev/null || { echo "provision: dockerd is not installable here" >&2; exit 1; }

if ! pgrep -x dockerd >/dev/null; then
  echo "provision: starting dockerd" >&2
  # Its own session: a dockerd left in the caller's process group dies with it (a test run, a CI step).
  setsid nohup dockerd >>"$LOG" 2>&1 < /dev/null &
fi
for _ in $(seq 1 60); do
  docker info >/dev/null 2>&1 && exit 0
  sleep 1
done
echo "provision: the Docker engine did not answer within 60 s; see $LOG" >&2
tail -20 "$LOG" >&2 || true
exit 1
