"""The ``langgraph-memory`` command line: a thin layer over the library.

Live memory:

    langgraph-memory search "position sizing" --collection lessons -k 5
    langgraph-memory get <id>                          # a memory by key or id, any namespace
    langgraph-memory list                              # namespaces and how many items each holds
    langgraph-memory list memories/u1 --limit 20 --offset 20
    langgraph-memory stats                             # per collection: items, vectors, bytes, dates, hidden
    langgraph-memory lineage <id>                      # ancestors and descendants
    langgraph-memory history <id>                      # its versions: what changed, when, by which run
    langgraph-memory search "stops" --as-of 2026-03-03 # get, list, search and research queries, as they stood
    langgraph-memory versions trend                    # the versions of a strategy
    langgraph-memory retire <id> --reason "bad data"   # hidden from searches; reinstate <id> undoes it
    langgraph-memory supersede <old> <new> --reason "longer sample"
    langgraph-memory delete <id>                       # shows what a hard delete removes; --yes deletes
    langgraph-memory delete --namespace memories/u1    # every item under it, likewise
    langgraph-memory threads list
    langgraph-memory threads prune --older-than 90     # shows what would go; --yes prunes
    langgraph-memory export ./share --namespace research
    langgraph-memory import ./share                    # merge a teammate's bundle
    langgraph-memory ingest papers/ notes.md           # files into memory, deduplicated
    langgraph-memory migrate ./memory postgresql://db/memory   # the memory onto a server (and back)
    langgraph-memory mcp                               # the MCP server on stdio (--transport http)
    langgraph-memory ui                                # the memory browser on http://127.0.0.1:8766

Archives and the index:

    langgraph-memory archive run --dry-run
    langgraph-memory archive list
    langgraph-memory archive search "stops hit by noise"     # every collection unless --collection
    langgraph-memory archive restore --key <id>
    langgraph-memory archive verify
    langgraph-memory scheduler --cron "0 3 * * *"
    langgraph-memory index check
    langgraph-memory index rebuild
    langgraph-memory index reindex [--model NAME]

``--data-dir`` (or ``--url postgresql://...`` with ``--local-dir``), ``--json``,
``--read-only`` and ``-v`` go before or after the command.
``--read-only`` reads a data directory without writing anything to it (a
folder you cannot write, a copy of a live one); commands that write exit 2. With
``--json`` stdout holds one JSON document and nothing else; progress bars
and spinners go to stderr. An error is a JSON document too,
``{"error": {"type": "NotFoundError", "message": "...", "exit_code": 1}}``,
beside the exit status and the message on stderr. Exit status: 0 done; 1 nothing matched what was
asked (no hit, unknown id or name, nothing to restore or delete); 2 bad
usage (arguments, a data directory that does not exist); 3 the command
failed or found problems (a damaged file, a lock held too long); 130
interrupted (Ctrl-C; an archive run says what the next run finishes).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from typing import NoReturn

from langgraph_memory.cli._common import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_NOTHING, EXIT_USAGE, Ctx
from langgraph_memory.errors import (
    ConfigError,
    FilterError,
    InvalidArgumentError,
    LangGraphMemoryError,
    MemoryNotFoundError,
    MissingPathError,
    NamespaceError,
    NotFoundError,
    ReadOnlyError,
    UnsupportedFileTypeError,
    ValidationError,
)

__all__ = ["main", "build_parser"]


class _UsageError(Exception):
    """argparse refused the command line (raised by `_Parser.error` so that `main` can report it as JSON too)."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser


class _Parser(argparse.ArgumentParser):
    # Subparsers are made of the parser's own class, so every command's errors come through here.
    def error(self, message: str) -> NoReturn:
        raise _UsageError(self, message)


