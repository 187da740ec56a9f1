"""Benchmark: how long async memory calls keep the event loop from running.

A 1 ms ticker runs on the loop while 8 coroutines each put an item into a
ChromaStore, search it, and save a checkpoint plus pending writes with a
SqliteCheckpointer (``bench/common/loop_stall.py``). Prints, per repeat and
per design (``--designs``, run interleaved), the interval between ticks
(ideal: 1 ms) as p50, p99 and max:

* wall: real time, what the loop's other tasks see (on a loaded machine this
  includes waiting for a CPU and for the GIL);
* unloaded: wall less the machine's load: less the time the loop thread and the
  process's other threads (one of which may hold the GIL) were runnable but
  had no CPU, never less than cpu (what the suite's loop-stall test bounds for
  the LangGraph server's store);
* cpu: CPU time of the loop thread between ticks, i.e. only the work that ran
  on the loop itself;
* waited: of wall, the time the loop thread was runnable but had no CPU (the
  machine's load), and slept = wall - cpu - waited: the 1 ms timer plus any
  wait for the GIL held by another thread (or for a blocking call);

and the latency of each awaited ``aput``, ``asearch`` and checkpoint ``aput``,
the time to open the store, and how long the measured rounds took (after the
warm-up round, which also waits for an index process or server to be ready).

The library comes from ``PYTHONPATH`` when set, so the same script measures
another checkout::

    PYTHONPATH=/path/to/other/checkout .venv/bin/python bench/load/loop_stall_bench.py --label before
    .venv/bin/python bench/load/loop_stall_bench.py --label after
    .venv/bin/python bench/load/loop_stall_bench.py --model real    # the packaged MiniLM instead of fake vectors
    .venv/bin/python bench/load/loop_stall_bench.py --chroma-server # the index on a `chroma run` server (loopback)
    .venv/bin/python bench/load/loop_stall_bench.py --index-process # the embedded index driven from a child process
    .venv/bin/python bench/load/loop_stall_bench.py --workload mix --executor-workers 2  # async calls on 2 threads
    .venv/bin/python bench/load/loop_stall_bench.py --workload mix --switch-interval 0.001  # GIL handed on each 1 ms
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
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
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT))  # after PYTHONPATH: a checkout named there wins

from bench.common.report import cpu_flags, cpu_model  # noqa: E402


def _helper():  # type: ignore[no-untyped-def]
    # Loaded by path: the library under test may come from another checkout.
    spec = importlib.util.spec_from_file_location(
        "_loop_stall", Path(__file__).resolve().parents[1] / "common" / "loop_stall.py"
    )
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


DESIGNS = {
    "embedded": "ChromaStore() default (the embedded index, driven from a child process)",
    "thread": "ChromaStore(index_process=False): the embedded index in this process",
    "process": "ChromaStore(index_process=True): the embedded index driven from a child process",
    "server": "ChromaStore(HttpClient): the index on a `chroma run` server on loopback, started per run",
    "factory": "langgraph_memory.platform.open_store(): what langgraph.json's store factory opens",
}


async def _sized(work: Any, workers: int) -> Any:
    """Await ``work`` with the loop's default executor (``asyncio.to_thread``'s) at ``workers`` threads (0: as is)."""
    if workers:
        from concurrent.futures import ThreadPoolExecutor

        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(workers))
    return await work


def _open_store(
    design: str, tmp: Path, emb: Any, dims: int, stack: contextlib.ExitStack, pg_url: str | None = None
) -> Any:
    from langgraph_memory.store import ChromaStore

    index = {"dims": dims, "embed": emb}
    where: dict[str, Any] = {"data_dir": tmp / "memory"}
    if pg_url:  # the catalog on a fresh database of this PostgreSQL server, the index beside it
        from langgraph_memory._infra.pg_cluster import create_database, drop_database
        from langgraph_memory.config import Settings

        url = create_database(pg_url)
        stack.callback(drop_database, url)
        where = {"settings": Settings.resolve(url, local_dir=tmp / "memory")}
    if design == "server":
        import chromadb

        host, port = stack.enter_context(_chroma_server(tmp / "chroma-server"))
        return ChromaStore(chromadb.HttpClient(host=host, port=port), index=index, **where)
    if design == "process":
        return ChromaStore(index=index, index_process=True, **where)
    if design == "thread":
        return ChromaStore(index=index, index_process=False, **where)
    if design == "factory":
        from langgraph_memory.platform import open_store

        return open_store({"index": index}, data_dir=tmp / "memory")
    return ChromaStore(index=index, **where)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", default="", help="a prefix for this run's rows in the table (before/after)")
    parser.add_argument("--model", choices=("fake", "real"), default="fake")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=25, help="put+search+checkpoint rounds per writer")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured rounds first (imports, threads, processes)")
    parser.add_argument(
        "--designs",
        default="embedded",
        help=f"comma-separated, run interleaved in each repeat: {', '.join(DESIGNS)}",
    )
    parser.add_argument(
        "--workload",
        choices=("rounds", "mix"),
        default="rounds",
        help="rounds: --writers x --rounds of put+search+checkpoint; mix: --tasks coroutines putting, searching, "
        "getting and deleting for --seconds (then checks nothing was lost)",
    )
    parser.add_argument("--tasks", type=int, default=50, help="coroutines of the mix workload")
    parser.add_argument("--seconds", type=float, default=40.0, help="duration of the mix workload")
    parser.add_argument("--pg-url", help="put the catalog on this PostgreSQL server (a fresh database per run)")
    parser.add_argument(
        "--executor-workers",
        type=int,
        default=0,
        help="threads of the loop's default executor, where the store's async calls run (0: asyncio's default, "
        "min(32, cores + 4))",
    )
    parser.add_argument(
        "--switch-interval",
        type=float,
        default=0.0,
        help="sys.setswitchinterval() for the run, in seconds: how long a thread holding the GIL keeps it while "
        "another waits (0: Python's 0.005)",
    )
    parser.add_argument("--chroma-server", action="store_true", help="same as --designs server")
    parser.add_argument("--index-process", action="store_true", help="same as --designs process")
    args = parser.parse_args(argv)
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)
    designs = [d.strip() for d in args.designs.split(",") if d.strip()]
    if args.chroma_server:
        designs = ["server"]
    if args.index_process:
        designs = ["process"]
    unknown = [d for d in designs if d not in DESIGNS]
    if unknown:
        parser.error(f"unknown design(s) {unknown}; choose from {list(DESIGNS)}")

    import langgraph_memory
    from langgraph_memory.checkpoint import SqliteCheckpointer

    helper = _helper()
    emb, dims = _embeddings(args.model)
    load_start = "/".join(f"{x:.2f}" for x in os.getloadavg())
    started = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
    rows = []
    for repeat in range(args.repeats):
        for design in designs:
            with tempfile.TemporaryDirectory(prefix="lgm-loop-bench-") as tmp, contextlib.ExitStack() as stack:
                opened = time.perf_counter()
                store = _open_store(design, Path(tmp), emb, dims, stack, args.pg_url)
                saver = SqliteCheckpointer(Path(tmp) / "memory" / "checkpoints.sqlite")
                open_s = time.perf_counter() - opened
                # As the suite's test does: a full collection of the cyclic GC walks every object of the process
                # on whichever thread allocates when it is due (80-100 ms here), which no design avoids.
                gc.collect()
                gc.freeze()
                try:
                    if args.workload == "mix":
                        store.put(("memories", "warm-up"), "k", {"text": "warm up"})  # starts the index's child
                        store.search(("memories",), query="warm up")
                        store.wait_for_index()
                        gaps = asyncio.run(
                            _sized(
                                helper.measure_mix(store, tasks=args.tasks, seconds=args.seconds, schedstat=True),
                                args.executor_workers,
                            )
                        )
                    else:
                        gaps = asyncio.run(
                            helper.measure(
                                store,
                                saver,
                                writers=args.writers,
                                rounds=args.rounds,
                                schedstat=True,
                                warmup=args.warmup,
                            )
                        )
                finally:
                    gc.unfreeze()
                    saver.close()
                    store.close()
            rows.append((f"{args.label}{'-' if args.label else ''}{design} #{repeat + 1}", gaps, open_s))

    source = Path(langgraph_memory.__file__).resolve().parents[1]
    workload = (
        f"{args.tasks} tasks x {args.seconds:.0f} s of put + search + get + delete (every third round)"
        if args.workload == "mix"
        else f"{args.writers} writers x {args.rounds} rounds (put + search + checkpoint put + put_writes)"
    )
    catalog = "PostgreSQL" if args.pg_url else "SQLite"
    print(
        f"Loop stalls {args.label}: library from {source}; {workload}, catalog on {catalog}, model={args.model}; "
        "1 ms ticker; intervals in ms"
    )
    for design in designs:
        print(f"  {design}: {DESIGNS[design]}")
    print(
        "| run | ticks | wall p50 | wall p99 | wall max | unloaded p99 | unloaded max | cpu p99 | cpu max "
        "| waited p99 | waited max | others waited max | longest other max | slept p99 | slept max | aput p50 | aput p99 "
        "| asearch p50 | asearch p99 | aget p50 | adelete p50 | ckpt p50 | open s | measured s |"
    )
    print("|---|" + "---:|" * 23)
    for name, gaps, open_s in rows:
        wall, cpu = gaps.summary("wall"), gaps.summary("cpu")
        unloaded, waited, slept = gaps.summary("unloaded"), gaps.summary("waited"), gaps.summary("slept")
        others, longest = gaps.summary("others_waited"), gaps.summary("others_waited_longest")
        put, search, ckpt = gaps.summary("aput"), gaps.summary("asearch"), gaps.summary("checkpoint")
        get, delete = gaps.summary("aget"), gaps.summary("adelete")
        print(
            f"| {name} | {int(wall['ticks'])} | {wall['p50']:.2f} | {wall['p99']:.2f} | {wall['max']:.1f} | "
            f"{unloaded['p99']:.2f} | {unloaded['max']:.1f} | {cpu['p99']:.2f} | {cpu['max']:.1f} | "
            f"{waited['p99']:.2f} | {waited['max']:.1f} | {others['max']:.1f} | {longest['max']:.1f} | {slept['p99']:.2f} | "
            f"{slept['max']:.1f} | "
            f"{put['p50']:.1f} | {put['p99']:.1f} | {search['p50']:.1f} | {search['p99']:.1f} | "
            f"{get['p50']:.1f} | {delete['p50']:.1f} | {ckpt['p50']:.1f} | {open_s:.2f} | {sum(gaps.wall):.2f} |"
        )
    print(
        f"Machine: nproc={os.cpu_count()}; CPU {cpu_model()} ({cpu_flags()}); Python {sys.version.split()[0]}; started {started}; "
        f"load average {load_start} at start, {'/'.join(f'{x:.2f}' for x in os.getloadavg())} at end."
    )


if __name__ == "__main__":
    main()
