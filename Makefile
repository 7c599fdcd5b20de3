# localforce: `make run` serves a seeded org on http://127.0.0.1:8000; `make test` is the gate.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run seed test lint typecheck unit bench fuzz clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/localforce serve

seed: $(STAMP)
	$(BIN)/localforce seed

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy app tests bench

unit: $(STAMP)
	$(BIN)/pytest -q

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python -m bench.query_latency
	$(BIN)/python -m bench.search_latency
	$(BIN)/python -m bench.sandbox_bench

clean:
	rm -rf $(VENV) data .mypy_cache .ruff_cache .pytest_cache
