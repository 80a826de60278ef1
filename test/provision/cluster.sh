#!/usr/bin/env bash
# A Docker Swarm test cluster on one machine: extra Docker engines ("nodes"), each in network, mount
# and UTS namespaces of its own, on a bridge that lives in a "hub" network namespace. The host's own
# engine is never touched (no swarm mode on it); the host only gains one veth (removed by `down`).
# Facts behind each step: /work/shared/design/test-cluster-notes.md and docs/cluster-findings.md.
#
#   cluster.sh up ID NODE...           network, engines (not joined: see join); prints the state dir
#   cluster.sh join ID                 swarm init on the first node, the others join as workers
#   cluster.sh ensure ID NODE...       up (unless built) and join, one caller at a time: a shared cluster
#   cluster.sh wait-ready ID MANAGER NODE...  until the manager sees each NODE Ready
#   cluster.sh start-node ID NODE      (re)starts a node's engine on its kept data root
#   cluster.sh kill-node ID NODE       a lost machine: SIGKILL of its dockerd, containerd, shims and
#                                      containers, all at once (frozen first, through the freezer cgroup)
#   cluster.sh restart-node ID NODE    the node's engine (and its containers) stopped by their cgroup, then
#                                      started again with nodes/<node>/dockerd.args (what the join script
#                                      does to a node's engine; it may run in the node's network namespace)
#   cluster.sh load-images ID NODE IMAGE...   docker save (host engine) | docker load (node)
#   cluster.sh down ID                 kills every node, removes namespaces, veths, cgroups, the state dir
#   cluster.sh sweep                   `down` for every cluster whose owner process is gone
#
# ID: 3-8 lower-case letters/digits. State: /tmp/slipway-cluster-ID (nodes/<node>/{data,etc,docker.sock,
# dockerd.log}, env). Node k (0-based, in the order given to `up`) has 100.64.S.(10+k) on the hub's
# bridge; the host has 100.64.S.1 (device slwc<ID>). The first node is the manager.
# Needs root, iproute2, util-linux (nsenter, unshare), Debian's docker.io (dockerd 20.10).
set -euo pipefail

die() { echo "cluster: ERROR: $*" >&2; exit 1; }
log() { echo "cluster: $(date +%T) $*" >&2; }
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
ROOT_PREFIX=${SLIPWAY_CLUSTER_ROOT:-/tmp}/slipway-cluster-
CG_PREFIX=slipway-cluster-
CONTROLLERS=(cpu cpuacct cpuset memory devices freezer blkio pids systemd)

valid_id() { [[ $1 =~ ^[a-z0-9]{3,8}$ ]] || die "bad cluster id '$1' (3-8 of a-z0-9)"; }
valid_node() { [[ $1 =~ ^[a-z][a-z0-9]{0,5}$ ]] || die "bad node name '$1' (1-6 of a-z0-9, a letter first)"; }
dir_of() { echo "$ROOT_PREFIX$1"; }
ns_of() { echo "slwc-$1-$2"; }      # network namespace of node $2 (or "hub") of cluster $1
hostdev_of() { echo "slwc$1"; }      # the host's end of the hub veth (<= 12 chars)
sock_of() { echo "$(dir_of "$1")/nodes/$2/docker.sock"; }
dk() { local id=$1 node=$2; shift 2; docker -H "unix://$(sock_of "$id" "$node")" "$@"; }

[ "$(id -u)" = 0 ] || die "needs root (network namespaces, a Docker engine per node)"

