"""A feature whose optional dependency is not installed says which extra to install, from Python and the CLI.

The missing install is real to the process: a ``sitecustomize`` sets the
modules to ``None`` in ``sys.modules`` before anything runs, which is what
Python's import system reports as not installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langgraph_memory import Memory

CLI = Path(sys.executable).with_name("langgraph-memory")
PG_EXTRA = "pip install 'langgraph-chroma-memory[postgres]'"
# Nobody listens there: the error must come before any attempt to connect.
DEAD_URL = "postgresql://postgres@127.0.0.1:9/memory"


def _without(tmp_path: Path, *modules: str) -> dict[str, str]:
    """An environment whose Python processes find none of ``modules``."""
    hide = tmp_path / "hide"
    hide.mkdir(exist_ok=True)
    (hide / "sitecustomize.py").write_text(f"import sys\nfor _name in {modules!r}:\n    sys.modules[_name] = None\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(hide), env.get("PYTHONPATH", "")) if p)
    return env


def _python(env: dict[str, str], code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.sqlite_only("opens a server address of its own, not the run's catalog: the same in both passes")
def test_memory_open_on_a_server_without_the_postgres_extra_names_the_extra(tmp_path: Path) -> None:
    code = (
        "from langgraph_memory import Memory\n"
        "from langgraph_memory.errors import MissingExtraError\n"
        "try:\n"
        f"    Memory.open({DEAD_URL!r}, embeddings=False, local_dir={str(tmp_path / 'local')!r})\n"
        "except MissingExtraError as exc:\n"
        "    print('MissingExtraError:', exc)\n"
    )
    done = _python(_without(tmp_path, "psycopg", "psycopg_pool"), code)
    assert done.returncode == 0, done.stderr
    assert "MissingExtraError:" in done.stdout and PG_EXTRA in done.stdout, done.stdout
    assert "ModuleNotFoundError" not in done.stderr


@pytest.mark.sqlite_only("an import only, no catalog: the same in both passes")
def test_the_postgres_checkpointer_without_the_extra_names_it(tmp_path: Path) -> None:
    code = (
        "from langgraph_memory.errors import MissingExtraError\n"
        "try:\n"
        "    from langgraph_memory.checkpoint.postgres import PostgresCheckpointer\n"
        "except MissingExtraError as exc:\n"
        "    print('MissingExtraError:', exc)\n"
    )
    done = _python(_without(tmp_path, "psycopg"), code)
    assert done.returncode == 0, done.stderr
    assert PG_EXTRA in done.stdout, done.stdout


@pytest.mark.sqlite_only("the PostgreSQL test mode reaches every data directory through psycopg, which this hides")
def test_cli_migrate_to_a_server_without_the_postgres_extra_names_it(tmp_path: Path) -> None:
    source = tmp_path / "memory"
    with Memory.open(source, embeddings=DeterministicFakeEmbedding(size=8)) as mem:
        mem.store.put(("notes",), "a", {"text": "kept"})
    env = _without(tmp_path, "psycopg", "psycopg_pool")
    for argv in (["migrate", str(source), DEAD_URL], ["checkpoints", "migrate", str(source), DEAD_URL]):
        done = subprocess.run([str(CLI), *argv], capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 2, (argv, done.stdout, done.stderr)
        assert PG_EXTRA in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_langchain_model_name_without_langchain_names_the_extra(tmp_path: Path) -> None:
    pytest.importorskip("langchain")
    code = (
        "from langgraph_memory import ChromaStore\n"
        "from langgraph_memory.errors import MissingExtraError\n"
        "try:\n"
        f"    ChromaStore(data_dir={str(tmp_path / 'm')!r}, index={{'dims': 8, 'embed': 'openai:text-embedding-3-small'}})\n"
        "except MissingExtraError as exc:\n"
        "    print('MissingExtraError:', exc)\n"
    )
    done = _python(_without(tmp_path, "langchain"), code)
    assert done.returncode == 0, done.stderr
    assert "pip install 'langgraph-chroma-memory[langchain]'" in done.stdout, (done.stdout, done.stderr)
