# urbex — the two commands a new machine needs: `make demo` and `make test`.
VENV ?= .venv
BIN := $(VENV)/bin
# DVC's own environment (scripts/setup.sh; dagster and dvc's hydra need different antlr4 runtimes).
# $(BIN)/dvc runs it with $(BIN) first on PATH; the demo and the tests find it through URBEX_DVC.
DVC_VENV ?= .venv-dvc
export URBEX_DVC := $(abspath $(DVC_VENV))/bin/dvc
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export DAGSTER_HOME := $(CURDIR)/.dagster_home
export TQDM_MININTERVAL := 5

.PHONY: setup demo learn test lint bench ui clean

setup:
	@bash scripts/setup.sh
	@mkdir -p $(DAGSTER_HOME)
	@test -f $(DAGSTER_HOME)/dagster.yaml || printf 'telemetry:\n  enabled: false\n' > $(DAGSTER_HOME)/dagster.yaml

demo: setup  ## generate the synthetic city and materialize every asset (Dagster, in-process)
	$(BIN)/python -m pipelines.demo

learn: setup  ## the full CPU recipe (params-cpu.yaml) into this project: reader → SFT → GRPO, its rows in the report (~85 min)
	$(BIN)/python -m pipelines.learn

test: setup  ## lint + type check + the whole test suite
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/pytest -q -n 2 --dist loadfile

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy

bench: setup  ## every benchmark at full size (minutes); their figures → assets/bench/latest.json
	$(BIN)/python benchmarks/collect.py

ui: setup  ## the Dagster UI on http://127.0.0.1:3000 (one Ctrl-C stops it: scripts/ui.py)
	@$(BIN)/python scripts/ui.py --host 127.0.0.1 --port 3000

clean:
	rm -rf assets/raw assets/scenes assets/landmarks assets/splits assets/eval assets/warehouse.duckdb .dagster_home
