#!/usr/bin/env bash
# Create (or reuse) a consumer venv, to load exports as a researcher would. By default
# .consumer-venv: TensorFlow 2.15 + tensorflow-datasets + rlds; with CONSUMER=minari,
# .consumer-venv-minari: minari[arrow]; with CONSUMER=lerobot, .consumer-venv-lerobot: lerobot
# 0.4.4 (torch 2.10, about 5 GB). Idempotent: a stamp holds the requirements' hash, so
# a venv is rebuilt only when its lock (tests/export/*-requirements.txt) changes.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CONSUMER="${CONSUMER:-tfds}"
case "$CONSUMER" in
    tfds)  # the lock (make lock), from consumer-requirements.in
        REQ="$ROOT/tests/export/consumer-requirements.txt"
        VENV="${CONSUMER_VENV:-$ROOT/.consumer-venv}"
        IMPORTS="import rlds, tensorflow_datasets, tensorflow, envlogger" ;;
    minari)  # from minari-requirements.in
        REQ="$ROOT/tests/export/minari-requirements.txt"
        VENV="${CONSUMER_VENV_MINARI:-$ROOT/.consumer-venv-minari}"
        IMPORTS="import minari, minari.dataset._storages.arrow_storage" ;;
    lerobot)  # from lerobot-requirements.in + lerobot-overrides.txt
        REQ="$ROOT/tests/export/lerobot-requirements.txt"
        VENV="${CONSUMER_VENV_LEROBOT:-$ROOT/.consumer-venv-lerobot}"
        IMPORTS="import av, lerobot.datasets.lerobot_dataset; from torchvision.io import VideoReader"
        # The lock leaves torchcodec out (lerobot-overrides.txt), which pip would bring back:
        # the complete lock is installed without pip's own resolution.
        PIP_ARGS="--no-deps" ;;
    *) echo "unknown consumer $CONSUMER (tfds, minari or lerobot)"; exit 2 ;;
esac
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
"$VENV/bin/pip" install -q ${PIP_ARGS:-} -r "$REQ"
# Prove the stack imports before stamping it.
"$VENV/bin/python" -c "$IMPORTS"
echo "$want" > "$STAMP"
echo "consumer venv built in $(( $(date +%s) - start )) s ($(du -sh "$VENV" | cut -f1)): $VENV"
