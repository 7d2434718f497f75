"""Reciprocal rank fusion and the hybrid retriever built on it."""

from __future__ import annotations

import time
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from ..config import Opt, check_range
from ..errors import ConfigError
from ..types import Chunk, Hit, Ranking
from .base import Retriever, warm_up

__all__ = ["rrf", "HybridConfig", "HybridRetriever"]


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

    def warm_up(self) -> None:
        for r in self.retrievers:
            warm_up(r)

    def search(self, query: str, k: int = 10, filters=None) -> Ranking:
        n = max(self.depth, k)
        rankings = [r.search(query, k=n, filters=filters) for r in self.retrievers]
        t0 = time.perf_counter()
        fused = rrf(rankings, k=self.k, weights=self.weights, depth=n)
        hits = fused.hits[:k]
        return Ranking(query, hits, {**fused.timings, "fusion": time.perf_counter() - t0})


from .bm25 import BM25Config  # noqa: E402
from .dense import ANN_AUTO_CHUNKS, AnnSetting, check_ann  # noqa: E402


@dataclass(frozen=True)
class HybridConfig(BM25Config):
    """BM25 + dense fused by reciprocal rank fusion: BM25's options, plus how to fuse.

    ``rrf_k`` is the RRF constant, ``weights`` the (bm25, dense) weights, ``fusion_depth`` the
    candidates taken from each retriever, ``ann`` approximate dense search (``"auto"``: by the number of chunks,
    see :func:`ragtune.retrieve.dense.resolve_ann`)."""

    rrf_k: Annotated[int, Opt(
        "reciprocal rank fusion constant k: score 1/(k + rank); larger flattens the ranks")] = 60
    weights: Annotated[tuple[float, ...] | None, Opt(
        "weight of each fused ranking, BM25 first (e.g. 1,2 favours dense)")] = None
    fusion_depth: Annotated[int, Opt("hits taken from each ranking before fusing")] = 50
    ann: Annotated[AnnSetting, Opt(
        "approximate (HNSW, usearch) dense search instead of exact; default auto: from "
        f"{ANN_AUTO_CHUNKS:,} chunks on, when usearch is installed")] = "auto"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range("HybridConfig", "rrf_k", self.rrf_k, lo=0, integer=True)
        check_range("HybridConfig", "fusion_depth", self.fusion_depth, lo=1, integer=True)
        check_ann("HybridConfig", self.ann)
        if self.weights is not None:
            w = tuple(self.weights)
            if len(w) != 2:
                raise ConfigError(f"HybridConfig: weights are two numbers (bm25, dense), got {list(w)!r}")
            for x in w:
                check_range("HybridConfig", "weights", x, lo=0)
                if not math.isfinite(x):
                    raise ConfigError(f"HybridConfig: weights must be finite, got {list(w)!r}")
            if sum(w) <= 0:
                raise ConfigError(f"HybridConfig: at least one weight must be > 0, got {list(w)!r}")
            object.__setattr__(self, "weights", tuple(float(x) for x in w))

    @property
    def bm25(self) -> BM25Config:
        return BM25Config(k1=self.k1, b=self.b, method=self.method, stemmer=self.stemmer, stopwords=self.stopwords)


def _build(config: HybridConfig, chunks: Sequence[Chunk], resources) -> HybridRetriever:
    bm25 = resources.bm25(chunks, config.bm25)
    dense = resources.dense(chunks, ann=config.ann)
    return HybridRetriever([bm25, dense], k=config.rrf_k, weights=config.weights, depth=config.fusion_depth)


from ..registry import RETRIEVERS  # noqa: E402

RETRIEVERS.register("hybrid", HybridConfig, _build, summary="BM25 + dense by reciprocal rank fusion",
                    uses_embedder=True)
