#!/usr/bin/env bash
# Docker Compose for test/e2e/container-image.test.ts: Debian bookworm has no compose plugin
# (docker-compose-plugin), only the standalone docker-compose 1.29; installed when missing. Prints
# the command to use ("docker compose" or "docker-compose"), or nothing when none is installable
# (the test then runs the equivalent `docker run` and says so).
set -uo pipefail
if docker compose version >/dev/null 2>&1; then echo "docker compose"; exit 0; fi
if ! command -v docker-compose >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "provision: installing docker-compose (apt-get)" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq docker-compose) >/dev/null 2>&1 || echo "provision: docker-compose is not installable here" >&2
fi
command -v docker-compose >/dev/null 2>&1 && echo "docker-compose"
exit 0
