"""What every command shares: the context, opening the data directory, output, tables, progress, exit codes."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Literal

from langgraph_memory._infra.pg import is_postgres_url, redact
from langgraph_memory.config import Settings
from langgraph_memory.errors import ConfigError, MemoryNotFoundError
from langgraph_memory.research.collections import preview

__all__ = [
    "EXIT_OK",
    "EXIT_NOTHING",
    "EXIT_USAGE",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "Ctx",
    "MissingDataDir",
    "namespace_arg",
    "positive_int",
    "json_arg",
    "json_object_arg",
    "unit_arg",
    "moment_arg",
    "AS_OF_HELP",
    "stamp",
    "iso",
    "item_dict",
    "find_items",
    "preview",
]

#: The command did what was asked.
EXIT_OK = 0
#: The command ran, but nothing matched what was asked (no hit, unknown id, nothing to restore).
EXIT_NOTHING = 1
#: Bad usage: arguments, a missing data directory, a bad filter.
EXIT_USAGE = 2
#: The command failed (a damaged file, a lock held too long, a full disk) or found problems (verify).
EXIT_ERROR = 3
#: Interrupted (Ctrl-C, SIGINT): 128 + 2, as shells report it.
EXIT_INTERRUPTED = 130

# Tables on a pipe or in a file get this width, so nothing is squeezed (ids least of all).
_PIPE_WIDTH = 200


class MissingDataDir(MemoryNotFoundError):
    """The data directory a command should read does not exist."""


def namespace_arg(text: str) -> tuple[str, ...]:
    """An argparse type: ``"memories/u1"`` as ``("memories", "u1")`` (labels joined by ``/``)."""
    import argparse

    labels = tuple(label for label in text.split("/") if label)
    if not labels:
        # argparse shows an ArgumentTypeError's own message; any other error as "invalid namespace_arg value".
        raise argparse.ArgumentTypeError(f"a namespace needs at least one label, like 'memories/u1', got {text!r}")
    return labels


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of at least 1, got {value}")
    return value


def json_arg(text: str) -> Any:
    """An argparse type: a JSON value; broken JSON is refused saying where, with an example of the form.

    Every JSON option (``--filter``, ``--costs``, ``--parameters``...) parses through here, so they all
    fail alike: ``argument --filter: not valid JSON (Expecting property name ... at column 2): '{bad'``.
    """
    import argparse

    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(
            f"not valid JSON ({exc.msg} at column {exc.colno}): {text!r}. "
            """Write it in single quotes for the shell, e.g. '{"key": "value"}'"""
        ) from None


def json_object_arg(text: str) -> dict[str, Any]:
    """An argparse type: a JSON object (``{...}``), as filters and records are."""
    import argparse

    value = json_arg(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f'expected a JSON object, like \'{{"severity": "major"}}\', got {type(value).__name__} {text!r}'
        )
    return value


def unit_arg(unit: Any, name: str) -> Callable[[str], float]:
    """An argparse type for a number with a `langgraph_memory.research.units.Unit`: its range, its hint."""
    import argparse

    from langgraph_memory.errors import ValidationError

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number ({unit.describe()}), got {text!r}") from None
        try:
            return float(unit.check(value, name))
        except ValidationError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def moment_arg(text: str) -> datetime:
    """An argparse type: ``--as-of`` (an ISO date, the end of that day, or date and time; UTC unless it says)."""
    import argparse

    from langgraph_memory.errors import InvalidArgumentError
    from langgraph_memory.research.calls import parse_moment

    try:
        return parse_moment(text)
    except InvalidArgumentError as exc:
        raise argparse.ArgumentTypeError(str(exc).replace("as_of", "--as-of")) from None


def day_arg(text: str) -> date:
    """An argparse type: ``--data-cutoff`` (an ISO date)."""
    import argparse

    from langgraph_memory.errors import InvalidArgumentError
    from langgraph_memory.research.calls import parse_day

    try:
        day = parse_day(text)
    except InvalidArgumentError as exc:
        raise argparse.ArgumentTypeError(str(exc).replace("data_cutoff", "--data-cutoff")) from None
    assert day is not None
    return day


#: The help of every ``--as-of``.
AS_OF_HELP = (
    "read the memory as it stood at this moment: an ISO date (2026-03-03, the end of that day, UTC) "
    "or date and time (2026-03-03T14:30, UTC unless it names its offset)"
)


def stamp(ts: float | datetime | None) -> str:
    """A timestamp (epoch seconds or a datetime) for a table: ``2026-01-31 10:00`` (UTC)."""
    if ts is None:
        return "-"
    if isinstance(ts, datetime):
        ts = ts.timestamp()
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M")


def iso(value: Any) -> str | None:
    """A datetime or epoch seconds as ISO 8601 (UTC), for JSON."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        value = datetime.fromtimestamp(value, tz=UTC)
    return value.isoformat()


