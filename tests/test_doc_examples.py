"""Every Python example in the README and the docs pages runs as written, each in a fresh folder.

A block runs top to bottom in a new module (as `python example.py` would run it), in an empty working directory,
so it may use no name it does not define and no file it does not create. A block that cannot run on its own (a
fragment of a larger program, say) carries the marker comment `# not run by the test suite: <reason>` on one of
its lines; the reason is required. Examples use the model a user gets (the default, offline), because what they
print and assert depends on it; blocks that pass their own fake embedding run fast.
"""

from __future__ import annotations

import re
import sys
import tempfile
import types
from pathlib import Path

import pytest

pytestmark = pytest.mark.sqlite_only(
    "the docs' examples show the embedded default; the calls they show run on PostgreSQL in the rest of the suite"
)

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MARKER = re.compile(r"#\s*not run by the test suite:\s*(\S.*)$", re.M)


def _blocks() -> list[tuple[str, str]]:
    found = []
    for path in SOURCES:
        for n, block in enumerate(re.findall(r"^```python\n(.*?)^```", path.read_text(), flags=re.S | re.M), 1):
            found.append((f"{path.relative_to(ROOT)}#{n}", block))
    return found


BLOCKS = _blocks()


def test_docs_have_runnable_examples() -> None:
    runnable = [b for _, b in BLOCKS if not MARKER.search(b)]
    assert len(runnable) >= 15
    assert any(name.startswith("README.md") for name, _ in BLOCKS), "the README's graph example is collected"


def test_every_skipped_block_says_why() -> None:
    for name, block in BLOCKS:
        if "not run" in block:
            assert MARKER.search(block), f"{name}: write '# not run by the test suite: <reason>'"


@pytest.mark.slow
@pytest.mark.parametrize(("name", "block"), BLOCKS, ids=[name for name, _ in BLOCKS])
def test_doc_example_runs(name: str, block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reason = MARKER.search(block)
    if reason:
        pytest.skip(reason.group(1))
    monkeypatch.chdir(tmp_path)
    # Examples make folders with tempfile.mkdtemp(), as a user copies them: here under tmp_path, which pytest removes
    # (a run left seven memories in the system's temporary folder).
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.delenv("LANGGRAPH_MEMORY_DIR", raising=False)
    monkeypatch.delenv("EMBEDDING_MODEL", raising=False)
    # A real module, as a script run with `python example.py` would be (dataclasses look their module up).
    module = types.ModuleType("doc_example")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = module.__dict__
    try:
        exec(compile(block, name, "exec"), namespace)
    finally:
        for var in ("mem", "theirs", "store", "saver"):
            obj = namespace.get(var)
            if obj is not None and hasattr(obj, "close"):
                obj.close()


def test_every_readme_snippet_runs() -> None:
    readme = [block for name, block in BLOCKS if name.startswith("README.md")]
    assert readme and not any(MARKER.search(block) for block in readme)  # none left out as "a shape, not a program"
