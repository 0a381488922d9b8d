# The README's two commands: `make run` (set up, start the live service on the embedded
# SQLite store, send it a simulated agent fleet over OTLP/HTTP, print the alerts as they
# are raised and a summary) and `make test` (set up, run every test; `make test-quick`: the
# tests that need no PostgreSQL, no Chromium and no child process).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DB ?= sqlite:///trajwatch.db

.PHONY: run replay test test-quick test-frameworks lint bench eval eval-blind clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# `make run` installs the service and the fleet it sends (the `fixtures` extra); every other
# target installs the test stack (every extra: kafka, ui, notebooks, langgraph, fixtures).
$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[fixtures]'
	touch $@

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed-run

run: $(VENV)/.installed-run
	$(BIN)/python fixtures/fleet.py --serve --db $(DB)

replay: $(VENV)/.installed
	$(BIN)/trajwatch replay fixtures/recorded --db $(DB)

test: $(VENV)/.installed
	$(BIN)/python -m pytest -q

# The quick loop: no child processes (servers, brokers, browsers, notebooks) and SQLite
# only, so it needs neither PostgreSQL nor Chromium (tests/README.md).
test-quick: $(VENV)/.installed
	$(BIN)/python -m pytest -q -m "not slow and not postgres"

# Real agent frameworks (fixtures/frameworks/README.md): re-record them in their own venv,
# replay the recordings, then run them live against `trajwatch serve`. Not part of `make test`:
# it needs FWVENV, made as that README says.
FWVENV ?= /work/fwvenv
test-frameworks: $(VENV)/.installed
	$(FWVENV)/bin/python fixtures/frameworks/record.py
	$(BIN)/python -m pytest -q tests/integration/recordings/test_framework_recordings.py
	$(BIN)/python fixtures/frameworks/live_check.py --fwvenv $(FWVENV)

lint: $(VENV)/.installed
	$(BIN)/ruff check trajwatch ingest features detectors models dashboards tests benchmarks fixtures notebooks
	$(BIN)/mypy

bench: $(VENV)/.installed
	$(BIN)/trajwatch bench
	$(BIN)/python benchmarks/bench_decode.py
	$(BIN)/python benchmarks/bench_detectors.py
	$(BIN)/python benchmarks/bench_actions.py

# The README's evaluation tables. HELDOUT_SEED was never used for tuning: the
# held-apart split is generated here, not committed. It is scored as recorded
# (session log and spans), as spans only (a plain OTLP deployment, whose root
# span - the session's start and goal - arrives when the run ends), and as spans only
# again with the same runs' spans spelled by OpenLLMetry and by the Vercel AI SDK.
HELDOUT_SEED ?= 20261129
HELDOUT := build/heldout-$(HELDOUT_SEED)
CORPUS ?= ../shared/corpus
eval: $(VENV)/.installed
	$(BIN)/python fixtures/generate --seed $(HELDOUT_SEED) --runs-per-scenario 4 \
		--out $(HELDOUT) --policies-dir $(HELDOUT)-policies
	$(BIN)/trajwatch eval $(HELDOUT) --labels $(HELDOUT)/labels.csv
	rm -rf $(HELDOUT)-spans && mkdir -p $(HELDOUT)-spans
	cp $(HELDOUT)/*.otlp.binpb* $(HELDOUT)/labels.csv $(HELDOUT)-spans/
	$(BIN)/trajwatch eval $(HELDOUT)-spans --labels $(HELDOUT)/labels.csv
	for d in openllmetry vercel_ai; do \
		$(BIN)/python fixtures/generate --seed $(HELDOUT_SEED) --runs-per-scenario 4 \
			--out $(HELDOUT)-$$d --policies-dir $(HELDOUT)-policies --span-dialect $$d && \
		rm -rf $(HELDOUT)-$$d-spans && mkdir -p $(HELDOUT)-$$d-spans && \
		cp $(HELDOUT)-$$d/*.otlp.binpb* $(HELDOUT)-$$d/labels.csv $(HELDOUT)-$$d-spans/ && \
		$(BIN)/trajwatch eval $(HELDOUT)-$$d-spans --labels $(HELDOUT)-$$d/labels.csv || exit 1; \
	done
	$(BIN)/trajwatch eval $(CORPUS)/trail/traces/gaia --labels $(CORPUS)/trail/labels_index.csv
	$(BIN)/trajwatch eval $(CORPUS)/agentdojo/runs --labels $(CORPUS)/agentdojo/labels_index.csv

# The blind sets (fixtures/blind/README.md): generated at one seed and scored, each apart.
BLIND_SEED ?= 20261206
eval-blind: $(VENV)/.installed
	for g in coding assistant longrun runtime agentops ops research enterprise public smallbiz itdesk soc envbench custsvc mobileds multiagent autonomous healthdata industrial office creative; do \
		$(BIN)/python fixtures/blind/$${g}_incidents.py --seed $(BLIND_SEED) --out build/blind/$$g && \
		$(BIN)/trajwatch eval build/blind/$$g --labels build/blind/$$g/labels.csv || exit 1; \
	done

clean:
	rm -rf $(VENV) build trajwatch.db
