"""The retriever protocol (:class:`ragtune.stages.Retriever`, re-exported) and top-k selection shared by retrievers."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..stages import Retriever
from ..types import Ranking

__all__ = ["Retriever", "check_query", "search", "top_k", "warm_up"]


def check_query(query: Any, *, max_chars: int = 10_000) -> str:
    """A query worth searching for: a non-empty string of at most ``max_chars`` characters, else ConfigError."""
    from ..errors import ConfigError

    if not isinstance(query, str) or not query.strip():
        raise ConfigError("the query is empty; pass the question to search for, e.g. ragtune search --corpus docs/ "
                          "\"refund window\"")
    if len(query) > max_chars:
        raise ConfigError(f"the query has {len(query)} characters; the limit is {max_chars}")
    return query


def warm_up(component: Any) -> None:
    """Load now what ``component`` would load in its first call (model sessions, tokenizers), so that call is
    timed like the others: its ``warm_up()``, when it has one (the Haystack convention: cheap constructors,
    models loaded in ``warm_up``). Wrappers (hybrid, reranked, parents, the dense retriever, a cached embedder)
    pass it on to what they wrap, so warming a pipeline's retriever warms every model under it; a component
    without ``warm_up`` loads on first use as before."""
    fn = getattr(component, "warm_up", None)
    if callable(fn):
        fn()


def search(retriever: Retriever, query: str, k: int, filters: Any = None, history: Any = ()) -> Ranking:
    """``retriever.search``, passing ``filters`` only when there are some, so retrievers written
    against the plain ``search(query, k)`` signature keep working unfiltered. ``history`` (the questions of the
    earlier turns of a conversation) goes only to a retriever that declares ``uses_history`` (a strategy's,
    :class:`ragtune.retrieve.strategies.StrategyRetriever`); every other one searches the question alone."""
    if history and getattr(retriever, "uses_history", False):
        return retriever.search(query, k=k, filters=filters, history=tuple(history))  # type: ignore[call-arg]
    if filters is None:
        return retriever.search(query, k=k)
    return retriever.search(query, k=k, filters=filters)


def top_k(scores: np.ndarray, k: int, *, min_score: float | None = None,
          mask: np.ndarray | None = None) -> np.ndarray:
    """Indices of the ``k`` highest scores, best first; ties broken by index (stable).

    With ``min_score``, indices scoring at or below it are dropped; with
    ``mask``, only indices where it is True are considered.
    """
    if mask is not None:
        allowed = np.flatnonzero(mask)
        return allowed[top_k(scores[allowed], k, min_score=min_score)]
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
