"""The default ranking follows the evidence: on the trading-research example's memory, with the real model."""

from __future__ import annotations

import importlib.util
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


@pytest.mark.parametrize("query", ["carry", "momentum"])
def test_single_word_queries_on_the_example_memory_rank_by_the_evidence(
    example, tmp_path: Path, real_embeddings, query: str
) -> None:
    data_dir = tmp_path / "memory"
    example.run(data_dir=data_dir, embeddings=real_embeddings)
    example.run("Carry trade on G10 currencies", data_dir=data_dir, embeddings=real_embeddings)
    with Memory.open(data_dir, embeddings=real_embeddings) as mem:
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