# --- pids of a node --------------------------------------------------------------------------------
# Every process of a node: its cgroup tree (the engine is put in <parent>/daemon, containers are in
# <parent>/<id> through --cgroup-parent) and, in case one escaped, any process in its netns.
node_pids() {
  local id=$1 node=$2 cg ns_inode
  for cg in pids freezer; do
    [ -d "/sys/fs/cgroup/$cg/$CG_PREFIX$id/$node" ] || continue
    find "/sys/fs/cgroup/$cg/$CG_PREFIX$id/$node" -name cgroup.procs -exec cat {} + 2>/dev/null
  done
  if [ "${3:-}" = with-netns ] && [ -e "/run/netns/$(ns_of "$id" "$node")" ]; then
    ns_inode=$(stat -L -c %i "/run/netns/$(ns_of "$id" "$node")")
    find /proc -mindepth 3 -maxdepth 3 -path '/proc/[0-9]*/ns/net' -lname "net:\\[$ns_inode\\]" 2>/dev/null | cut -d/ -f3
  fi
  true
}

kill_node() {
  local id=$1 node=$2 freezer pids tries
  freezer=/sys/fs/cgroup/freezer/$CG_PREFIX$id/$node
  # Frozen first: nothing of the node runs (or starts a child) between the first kill and the last.
  [ -d "$freezer" ] && echo FROZEN >"$freezer/freezer.state" 2>/dev/null || true
  pids=$(node_pids "$id" "$node" with-netns | sort -un | tr '\n' ' ')
  # shellcheck disable=SC2086
  [ -n "${pids// /}" ] && kill -9 $pids 2>/dev/null || true
  [ -d "$freezer" ] && echo THAWED >"$freezer/freezer.state" 2>/dev/null || true
  for tries in $(seq 1 100); do
    pids=$(node_pids "$id" "$node" | sort -un | tr '\n' ' ')
    [ -z "${pids// /}" ] && break
    # shellcheck disable=SC2086
    kill -9 $pids 2>/dev/null || true
    sleep 0.1
  done
  pids=$(node_pids "$id" "$node" with-netns | sort -un | tr '\n' ' ')
  [ -z "${pids// /}" ] || die "node $node of cluster $id: processes left after SIGKILL: $pids"
  rm -f "$(sock_of "$id" "$node")"
}

# The node's engine and containers, by their cgroup only: the caller may live in the node's network
# namespace (the join script) and must survive.
stop_engine() {
  local id=$1 node=$2 freezer pids
  freezer=/sys/fs/cgroup/freezer/$CG_PREFIX$id/$node
  [ -d "$freezer" ] && echo FROZEN >"$freezer/freezer.state" 2>/dev/null || true
  pids=$(node_pids "$id" "$node" | sort -un | tr '\n' ' ')
  # shellcheck disable=SC2086
  [ -n "${pids// /}" ] && kill -9 $pids 2>/dev/null || true
  [ -d "$freezer" ] && echo THAWED >"$freezer/freezer.state" 2>/dev/null || true
  for _ in $(seq 1 100); do
    pids=$(node_pids "$id" "$node" | sort -un | tr '\n' ' ')
    [ -z "${pids// /}" ] && break
    # shellcheck disable=SC2086
    kill -9 $pids 2>/dev/null || true
    sleep 0.1
  done
  rm -f "$(sock_of "$id" "$node")"
}

# --- cgroups ---------------------------------------------------------------------------------------
cg_make() { # cg_make ID NODE: <parent>/daemon in every v1 controller (cpuset needs cpus/mems set)
  local id=$1 node=$2 c d parent
  for c in "${CONTROLLERS[@]}"; do
    [ -d "/sys/fs/cgroup/$c" ] || continue
    parent=/sys/fs/cgroup/$c
    for d in "$CG_PREFIX$id" "$node" daemon; do
      mkdir -p "$parent/$d"
      if [ "$c" = cpuset ]; then
        [ -s "$parent/$d/cpuset.cpus" ] || cat "$parent/cpuset.cpus" >"$parent/$d/cpuset.cpus"
        [ -s "$parent/$d/cpuset.mems" ] || cat "$parent/cpuset.mems" >"$parent/$d/cpuset.mems"
      fi
      parent=$parent/$d
    done
  done
}
cg_remove() { # cg_remove PATH-UNDER-CONTROLLER: rmdir depth first in every controller
  local rel=$1 c
  for c in "${CONTROLLERS[@]}"; do
    [ -d "/sys/fs/cgroup/$c/$rel" ] || continue
    find "/sys/fs/cgroup/$c/$rel" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [ ! -d "/sys/fs/cgroup/$c/$rel" ] || log "cgroup $c/$rel still there (busy)"
  done
}

