"""The reranking stage: what every reranker shares, and :class:`RerankedRetriever`, which puts one after a retriever.

One protocol, ``rerank(query, ranking) -> Ranking`` (:class:`ragtune.stages.Reranker`); one module per
strategy in this package: :mod:`.embedding`, :mod:`.cross_encoder` (with its ONNX runtime in :mod:`.onnx`) and
:mod:`.llm`. Each registers itself at its bottom with ``RERANKERS.register``.

Every reranker config derives from :class:`RerankerConfig`, which adds the ``mode`` of the stage:
``replace`` orders the shortlist by the reranker's scores, ``fuse`` by reciprocal rank fusion of the
reranker's rank and the first stage's rank (:func:`fuse_with_first_stage`). A reranker object carries its
``mode`` and ``fuse_k`` as attributes; :class:`RerankedRetriever` reads them (absent: ``replace``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from ..config import Config, Opt, check_choice, check_range
from ..errors import ConfigError
from ..retrieve.base import Retriever, warm_up
from ..stages import Reranker
from ..types import Hit, Ranking

__all__ = ["Reranker", "RerankerConfig", "RerankedRetriever", "fuse_with_first_stage", "MODES", "DEFAULT_MODE"]

MODES = ("replace", "fuse")
# fuse by default: a reranker not known to dominate the first stage should not overrule it. On SciFact a
# cross-encoder trained here scored nDCG@10 0.704 alone (replace) against 0.715 for its first stage and 0.733 fused.
DEFAULT_MODE = "fuse"


def _reorder(query: str, ranking: Ranking, scores: Sequence[float], stage: str, seconds: float) -> Ranking:
    order = sorted(range(len(ranking.hits)), key=lambda i: -scores[i])  # stable on ties
    hits = tuple(Hit(ranking.hits[i].chunk, float(scores[i])) for i in order)
    return Ranking(query, hits, {**ranking.timings, stage: seconds})


def fuse_with_first_stage(first: Ranking, reranked: Ranking, *, k: int = 60) -> Ranking:
    r"""Reciprocal rank fusion of the reranker's order and the first stage's:
    :math:`score(c) = 1/(k + rank_{rerank}(c)) + 1/(k + rank_{first}(c))`, ranks from 1.

    Ties (a chunk the reranker moves up by as many places as another moves down) keep the reranker's order.
    Timings are the reranked ranking's (the fusion itself is microseconds)."""
    from ..retrieve.fusion import rrf

    fused = rrf([reranked, first], k=k)
    return Ranking(reranked.query, fused.hits, dict(reranked.timings))


def _mode_options(mode: str, fuse_k: int) -> tuple[str, int]:
    check_choice("reranker", "mode", mode, MODES)
    check_range("reranker", "fuse_k", fuse_k, lo=0, integer=True)
    return mode, fuse_k


class RerankedRetriever:
    """``base`` retrieves ``candidates`` chunks; ``reranker`` reorders them.

    ``mode`` (default: the reranker's ``mode`` attribute, else ``replace``): ``replace`` keeps the reranker's
    order; ``fuse`` fuses it with the first stage's by RRF (``fuse_k``, default the reranker's or 60). Below
    the reranked shortlist, the rest of the base ranking follows in its own order (so metrics deeper than
    ``candidates`` still see it).
    """

    def __init__(self, base: Retriever, reranker: Reranker, *, candidates: int = 50, mode: str | None = None,
                 fuse_k: int | None = None):
        if candidates < 1:
            raise ConfigError(f"candidates must be >= 1, got {candidates}")
        self.base = base
        self.reranker = reranker
        self.candidates = candidates
        self.mode, self.fuse_k = _mode_options(mode or getattr(reranker, "mode", "replace"),
                                               fuse_k if fuse_k is not None else getattr(reranker, "fuse_k", 60))
        self.name = f"{base.name}+{reranker.name}"
        self.config = {"base": getattr(base, "config", None), "reranker": getattr(reranker, "config", None),
                       "candidates": candidates}

    def warm_up(self) -> None:
        warm_up(self.base)
        warm_up(self.reranker)

    def search(self, query: str, k: int = 10, filters=None) -> Ranking:
        base = self.base.search(query, k=max(k, self.candidates), filters=filters)
        head = Ranking(query, base.hits[: self.candidates], base.timings)
        reranked = self.reranker.rerank(query, head)
        if self.mode == "fuse":
            reranked = fuse_with_first_stage(head, reranked, k=self.fuse_k)
        return Ranking(query, (reranked.hits + base.hits[self.candidates:])[:k], reranked.timings)


@dataclass(frozen=True)
class RerankerConfig(Config):
    """Options every reranker takes (flags ``--rerank-mode``, ``--rerank-fuse-k``; grid keys ``rerank_mode``,
    ``rerank_fuse_k``). Subclass it for a new reranker and give the built object ``mode``/``fuse_k``."""

    mode: Annotated[str, Opt(
        "fuse: RRF of the reranker's and the first stage's ranks (default); replace: order by reranker "
        "score")] = DEFAULT_MODE
    fuse_k: Annotated[int, Opt("RRF constant of --rerank-mode fuse")] = 60

    def __post_init__(self) -> None:
        check_choice(type(self).__name__, "mode", self.mode, MODES)
        check_range(type(self).__name__, "fuse_k", self.fuse_k, lo=0, integer=True)
