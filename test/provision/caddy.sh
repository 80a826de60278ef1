#!/usr/bin/env bash
# Installs Debian's caddy when missing: routing tests start their own Caddy processes from it
# (admin API on 127.0.0.1, temporary state). The package's own service is not started.
set -euo pipefail
if ! command -v caddy >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || { echo "provision: caddy is missing and installing it needs root (apt-get install caddy)" >&2; exit 1; }
  echo "provision: installing Caddy (apt-get)" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends caddy >/dev/null) >&2
  command -v caddy >/dev/null 2>&1 || { echo "provision: caddy is not installable here" >&2; exit 1; }
  # A system Caddy the package may have started would hold :80 and the default admin port.
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet caddy 2>/dev/null; then systemctl stop caddy || true; fi
fi
# Caddy replaces its listening socket at every configuration load: with this (Linux 5.14+), connections
# waiting on the old one move to the new one instead of being reset. The platform sets it too.
if [ -w /proc/sys/net/ipv4/tcp_migrate_req ]; then echo 1 > /proc/sys/net/ipv4/tcp_migrate_req; fi
