# The README's two commands: `make run` (set up, replay the bundled fixtures into
# the embedded SQLite store, print the summary) and `make test` (set up, run every test).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DB ?= sqlite:///trajwatch.db

.PHONY: run test lint bench clean

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

clean:
	rm -rf $(VENV) trajwatch.db
