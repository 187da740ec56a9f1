"""History under SIGKILL, the long run: kill a writer N times (default 200), check the history after each.

    python bench/faults/history_crash_bench.py               # 200 kills
    python bench/faults/history_crash_bench.py --kills 30    # quick
    python bench/faults/history_crash_bench.py --write       # also write bench/results/RESULTS_history_crash.md

The worker and the check are ``bench/common/history_crash.py`` (the suite's
``tests/test_history_survives_sigkill.py`` makes 20 kills): puts, deletes,
retires and reinstates of a small key set, each acknowledgement logged; after
every kill the directory is reopened and its history checked against the log
and the catalog (every acknowledged value is a version, versions chain where
a change replaced them, no version without a written value or its vectors).
The catalog is the data directory's SQLite file.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.common.history_crash import check, kill_after  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=200)
    ap.add_argument("--seed", type=int, default=4848)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    failures: list[str] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="history-crash-") as tmp:
        data_dir, log = Path(tmp) / "memory", Path(tmp) / "log.jsonl"
        result = None
        for kill in range(args.kills):
            kill_after(data_dir, log, rng.randrange(10**6), rng.randint(2, 12), rng.uniform(0.0, 0.08))
            result = check(data_dir, log)
            if not result.ok:
                failures.append(f"kill {kill + 1}: {result.summary()}")
            print(f"kill {kill + 1}/{args.kills}: {result.summary()}", flush=True)
    assert result is not None
    took = time.monotonic() - started
    table = (
        "| kills | acknowledged changes | past versions | failed checks | minutes |\n"
        "|---:|---:|---:|---:|---:|\n"
        f"| {args.kills} | {result.acknowledged} | {result.versions} | {len(failures)} | {took / 60:.1f} |\n"
    )
    print(table)
    for f in failures:
        print(f)
    if args.write:
        out = Path(__file__).resolve().parents[1] / "results" / "RESULTS_history_crash.md"
        out.write_text(
            "# Item history under SIGKILL\n\n`python bench/faults/history_crash_bench.py --kills "
            f"{args.kills} --write` (SQLite catalog, 2 shared cores).\n\n{table}"
        )
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
