#!/usr/bin/env bash
# Debian's chromium, for test/e2e/docs-page.test.ts (the reference page in a real browser); installed
# when missing. Prints the executable's path; fails loudly when it cannot.
set -euo pipefail
for candidate in chromium chromium-browser; do
  if command -v "$candidate" >/dev/null 2>&1; then command -v "$candidate"; exit 0; fi
done
command -v apt-get >/dev/null || { echo "provision: chromium is missing and there is no apt-get" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "provision: chromium is missing; install it as root: apt-get install chromium" >&2; exit 1; }
echo "provision: installing chromium (apt-get)" >&2
LOG=$(mktemp /tmp/slipway-chromium-apt.XXXXXX)
if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium) >"$LOG" 2>&1; then
  tail -20 "$LOG" >&2; rm -f "$LOG"
  echo "provision: apt-get install chromium failed" >&2; exit 1
fi
rm -f "$LOG"
command -v chromium
