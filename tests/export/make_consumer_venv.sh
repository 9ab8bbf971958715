#!/usr/bin/env bash
# Create (or reuse) .consumer-venv: TensorFlow 2.15 + tensorflow-datasets + rlds, to load
# exports as a researcher would. Idempotent: a stamp holds the requirements' hash, so the
# venv is rebuilt only when tests/export/consumer-requirements.txt changes.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
REQ="$ROOT/tests/export/consumer-requirements.txt"  # the lock (make lock), from consumer-requirements.in
VENV="${CONSUMER_VENV:-$ROOT/.consumer-venv}"
PYTHON="${PYTHON:-python3}"
STAMP="$VENV/.requirements-sha256"

want="$(sha256sum "$REQ" | cut -d' ' -f1)"
if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
    echo "consumer venv up to date: $VENV"
    exit 0
fi

start=$(date +%s)
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q pip==26.3
"$VENV/bin/pip" install -q -r "$REQ"
# Prove the stack imports before stamping it.
"$VENV/bin/python" -c "import rlds, tensorflow_datasets, tensorflow, envlogger"
echo "$want" > "$STAMP"
echo "consumer venv built in $(( $(date +%s) - start )) s: $VENV"
