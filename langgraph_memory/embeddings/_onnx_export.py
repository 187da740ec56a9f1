"""Export the packaged all-MiniLM-L6-v2 weights to an ONNX file, checked against torch.

This is the only part of the default model that needs torch, transformers and
onnx, and it runs once per machine (at set-up, or on first use; see
`langgraph_memory.embeddings._onnx_cache`). The graph takes ``input_ids``,
``attention_mask`` and ``token_type_ids`` and returns the mean-pooled,
not yet normalised, sentence embedding, as sentence-transformers computes it.

    from langgraph_memory.embeddings._onnx_export import export_onnx
    export_onnx(model_dir, Path("/tmp/minilm.onnx"))   # ~10 s, raises EmbeddingModelError

The TorchScript exporter (``dynamo=False``, opset 17) is deterministic: with
torch 2.13.0, transformers 5.24.0 and onnx 1.23.2 every export of these
weights is byte-identical, which is what lets the cache pin the file's hash.
"""

from __future__ import annotations

import logging
import os
import time
import warnings
from pathlib import Path

import numpy as np

from langgraph_memory.errors import EmbeddingModelError

__all__ = ["export_onnx", "quantize_onnx", "PROBE_TEXTS", "MIN_PROBE_COSINE", "MIN_INT8_COSINE"]

logger = logging.getLogger(__name__)

OPSET = 17
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "sentence_embedding"
# An export is accepted only if it agrees with torch this closely on every probe.
MIN_PROBE_COSINE = 0.99999
# int8 weights (per channel) move vectors a little (LoCoMo turns: mean cosine 0.991, min 0.982); more means a
# broken file. Per-tensor quantization fell to 0.91.
MIN_INT8_COSINE = 0.95
# Short and long (past the packaged tokenizer's 128-token limit, up to the model's 256), in one padded batch.
PROBE_TEXTS = (
    "rising rates hurt growth stocks",
    "What did Caroline say about the adoption agency?",
    "a",
    " ".join(["The central bank raised interest rates again to fight persistent inflation."] * 14),
    " ".join(f"token{i}" for i in range(400)),
)


def _torch_module(model_dir: Path):  # -> torch.nn.Module
    import torch
    from transformers import AutoModel

    bert = AutoModel.from_pretrained(str(model_dir))
    bert.eval()

    class _MeanPooled(torch.nn.Module):
        """BERT, then the mean of the token vectors under the attention mask (sentence-transformers' Pooling)."""

        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            tokens = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)[0]
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            return (tokens * mask).sum(1) / torch.clamp(mask.sum(1), min=1e-9)

    return _MeanPooled(bert).eval()


def export_onnx(model_dir: Path, target: Path) -> None:
    """Write the ONNX export of the sentence-transformers folder ``model_dir`` to ``target``.

    The file is checked before this returns: ONNX Runtime must give, for every
    probe text, a vector with cosine >= 0.99999 to torch's. A failed check
    removes ``target`` and raises `EmbeddingModelError`.
    """
    try:
        import onnx  # noqa: F401  (the TorchScript exporter needs it)
        import torch
    except ImportError as exc:
        raise EmbeddingModelError(
            f"making the ONNX file of the default model needs torch and onnx ({exc}); install them "
            "(pip install 'torch==2.13.0' onnx) or copy the model file from a machine that has it"
        ) from exc
    from langgraph_memory.embeddings._onnx_embed import OnnxSentenceEncoder

    started = time.perf_counter()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except Exception:  # pragma: no cover - older/newer transformers
        pass
    module = _torch_module(model_dir)
    dummy = torch.ones(2, 8, dtype=torch.long)
    axes = {name: {0: "batch", 1: "tokens"} for name in INPUT_NAMES}
    axes[OUTPUT_NAME] = {0: "batch"}
    try:
        # The tracer warns about shape-dependent Python branches of the attention mask; the probes below
        # check the result on batches of other shapes and lengths.
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                module,
                (dummy, dummy, torch.zeros_like(dummy)),
                str(target),
                input_names=list(INPUT_NAMES),
                output_names=[OUTPUT_NAME],
                dynamic_axes=axes,
                opset_version=OPSET,
                dynamo=False,
            )
        encoder = OnnxSentenceEncoder(target, model_dir)
        enc = encoder.tokenize(list(PROBE_TEXTS))
        with torch.no_grad():
            expected = module(*(torch.from_numpy(enc[name]) for name in INPUT_NAMES)).numpy()
        got = encoder.encode(list(PROBE_TEXTS), normalize=False)
        cos = (expected * got).sum(1) / (np.linalg.norm(expected, axis=1) * np.linalg.norm(got, axis=1))
        if float(cos.min()) < MIN_PROBE_COSINE:
            raise EmbeddingModelError(
                f"the ONNX export of {model_dir} disagrees with torch (cosine {float(cos.min()):.6f} < "
                f"{MIN_PROBE_COSINE}); the torch/transformers/onnx versions may not fit together"
            )
    except BaseException as exc:
        try:
            os.unlink(target)
        except FileNotFoundError:
            pass
        if isinstance(exc, EmbeddingModelError) or not isinstance(exc, Exception):
            raise
        raise EmbeddingModelError(f"could not export {model_dir} to ONNX: {exc}") from exc
    logger.info(
        "exported %s to ONNX in %.1f s (probe cosine min %.7f)",
        model_dir,
        time.perf_counter() - started,
        float(cos.min()),
    )


def quantize_onnx(fp32_file: Path, model_dir: Path, target: Path) -> None:
    """Write the int8 dynamic quantization of ``fp32_file`` to ``target``, checked against the fp32 vectors.

    Needs onnx (onnxruntime's quantizer reads the graph with it), not torch. A
    probe cosine under 0.95 removes ``target`` and raises `EmbeddingModelError`.
    """
    from langgraph_memory.embeddings._onnx_embed import OnnxSentenceEncoder

    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise EmbeddingModelError(f"making the int8 model needs onnx ({exc}): pip install onnx") from exc
    started = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            quantize_dynamic(str(fp32_file), str(target), weight_type=QuantType.QInt8, per_channel=True)
        expected = OnnxSentenceEncoder(fp32_file, model_dir).encode(list(PROBE_TEXTS))
        got = OnnxSentenceEncoder(target, model_dir).encode(list(PROBE_TEXTS))
        low = float((expected * got).sum(1).min())
        if low < MIN_INT8_COSINE:
            raise EmbeddingModelError(f"the int8 model disagrees with fp32 (cosine {low:.4f} < {MIN_INT8_COSINE})")
    except BaseException as exc:
        try:
            os.unlink(target)
        except FileNotFoundError:
            pass
        if isinstance(exc, EmbeddingModelError) or not isinstance(exc, Exception):
            raise
        raise EmbeddingModelError(f"could not quantize {fp32_file} to int8: {exc}") from exc
    logger.info("quantized %s to int8 in %.1f s (probe cosine min %.4f)", fp32_file, time.perf_counter() - started, low)
