# Two commands on a fresh machine; each creates .venv when missing.
#   make run   - the main job: the trading-research graph on the embedded default
#   make test  - the whole test suite
.PHONY: setup run test bench

PY := .venv/bin/python

setup:
	@bash scripts/setup.sh

run: setup
	HF_HUB_OFFLINE=1 $(PY) examples/trading_research.py

test: setup
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q -p no:cacheprovider

bench: setup
	$(PY) bench/store_bench.py
	$(PY) bench/checkpoint_bench.py
	$(PY) bench/archive_bench.py
