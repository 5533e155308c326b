#!/usr/bin/env bash
# Builds (once) a separate virtual environment with the real dimOS 0.0.15 from the registry, for the
# parity tests. Kept apart from ./.venv so users' setup stays as light as it is; cached by the
# requirements file's hash, so a second call costs nothing. Prints the venv's python path last.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REQ="$HERE/dimos_0.0.15_requirements.txt"
KEY=$(sha256sum "$REQ" | cut -c1-12)
CACHE="${EVAL_ASSETS_REFERENCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/eval_assets}"
VENV="$CACHE/dimos-0.0.15-$KEY"
log() { printf '[dimos-venv] %s\n' "$*" >&2; }

SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
# PyTurboJPEG loads libturbojpeg at import time; open3d needs libusb.
missing=()
ldconfig -p 2>/dev/null | grep 'libturbojpeg.so.0' >/dev/null || missing+=(libturbojpeg0)
ldconfig -p 2>/dev/null | grep 'libusb-1.0.so.0' >/dev/null || missing+=(libusb-1.0-0)
if [ ${#missing[@]} -gt 0 ]; then
    log "installing system libraries: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -f "$VENV/.complete" ]; then
    log "building $VENV (about two minutes, once)"
    rm -rf "$VENV"
    mkdir -p "$CACHE"
    python3.11 -m venv "$VENV"
    # --no-deps with a full pinned set: dimOS declares torch and GPU stacks it does not import here.
    # pip's output goes to a log beside the venv: this machine's pip prints a warning per package.
    if ! "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r "$REQ" \
            >"$VENV.log" 2>&1; then
        tail -20 "$VENV.log" >&2
        log "pip failed; full log: $VENV.log"
        exit 1
    fi
    touch "$VENV/.complete"
fi
echo "$VENV/bin/python"
