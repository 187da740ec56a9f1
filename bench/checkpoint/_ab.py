"""What the checkpoint A/B benches share: the package as of an older commit, side by side with this one, and their figures."""

from __future__ import annotations

import importlib
import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

BEFORE_PACKAGE = "lgm_before"


def load_before(ref: str, into: Path, source: Path | None = None) -> Any:
    """``PostgresCheckpointer`` of the package as of git ``ref`` (or in folder ``source``), as `BEFORE_PACKAGE`."""
    package = into / BEFORE_PACKAGE
    if source is not None:
        shutil.copytree(source / "langgraph_memory", package, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", ref, "langgraph_memory"],
            check=True,
            capture_output=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(into, filter="data")
        (into / "langgraph_memory").rename(package)
    for path in package.rglob("*.py"):
        path.write_text(path.read_text().replace("langgraph_memory", BEFORE_PACKAGE))
    sys.path.insert(0, str(into))
    return importlib.import_module(f"{BEFORE_PACKAGE}.checkpoint.postgres").PostgresCheckpointer


def ratio_of(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def load_average() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())
