"""Benchmark: how long async memory calls keep the event loop from running.

A 1 ms ticker runs on the loop while 8 coroutines each put an item into a
ChromaStore, search it, and save a checkpoint plus pending writes with a
SqliteCheckpointer (``tests/helpers/loop_stall.py``). Prints, per repeat, the
interval between ticks (ideal: 1 ms) as p50, p99 and max, twice:

* wall: real time, what the loop's other tasks see (on a loaded machine this
  includes waiting for a CPU and for the GIL);
* cpu: CPU time of the loop thread between ticks, i.e. only the work that ran
  on the loop itself (what the suite's loop-stall test bounds);
* waited: of wall, the time the loop thread was runnable but had no CPU (the
  machine's load), and slept = wall - cpu - waited: the 1 ms timer plus any
  wait for the GIL held by another thread (or for a blocking call).

The library comes from ``PYTHONPATH`` when set, so the same script measures
another checkout::

    PYTHONPATH=/path/to/other/checkout .venv/bin/python bench/loop_stall_bench.py --label before
    .venv/bin/python bench/loop_stall_bench.py --label after
    .venv/bin/python bench/loop_stall_bench.py --model real    # the packaged MiniLM instead of fake vectors
    .venv/bin/python bench/loop_stall_bench.py --chroma-server # the index on a `chroma run` server (loopback)
    .venv/bin/python bench/loop_stall_bench.py --index-process # the embedded index driven from a child process
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT))  # after PYTHONPATH: a checkout named there wins
sys.path.insert(0, str(ROOT / "bench"))

from _common import cpu_model  # noqa: E402


def _helper():  # type: ignore[no-untyped-def]
    # Loaded by path: the library under test may come from another checkout.
    spec = importlib.util.spec_from_file_location("_loop_stall", ROOT / "tests" / "helpers" / "loop_stall.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["_loop_stall"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _embeddings(model: str):  # type: ignore[no-untyped-def]
    if model == "real":
        from langgraph_memory.embeddings import SentenceTransformerEmbeddings

        emb = SentenceTransformerEmbeddings()
        emb.embed_query("warm up")
        return emb, 384
    from langchain_core.embeddings import DeterministicFakeEmbedding

    return DeterministicFakeEmbedding(size=16), 16


@contextmanager
def _chroma_server(path: Path) -> Iterator[tuple[str, int]]:
    """``chroma run`` on a free loopback port, ready (its heartbeat answers), stopped afterwards."""
    import chromadb

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    chroma = Path(sys.executable).parent / "chroma"
    proc = subprocess.Popen(
        [str(chroma), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                chromadb.HttpClient(host="127.0.0.1", port=port).heartbeat()
                break
            except Exception:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("chroma run did not start") from None
                time.sleep(0.2)
        yield "127.0.0.1", port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", default="", help="a name for this run in the table (before/after)")
    parser.add_argument("--model", choices=("fake", "real"), default="fake")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=25, help="put+search+checkpoint rounds per writer")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chroma-server", action="store_true", help="hold the index on a `chroma run` server")
    parser.add_argument(
        "--index-process", action="store_true", help="ChromaStore(index_process=True): embedded, in a child process"
    )
    args = parser.parse_args(argv)

    import langgraph_memory
    from langgraph_memory.checkpoint import SqliteCheckpointer
    from langgraph_memory.store import ChromaStore

    helper = _helper()
    emb, dims = _embeddings(args.model)
    load_start = "/".join(f"{x:.2f}" for x in os.getloadavg())
    started = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
    rows = []
    for repeat in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="lgm-loop-bench-") as tmp, contextlib.ExitStack() as stack:
            client = None
            if args.chroma_server:
                import chromadb

                host, port = stack.enter_context(_chroma_server(Path(tmp) / "chroma-server"))
                client = chromadb.HttpClient(host=host, port=port)
            extra = {"index_process": True} if args.index_process else {}
            store = ChromaStore(client, data_dir=Path(tmp) / "memory", index={"dims": dims, "embed": emb}, **extra)
            saver = SqliteCheckpointer(Path(tmp) / "memory" / "checkpoints.sqlite")
            try:
                gaps = asyncio.run(
                    helper.measure(store, saver, writers=args.writers, rounds=args.rounds, schedstat=True)
                )
            finally:
                saver.close()
                store.close()
        slept = helper.Gaps(wall=gaps.slept)
        waited = helper.Gaps(wall=gaps.waited)
        rows.append(
            (repeat + 1, gaps.summary("wall"), gaps.summary("cpu"), waited.summary("wall"), slept.summary("wall"))
        )

    source = Path(langgraph_memory.__file__).resolve().parents[1]
    print(
        f"Loop stalls {args.label}: library from {source}; {args.writers} writers x {args.rounds} rounds "
        f"(put + search + checkpoint put + put_writes), model={args.model}, index "
        f"{'on a chroma run server' if args.chroma_server else 'embedded'}"
        f"{' in a child process' if args.index_process else ''}; 1 ms ticker; intervals in ms"
    )
    print(
        "| run | ticks | wall p50 | wall p99 | wall max | cpu p50 | cpu p99 | cpu max "
        "| waited p99 | waited max | slept p99 | slept max |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for repeat, wall, cpu, waited, slept in rows:
        print(
            f"| {args.label} #{repeat} | {int(wall['ticks'])} | {wall['p50']:.2f} | {wall['p99']:.2f} | "
            f"{wall['max']:.1f} | {cpu['p50']:.3f} | {cpu['p99']:.2f} | {cpu['max']:.1f} | "
            f"{waited['p99']:.2f} | {waited['max']:.1f} | {slept['p99']:.2f} | {slept['max']:.1f} |"
        )
    print(
        f"Machine: nproc={os.cpu_count()}; CPU {cpu_model()}; Python {sys.version.split()[0]}; started {started}; "
        f"load average {load_start} at start, {'/'.join(f'{x:.2f}' for x in os.getloadavg())} at end."
    )


if __name__ == "__main__":
    main()
