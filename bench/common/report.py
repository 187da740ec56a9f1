"""Helpers shared by the benchmark scripts: machine description, timing, tables.

Nothing here imports the library or any heavy dependency, so a script can
print what machine it runs on before it pays for torch or chromadb.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Self

__all__ = [
    "Machine",
    "Stopwatch",
    "cpu_flags",
    "cpu_model",
    "fmt_ms",
    "fmt_rate",
    "git_state",
    "machine",
    "markdown_table",
    "percentile",
]


@dataclass
class Machine:
    """What a result depends on, written next to every table."""

    nproc: int
    cpu: str
    flags: str
    python: str
    versions: dict[str, str]
    date: str
    load_start: tuple[float, float, float]
    load_end: tuple[float, float, float] | None = None
    code: str = ""

    def lines(self) -> list[str]:
        load = "/".join(f"{x:.2f}" for x in self.load_start)
        out = [
            f"- CPU: {self.cpu}, {self.nproc} cores (nproc); {self.flags}",
            f"- Python {self.python}; " + ", ".join(f"{k} {v}" for k, v in self.versions.items()),
            f"- Date: {self.date}" + (f"; code: {self.code}" if self.code else ""),
            f"- Load average (1/5/15 min) at start: {load}",
        ]
        if self.load_end is not None:
            out[-1] += "; at end: " + "/".join(f"{x:.2f}" for x in self.load_end)
        return out


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10, check=False).stdout
        for line in out.splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> str:
    """``AVX2, AVX-512F, AVX-512 VNNI`` as this CPU has them: the same code runs up to 2x apart on such machines."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return "CPU flags unknown"
    words = next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), [])
    names = {"avx2": "AVX2", "avx512f": "AVX-512F", "avx512_vnni": "AVX-512 VNNI"}
    have = [label for flag, label in names.items() if flag in words]
    if not have:
        return "no AVX2"
    return ", ".join(have) + ("" if "avx512f" in words else " (no AVX-512)")


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine(packages: Sequence[str]) -> Machine:
    """Describe this machine now (load average included)."""
    return Machine(
        nproc=os.cpu_count() or 0,
        cpu=cpu_model(),
        flags=cpu_flags(),
        python=sys.version.split()[0],
        versions={p: _version(p) for p in packages},
        date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        load_start=os.getloadavg(),
    )


def git_state(repo: str | os.PathLike[str], paths: Sequence[str] = ()) -> str:
    """``<short commit>`` plus ``+ uncommitted changes`` when ``paths`` differ from it."""
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--", *paths],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head or 'unknown'}{' + uncommitted changes' if dirty else ''}"


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100), like numpy's default."""
    if not values:
        return float("nan")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


class Stopwatch:
    """Accumulate wall time over several ``with`` blocks."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __enter__(self) -> Self:
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds += time.perf_counter() - self._t0


def fmt_rate(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def fmt_ms(x: float | None) -> str:
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.2f}" if x < 10 else f"{x:.1f}"


def markdown_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    right: Sequence[bool] | None = None,
) -> str:
    """A GitHub-flavoured markdown table (pipes in cells escaped)."""
    right = right or [False] * len(header)

    def cell(s: str) -> str:
        return str(s).replace("|", "\\|")

    out = ["| " + " | ".join(cell(h) for h in header) + " |"]
    out.append("|" + "|".join("---:" if r else "---" for r in right) + "|")
    out.extend("| " + " | ".join(cell(c) for c in row) + " |" for row in rows)
    return "\n".join(out)
