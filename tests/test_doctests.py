"""The `>>>` examples in the package's docstrings run and print what they say.

An example that cannot run on its own is marked `# <why>  # doctest: +SKIP`: the reason is required, on the line.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import langgraph_memory

pytestmark = pytest.mark.sqlite_only(
    "docstring examples show the embedded default (one data directory); the calls they show run on PostgreSQL in the rest of the suite"
)

PACKAGE = Path(langgraph_memory.__file__).parent
MODULES = sorted(
    m.name for m in pkgutil.walk_packages([str(PACKAGE)], prefix="langgraph_memory.") if not m.name.endswith("__main__")
)


@pytest.mark.parametrize("module_name", ["langgraph_memory", *MODULES])
def test_docstring_examples_run(module_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # examples that write ./memory or ./share write here
    monkeypatch.delenv("LANGGRAPH_MEMORY_DIR", raising=False)
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failures: list[str] = []
    for test in finder.find(module, module_name):
        runner.run(test, out=failures.append)
    assert not failures, "".join(failures)


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
