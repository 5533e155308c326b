# The two commands a newcomer needs: `make demo` and `make test`. Both install first (idempotent).
# `make test-fast` is the lane to run while working: unit and contract tests, ruff, mypy.
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test test-fast lint typecheck bench snapshots

setup:
	bash scripts/setup.sh

demo: setup
	$(BIN)/eval-assets demo

test: setup
	bash scripts/run_tests.sh

test-fast: setup
	bash scripts/run_tests.sh --fast

lint: setup
	$(BIN)/ruff check eval_assets eval_assets_tests benchmarks scripts

typecheck: setup
	$(BIN)/mypy

bench: setup
	$(BIN)/python benchmarks/vision_similarity.py

# Regenerate the definitions snapshot after a change to the asset graph (a new metric, say), then
# review its diff: eval_assets_tests/defs/snapshots/definitions.json.
snapshots:
	EVAL_ASSETS_UPDATE_SNAPSHOTS=1 $(BIN)/pytest -q eval_assets_tests/defs/test_definitions_snapshot.py
