"""Benchmarks, probes and fault drills, one folder per area: store, checkpoint, recall, faults, load.

Each script runs from the checkout (``python bench/store/store_bench.py --help``)
and writes its tables to ``bench/results/``. Code shared between scripts lives in
``bench/common`` or in a module whose name starts with ``_``; a script never
imports another script, and nothing here imports ``tests/``
(``tests/test_bench_layout.py`` checks both).
"""