# --- network ---------------------------------------------------------------------------------------
pick_subnet() { # prints S such that 100.64.S.0/24 is unused on the host
  local s used
  used=$(ip -4 -o addr show; ip -4 route show table all)
  for s in $(shuf -i 1-254); do
    grep -q "100\.64\.$s\." <<<"$used" || { echo "$s"; return 0; }
  done
  die "no free 100.64.S.0/24 subnet"
}

net_up() { # net_up ID S NODE...
  local id=$1 s=$2 hub dev k node ns; shift 2
  hub=$(ns_of "$id" hub); dev=$(hostdev_of "$id")
  ip netns add "$hub"
  ip -n "$hub" link set lo up
  ip -n "$hub" link add br0 type bridge
  ip -n "$hub" link set br0 up
  ip link add "$dev" type veth peer name h0 netns "$hub"
  ip addr add "100.64.$s.1/24" dev "$dev"
  ip link set "$dev" up
  ip -n "$hub" link set h0 master br0 up
  k=0
  for node in "$@"; do
    ns=$(ns_of "$id" "$node")
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip -n "$hub" link add "n$k" type veth peer name eth0 netns "$ns"
    ip -n "$hub" link set "n$k" master br0 up
    ip -n "$ns" addr add "100.64.$s.$((10 + k))/24" dev eth0
    ip -n "$ns" link set eth0 up
    k=$((k + 1))
  done
}

# --- engines ---------------------------------------------------------------------------------------
# Runs inside the node's namespaces (nsenter --net, unshare --mount --propagation slave --uts): its
# own /run (Docker 20.10 keeps sandboxes in /run/docker/netns whatever --exec-root says, and overlay
# sandboxes are named alike on every node), /etc/docker (key.json: the engine ID; certs.d: the
# registry's CA), /var/lib/docker and /var/run/docker.sock (what a node's containers mount must be
# the node's), resolv.conf (no reachable server: a pull of a public name fails at once), hostname.
node_init() {
  local id=$1 node=$2 dir c
  dir=$(dir_of "$id")/nodes/$node
  for c in "${CONTROLLERS[@]}"; do
    [ -d "/sys/fs/cgroup/$c/$CG_PREFIX$id/$node/daemon" ] && echo $$ >"/sys/fs/cgroup/$c/$CG_PREFIX$id/$node/daemon/cgroup.procs"
  done
  hostname "$node"
  mount -t tmpfs -o mode=0755 tmpfs /run
  # A sysfs of the node's own network namespace (the inherited one lists the host's devices, and
  # Docker writes bridge settings through it), with the host's cgroup mounts moved back under it.
  mkdir /run/.cgroup
  mount --rbind /sys/fs/cgroup /run/.cgroup
  mount -t sysfs sysfs /sys
  mount --move /run/.cgroup /sys/fs/cgroup
  rmdir /run/.cgroup 2>/dev/null || true
  mount --bind "$dir/etc" /etc/docker
  mount --bind "$dir/data" /var/lib/docker
  mount --bind "$dir/resolv.conf" /etc/resolv.conf
  mount --bind "$dir/hosts" /etc/hosts
  mount --bind "$dir/hostname" /etc/hostname
  exec dockerd --data-root /var/lib/docker --exec-root /run/docker --pidfile /run/docker.pid \
    -H unix:///var/run/docker.sock -H "unix://$dir/docker.sock" \
    --cgroup-parent "/$CG_PREFIX$id/$node" --log-level warn $(cat "$dir/dockerd.args" 2>/dev/null || true)
}