def _common() -> argparse.ArgumentParser:
    """Options every command takes, before or after its name (SUPPRESS: a later mention wins, none is None)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--data-dir",
        default=argparse.SUPPRESS,
        help="data directory (default: $LANGGRAPH_MEMORY_DIR, config file, ./memory)",
    )
    common.add_argument(
        "--url",
        default=argparse.SUPPRESS,
        help="postgresql:// address of a memory on a server (default: $LANGGRAPH_MEMORY_URL, config file url)",
    )
    common.add_argument(
        "--local-dir",
        default=argparse.SUPPRESS,
        help="with --url: folder for what stays local, embedding cache and archive files "
        "(default: $LANGGRAPH_MEMORY_LOCAL_DIR, config file, ~/.cache/langgraph-memory/server-...)",
    )
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON document on stdout"
    )
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="log at INFO level")
    common.add_argument(
        "--read-only",
        action="store_true",
        default=argparse.SUPPRESS,
        help="open the memory read-only: nothing is written to the data directory; commands that write fail",
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    from langgraph_memory._version import __version__
    from langgraph_memory.cli import (
        _archive,
        _bundle,
        _history,
        _ingest,
        _lifecycle,
        _live,
        _mcp,
        _migrate,
        _move,
        _research,
        _threads,
        _ui,
    )

    common = _common()
    p = _Parser(
        prog="langgraph-memory",
        description="Durable, searchable memory for LangGraph agents.",
        parents=[common],
        epilog="Exit status: 0 done, 1 nothing matched, 2 bad usage, 3 failed.",
    )
    p.add_argument("--version", action="version", version=f"langgraph-memory {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (
        _live,
        _history,
        _research,
        _lifecycle,
        _threads,
        _migrate,
        _move,
        _bundle,
        _ingest,
        _archive,
        _mcp,
        _ui,
    ):
        module.register(sub, common)
    return p


def _exit_code(exc: LangGraphMemoryError) -> int:
    # No memory where one was named is bad usage (as a missing data directory is), not "nothing matched".
    if isinstance(exc, NotFoundError) and not isinstance(exc, MemoryNotFoundError):
        return EXIT_NOTHING
    # A data directory the process may not write (permissions, a read-only mount) is the caller's to fix.
    if isinstance(
        exc,
        (
            InvalidArgumentError,
            FilterError,
            NamespaceError,
            ConfigError,
            MissingPathError,
            UnsupportedFileTypeError,
            ValidationError,
            ReadOnlyError,
        ),
    ):
        return EXIT_USAGE
    return EXIT_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status.

    Examples:
        >>> main(["--data-dir", "/tmp/lgm", "list", "--json"])  # runs the command line on a data directory under /tmp  # doctest: +SKIP
        0
    """
    wants_json = "--json" in (sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
    except _UsageError as exc:
        if wants_json:
            _emit_error("UsageError", f"{exc.parser.prog}: {exc}", EXIT_USAGE)
        exc.parser.print_usage(sys.stderr)
        exc.parser.exit(EXIT_USAGE, f"{exc.parser.prog}: error: {exc}\n")
    if getattr(args, "verbose", False):
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    ctx = Ctx.create(args)
    try:
        return int(args.func(ctx))
    except LangGraphMemoryError as exc:
        from rich.markup import escape

        code = _exit_code(exc)
        if ctx.json:
            _emit_error(type(exc).__name__, str(exc), code)
        # soft_wrap: a path in the message must stay on one line, whatever the terminal's width.
        ctx.err.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True)
        return code
    except KeyboardInterrupt:
        if ctx.json:
            _emit_error("KeyboardInterrupt", "interrupted", EXIT_INTERRUPTED)
        ctx.err.print("interrupted")
        return EXIT_INTERRUPTED
    except Exception as exc:
        # Not one of ours: the traceback still goes to stderr, but a script reading --json gets an object.
        if ctx.json:
            _emit_error(type(exc).__name__, str(exc), EXIT_ERROR)
        raise


def _emit_error(kind: str, message: str, code: int) -> None:
    """With ``--json``, an error is a JSON object on stdout too: ``{"error": {"type", "message", "exit_code"}}``."""
    error = {"type": kind, "message": message, "exit_code": code}
    sys.stdout.write(json.dumps({"error": error}, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
