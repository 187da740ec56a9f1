"""notebooks/quickstart.ipynb: saved with its outputs, and runs top to bottom from any working directory."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers import catalog_backend

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "quickstart.ipynb"
KERNEL = "lgm-test-python"


@pytest.fixture
def kernel_for_this_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernelspec that runs exactly this interpreter, whatever kernels the machine has installed."""
    spec_dir = tmp_path / "jupyter" / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "langgraph-memory tests",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    return KERNEL


def test_the_notebook_is_saved_with_its_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.get("outputs") for c in code)  # it reads well without being run
    assert not any(o.get("output_type") == "error" for c in code for o in c["outputs"])


@pytest.mark.slow
def test_quickstart_notebook_executes(tmp_path: Path, kernel_for_this_python: str, monkeypatch) -> None:
    data_dir = tmp_path / "memory"
    monkeypatch.setenv("LANGGRAPH_MEMORY_DIR", str(data_dir))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name=kernel_for_this_python,
        timeout=300,
        resources={"metadata": {"path": str(tmp_path)}},  # any working directory, not the notebook's
    )
    client.execute()
    outputs = "".join(
        o.get("text", "") for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])
    )
    assert str(data_dir.resolve()) in outputs  # the notebook used the directory we gave it
    assert "versions: [(1, 'tested'), (2, 'approved')]" in outputs
    assert "iterations: 3 then 1" in outputs  # the second run learnt from the first
    assert "recall_memory ->" in outputs and "created memory" in outputs  # the agent's tools, LangMem's
    assert "('research_findings', 'unknown'), ('strategy_library', 'unknown')" in outputs  # the bundle's lineage
    assert catalog_backend.has_catalog(data_dir)
    assert catalog_backend.has_catalog(data_dir / "trading")
