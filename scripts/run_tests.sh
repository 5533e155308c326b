#!/usr/bin/env bash
# Run lint and the whole test suite inside the project venv (after scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 DAGSTER_DISABLE_TELEMETRY=1
# The report's case filter is tested in a real headless browser; the demo does not need one.
if ! command -v chromium >/dev/null 2>&1; then
    echo "[test] installing chromium (Debian) for the report's browser test" >&2
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
export EVAL_ASSETS_REQUIRE_CHROMIUM=1
.venv/bin/ruff check eval_assets eval_assets_tests benchmarks scripts
.venv/bin/dagster definitions validate -w workspace.yaml
exec .venv/bin/pytest "$@"
