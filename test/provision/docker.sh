#!/usr/bin/env bash
# The tests' Docker engine: the same provisioning `npm start` uses (scripts/provision/docker.sh).
exec bash "$(dirname "$0")/../../scripts/provision/docker.sh" "$@"