start_node() {
  local id=$1 node=$2 dir ns k
  dir=$(dir_of "$id")/nodes/$node
  ns=$(ns_of "$id" "$node")
  [ -e "/run/netns/$ns" ] || die "node $node of cluster $id has no network namespace (up first)"
  if [ -S "$dir/docker.sock" ] && docker -H "unix://$dir/docker.sock" version >/dev/null 2>&1; then
    log "node $node already runs"; return 0
  fi
  mkdir -p "$dir/data" "$dir/etc"
  printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"$dir/resolv.conf"
  printf '127.0.0.1 localhost\n%s %s\n' "$(ip -n "$ns" -4 -o addr show dev eth0 | awk '{ split($4, a, "/"); print a[1] }')" "$node" >"$dir/hosts"
  echo "$node" >"$dir/hostname"
  cg_make "$id" "$node"
  # Detached (setsid): the engine outlives this script; its output goes to dockerd.log. It must not keep
  # this script's lock files open (fd 8: the cluster's ensure lock, fd 9: the host's network lock): an
  # engine holding the ensure lock made the next file's ensure wait forever.
  setsid nsenter --net="/run/netns/$ns" unshare --mount --propagation slave --uts \
    bash "$SELF" _node-init "$id" "$node" >>"$dir/dockerd.log" 2>&1 </dev/null 8>&- 9>&- &
  for k in $(seq 1 300); do
    if docker -H "unix://$dir/docker.sock" version >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  tail -n 30 "$dir/dockerd.log" >&2 || true
  die "the engine of node $node did not answer on $dir/docker.sock within 30 s"
}

# --- swarm -----------------------------------------------------------------------------------------
join() {
  local id=$1 dir manager token node addr k
  dir=$(dir_of "$id")
  # shellcheck disable=SC1091
  . "$dir/env"
  read -r -a nodes <<<"$NODES"
  manager=${nodes[0]}
  if [ "$(dk "$id" "$manager" info --format '{{.Swarm.LocalNodeState}}')" != active ]; then
    dk "$id" "$manager" swarm init --advertise-addr "100.64.$SUBNET.10" --listen-addr "100.64.$SUBNET.10:2377" >/dev/null
  fi
  token=$(dk "$id" "$manager" swarm join-token -q worker)
  k=0
  for node in "${nodes[@]}"; do
    addr=100.64.$SUBNET.$((10 + k)); k=$((k + 1))
    [ "$node" = "$manager" ] && continue
    [ "$(dk "$id" "$node" info --format '{{.Swarm.LocalNodeState}}')" = active ] && continue
    log "join $id: $node joins"
    dk "$id" "$node" swarm join --token "$token" --advertise-addr "$addr" --listen-addr "$addr:2377" "100.64.$SUBNET.10:2377" >/dev/null
  done
  wait_ready "$id" "${nodes[@]}"
}

wait_ready() { # wait_ready ID NODE...: every node Ready in the manager's view (30 s at most)
  local id=$1 manager=$2 k states; shift
  for k in $(seq 1 300); do
    states=$(dk "$id" "$manager" node ls --format '{{.Hostname}}={{.Status}}' 2>/dev/null || true)
    local all=1 node
    for node in "$@"; do grep -qx "$node=Ready" <<<"$states" || all=0; done
    [ $all = 1 ] && return 0
    sleep 0.1
  done
  die "nodes not Ready within 30 s: $(tr '\n' ' ' <<<"$states")"
}

