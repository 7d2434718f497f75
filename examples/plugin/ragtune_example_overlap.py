"""A ragtune retriever in one module: rank chunks by the share of query words they contain.

Registered through the ``ragtune.retrievers`` entry point (see pyproject.toml), so after
``pip install ./examples/plugin`` it is ``--retriever overlap`` on every command, a grid value in sweeps,
and a recordable store configuration, with ``--min-share`` as a validated flag.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Annotated

from ragtune.config import Config, Opt, check_range
from ragtune.registry import RETRIEVERS
from ragtune.retrieve.filters import ChunkFilter
from ragtune.types import Hit, Ranking

WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class OverlapConfig(Config):
    """``min_share``: the smallest share of the query's words a chunk must contain to be returned."""

    min_share: Annotated[float, Opt("smallest share of the query's words a hit must contain")] = 0.0

    def __post_init__(self) -> None:
        check_range("OverlapConfig", "min_share", self.min_share, lo=0, hi=1)


class OverlapRetriever:
    name = "overlap"

    def __init__(self, chunks, config: OverlapConfig):
        self.chunks = tuple(chunks)
        self.config = config
        self.words = [frozenset(WORD.findall(c.embed_text.lower())) for c in self.chunks]
        self.filter = ChunkFilter(self.chunks)

    def search(self, query: str, k: int = 10, filters=None) -> Ranking:
        t0 = time.perf_counter()
        q = frozenset(WORD.findall(query.lower()))
        mask = self.filter.mask(filters)
        scored = [(len(q & w) / len(q), i) for i, w in enumerate(self.words)
                  if q and (mask is None or mask[i]) and q & w]
        scored = [s for s in scored if s[0] >= self.config.min_share]
        scored.sort(key=lambda s: (-s[0], s[1]))  # ties: corpus order
        hits = tuple(Hit(self.chunks[i], score) for score, i in scored[:k])
        return Ranking(query, hits, {"overlap": time.perf_counter() - t0})


def build(config: OverlapConfig, chunks, resources) -> OverlapRetriever:
    """The factory: ``resources`` offers the pipeline's embedder and BM25/dense indexes (unused here)."""
    return OverlapRetriever(chunks, config)


RETRIEVERS.register("overlap", OverlapConfig, build, summary="share of query words in the chunk (example plugin)")
