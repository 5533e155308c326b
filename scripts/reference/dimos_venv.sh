#!/usr/bin/env bash
# Builds (once) a separate virtual environment with the real dimOS 0.0.15 from the registry, for the
# parity tests (scripts/reference/build_venv.sh builds and caches it). Prints its python last.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REQ="$HERE/dimos_0.0.15_requirements.txt"
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

# --no-deps with a full pinned set: dimOS declares torch and GPU stacks it does not import here.
exec bash "$HERE/build_venv.sh" dimos-0.0.15 "$REQ" --no-deps