load_images() {
  local id=$1 node=$2; shift 2
  local want=() img
  for img in "$@"; do
    dk "$id" "$node" image inspect "$img" >/dev/null 2>&1 || want+=("$img")
  done
  [ ${#want[@]} = 0 ] && return 0
  docker save "${want[@]}" | dk "$id" "$node" load -q >/dev/null
}

# --- teardown --------------------------------------------------------------------------------------
down() {
  local id=$1 dir node ns m
  dir=$(dir_of "$id")
  for ns in $(ip netns list | awk '{ print $1 }' | grep "^slwc-$id-" || true); do
    node=${ns#slwc-"$id"-}
    [ "$node" = hub ] && continue
    kill_node "$id" "$node"
  done
  # Nodes whose namespace is already gone, but whose cgroups still hold processes.
  if [ -d "/sys/fs/cgroup/freezer/$CG_PREFIX$id" ]; then
    for node in $(ls "/sys/fs/cgroup/freezer/$CG_PREFIX$id"); do
      [ -d "/sys/fs/cgroup/freezer/$CG_PREFIX$id/$node" ] && kill_node "$id" "$node"
    done
  fi
  cg_remove "$CG_PREFIX$id"
  for ns in $(ip netns list | awk '{ print $1 }' | grep "^slwc-$id-" || true); do ip netns del "$ns" || true; done
  ip link del "$(hostdev_of "$id")" 2>/dev/null || true
  if [ -d "$dir" ]; then
    # Mounts made inside a node stay in its namespace (propagation slave); never delete through one.
    for m in $(awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r); do umount -l "$m" || true; done
    rm -rf --one-file-system "$dir"
  fi
}

case ${1:-} in
  up)
    id=$2; shift 2; valid_id "$id"; [ $# -ge 1 ] || die "up: no nodes"
    for n in "$@"; do valid_node "$n"; done
    dir=$(dir_of "$id")
    [ -e "$dir" ] && die "cluster $id exists ($dir); down it first"
    mkdir -p "$dir/nodes"
    # One network set-up at a time (subnet choice), on this host.
    log "up $id: waiting for the host's network lock"
    exec 9>/tmp/slipway-cluster.lock; flock 9
    s=$(pick_subnet)
    printf 'SUBNET=%s\nNODES="%s"\nOWNER=%s\n' "$s" "$*" "${SLIPWAY_CLUSTER_OWNER:-$PPID}" >"$dir/env"
    net_up "$id" "$s" "$@"
    flock -u 9
    log "up $id: network up (subnet $s), starting the engines"
    pids=()
    for n in "$@"; do start_node "$id" "$n" & pids+=($!); done
    for p in "${pids[@]}"; do wait "$p"; done
    touch "$dir/up.done"
    echo "$dir"
    ;;
  join) valid_id "$2"; join "$2" ;;
  ensure)
    id=$2; shift 2; valid_id "$id"
    # Each step says when it began on stderr: a caller that gives up on a slow ensure shows how far it got.
    log "ensure $id: waiting for its lock"
    exec 8>"$(dir_of "$id").lock"; flock 8
    if [ ! -f "$(dir_of "$id")/up.done" ]; then
      log "ensure $id: building it"
      down "$id" # what a failed attempt left
      bash "$SELF" up "$id" "$@" >/dev/null
    fi
    log "ensure $id: joining the swarm"
    join "$id"
    log "ensure $id: ready"
    ;;
  wait-ready) valid_id "$2"; id=$2; shift 2; for n in "$@"; do valid_node "$n"; done; wait_ready "$id" "$@" ;;
  start-node) valid_id "$2"; valid_node "$3"; start_node "$2" "$3" ;;
  kill-node) valid_id "$2"; valid_node "$3"; kill_node "$2" "$3" ;;
  restart-node) valid_id "$2"; valid_node "$3"; stop_engine "$2" "$3"; start_node "$2" "$3" ;;
  load-images) valid_id "$2"; valid_node "$3"; id=$2; node=$3; shift 3; load_images "$id" "$node" "$@" ;;
  down) valid_id "$2"; down "$2"; rm -f "$(dir_of "$2").lock" ;;
  sweep)
    for d in "$ROOT_PREFIX"*; do
      [ -f "$d/env" ] || continue
      owner=$(sed -n 's/^OWNER=//p' "$d/env")
      [ -n "$owner" ] && kill -0 "$owner" 2>/dev/null && continue
      log "removing cluster ${d#"$ROOT_PREFIX"} (owner $owner is gone)"
      down "${d#"$ROOT_PREFIX"}"
      rm -f "$d.lock"
    done
    ;;
  _node-init) node_init "$2" "$3" ;;
  *) die "usage: cluster.sh up|join|start-node|kill-node|load-images|down|sweep ..." ;;
esac
