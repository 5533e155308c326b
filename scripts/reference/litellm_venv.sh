#!/usr/bin/env bash
# Builds (once) a separate virtual environment with LiteLLM's proxy from the package registry, for
# the gateway test (a real rate-limiting gateway in front of the project's local server). Kept apart
# from ./.venv: the proxy pulls a large dependency set users do not need. Cached by the requirements
# file's hash, so a second call costs nothing. Prints the venv's python path last.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REQ="$HERE/litellm_requirements.txt"
KEY=$(sha256sum "$REQ" | cut -c1-12)
CACHE="${EVAL_ASSETS_REFERENCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/eval_assets}"
VENV="$CACHE/litellm-$KEY"
log() { printf '[litellm-venv] %s\n' "$*" >&2; }

if [ ! -f "$VENV/.complete" ]; then
    log "building $VENV (a few minutes, once)"
    rm -rf "$VENV"
    mkdir -p "$CACHE"
    python3.11 -m venv "$VENV"
    # pip's output goes to a log beside the venv: this machine's pip prints a warning per package.
    if ! "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ" \
            >"$VENV.log" 2>&1; then
        tail -20 "$VENV.log" >&2
        log "pip failed; full log: $VENV.log"
        exit 1
    fi
    touch "$VENV/.complete"
fi
echo "$VENV/bin/python"
