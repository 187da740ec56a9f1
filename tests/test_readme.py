"""The README's Python examples run as written (those that need no graph of the reader's own)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
# Blocks that use the reader's own `builder`, `inputs` or an event loop are shapes, not programs.
RUNNABLE = [b for b in BLOCKS if not re.search(r"\bbuilder\b|\bawait\b|\binputs\b", b)]


def test_readme_has_runnable_examples() -> None:
    assert len(RUNNABLE) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("block", RUNNABLE, ids=[b.splitlines()[0][:40] for b in RUNNABLE])
def test_readme_example_runs(block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LANGGRAPH_MEMORY_DIR", raising=False)
    namespace: dict = {"__name__": "readme"}
    exec(compile(block, str(README), "exec"), namespace)
    mem = namespace.get("mem")
    if mem is not None:
        mem.close()
    store = namespace.get("store")
    if store is not None and hasattr(store, "close"):
        store.close()
