"""The `>>>` examples in the package's docstrings run and print what they say.

Examples run in their module's namespace plus an open memory with a small research history (`namespace`
below): ``mem`` and ``store`` (its store, on fake 16-dimensional vectors), the finding ``f`` (also ``finding``
and ``old``, superseded by nothing yet), a second finding ``new``, the hypothesis ``h``, the strategy ``s``
(``strategy``, named "breakout"), its backtest ``b``, the ``lesson`` from it, and an equity ``curve``. Each
docstring gets a fresh copy of the names, but all of a module's docstrings share the one memory.

An example that cannot run even so is marked `# <why>  # doctest: +SKIP`: the reason is required, on the line.

Examples make their folders with ``tempfile.mkdtemp()``, as a user would copy them; here those folders are made in
the test's ``tmp_path``, which pytest removes, instead of staying in the system's temporary folder (a run left about
40 data directories there).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

import langgraph_memory
from langgraph_memory import Memory
from tests.conftest import FAKE_DIMS

pytestmark = pytest.mark.sqlite_only(
    "docstring examples show the embedded default (one data directory); the calls they show run on PostgreSQL in the rest of the suite"
)

PACKAGE = Path(langgraph_memory.__file__).parent
MODULES = sorted(
    m.name for m in pkgutil.walk_packages([str(PACKAGE)], prefix="langgraph_memory.") if not m.name.endswith("__main__")
)


def namespace(data_dir: Path) -> tuple[dict[str, Any], Memory]:
    """The names the examples may use besides their module's own (see this file's docstring)."""
    mem = Memory.open(data_dir, embeddings=DeterministicFakeEmbedding(size=FAKE_DIMS))
    f = mem.store_research_finding("Carry unwinds in vol spikes", source="macro", confidence=0.7)
    new = mem.store_research_finding("Carry unwinds in vol spikes, 2010-2024", source="macro", confidence=0.8)
    h = mem.store_hypothesis("Momentum persists in trending regimes", confidence=0.6, parent_id=f.id)
    s = mem.store_strategy("breakout", "55-day breakout", parameters={"lookback": 55}, hypothesis_id=h.id)
    curve = [100.0 * 1.0004**day for day in range(250)]
    b = mem.store_backtest(s.id, period_start="2015-01-02", period_end="2024-12-31", sharpe=1.3, trades=40)
    lesson = mem.store_lesson("Stops too tight: whipsaw", backtest_id=b.id, iteration=1)
    names = {"mem": mem, "store": mem.store, "f": f, "finding": f, "old": f, "new": new, "h": h, "s": s}
    names |= {"strategy": s, "b": b, "lesson": lesson, "curve": curve}
    return names, mem


@pytest.fixture(autouse=True)
def _temporary_folders_in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``tempfile`` makes its folders and files under ``tmp_path/tmp`` (in child processes too) while a test runs."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setenv("TMPDIR", str(folder))


def run_examples(module_name: str, tmp_path: Path) -> list[str]:
    """Run the examples of ``module_name``'s docstrings in the names above; return the failures' reports."""
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = finder.find(module, module_name)
    failures: list[str] = []
    names: dict[str, Any] = {}
    mem = None
    if any(
        re.search(r"\b(mem|store)\b", e.source) and not e.options.get(doctest.SKIP) for t in tests for e in t.examples
    ):
        names, mem = namespace(tmp_path / "doctest-memory")
    try:
        for test in tests:
            test.globs.update(names)
            runner.run(test, out=failures.append)
    finally:
        if mem is not None:
            mem.close()
    return failures


@pytest.mark.parametrize("module_name", ["langgraph_memory", *MODULES])
def test_docstring_examples_run(module_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # examples that write ./memory or ./share write here
    monkeypatch.delenv("LANGGRAPH_MEMORY_DIR", raising=False)
    failures = run_examples(module_name, tmp_path)
    assert not failures, "".join(failures)


def test_the_folders_examples_make_are_the_tests(tmp_path: Path) -> None:
    # The module's example opens two catalogs, each in a folder of `tempfile.mkdtemp()`.
    assert not run_examples("langgraph_memory.catalog.transfer", tmp_path)
    made = sorted((tmp_path / "tmp").iterdir())
    assert len(made) == 2 and all((folder / "catalog.sqlite").is_file() for folder in made)


def test_the_package_has_docstring_examples() -> None:
    count = sum(
        len(t.examples)
        for name in ["langgraph_memory", *MODULES]
        for t in doctest.DocTestFinder(exclude_empty=True).find(importlib.import_module(name), name)
    )
    assert count >= 250


def test_every_skip_says_why() -> None:
    bare = []
    for path in PACKAGE.rglob("*.py"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if "doctest:" in line and "+SKIP" in line and not re.search(r"#\s*\S.*#\s*doctest:\s*\+SKIP", line):
                bare.append(f"{path.relative_to(PACKAGE)}:{n}")
    assert not bare, f"+SKIP without a reason on the line: {bare}"
