"""Every Python example of the README runs as written, in a fresh folder (none may use a name it does not define)."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
RUNNABLE = BLOCKS


def test_readme_has_runnable_examples() -> None:
    assert len(RUNNABLE) >= 8


@pytest.mark.slow
@pytest.mark.parametrize("block", RUNNABLE, ids=[b.splitlines()[0][:40] for b in RUNNABLE])
def test_readme_example_runs(block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LANGGRAPH_MEMORY_DIR", raising=False)
    # A real module, as a script run with `python example.py` would be (dataclasses look their module up).
    module = types.ModuleType("readme_example")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = module.__dict__
    exec(compile(block, str(README), "exec"), namespace)
    mem = namespace.get("mem")
    if mem is not None:
        mem.close()
    store = namespace.get("store")
    if store is not None and hasattr(store, "close"):
        store.close()
