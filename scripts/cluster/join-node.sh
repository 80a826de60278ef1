#!/usr/bin/env bash
# Joins this machine to a Slipway cluster as a worker (docs/cluster.md). The platform serves this script at
# GET /api/servers/join.sh with its engine provisioning (scripts/provision/docker.sh) inside, and shows the
# one-line command that fetches it, checks its digest and runs it:
#
#   bash join-node.sh --url <platform URL> --token <join token> --ca-sha256 <CA fingerprint> --manager <address:2377>
#                     [--advertise-addr <this machine's address>]
#
# As root on Debian: installs the Docker engine where missing (the provisioning `npm start` uses), makes a key
# and a certificate request for this engine, exchanges the single-use token for the install's CA (refused unless
# its fingerprint is the command's), the engine's certificate and Swarm's token, makes the engine's API listen on
# <address>:2376 with TLS client authentication only, trusts the platform's registry, and joins the swarm.
# The engine's key never leaves this machine.
#
# For the test harness only: SLIPWAY_DOCKER_ETC (where /etc/docker is written), SLIPWAY_ENGINE_ARGS_FILE and
# SLIPWAY_ENGINE_RESTART (how an engine that is neither systemd's nor provisioning's is given its flags).
set -euo pipefail
# The command fetched this file to a temporary path: it is read already, nothing else needs it.
case "$0" in /tmp/*) rm -f -- "$0" ;; esac

die() { echo "slipway-join: ERROR: $*" >&2; exit 1; }
say() { echo "slipway-join: $*" >&2; }

URL='' TOKEN='' CA_SHA256='' MANAGER='' ADVERTISE=''
while [ $# -gt 0 ]; do
  case $1 in
    --url) URL=$2; shift 2 ;;
    --token) TOKEN=$2; shift 2 ;;
    --ca-sha256) CA_SHA256=$2; shift 2 ;;
    --manager) MANAGER=$2; shift 2 ;;
    --advertise-addr) ADVERTISE=$2; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
[ -n "$URL" ] && [ -n "$TOKEN" ] && [ -n "$CA_SHA256" ] && [ -n "$MANAGER" ] || die "usage: join-node.sh --url URL --token TOKEN --ca-sha256 FINGERPRINT --manager ADDRESS:2377"
[[ $TOKEN =~ ^[A-Za-z0-9_-]+$ ]] || die "the token is malformed"
[[ $CA_SHA256 =~ ^[0-9a-f]{64}$ ]] || die "the CA fingerprint is malformed"
[ "$(id -u)" = 0 ] || die "run it as root (sudo): it installs and configures the Docker engine"

ETC=${SLIPWAY_DOCKER_ETC:-/etc/docker}

# --- the engine ---------------------------------------------------------------------------------
provision_docker() {
  # @@PROVISION_DOCKER@@ (the platform puts scripts/provision/docker.sh here when it serves this file)
  die "this copy of the script has no engine provisioning in it; fetch it from the platform (GET /api/servers/join.sh)"
}
if ! docker info >/dev/null 2>&1; then
  [ -f /etc/debian_version ] || die "no Docker engine answers, and this is not Debian: install Docker Engine, then run the command again"
  say "no Docker engine answers: installing and starting one"
  provision_docker
fi
for tool in curl openssl ip sha256sum base64; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    [ -f /etc/debian_version ] || die "$tool is missing"
    say "installing $tool"
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl openssl iproute2 coreutils >/dev/null
  fi
done
if [ "$(docker info --format '{{.Swarm.LocalNodeState}}')" = active ]; then
  die "this engine is in a swarm already: leave it first (docker swarm leave), then run the command again"
fi

MANAGER_HOST=${MANAGER%:*}
if [ -z "$ADVERTISE" ]; then
  # The address this machine reaches the manager from: what the manager will reach it at.
  ADVERTISE=$(ip -o route get "$MANAGER_HOST" 2>/dev/null | sed -n 's/.* src \([0-9a-fA-F.:]*\).*/\1/p' | head -n 1)
  [ -n "$ADVERTISE" ] || die "could not tell this machine's address towards $MANAGER_HOST; give it with --advertise-addr"
fi
[[ $ADVERTISE =~ ^[0-9a-fA-F.:]+$ ]] || die "--advertise-addr must be an IP address"
HOSTNAME_NOW=$(hostname | tr -cd 'A-Za-z0-9.-')
[ -n "$HOSTNAME_NOW" ] || HOSTNAME_NOW=node
ENGINE_VERSION=$(docker version --format '{{.Server.Version}}' | tr -cd 'A-Za-z0-9.+~_-')

# --- the key and the exchange -------------------------------------------------------------------
install -d -m 0755 "$ETC"
install -d -m 0700 "$ETC/tls"
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout "$SCRATCH/node.key" -out "$SCRATCH/node.csr" -subj "/CN=$HOSTNAME_NOW" 2>/dev/null
CSR=$(base64 -w0 <"$SCRATCH/node.csr")
say "exchanging the join token with $URL"
BODY="{\"token\":\"$TOKEN\",\"csrBase64\":\"$CSR\",\"address\":\"$ADVERTISE\",\"hostname\":\"$HOSTNAME_NOW\",\"engineVersion\":\"$ENGINE_VERSION\"}"
RESPONSE=$(curl -sS --max-time 120 -X POST -H 'content-type: application/json' --data-binary "$BODY" -w '\n%{http_code}' "$URL/api/servers/join") \
  || die "the platform at $URL could not be reached"
