#!/usr/bin/env bash
# Create (or reuse) a consumer venv, to load exports as a researcher would. By default
# .consumer-venv: TensorFlow 2.15 + tensorflow-datasets + rlds; with CONSUMER=minari,
# .consumer-venv-minari: minari[arrow]; with CONSUMER=lerobot, .consumer-venv-lerobot: lerobot
# 0.4.4 (torch 2.10, about 8 GB). The venvs are large: each is built once per lock under
# $STUDIO_CACHE_DIR (default ~/.cache/rlds-studio), named by its lock's hash, and linked
# into the checkout, so a fresh clone with the same lock (CI) reuses it. A stamp holds the
# lock's hash: a changed lock (tests/export/*-requirements.txt) builds a new venv.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CONSUMER="${CONSUMER:-tfds}"
case "$CONSUMER" in
    tfds)  # the lock (make lock), from consumer-requirements.in
        REQ="$ROOT/tests/export/consumer-requirements.txt"
        LINK="$ROOT/.consumer-venv"; VENV="${CONSUMER_VENV:-}"
        IMPORTS="import rlds, tensorflow_datasets, tensorflow, envlogger" ;;
    minari)  # from minari-requirements.in
        REQ="$ROOT/tests/export/minari-requirements.txt"
        LINK="$ROOT/.consumer-venv-minari"; VENV="${CONSUMER_VENV_MINARI:-}"
        IMPORTS="import minari, minari.dataset._storages.arrow_storage" ;;
    lerobot)  # from lerobot-requirements.in + lerobot-overrides.txt
        REQ="$ROOT/tests/export/lerobot-requirements.txt"
        LINK="$ROOT/.consumer-venv-lerobot"; VENV="${CONSUMER_VENV_LEROBOT:-}"
        IMPORTS="import av, lerobot.datasets.lerobot_dataset; from torchvision.io import VideoReader"
        # The lock leaves torchcodec out (lerobot-overrides.txt), which pip would bring back:
        # the complete lock is installed without pip's own resolution.
        PIP_ARGS="--no-deps" ;;
    *) echo "unknown consumer $CONSUMER (tfds, minari or lerobot)"; exit 2 ;;
esac
PYTHON="${PYTHON:-python3}"

want="$(sha256sum "$REQ" | cut -d' ' -f1)"
if [[ -z "$VENV" ]]; then
    CACHE="${STUDIO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rlds-studio}"
    VENV="$CACHE/$(basename "$LINK")-${want:0:16}"
    mkdir -p "$CACHE"
    # A venv left in the checkout by an older version of this script goes; the link replaces it.
    if [[ -d "$LINK" && ! -L "$LINK" ]]; then rm -rf "$LINK"; fi
    ln -sfn "$VENV" "$LINK"
fi
STAMP="$VENV/.requirements-sha256"  # once VENV is known: each venv has its own
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
