# Two commands on a fresh machine; each creates .venv when missing.
#   make run   - the main job: the trading-research graph on the embedded default (runtime dependencies only)
#   make test  - the whole test suite, once with the catalog on SQLite and once on PostgreSQL (adds the dev extra)
.PHONY: setup setup-runtime run test test-pg lint bench docs

PY := .venv/bin/python

# Everything a developer needs: the runtime dependencies and the dev extra.
setup:
	@bash scripts/setup.sh dev

setup-runtime:
	@bash scripts/setup.sh

run: setup-runtime
	HF_HUB_OFFLINE=1 $(PY) examples/trading_research.py

# Two workers (pytest-xdist), each test file on one worker, so a file's module fixtures are built once.
PYTEST := HF_HUB_OFFLINE=1 $(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadfile

# Every test on the SQLite catalog, then the tests marked `catalog` (tests/conftest.py) on PostgreSQL.
test: setup
	$(PYTEST)
	LGM_TEST_CATALOG=postgres $(PYTEST)

# One backend: the catalog on PostgreSQL (a throwaway cluster from scripts/pg.sh, or LANGGRAPH_MEMORY_TEST_PG).
test-pg: setup
	LGM_TEST_CATALOG=postgres $(PYTEST)

# Lint, format and types: what CI checks besides the tests.
lint: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy langgraph_memory

docs: setup
	$(PY) -m mkdocs build --strict

bench: setup
	$(PY) bench/store/store_bench.py
	$(PY) bench/checkpoint/checkpoint_bench.py
	$(PY) bench/store/archive_bench.py
