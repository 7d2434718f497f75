"""Return parents ranked by their best child (small-to-big retrieval)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from ..errors import ConfigError
from ..types import Chunk, Hit, Ranking
from .base import Retriever, warm_up

__all__ = ["ParentRetriever"]


class ParentRetriever:
    """Wraps a retriever over child chunks; each parent is scored by its best child.

    The children are searched deep enough to fill ``k`` distinct parents
    (4x, then 16x, ... of ``k``, up to every child).
    """

    def __init__(self, inner: Retriever, parents: Mapping[str, Chunk]):
        self.inner = inner
        self.parents = dict(parents)
        self.name = f"{inner.name}>parents"
        self.config = getattr(inner, "config", None)

    def warm_up(self) -> None:
        warm_up(self.inner)

    def search(self, query: str, k: int = 10, filters=None) -> Ranking:
        depth = max(4 * k, k)
        timings: dict[str, float] = {}
        while True:
            ranking = self.inner.search(query, k=depth, filters=filters)
            for stage, t in ranking.timings.items():
                timings[stage] = timings.get(stage, 0.0) + t
            t0 = time.perf_counter()
            best: dict[str, float] = {}
            for h in ranking.hits:
                pid = h.chunk.parent_id
                if pid is None:
                    raise ConfigError(f"chunk {h.chunk.id} has no parent_id: ParentRetriever needs small_to_big chunks")
                if pid not in best:
                    best[pid] = h.score
            if len(best) >= k or len(ranking.hits) < depth:
                break
            depth *= 4
        hits = tuple(Hit(self.parents[pid], score) for pid, score in list(best.items())[:k])
        return Ranking(query, hits, {**timings, "parents": time.perf_counter() - t0})
