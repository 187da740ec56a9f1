"""Shared fixtures: temporary data directories, fast fake embeddings, the real model once."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# A store's embedded index runs in a child process by default, which costs each store a process start (a test file
# of small stores ran 3-5x slower with it). The suite opens hundreds of stores, so it keeps the index in-process,
# except in the files below, which check the child, crashes and faults on the default path.
os.environ.setdefault("LANGGRAPH_MEMORY_INDEX_PROCESS", "0")
_INDEX_CHILD_FILES = {
    "test_bitrot.py",
    "test_bitrot_unsealed.py",
    "test_crash.py",
    "test_history_survives_sigkill.py",
    "test_index_catch_up.py",
    "test_index_process.py",
    "test_loop_stall.py",
    "test_start_without_chroma_server.py",
    "test_store_processes.py",
}

FAKE_DIMS = 16


@pytest.fixture
def fake_embeddings() -> DeterministicFakeEmbedding:
    """Deterministic, meaningless vectors: fast unit tests only."""
    return DeterministicFakeEmbedding(size=FAKE_DIMS)


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh data directory; the environment points nowhere else."""
    monkeypatch.delenv("LANGGRAPH_MEMORY_DIR", raising=False)
    monkeypatch.delenv("EMBEDDING_MODEL", raising=False)
    return tmp_path / "memory"


@pytest.fixture
def store(data_dir: Path, fake_embeddings: DeterministicFakeEmbedding) -> Iterator:
    from langgraph_memory.store import ChromaStore

    s = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    yield s
    s.close()


@pytest.fixture(params=["memory", "chroma"])
def any_store(request: pytest.FixtureRequest, data_dir: Path, fake_embeddings: DeterministicFakeEmbedding) -> Iterator:
    """The same test against LangGraph's InMemoryStore and our ChromaStore."""
    from langgraph.store.memory import InMemoryStore

    from langgraph_memory.store import ChromaStore

    if request.param == "memory":
        yield InMemoryStore(index={"dims": FAKE_DIMS, "embed": fake_embeddings})
    else:
        s = ChromaStore(data_dir=data_dir, index={"dims": FAKE_DIMS, "embed": fake_embeddings})
        yield s
        s.close()


@pytest.fixture(scope="session")
def real_embeddings():
    """The default offline model, loaded once for the whole session."""
    from langgraph_memory.embeddings.model import SentenceTransformerEmbeddings

    emb = SentenceTransformerEmbeddings()
    emb.embed_query("warm up")
    return emb


@pytest.fixture
def no_blocking() -> Iterator:
    """Fail on any blocking call made on a running event loop, as the LangGraph server does."""
    from tests.helpers.blocking import server_blockbuster

    with server_blockbuster() as bb:
        yield bb


# The catalog's backend for the whole run: LGM_TEST_CATALOG=postgres puts every data directory's
# catalog in a PostgreSQL schema (tests/helpers/catalog_backend.py). Under pytest-xdist the controller makes the
# database once and the workers, started after this hook with its environment, map their directories into it.
_PG_MODE: dict[str, object] = {}


def pytest_configure(config: pytest.Config) -> None:
    from tests.helpers import catalog_backend

    if os.environ.get("PYTEST_XDIST_WORKER"):
        # An xdist worker starts with COLUMNS=80 and LINES=24 in its environment, so the CLI's tables would be cut
        # to 80 columns there and nowhere else; tests that want a width set one.
        os.environ.pop("COLUMNS", None)
        os.environ.pop("LINES", None)
    if os.environ.get(catalog_backend.BACKEND_ENV, "sqlite") != "postgres":
        return
    if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(catalog_backend.SERVER_ENV):
        catalog_backend.install()  # a worker: the controller made the database and the .pth file
        return
    import sys
    import sysconfig

    from tests.helpers.postgres import create_database, start_cluster

    server = os.environ.get("LANGGRAPH_MEMORY_TEST_PG")
    if not server:
        # Never crashed (fault tests crash private clusters with fsync on): skip the flushes only a crash needs.
        os.environ["PG_SERVER_OPTIONS"] = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        try:
            cluster = start_cluster()
        finally:
            del os.environ["PG_SERVER_OPTIONS"]
        _PG_MODE["cluster"] = cluster
        server = cluster.url
    os.environ[catalog_backend.SERVER_ENV] = create_database(server)
    os.environ[catalog_backend.REPO_ENV] = str(Path(__file__).resolve().parent.parent)
    pth = Path(sysconfig.get_paths()["purelib"]) / f"_lgm_test_catalog_{os.getpid()}.pth"
    pth.write_text(catalog_backend.pth_line())
    _PG_MODE["pth"] = pth
    catalog_backend.install()
    print(f"catalog backend: PostgreSQL ({os.environ[catalog_backend.SERVER_ENV]})", file=sys.stderr)


def pytest_unconfigure(config: pytest.Config) -> None:
    cluster = _PG_MODE.pop("cluster", None)
    if cluster is not None:
        cluster.remove()  # type: ignore[attr-defined]
    pth = _PG_MODE.pop("pth", None)
    if pth is not None:
        Path(str(pth)).unlink(missing_ok=True)


