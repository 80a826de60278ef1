#!/usr/bin/env bash
# `npm test`: every test, on a fresh Debian machine as root too. Provisions what the tests need
# (PostgreSQL, a Docker engine, stand-in base images, Caddy) when missing, type-checks, runs vitest, and ends with "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "== installing dependencies (npm ci)"
  npm ci --no-audit --no-fund
fi

echo "== provisioning PostgreSQL for the tests"
PG_TEST_URL=$(bash test/provision/postgres.sh)
export PG_TEST_URL

echo "== provisioning the Docker engine and the stand-in images (no registry is needed)"
bash test/provision/docker.sh
# The deployment tests' base images, the six database engines' stand-ins, the storage server's and the cluster registry's (built once, then cached).
SLIPWAY_TEST_IMAGES=busybox,debian,node,caddy,postgres,timescale,mysql,redis,clickhouse,mongo,storage,registry bash test/provision/images.sh

echo "== provisioning Caddy (Debian's package) for the routing tests"
bash test/provision/caddy.sh

echo "== provisioning Chromium (the docs page and dashboard tests) and Docker Compose (the container image test)"
bash test/provision/chromium.sh >/dev/null
bash test/provision/compose.sh >/dev/null

echo "== type-checking and building what npm start runs"
npx tsc --noEmit -p .
echo "== lint and format check (biome)"
npx biome check .
npm run -s build
echo "== building the client package (packages/client: JavaScript, declarations, the router's type)"
npm run -s build -w @slipway/client
echo "== building the dashboard (packages/dashboard: type-checked against the client's router type, then Vite)"
npx tsc --noEmit -p packages/dashboard
npm run -s build:dashboard >/dev/null
node scripts/dashboard-size.mjs
export SLIPWAY_TEST_BUILT=1
# The engine and every stand-in image are provisioned above: test files skip their own provisionDocker().
export SLIPWAY_TEST_PROVISIONED=1

echo "== running tests"
mkdir -p .test-cache
status=0
npx vitest run --reporter=default --reporter=json --outputFile.json=.test-cache/vitest.json "$@" || status=$?

# A plain closing line CI can read, whatever vitest printed above it.
node -e '
  const r = JSON.parse(require("fs").readFileSync(".test-cache/vitest.json", "utf8"));
  if (r.numTotalTests === 0) { console.log("no tests ran"); process.exit(1); }
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed` + (r.numPendingTests ? `, ${r.numPendingTests} skipped` : ""));
' || status=1
exit $status
