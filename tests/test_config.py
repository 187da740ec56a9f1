"""Settings resolve as argument > environment > config file > default."""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_memory.config import Settings, resolve_embedding_model, resolve_lock_timeout
from langgraph_memory.errors import ConfigError


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("LANGGRAPH_MEMORY_DIR", "EMBEDDING_MODEL", "LANGGRAPH_MEMORY_CONFIG", "LANGGRAPH_MEMORY_LOCK_TIMEOUT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


def test_default_is_dot_memory(tmp_path: Path) -> None:
    s = Settings.resolve()
    assert s.data_dir == (tmp_path / "memory").resolve()
    assert s.chroma_dir == s.data_dir / "chroma"
    assert s.checkpoints_path == s.data_dir / "checkpoints.sqlite"
    assert s.archive_dir == s.data_dir / "archive" and s.raw_dir == s.data_dir / "raw"
    assert s.embedding_model == "sentence-transformers/all-MiniLM-L6-v2"
    assert s.lock_timeout == 30.0


def test_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "langgraph-memory.toml").write_text('data_dir = "from-file"\nembedding_model = "file-model"\n')
    assert Settings.resolve().data_dir.name == "from-file"
    assert resolve_embedding_model() == "file-model"
    monkeypatch.setenv("LANGGRAPH_MEMORY_DIR", str(tmp_path / "from-env"))
    monkeypatch.setenv("EMBEDDING_MODEL", "env-model")
    assert Settings.resolve().data_dir.name == "from-env"
    assert resolve_embedding_model() == "env-model"
    assert Settings.resolve(tmp_path / "from-arg").data_dir.name == "from-arg"
    assert resolve_embedding_model("arg-model") == "arg-model"


def test_explicit_config_file_and_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "conf.toml"
    cfg.write_text('[langgraph_memory]\ndata_dir = "tabled"\nlock_timeout = 5\n')
    monkeypatch.setenv("LANGGRAPH_MEMORY_CONFIG", str(cfg))
    s = Settings.resolve()
    assert s.data_dir.name == "tabled" and s.lock_timeout == 5.0
    monkeypatch.setenv("LANGGRAPH_MEMORY_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match="does not name a file"):
        Settings.resolve()
    monkeypatch.delenv("LANGGRAPH_MEMORY_CONFIG")
    (tmp_path / "langgraph-memory.toml").write_text("data_dir = [unclosed")
    with pytest.raises(ConfigError, match="cannot read config file"):
        Settings.resolve()
    (tmp_path / "langgraph-memory.toml").unlink()
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        Settings.resolve(tmp_path / "a-file")
    with pytest.raises(ConfigError, match="positive"):
        Settings.resolve(lock_timeout=0)


def test_lock_timeout_is_one_setting_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_embeddings
) -> None:
    from langgraph_memory.checkpoint import SqliteCheckpointer
    from langgraph_memory.memory import Memory
    from langgraph_memory.research.lineage import LineageStore

    (tmp_path / "langgraph-memory.toml").write_text("lock_timeout = 7\n")
    assert resolve_lock_timeout() == 7.0 and Settings.resolve().lock_timeout == 7.0
    with Memory.open(tmp_path / "m", embeddings=fake_embeddings) as mem:
        assert mem.settings.lock_timeout == 7.0
        assert mem.store.catalog.timeout == 7.0
        saver = mem.checkpointer  # SqliteCheckpointer, or PostgresCheckpointer with the catalog on PostgreSQL
        assert (saver._pool.busy_timeout if hasattr(saver, "_pool") else saver.timeout) == 7.0
        assert mem.archiver._run_lock_file.timeout == 7.0
    with SqliteCheckpointer(tmp_path / "cp.sqlite") as saver:  # a bare path honours the config file too
        assert saver._pool.busy_timeout == 7.0
    with LineageStore(tmp_path / "lin.sqlite") as lin:
        assert lin.catalog.timeout == 7.0
    monkeypatch.setenv("LANGGRAPH_MEMORY_LOCK_TIMEOUT", "3")
    assert resolve_lock_timeout() == 3.0 and resolve_lock_timeout(1) == 1.0
    monkeypatch.setenv("LANGGRAPH_MEMORY_LOCK_TIMEOUT", "soon")
    with pytest.raises(ConfigError, match="lock_timeout"):
        resolve_lock_timeout()
    with SqliteCheckpointer(tmp_path / "arg.sqlite", lock_timeout=2) as saver:
        assert saver._pool.busy_timeout == 2.0
