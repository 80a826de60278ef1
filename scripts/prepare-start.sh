#!/usr/bin/env bash
# `npm start`'s first half (its prestart), under the Node that scripts/ensure-node.sh chose: install the
# dependencies from the lockfile when they are missing or older than it, then build what `npm start` runs.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "== installing dependencies (npm ci)" >&2
  npm ci --no-audit --no-fund
fi
npm run -s build
