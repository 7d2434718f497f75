"""The ``embedding`` reranker: rescore the shortlist with a second, different embedder.

Works offline; a weak fallback (it lowered quality on some held-out sets). Each chunk is cut to the
embedder's window (one window, the start of the chunk), never embedded as several windows.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from ..config import Opt
from ..retrieve.base import warm_up
from ..types import Ranking
from .base import RerankerConfig, _mode_options, _reorder

__all__ = ["EmbeddingReranker", "EmbeddingRerankerConfig", "truncate_to_window"]


def truncate_to_window(embedder, texts: Sequence[str]) -> list[str]:
    """Each text cut to the start that fits ``embedder``'s window (``max_tokens``, counted by its
    ``count_tokens``, prefix and special tokens included); texts that fit, or an embedder that cannot count,
    are returned unchanged. The cut falls on a character boundary found by bisection, so the kept text is
    the longest prefix that fits."""
    inner = getattr(embedder, "inner", embedder)
    count = getattr(inner, "count_tokens", None)
    limit = getattr(embedder, "max_tokens", None)
    if count is None or not limit:
        return list(texts)
    out = list(texts)
    for i, n in enumerate(count(out)):
        if n <= limit:
            continue
        text = out[i]
        lo, hi = 0, len(text)  # count(text[:lo]) <= limit < count(text[:hi])
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if count([text[:mid]])[0] <= limit:
                lo = mid
            else:
                hi = mid
        out[i] = text[:lo]
    return out


class EmbeddingReranker:
    """Rescores the shortlist by the cosine of a second embedder's vectors. A weak offline fallback: a second
    bi-encoder reads query and chunk apart, as the first stage already did, so it often does not help."""

    name = "embedding"

    def __init__(self, embedder, *, mode: str = "replace", fuse_k: int = 60):
        self.embedder = embedder
        self.mode, self.fuse_k = _mode_options(mode, fuse_k)
        self.config = {"embedder": embedder.model_id, "mode": self.mode, "fuse_k": self.fuse_k}

    def warm_up(self) -> None:
        warm_up(self.embedder)

    def rerank(self, query: str, ranking: Ranking) -> Ranking:
        t0 = time.perf_counter()
        if not ranking.hits:
            return Ranking(query, (), {**ranking.timings, "rerank": 0.0})
        q = self.embedder.embed_queries([query])[0]
        p = self.embedder.embed(truncate_to_window(self.embedder, [h.chunk.embed_text for h in ranking.hits]))
        return _reorder(query, ranking, (p @ q).tolist(), "rerank", time.perf_counter() - t0)


@dataclass(frozen=True)
class EmbeddingRerankerConfig(RerankerConfig):
    """Rescore the shortlist with a second embedder (offline default: e5-small). A weak offline fallback."""

    model: Annotated[str, Opt(
        "reranker model: a folder (ONNX or sentence-transformers), a Hugging Face id, or an embedder "
        "name")] = "e5-small"

    def __post_init__(self) -> None:
        super().__post_init__()
        from ..registry import EMBEDDERS

        EMBEDDERS.get(self.model)


def _embedding(config: EmbeddingRerankerConfig) -> EmbeddingReranker:
    from ..embed import CachedEmbedder, get_embedder

    return EmbeddingReranker(CachedEmbedder(get_embedder(config.model)), mode=config.mode, fuse_k=config.fuse_k)


from ..registry import RERANKERS  # noqa: E402

RERANKERS.register("embedding", EmbeddingRerankerConfig, _embedding,
                   summary="a second embedder rescores the shortlist (weak offline fallback)")
