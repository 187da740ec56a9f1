"""Opening the catalog a memory's settings name: the SQLite file of a data directory, or a PostgreSQL database.

>>> import tempfile
>>> from langgraph_memory.config import Settings
>>> cat = open_catalog(Settings.resolve(tempfile.mkdtemp()))
>>> cat.dialect
'sqlite'
>>> cat.close()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, cast

from langgraph_memory.catalog.catalog import Catalog

if TYPE_CHECKING:
    from langgraph_memory.config import Settings

__all__ = ["open_catalog"]


def open_catalog(
    settings: Settings, *, durability: Literal["normal", "full"] = "normal", read_only: bool = False
) -> Catalog:
    """The catalog of ``settings``: `PgCatalog` for a ``postgresql://`` address, else the SQLite file.

    Both have one interface (`read()`, `write()`, `snapshot()`, meta), so the
    result is typed as the SQLite `Catalog`, whose calls it answers.
    """
    if settings.catalog_url is not None:
        from langgraph_memory._infra.extras import require_extra

        require_extra("postgres", "a memory on a PostgreSQL server")
        from langgraph_memory.catalog.postgres.catalog import PgCatalog

        return cast(Catalog, PgCatalog(settings.catalog_url, timeout=settings.lock_timeout))
    return Catalog(settings.catalog_path, timeout=settings.lock_timeout, durability=durability, read_only=read_only)