STATUS=${RESPONSE##*$'\n'}
RESPONSE=${RESPONSE%$'\n'*}
field() { printf '%s' "$RESPONSE" | sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" | head -n 1; }
number() { printf '%s' "$RESPONSE" | sed -n "s/.*\"$1\":\([0-9][0-9]*\).*/\1/p" | head -n 1; }
if [ "$STATUS" != 200 ]; then
  die "the platform refused the join ($STATUS): $(field message)"
fi
printf '%s' "$(field caCertificateBase64)" | base64 -d >"$SCRATCH/ca.crt"
printf '%s' "$(field certificateBase64)" | base64 -d >"$SCRATCH/node.crt"
SWARM_TOKEN=$(field swarmJoinToken)
JOIN_MANAGER=$(field managerAddress)
REGISTRY=$(field registryAddress)
ENGINE_PORT=$(number engineTlsPort)
NAME=$(field name)
[ -n "$SWARM_TOKEN" ] && [ -n "$JOIN_MANAGER" ] && [ -n "$ENGINE_PORT" ] || die "the platform's answer is incomplete"
[[ $SWARM_TOKEN =~ ^SWMTKN-[A-Za-z0-9-]+$ ]] || die "the platform's swarm token is malformed"
[[ $JOIN_MANAGER =~ ^[0-9a-fA-F.:]+$ ]] || die "the platform's manager address is malformed"
[[ -z $REGISTRY || $REGISTRY =~ ^[0-9a-fA-F.:]+$ ]] || die "the platform's registry address is malformed"
[[ $ENGINE_PORT =~ ^[0-9]+$ ]] || die "the platform's engine port is malformed"

# The CA must be the one the command named: anything else means someone between here and the platform.
GOT=$(openssl x509 -in "$SCRATCH/ca.crt" -noout -fingerprint -sha256 | sed 's/.*=//; s/://g' | tr 'A-F' 'a-f')
[ "$GOT" = "$CA_SHA256" ] || die "the platform's CA (sha256 $GOT) is not the one in the command ($CA_SHA256): refusing to trust it"
openssl verify -CAfile "$SCRATCH/ca.crt" "$SCRATCH/node.crt" >/dev/null || die "the engine's certificate is not signed by the platform's CA"

install -m 0644 "$SCRATCH/ca.crt" "$ETC/tls/ca.crt"
install -m 0644 "$SCRATCH/node.crt" "$ETC/tls/node.crt"
install -m 0600 "$SCRATCH/node.key" "$ETC/tls/node.key"
if [ -n "$REGISTRY" ]; then
  install -d -m 0755 "$ETC/certs.d/$REGISTRY"
  install -m 0644 "$SCRATCH/ca.crt" "$ETC/certs.d/$REGISTRY/ca.crt"
fi

# --- the engine's API over mutual TLS ---------------------------------------------------------------
# Paths as the engine sees them: /etc/docker (the test harness binds its own directory there).
TLS_FLAGS="-H tcp://$ADVERTISE:$ENGINE_PORT --tlsverify --tlscacert=/etc/docker/tls/ca.crt --tlscert=/etc/docker/tls/node.crt --tlskey=/etc/docker/tls/node.key"
wait_engine() {
  for _ in $(seq 1 120); do docker info >/dev/null 2>&1 && return 0; sleep 0.5; done
  die "the Docker engine did not come back after its restart"
}
if [ -n "${SLIPWAY_ENGINE_ARGS_FILE:-}" ] && [ -n "${SLIPWAY_ENGINE_RESTART:-}" ]; then
  echo "$TLS_FLAGS" >"$SLIPWAY_ENGINE_ARGS_FILE"
  bash -c "$SLIPWAY_ENGINE_RESTART" >&2
elif command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet docker 2>/dev/null; then
  DOCKERD=$(command -v dockerd)
  install -d /etc/systemd/system/docker.service.d
  cat >/etc/systemd/system/docker.service.d/slipway-cluster.conf <<EOF
# Written by Slipway's join command: the engine's API over mutual TLS for the platform (docs/cluster.md).
[Service]
ExecStart=
ExecStart=$DOCKERD -H fd:// --containerd=/run/containerd/containerd.sock \$DOCKER_OPTS $TLS_FLAGS
EOF
  systemctl daemon-reload
  systemctl restart docker
else
  # An engine the provisioning started (no systemd): started again the same way, with the flags.
  if [ -f /var/run/docker.pid ]; then
    kill "$(cat /var/run/docker.pid)" 2>/dev/null || true
    for _ in $(seq 1 60); do [ -e /var/run/docker.pid ] || break; sleep 0.5; done
  fi
  # shellcheck disable=SC2086
  setsid nohup dockerd -H unix:///var/run/docker.sock $TLS_FLAGS >>/tmp/slipway-dockerd.log 2>&1 </dev/null &
fi
wait_engine

say "joining the swarm at $JOIN_MANAGER as $ADVERTISE"
docker swarm join --token "$SWARM_TOKEN" --advertise-addr "$ADVERTISE" --listen-addr "$ADVERTISE:2377" "$JOIN_MANAGER" >&2
say "joined as ${NAME:-a worker}: the platform shows it ready within seconds"