# Tests that run on the SQLite catalog only, and why: each tests a data directory's own files (the SQLite
# catalog, its migrations, a disk filled under it). Equivalent to `@pytest.mark.sqlite_only(reason)` on the test.
_SQLITE_ONLY: dict[str, str] = {
    "tests/test_keywords.py::test_update_replaces_the_text_and_index_false_removes_it": "reads SQLite's FTS5 table",
    "tests/test_keywords.py::test_a_version_1_data_directory_gets_its_keyword_index_on_open": "migrates a SQLite file",
    "tests/test_lifecycle.py::test_a_version_1_catalog_migrates": "migrates a version-1 SQLite catalog file",
    "tests/test_cli_wrapping.py": "names a missing data directory (a server memory is named by its address)",
    "tests/test_argument_errors.py::test_a_directory_that_cannot_be_written_is_a_typed_error": "an unwritable data directory",
    "tests/test_argument_errors.py::test_memory_open_of_a_deep_missing_path_creates_it_only_when_asked": "a missing data directory path",
    "tests/test_langgraph_parity.py::test_setup_and_from_conn_string_work_as_on_langgraphs_stores_and_savers": (
        "checks the files a data directory holds"
    ),
    "tests/test_store_damage.py": "damages the data directory's SQLite catalog and index files",
    "tests/test_store_disk_full.py": "fills the disk under the SQLite catalog (on a server the catalog is not there)",
    "tests/test_migrate.py": "copies a data directory's own SQLite catalog to PostgreSQL and back",
    "tests/test_store_processes.py::test_a_held_catalog_lock_times_out_with_a_clear_error": (
        "holds the SQLite catalog file's write lock"
    ),
}
# Tests that do not pass with the catalog on PostgreSQL yet, and why (none today): a known gap is listed here,
# so that it is never silently lost.
_PG_PENDING: dict[str, str] = {}


def _listed(nodeid: str, table: dict[str, str]) -> str | None:
    for key, reason in table.items():
        if nodeid == key or nodeid.startswith(key + "::") or nodeid.startswith(key + "["):
            return reason
    return None


# Which tests run on which backend. `make test` runs the suite twice: every test on the SQLite catalog,
# then with LGM_TEST_CATALOG=postgres only the tests marked `catalog`, whose behaviour depends on the database
# that holds a data directory's catalog (and its checkpoints). The rest are deselected there, not skipped:
#
# * A test that asks for a temporary directory (`tmp_path`, `tmp_path_factory`, or a fixture built on them:
#   `data_dir`, `store`, `any_store`, ...) is marked `catalog` for you: a data directory it makes gets its
#   catalog on PostgreSQL in that pass.
# * A test without one (pure logic: ranking, chunking, parsing, layout) runs on SQLite only.
# * A test that names its own PostgreSQL server (`pg_url`, `pg_database`, `pg_cluster`, `any_saver`) runs the
#   same in both passes, so it runs once, in the SQLite pass.
# * `@pytest.mark.sqlite_only("why")` (or `_SQLITE_ONLY` above) keeps a test off PostgreSQL;
#   `@pytest.mark.catalog` puts one on it that makes its data directory some other way.
_TEMPORARY_DIRECTORY = frozenset({"tmp_path", "tmp_path_factory"})
_OWN_SERVER = frozenset({"pg_url", "pg_database", "pg_cluster", "any_saver"})


def _on_postgres(item: pytest.Item) -> bool:
    if _listed(item.nodeid, _SQLITE_ONLY) is not None or item.get_closest_marker("sqlite_only") is not None:
        return False
    if item.get_closest_marker("catalog") is not None:
        return True
    fixtures = set(getattr(item, "fixturenames", ()))
    return bool(fixtures & _TEMPORARY_DIRECTORY) and not fixtures & _OWN_SERVER


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from tests.helpers import catalog_backend

    on_postgres = [item for item in items if _on_postgres(item)]
    for item in on_postgres:
        item.add_marker(pytest.mark.catalog)
    if not catalog_backend.active():
        return
    for item in on_postgres:
        reason = _listed(item.nodeid, _PG_PENDING)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"not yet passing with the catalog on PostgreSQL: {reason}"))
    chosen = {id(item) for item in on_postgres}
    config.hook.pytest_deselected(items=[item for item in items if id(item) not in chosen])
    items[:] = on_postgres


# PostgreSQL servers (scripts/pg.sh): pg_url, pg_database, pg_cluster.
from tests.helpers.postgres import pg_cluster, pg_database, pg_url  # noqa: E402,F401

# Both checkpointers under one test: any_saver.
from tests.helpers.savers import any_saver  # noqa: E402,F401


@pytest.fixture(autouse=True)
def _index_child_where_checked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default (an index child process) in the files that check it; see `_INDEX_CHILD_FILES`."""
    if request.path.name in _INDEX_CHILD_FILES:
        monkeypatch.delenv("LANGGRAPH_MEMORY_INDEX_PROCESS", raising=False)