def item_dict(item: Any, score: float | None = None) -> dict[str, Any]:
    """An item (``Item``, ``SearchItem`` or ``StoredItem``) as JSON-ready data."""
    out: dict[str, Any] = {
        "namespace": list(item.namespace),
        "key": item.key,
        "value": item.value,
        "created_at": iso(item.created_at),
        "updated_at": iso(item.updated_at),
    }
    for name in ("last_accessed_at", "expires_at"):
        if getattr(item, name, None) is not None:
            out[name] = iso(getattr(item, name))
    if hasattr(item, "access_count"):
        out["access_count"] = item.access_count
    if score is not None or hasattr(item, "score"):
        out["score"] = score if score is not None else item.score
    return out


def find_items(mem: Any, key: str, namespace: tuple[str, ...] | None) -> list[Any]:
    """The live items (``StoredItem``) with this key: in ``namespace`` if given, else in any namespace."""
    from langgraph_memory.catalog import item_rows as _item_rows

    with mem.store.catalog.read() as conn:
        if namespace is not None:
            return list(_item_rows.get_items(conn, [(namespace, key)]).values())
        return _item_rows.items_by_key(conn, key)


@dataclass
class Ctx:
    """One command's run: its arguments, where results go (stdout) and where progress goes (stderr)."""

    args: Any
    out: Any
    err: Any

    @classmethod
    def create(cls, args: Any) -> Ctx:
        from rich.console import Console

        width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else _PIPE_WIDTH
        return cls(args, Console(width=width, highlight=False), Console(stderr=True, highlight=False))

    @property
    def json(self) -> bool:
        return bool(getattr(self.args, "json", False))

    @property
    def data_dir(self) -> str | None:
        """Where the memory is: ``--url`` (a ``postgresql://`` address) or ``--data-dir``; None for the default."""
        url = getattr(self.args, "url", None)
        data_dir = getattr(self.args, "data_dir", None)
        if url is not None and data_dir is not None:
            raise ConfigError("give --url or --data-dir, not both (--local-dir names the local folder of a server)")
        if url is not None and not is_postgres_url(url):
            raise ConfigError(f"--url must be a postgresql:// address, got {redact(str(url))!r}")
        return url if url is not None else data_dir

    @property
    def local_dir(self) -> str | None:
        return getattr(self.args, "local_dir", None)

    @property
    def read_only(self) -> bool:
        """``--read-only``: open the memory for reading only."""
        return bool(getattr(self.args, "read_only", False))

    # ------------------------------------------------------------ opening

    def settings(self, *, must_exist: bool = True) -> Settings:
        """The resolved settings; a missing data directory is `MissingDataDir` unless it may be created.

        A memory on a server always exists (its tables are made on first open); its local folder is created.
        """
        settings = Settings.resolve(self.data_dir, local_dir=self.local_dir)
        if settings.catalog_url is not None:
            return settings
        if must_exist and not settings.data_dir.is_dir():
            raise MissingDataDir(
                f"no memory at {settings.data_dir}: the data directory does not exist. Check --data-dir, "
                "$LANGGRAPH_MEMORY_DIR or the config file (a program that calls Memory.open, or "
                "`langgraph-memory import`, creates it)."
            )
        return settings

    def open_memory(self, *, embed: bool = False, create: bool = False) -> Any:
        """``Memory.open`` on the data directory; with ``embed`` the configured model (loaded on first use).

        Unless ``create``, a folder that holds no memory is refused (`MemoryNotFoundError`) and left untouched:
        a command that reads never turns a folder into a memory.
        """
        from langgraph_memory.memory import Memory
        from langgraph_memory.platform import chroma_client_from_env

        settings = self.settings(must_exist=not create or self.read_only)
        # The index on the memory's Chroma server ($LANGGRAPH_MEMORY_CHROMA_URL), as the graphs sharing it use.
        client = chroma_client_from_env()
        embeddings: Literal[False] | None = None if embed else False
        if settings.catalog_url is not None:
            return Memory.open(
                settings.catalog_url,
                local_dir=settings.data_dir,
                embeddings=embeddings,
                chroma_client=client,
                read_only=self.read_only,
            )
        return Memory.open(
            settings.data_dir, embeddings=embeddings, chroma_client=client, read_only=self.read_only, create=create
        )

    def checkpointer(self, settings: Settings) -> Any:
        """The memory's checkpointer for thread commands: PostgreSQL's beside a catalog on a server, else the
        data directory's ``checkpoints.sqlite`` (None when nothing was ever checkpointed there)."""
        if settings.catalog_url is None and not settings.checkpoints_path.exists():
            return None
        from langgraph_memory.checkpoint.factory import open_checkpointer

        return open_checkpointer(settings, read_only=self.read_only)

    def load_model(self, mem: Any) -> None:
        """Load the embedding model now, behind a spinner (it takes seconds, once)."""
        inner = getattr(mem.store.cached_embeddings, "inner", None)
        if inner is None or getattr(inner, "loaded", True) or not hasattr(inner, "load"):
            return
        with self.err.status("Loading the embedding model (first use takes a few seconds)..."):
            inner.load()

    # ------------------------------------------------------------ output

    def emit(self, data: Any) -> None:
        """JSON on stdout, one document (parse it back with ``json.loads``)."""
        self.out.file.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
        self.out.file.flush()

    def say(self, message: str, *, markup: bool = False) -> None:
        """A human message on stdout (never with ``--json``, whose stdout is the JSON alone).

        Not read as rich markup unless ``markup``: messages quote user text, and ``[...]`` in it must show.
        """
        console = self.err if self.json else self.out
        console.print(message, markup=markup, highlight=False, soft_wrap=True)  # paths stay whole

    def table(
        self, title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]], *, ids: Sequence[str] = ()
    ) -> None:
        """A table; the columns named in ``ids`` are never wrapped or cut (users copy them)."""
        from rich.table import Table
        from rich.text import Text

        table = Table(title=Text(title) if title else None)
        for i, col in enumerate(columns):
            if col in ids:
                width = max([len(col), *(len(str(r[i])) for r in rows)])
                table.add_column(col, no_wrap=True, min_width=width, overflow="ignore")
            else:
                table.add_column(col, overflow="ellipsis")
        for row in rows:
            table.add_row(*(Text(str(c)) for c in row))  # cells are data, never markup
        self.out.print(table)

    def hits(
        self, title: str, hits: Sequence[Any], *, digits: int = 4, lifecycle: Callable[[Any], str] | None = None
    ) -> None:
        """Search hits as a table: score, namespace, key, the ``lifecycle`` word of each (if given), a preview."""
        extra = ("lifecycle",) if lifecycle is not None else ()
        self.table(
            title,
            ("score", "namespace", "key", *extra, "text"),
            [
                (
                    f"{h.score:.{digits}f}" if h.score is not None else "-",
                    "/".join(h.namespace),
                    h.key,
                    *((lifecycle(h),) if lifecycle is not None else ()),
                    preview(h.value),
                )
                for h in hits
            ],
            ids=("key",),
        )

    @contextmanager
    def progress(self) -> Iterator[Callable[[str, int, int | None], None]]:
        """A progress bar on stderr; yields ``update(phase, done, total)``, one bar per phase."""
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.err,
            transient=True,
        ) as bar:
            tasks: dict[str, Any] = {}

            def update(phase: str, done: int, total: int | None) -> None:
                if phase not in tasks:
                    tasks[phase] = bar.add_task(phase, total=total)
                bar.update(tasks[phase], completed=done, total=total)

            yield update
