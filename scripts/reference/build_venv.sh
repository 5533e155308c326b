#!/usr/bin/env bash
# Builds (once) a reference virtual environment from a pinned requirements file, kept apart from
# ./.venv so users' setup stays light; cached by the file's hash, so a second call costs nothing.
# Usage: build_venv.sh NAME REQUIREMENTS [PIP_ARGS...]. Prints the venv's python path last.
set -euo pipefail
NAME="$1"; REQ="$2"; shift 2
KEY=$(sha256sum "$REQ" | cut -c1-12)
CACHE="${EVAL_ASSETS_REFERENCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/eval_assets}"
VENV="$CACHE/$NAME-$KEY"
log() { printf '[%s-venv] %s\n' "$NAME" "$*" >&2; }

if [ ! -f "$VENV/.complete" ]; then
    log "building $VENV (a few minutes, once)"
    rm -rf "$VENV"
    mkdir -p "$CACHE"
    python3.11 -m venv "$VENV"
    # pip's output goes to a log beside the venv: this machine's pip prints a warning per package.
    if ! "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$@" -r "$REQ" \
            >"$VENV.log" 2>&1; then
        tail -20 "$VENV.log" >&2
        log "pip failed; full log: $VENV.log"
        exit 1
    fi
    touch "$VENV/.complete"
fi
echo "$VENV/bin/python"
