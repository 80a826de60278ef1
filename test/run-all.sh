#!/usr/bin/env bash
# `npm test`: every test, on a fresh Debian machine as root too. Provisions what the tests need
# (PostgreSQL, a Docker engine, stand-in base images, Caddy) when missing, type-checks, runs vitest, and ends with "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "== installing dependencies (npm ci)"
  npm ci --no-audit --no-fund
fi

mkdir -p .test-cache
# Type-checking, lint and the builds need no provisioning, and provisioning mostly waits on apt, Docker and
# the network: they run side by side (each build step's output is kept in .test-cache/prelude-*.log and
# printed when it is done). Provisioning stays one step after another: its apt installs share dpkg's lock.
prelude() {
  local name=$1
  shift
  if "$@" >".test-cache/prelude-$name.log" 2>&1; then
    echo "-- $name: done"
    cat ".test-cache/prelude-$name.log"
  else
    echo "-- $name: FAILED"
    cat ".test-cache/prelude-$name.log"
    return 1
  fi
}
echo "== type-checking (tsc), lint and format check (biome), building what npm start runs, the client package and the dashboard, beside the provisioning"
prelude typecheck npx tsc --noEmit -p . &
typecheck=$!
prelude lint npx biome check . &
lint=$!
(
  prelude build npm run -s build &&
    # packages/client: JavaScript, declarations, the router's type; the dashboard is type-checked against it, then built by Vite.
    prelude client npm run -s build -w @slipway/client &&
    prelude dashboard-typecheck npx tsc --noEmit -p packages/dashboard &&
    prelude dashboard sh -c 'npm run -s build:dashboard >/dev/null && node scripts/dashboard-size.mjs'
) &
builds=$!
# A provisioning step that fails ends the script: the builds beside it end with it.
trap 'kill "$typecheck" "$lint" "$builds" 2>/dev/null || true' EXIT

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

prepared=0
for job in "$typecheck" "$lint" "$builds"; do wait "$job" || prepared=1; done
if [ "$prepared" -ne 0 ]; then
  echo "type-checking, lint or a build failed (above): no tests ran"
  exit 1
fi
trap - EXIT
export SLIPWAY_TEST_BUILT=1
# The engine and every stand-in image are provisioned above: test files skip their own provisionDocker().
export SLIPWAY_TEST_PROVISIONED=1

echo "== running tests"
status=0
# How busy the machine's CPUs were while the tests ran (the suite's budget is set by its 2 cores):
# /proc/stat's first line before and after, idle and iowait counted as not busy.
cpu_ticks() { awk '/^cpu /{ print $2+$3+$4+$7+$8+$9, $5+$6 }' /proc/stat; }
read -r busy_before idle_before < <(cpu_ticks)
tests_started=$SECONDS
npx vitest run --reporter=default --reporter=json --outputFile.json=.test-cache/vitest.json "$@" || status=$?
read -r busy_after idle_after < <(cpu_ticks)
awk -v b=$((busy_after - busy_before)) -v i=$((idle_after - idle_before)) -v s=$((SECONDS - tests_started)) -v n="$(nproc)" \
  'BEGIN { if (b + i > 0) printf "tests: %d s; CPU %.0f%% busy over %d cores meanwhile\n", s, 100 * b / (b + i), n }'

# A plain closing line CI can read, whatever vitest printed above it.
node -e '
  const r = JSON.parse(require("fs").readFileSync(".test-cache/vitest.json", "utf8"));
  if (r.numTotalTests === 0) { console.log("no tests ran"); process.exit(1); }
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed` + (r.numPendingTests ? `, ${r.numPendingTests} skipped` : ""));
' || status=1
exit $status
