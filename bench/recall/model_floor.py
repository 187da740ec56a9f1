"""What one forward pass of the default model costs on this machine, and why.

    .venv/bin/python bench/recall/model_floor.py [--repeats 40] [--write]

A query embeds a few tokens, so the model's time is the floor under every
search that embeds its query (and every put that embeds its text). This prints:

* the bytes of the weights that every pass reads (the transformer layers; the
  token-embedding table is only gathered), and the memory bandwidth one and two
  readers get here (numpy sums of an array that size), so the part of a pass
  spent only on reading its weights can be estimated;
* the time of one ONNX Runtime pass over 1 to 128 tokens, for the shipped fp32
  export and the opt-in int8 one, with one thread and with two (each pass is
  fed the same token ids, so only the model runs; no tokenizer).

The growth with tokens is compute, the one-token time is mostly weight reads.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: its langgraph_memory and bench.common
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.common.report import git_state, machine, markdown_table  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results" / "RESULTS_model_floor.md"
TOKENS = (1, 4, 13, 32, 64, 128)  # 13: a typical LoCoMo question; 32: a typical turn


def weight_bytes(onnx_file: Path) -> tuple[int, int]:
    """(bytes every pass reads, bytes of gathered tables) of an ONNX graph's initializers."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(onnx_file))
    gathered = {n.input[0] for n in model.graph.node if n.op_type == "Gather"}
    read = table = 0
    for init in model.graph.initializer:
        size = numpy_helper.to_array(init).nbytes
        if init.name in gathered:
            table += size
        else:
            read += size
    return read, table


def bandwidth_gbs(nbytes: int, repeats: int) -> float:
    """GB/s of one reader summing an array of ``nbytes`` (the median of ``repeats`` passes)."""
    a = np.ones(nbytes // 4, dtype=np.float32)
    a.sum()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        a.sum()
        times.append(time.perf_counter() - t0)
    return nbytes / statistics.median(times) / 1e9


def two_readers_gbs(nbytes: int, repeats: int) -> float:
    """The bandwidth two processes reading at once get together."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from model_floor import bandwidth_gbs; "
        "print(bandwidth_gbs(int(sys.argv[2]), int(sys.argv[3])))"
    )
    here = str(Path(__file__).resolve().parent)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, here, str(nbytes), str(repeats)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    return sum(float(p.communicate()[0]) for p in procs)


def pass_ms(session, n_tokens: int, repeats: int) -> float:
    """Median ms of one pass over ``n_tokens`` tokens."""
    feed = {
        "input_ids": np.full((1, n_tokens), 2000, dtype=np.int64),
        "attention_mask": np.ones((1, n_tokens), dtype=np.int64),
        "token_type_ids": np.zeros((1, n_tokens), dtype=np.int64),
    }
    names = {i.name for i in session.get_inputs()}
    feed = {k: v for k, v in feed.items() if k in names}
    for _ in range(5):
        session.run(None, feed)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        session.run(None, feed)
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=40, help="passes per point")
    p.add_argument("--write", action="store_true", help=f"write {RESULTS.name}")
    args = p.parse_args()

    import onnxruntime as ort

    from langgraph_memory.embeddings._onnx_cache import default_model_file
    from langgraph_memory.embeddings.model import DEFAULT_EMBEDDING_MODEL, _resolve_model_location

    mach = machine(["onnxruntime", "numpy"])
    location = _resolve_model_location(DEFAULT_EMBEDDING_MODEL)
    files = {v: default_model_file(location, variant=v) for v in ("fp32", "int8")}
    sizes = {v: weight_bytes(f) for v, f in files.items()}

    def session(variant: str, threads: int):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")  # as shipped
        opts.log_severity_level = 3
        return ort.InferenceSession(str(files[variant]), opts, providers=["CPUExecutionProvider"])

    fp32_read = sizes["fp32"][0]
    one = bandwidth_gbs(fp32_read, args.repeats)
    two = two_readers_gbs(fp32_read, args.repeats)
    configs = [(v, t) for v in ("fp32", "int8") for t in (1, 2)]
    sessions = {c: session(*c) for c in configs}
    # Interleaved: every configuration at one token count before the next count.
    ms: dict[tuple[str, int], dict[int, float]] = {c: {} for c in configs}
    for n in TOKENS:
        for c in configs:
            ms[c][n] = pass_ms(sessions[c], n, args.repeats)

    rows = [[f"{v}, {t} thread{'s' if t > 1 else ''}"] + [f"{ms[(v, t)][n]:.2f}" for n in TOKENS] for v, t in configs]
    lines = [
        "| weights | read by every pass | gathered (token table) |",
        "|---|---:|---:|",
        *(f"| {v} | {r / 1e6:.1f} MB | {g / 1e6:.1f} MB |" for v, (r, g) in sizes.items()),
        "",
        f"Memory bandwidth (numpy sum of {fp32_read / 1e6:.1f} MB, median of {args.repeats}): one reader "
        f"{one:.1f} GB/s, two readers together {two:.1f} GB/s. Reading the fp32 weights once takes "
        f"{fp32_read / one / 1e6:.2f} ms at one reader's rate and {fp32_read / two / 1e6:.2f} ms at two readers'.",
        "",
        "One ONNX Runtime pass, p50 ms by tokens in the text (a LoCoMo question is about 13, a turn about 32):",
        "",
        markdown_table(["model, threads", *(f"{n} tok" for n in TOKENS)], rows, [False] + [True] * len(TOKENS)),
    ]
    mach.load_end = os.getloadavg()
    mach.code = git_state(Path(__file__).resolve().parents[2], ["langgraph_memory", "bench/recall/model_floor.py"])
    print("\n".join(lines))
    if args.write:
        RESULTS.write_text(
            "# What a forward pass of the default model costs here (`bench/recall/model_floor.py`)\n\n"
            + "\n".join(lines)
            + "\n\n"
            + "\n".join(mach.lines())
            + "\n- Command: `python bench/recall/model_floor.py "
            + " ".join(sys.argv[1:])
            + "`\n"
        )
        print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
