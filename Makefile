# The two commands a newcomer needs: `make demo` and `make test`. Both install first (idempotent).
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint bench

setup:
	bash scripts/setup.sh

demo: setup
	$(BIN)/eval-assets demo

test: setup
	bash scripts/run_tests.sh

lint: setup
	$(BIN)/ruff check eval_assets eval_assets_tests benchmarks scripts

bench: setup
	$(BIN)/python benchmarks/vision_similarity.py
