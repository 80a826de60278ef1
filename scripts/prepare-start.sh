#!/usr/bin/env bash
# `npm start`'s first half (its prestart), under the Node that scripts/ensure-node.sh chose: install the
# dependencies from the lockfile when they are missing or older than it, then build what `npm start` runs
# (the server bundle, and the dashboard when its build is missing or older than its sources).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "== installing dependencies (npm ci)" >&2
  npm ci --no-audit --no-fund
fi
npm run -s build
# The web dashboard (packages/dashboard, served at /): built once, and again only when its sources changed.
if [ ! -f dist/dashboard/index.html ] || [ -n "$(find packages/dashboard/src packages/dashboard/public packages/dashboard/index.html packages/dashboard/vite.config.ts package-lock.json -newer dist/dashboard/index.html -print -quit 2>/dev/null)" ]; then
  echo "== building the dashboard (Vite)" >&2
  npm run -s build:dashboard >&2
fi
