"""Importing the package is cheap, every public name still imports, and a search never loads torch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = (
    "torch",
    "sentence_transformers",
    "chromadb",
    "onnxruntime",
    "langgraph_memory.memory",
    "langgraph_memory.graph.tools",
    "langgraph_memory.store",
    "langgraph_memory.ingest",
)


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )


def test_importing_the_package_loads_no_subsystem() -> None:
    code = f"import sys, langgraph_memory; print([m for m in {HEAVY!r} if m in sys.modules])"
    out = _run(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_every_public_name_imports_and_is_listed() -> None:
    code = (
        "import langgraph_memory as m\n"
        "missing = [n for n in m.__all__ if getattr(m, n, None) is None]\n"
        "from langgraph_memory import Memory, ChromaStore, SqliteCheckpointer, HybridRanking, create_recall_tool\n"
        "from langgraph_memory.store import ChromaStore as C2\n"
        "assert ChromaStore is C2 and Memory.__name__ == 'Memory'\n"
        "assert set(m.__all__) <= set(dir(m))\n"
        "try:\n    m.no_such_name\nexcept AttributeError as e:\n    print('AttributeError', e)\n"
        "print('missing', missing)\n"
    )
    out = _run(code)
    assert out.returncode == 0, out.stderr
    assert "AttributeError module 'langgraph_memory' has no attribute 'no_such_name'" in out.stdout
    assert "missing []" in out.stdout


@pytest.mark.slow
def test_a_search_from_the_command_line_needs_no_torch(tmp_path: Path) -> None:
    data = tmp_path / "memory"
    seed = (
        "from langgraph_memory import Memory\n"
        f"with Memory.open({str(data)!r}) as mem:\n"
        "    mem.store.put(('memories', 'u1'), 'rates', {'content': 'The central bank raised interest rates.'})\n"
        "    mem.store.put(('memories', 'u1'), 'bread', {'content': 'Sourdough needs a cold fermentation.'})\n"
    )
    out = _run(seed)
    assert out.returncode == 0, out.stderr
    # As on a machine without torch: any import of it fails.
    search = (
        "import sys; sys.modules['torch'] = None; sys.modules['sentence_transformers'] = None\n"
        "from langgraph_memory.cli import main\n"
        f"code = main(['--data-dir', {str(data)!r}, '--json', 'search', 'monetary policy', '-k', '1'])\n"
        "print('exit', code)\n"
    )
    out = _run(search)
    assert out.returncode == 0, out.stderr
    assert '"key": "rates"' in out.stdout
    assert "exit 0" in out.stdout
