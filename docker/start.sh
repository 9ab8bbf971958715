#!/bin/sh
# The one start-up of an app replica: the container's command (docker/Dockerfile) and what
# the native deployment test (tests/deploy/) runs. Settings come from STUDIO_* environment
# variables (docs/deploy.md). `rlds-studio serve` waits up to STUDIO_DB_WAIT_S for the
# database, migrates and loads the sample studies once across replicas starting together
# (advisory lock), then serves until stopped.
set -eu
: "${STUDIO_HOST:=0.0.0.0}"
: "${STUDIO_PORT:=8000}"
: "${STUDIO_DB_WAIT_S:=60}"
export STUDIO_HOST STUDIO_PORT STUDIO_DB_WAIT_S
exec "${PYTHON:-python}" -m server.cli serve "$@"
