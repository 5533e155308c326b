#!/usr/bin/env bash
# Lint, type-check and test inside the project venv (after scripts/setup.sh).
#
#   scripts/run_tests.sh [PYTEST_ARGS...]          everything: every slow, reference and end-to-end test
#   scripts/run_tests.sh --fast [PYTEST_ARGS...]   the fast lane: unit and contract tests only
#
# Both lanes run ruff and mypy first; the whole suite also `dagster definitions validate` (the
# fast lane's definition tests load the same definitions). The fast lane deselects the tests marked
# `slow` (real models, the whole pipeline, end to end) and `reference` (the real dimOS / Fair Forge
# venv), so it installs no browser, broker or reference venv.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 DAGSTER_DISABLE_TELEMETRY=1
# Tests run in one worker per usable core plus one, at most 4 (pytest-xdist): two workers on two
# cores halve the fast lane (235 s -> 120 s), and the whole suite (1,661 s -> 949 s) still left a
# core idle a fifth of the time (1,513 s of CPU in 961 s) while a test waits on a rate limit, a
# daemon tick or a server: the extra worker fills those waits. Work stealing: a worker that runs
# out takes queued tests from another, so none waits behind a minutes-long end-to-end test (plain
# `load` hands each worker a quarter of the suite up front: one worker ran every slow test).
# EVAL_ASSETS_TEST_WORKERS=0 runs them in one process (e.g. for pdb).
WORKERS=${EVAL_ASSETS_TEST_WORKERS:-$(.venv/bin/python -c 'import os; print(min(4, len(os.sched_getaffinity(0)) + 1))')}
PARALLEL=(-n "$WORKERS" --dist worksteal)
FAST=0
if [ "${1:-}" = "--fast" ]; then
    FAST=1
    shift
fi

checks() {
    .venv/bin/ruff check eval_assets eval_assets_tests benchmarks scripts
    .venv/bin/mypy
    # The documentation site: a broken link or an unknown anchor fails the build (mkdocs.yml).
    NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet
}

if [ "$FAST" -eq 1 ]; then
    checks
    # The slowest tests are printed here too: the fast lane is held to 3 minutes, and one test
    # (statsmodels' gc.collect() in the Holm check) once took 40 % of it unnoticed.
    exec .venv/bin/pytest "${PARALLEL[@]}" -m "not slow and not reference" --durations=15 "$@"
fi

# The report's case filter is tested in a real headless browser; the demo does not need one.
if ! command -v chromium >/dev/null 2>&1; then
    echo "[test] installing chromium (Debian) for the report's browser test" >&2
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
export EVAL_ASSETS_REQUIRE_CHROMIUM=1
# The Celery engine's end-to-end test needs a Redis broker, when the engine (extra `celery`) is in.
CELERY_CHECK='import importlib.util as u, sys; sys.exit(u.find_spec("dagster_celery") is None)'
if .venv/bin/python -c "$CELERY_CHECK" && ! command -v redis-server >/dev/null 2>&1; then
    echo "[test] installing redis-server (Debian) for the Celery engine's test" >&2
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
fi
# The real dimOS 0.0.15 for the parity tests, in its own cached venv (not in the user's setup).
EVAL_ASSETS_DIMOS_PYTHON=$(bash scripts/reference/dimos_venv.sh)
# LiteLLM's proxy, a real rate-limiting gateway for the gateway test, in its own cached venv too.
EVAL_ASSETS_LITELLM_PYTHON=$(bash scripts/reference/litellm_venv.sh)
export EVAL_ASSETS_DIMOS_PYTHON EVAL_ASSETS_LITELLM_PYTHON EVAL_ASSETS_REQUIRE_REFERENCE=1
checks
.venv/bin/dagster definitions validate -w workspace.yaml
# The slowest tests are printed at the end: the whole suite is held to 15 minutes. On two cores
# with three workers it is bound by CPU: the tests that used the most are printed too.
exec .venv/bin/pytest "${PARALLEL[@]}" --durations=25 --cpu-report=15 "$@"
