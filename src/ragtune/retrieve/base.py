"""The retriever protocol and top-k selection shared by retrievers."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from ..types import Ranking

__all__ = ["Retriever", "top_k"]


@runtime_checkable
class Retriever(Protocol):
    name: str

    def search(self, query: str, k: int = 10) -> Ranking: ...


def top_k(scores: np.ndarray, k: int, *, min_score: float | None = None) -> np.ndarray:
    """Indices of the ``k`` highest scores, best first; ties broken by index (stable).

    With ``min_score``, indices scoring at or below it are dropped.
    """
    n = scores.shape[0]
    k = min(k, n)
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    if k < n:
        part = np.argpartition(-scores, k - 1)[:k]
        # include every index tied with the k-th score so the tie-break is deterministic
        kth = scores[part].min()
        cand = np.flatnonzero(scores >= kth)
    else:
        cand = np.arange(n)
    order = np.lexsort((cand, -scores[cand]))
    idx = cand[order][:k]
    if min_score is not None:
        idx = idx[scores[idx] > min_score]
    return idx
