"""Reciprocal rank fusion and the hybrid retriever built on it."""

from __future__ import annotations

import time
from collections.abc import Sequence

from ..errors import ConfigError
from ..types import Chunk, Hit, Ranking
from .base import Retriever

__all__ = ["rrf", "HybridRetriever"]


def rrf(rankings: Sequence[Ranking], *, k: int = 60, weights: Sequence[float] | None = None,
        depth: int | None = None) -> Ranking:
    r"""Reciprocal rank fusion: :math:`score(c) = \sum_i w_i / (k + rank_i(c))`.

    Chunks are keyed by id, never by text. Only the top ``depth`` of each
    ranking count. Ties keep the order in which chunks were first met. The
    input rankings are not modified; the fused ranking's timings are the sum
    of theirs.
    """
    if k < 0:
        raise ConfigError(f"rrf k must be >= 0, got {k}")
    weights = list(weights) if weights is not None else [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ConfigError(f"{len(weights)} weights for {len(rankings)} rankings")
    scores: dict[str, float] = {}
    chunks: dict[str, Chunk] = {}
    for w, ranking in zip(weights, rankings):
        for rank, hit in enumerate(ranking.hits[:depth], start=1):
            cid = hit.chunk.id
            scores[cid] = scores.get(cid, 0.0) + w / (k + rank)
            chunks.setdefault(cid, hit.chunk)
    order = sorted(scores, key=lambda c: -scores[c])  # stable: first met wins ties
    timings: dict[str, float] = {}
    for r in rankings:
        for stage, t in r.timings.items():
            timings[stage] = timings.get(stage, 0.0) + t
    query = rankings[0].query if rankings else ""
    return Ranking(query, tuple(Hit(chunks[c], scores[c]) for c in order), timings)


def _config_dict(retriever) -> dict:
    cfg = getattr(retriever, "config", None)
    return cfg.to_dict() if hasattr(cfg, "to_dict") else dict(cfg or {})


class HybridRetriever:
    """Several retrievers (by default BM25 + dense) fused by RRF.

    Each retriever contributes its top ``depth`` chunks (at least ``k``).
    Filters apply inside every retriever, before ranking.
    """

    name = "hybrid"

    def __init__(self, retrievers: Sequence[Retriever], *, k: int = 60, weights: Sequence[float] | None = None,
                 depth: int = 50):
        if not retrievers:
            raise ConfigError("a hybrid retriever needs at least one retriever")
        self.retrievers = list(retrievers)
        self.k = k
        self.weights = list(weights) if weights is not None else None
        self.depth = depth
        self.config = {"fuse": "rrf", "rrf_k": k, "weights": self.weights, "depth": depth,
                       "retrievers": [{"name": getattr(r, "name", "?"), **_config_dict(r)} for r in self.retrievers]}

    def search(self, query: str, k: int = 10, filters=None) -> Ranking:
        n = max(self.depth, k)
        rankings = [r.search(query, k=n, filters=filters) for r in self.retrievers]
        t0 = time.perf_counter()
        fused = rrf(rankings, k=self.k, weights=self.weights, depth=n)
        hits = fused.hits[:k]
        return Ranking(query, hits, {**fused.timings, "fusion": time.perf_counter() - t0})
