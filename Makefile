# The README's two commands: `make run` (set up, replay the bundled fixtures into
# the embedded SQLite store, print the summary) and `make test` (set up, run every test).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DB ?= sqlite:///trajwatch.db

.PHONY: run test lint bench eval clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

run: $(VENV)/.installed
	$(BIN)/trajwatch replay fixtures/recorded --db $(DB)

test: $(VENV)/.installed
	$(BIN)/python -m pytest -q

lint: $(VENV)/.installed
	$(BIN)/ruff check ingest features detectors models tests benchmarks fixtures
	$(BIN)/mypy

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/bench_decode.py
	$(BIN)/python benchmarks/bench_detectors.py

# The README's evaluation tables. HELDOUT_SEED was never used for tuning: the
# held-apart split is generated here, not committed.
HELDOUT_SEED ?= 20261129
CORPUS ?= ../shared/corpus
eval: $(VENV)/.installed
	$(BIN)/python fixtures/generate.py --seed $(HELDOUT_SEED) --runs-per-scenario 4 \
		--out build/heldout --policies-dir build/heldout-policies
	$(BIN)/trajwatch eval build/heldout --labels build/heldout/labels.csv
	$(BIN)/trajwatch eval $(CORPUS)/trail/traces/gaia --labels $(CORPUS)/trail/labels_index.csv
	$(BIN)/trajwatch eval $(CORPUS)/agentdojo/runs --labels $(CORPUS)/agentdojo/labels_index.csv

clean:
	rm -rf $(VENV) build trajwatch.db
