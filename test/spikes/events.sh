#!/usr/bin/env bash
# Records container events (start, health, kill, die) of every node of a test cluster with nanosecond
# times, until killed: test/spikes/events.sh ID OUT_FILE
set -euo pipefail
id=$1 out=$2
: >"$out"
for sock in /tmp/slipway-cluster-"$id"/nodes/*/docker.sock; do
  node=$(basename "$(dirname "$sock")")
  docker -H "unix://$sock" events --filter type=container \
    --format "{{.TimeNano}} $node {{printf \"%.12s\" .Actor.ID}} {{.Status}} {{index .Actor.Attributes \"name\"}}" >>"$out" &
done
wait
