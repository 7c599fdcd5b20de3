# localforce: `make run` serves a seeded org on http://127.0.0.1:8000; `make test` is the gate
# (ruff, the layer contract of pyproject.toml, mypy, the docs build and pytest).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# jsforce for tests/clients/test_jsforce.py: `npm ci` only when the lock file changes.
JS_DIR := tests/clients/js
JS_STAMP := $(JS_DIR)/node_modules/.installed
# The Salesforce CLI and the Node 22 it needs (an npm package: the machine's Node stays) for
# tests/clients/test_sf_cli.py.
SF_DIR := tests/clients/sf
SF_STAMP := $(SF_DIR)/node_modules/.installed

.PHONY: adapters hosts haproxy install js run seed test lint typecheck docs unit bench fuzz soak coverage chromium clean

# The client distribution (clients/python, importable as `localforce`) beside the server, in
# the compat editable mode: a path on sys.path, which mypy follows.
$(STAMP): pyproject.toml clients/python/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/pip install --quiet -e './clients/python[simple-salesforce]' --config-settings editable_mode=compat
	touch $(STAMP)

$(JS_STAMP): $(JS_DIR)/package.json $(JS_DIR)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		cd $(JS_DIR) && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.installed; \
	else \
		echo "npm not found: skipping jsforce (tests/clients/test_jsforce.py will skip)"; \
	fi

$(SF_STAMP): $(SF_DIR)/package.json $(SF_DIR)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		cd $(SF_DIR) && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.installed; \
	else \
		echo "npm not found: skipping the Salesforce CLI (tests/clients/test_sf_cli.py will skip)"; \
	fi

js: $(JS_STAMP) $(SF_STAMP)

install: $(STAMP) $(JS_STAMP) $(SF_STAMP)

run: $(STAMP)
	$(BIN)/localforce serve

seed: $(STAMP)
	$(BIN)/localforce seed

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

typecheck: $(STAMP)
	$(BIN)/mypy app tests bench examples clients/python/src

# Two workers (the machine's cores; worksteal evens out the few long tests), then the tests
# that time latency, alone, so that the other worker's load does not enter their figures.
# Only the files that hold timing tests are collected for that second run (collecting all
# the tests to keep five takes 20 s).
TIMING_TESTS = $(shell grep -rl --include='test_*.py' 'mark.timing' tests)

unit: $(STAMP) $(JS_STAMP) $(SF_STAMP)
	$(BIN)/pytest -q -n 2 --dist worksteal -m 'not timing and not adapters and not hosts'
	$(BIN)/pytest -q -m timing $(TIMING_TESTS)

# The documentation site (mkdocs.yml, docs/) into build/docs, git-ignored: --strict makes a
# warning (a broken link, a page missing from the nav) fail the gate. It fetches nothing.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

test: lint typecheck docs unit

# The client's trainer adapters (verifiers, NeMo Gym, TRL), each with its package from PyPI in a
# virtualenv of its own under build/adapters, kept between runs (tests/adapters): minutes and
# a few GB on a first run, so outside the gate's 15 minutes; CI runs it after the gate.
adapters: $(STAMP)
	$(BIN)/pytest -q -m adapters tests/adapters

# Several hosts on this machine (network namespaces: root and iproute2), three API servers behind
# Debian's HAProxy on one PostgreSQL, one host killed mid-run (tests/test_multi_host.py): a
# minute or two of servers starting, so outside the gate; CI runs it after the gate.
hosts: $(STAMP) haproxy
	$(BIN)/pytest -q -s -m hosts tests/test_multi_host.py

# Every figure is a ratio to a floor measured in the same run (bench/floor.py: a bare app on
# the same stack and data); PostgreSQL parts run when a server is reachable on 127.0.0.1:5432.
# `python -m bench.throughput --quick` is the short throughput run.
bench: $(STAMP)
	$(BIN)/python -m bench.query_latency
	$(BIN)/python -m bench.search_latency
	$(BIN)/python -m bench.sandbox_bench
	$(BIN)/python -m bench.throughput
	$(BIN)/python -m bench.tasks_bench
	$(BIN)/python -m bench.episodes_at_scale
	$(BIN)/python -m bench.eval_bench
	$(BIN)/python -m bench.split_hashes
	$(BIN)/python -m bench.agents_bench
	$(BIN)/python -m bench.bulk_bench
	$(BIN)/python -m bench.console_bench

# A long mixed load against a server process, watching its memory (outside the gate).
soak: $(STAMP)
	$(BIN)/python -m bench.soak

# Debian's Chromium, which the console's browser tests (tests/console/test_browser.py) drive:
# they skip without it, except in CI, where .ci/run makes this first. apt-get needs root.
chromium:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; }

haproxy:
	@command -v haproxy >/dev/null 2>&1 || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends haproxy; }

# The coverage report (app/console/coverage.json and docs/coverage.md) from the route table, the
# SOQL and SOSL constructs of app/console/coverage/constructs.yaml, the task types' registry and
# the tests (read, not run).
coverage: $(STAMP)
	$(BIN)/localforce coverage

# Deeper property runs than the gate does (SOQL against the reference evaluator, SOSL), then
# 1,000,000 generated requests and schemathesis over /openapi.json against a server process.
fuzz: $(STAMP)
	LOCALFORCE_PROPERTY_EXAMPLES=2000 $(BIN)/pytest -q tests/soql/test_properties.py tests/sosl/test_search_fuzz.py
	$(BIN)/python -m bench.fuzz

clean:
	rm -rf $(VENV) $(JS_DIR)/node_modules $(SF_DIR)/node_modules data build/docs .mypy_cache .ruff_cache .pytest_cache
