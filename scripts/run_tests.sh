#!/usr/bin/env bash
# Run lint and the whole test suite inside the project venv (after scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 DAGSTER_DISABLE_TELEMETRY=1
.venv/bin/ruff check eval_assets eval_assets_tests benchmarks scripts
.venv/bin/dagster definitions validate -w workspace.yaml
exec .venv/bin/pytest "$@"
