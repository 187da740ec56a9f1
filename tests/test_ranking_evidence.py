"""The default ranking follows the evidence: on the trading-research example's memory, with the real model."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from langgraph_memory import Memory

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "trading_research.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("trading_research_evidence", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["trading_research_evidence"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("trading_research_evidence", None)


@pytest.fixture(scope="module")
def example_memory(example, tmp_path_factory: pytest.TempPathFactory, real_embeddings) -> Path:
    """The example's memory after two objectives (momentum, then carry), as a new user would have it."""
    data_dir = tmp_path_factory.mktemp("evidence") / "memory"
    example.run(data_dir=data_dir, embeddings=real_embeddings)
    example.run("Carry trade on G10 currencies", data_dir=data_dir, embeddings=real_embeddings)
    return data_dir


@pytest.mark.parametrize("query", ["carry", "momentum"])
def test_single_word_queries_on_the_example_memory_rank_by_the_evidence(
    example_memory: Path, real_embeddings, query: str
) -> None:
    with Memory.open(example_memory, embeddings=real_embeddings) as mem:
        found = mem.store.search_explained((), query=query, limit=20)
    hits = [h for h in found.hits if h.parts is not None]
    assert found.ranking == "hybrid" and len(hits) >= 3
    matched = [h for h in hits if h.parts.keyword > 0]  # type: ignore[union-attr]
    assert len(matched) >= 2, [h.item.key for h in hits]
    for i, a in enumerate(hits):
        pa = a.parts
        assert pa is not None and pa.final < 1.0  # no saturation
        for b in hits[i + 1 :]:
            pb = b.parts
            assert pb is not None
            same = (pa.cosine, pa.keyword, pa.retention) == (pb.cosine, pb.keyword, pb.retention)
            # Strictly ordered unless the evidence is the same ...
            assert pa.final > pb.final or same, (a.item.key, pa, b.item.key, pb)
            # ... and never above a hit with at least as much of both (and as much left by age and use).
            dominated = (
                pb.cosine >= pa.cosine
                and pb.keyword >= pa.keyword
                and (pb.retention or 1.0) >= (pa.retention or 1.0)
                and not same
            )
            assert not dominated, (a.item.key, pa, b.item.key, pb)


@pytest.mark.parametrize("query", ["carry", "momentum"])
def test_the_cli_shows_no_tie_between_hits_of_different_evidence(
    example_memory: Path, real_embeddings, query: str
) -> None:
    """The real console script: its printed scores differ wherever the cosine and keyword evidence do."""
    cli = str(Path(sys.executable).with_name("langgraph-memory"))
    out = subprocess.run(
        [cli, "--data-dir", str(example_memory), "search", query, "-k", "20"],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=300,
        check=True,
    ).stdout
    with Memory.open(example_memory, embeddings=real_embeddings) as mem:
        parts = {h.item.key: h.parts for h in mem.store.search_explained((), query=query, limit=20).hits}
    printed = []  # (score as printed, key) of each row of the table
    for line in out.splitlines():
        cells = [c.strip() for c in line.replace("│", "|").split("|") if c.strip()]
        if len(cells) >= 3 and cells[0].replace(".", "", 1).isdigit() and cells[2] in parts:
            printed.append((cells[0], cells[2]))
    assert len(printed) >= 3, out
    for i, (score_a, key_a) in enumerate(printed):
        for score_b, key_b in printed[i + 1 :]:
            a, b = parts[key_a], parts[key_b]
            assert a is not None and b is not None
            if (round(a.cosine, 6), round(a.keyword, 6)) != (round(b.cosine, 6), round(b.keyword, 6)):
                assert score_a != score_b, (key_a, a, key_b, b)
