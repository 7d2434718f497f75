"""Retrieval metrics over anchors, as pure functions.

A question is judged by two arrays built once from its ranking:

- ``first_ranks[i]``: the 1-based rank at which relevant anchor ``i`` is first
  covered by a retrieved chunk, ``inf`` if it never is;
- ``rank_hits[r]``: whether the chunk at rank ``r + 1`` covers any relevant anchor.

Two more arrays say what was judged (see docs/concepts/judgments.md):

- ``judged[r]``: whether the chunk at rank ``r + 1`` covers any anchor with a judgment (relevant, or judged
  not relevant);
- ``hole_ranks[h]``: for each distinct unjudged anchor (a retrieved chunk covering no judged anchor, named by
  its section anchor), the rank where it is first retrieved. The ``*_upper`` functions score the ranking as if
  every hole were relevant (for nDCG with the question's highest grade); today's figure is the lower end.

Where one chunk is one document these reduce to the usual document-level
definitions (trec_eval / ir_measures); the parity test checks it to 1e-6.
None of these functions mutates its inputs.
"""

from __future__ import annotations

import numpy as np

__all__ = ["recall_at_k", "hit_at_k", "precision_at_k", "reciprocal_rank", "ndcg_at_k", "dcg_discounts",
           "average_precision_at_k", "r_precision", "judged_at_k", "recall_upper_at_k", "reciprocal_rank_upper",
           "ndcg_upper_at_k", "evidence_at_k"]


def recall_at_k(first_ranks: np.ndarray, k: int) -> float:
    r"""Share of relevant anchors covered in the top ``k``: :math:`|\{a : rank_a \le k\}| / |R|`."""
    if first_ranks.size == 0:
        return float("nan")
    return float(np.count_nonzero(first_ranks <= k) / first_ranks.size)


def hit_at_k(first_ranks: np.ndarray, k: int) -> float:
    """1.0 if any relevant anchor is covered in the top ``k``, else 0.0."""
    if first_ranks.size == 0:
        return float("nan")
    return float(np.any(first_ranks <= k))


def precision_at_k(rank_hits: np.ndarray, k: int) -> float:
    """Share of the top ``k`` positions holding a chunk that covers a relevant anchor.

    Divides by ``k`` even when fewer than ``k`` chunks were retrieved (trec_eval's P@k).
    """
    return float(np.count_nonzero(rank_hits[:k]) / k)


def reciprocal_rank(first_ranks: np.ndarray) -> float:
    """1 / rank of the first chunk covering any relevant anchor; 0 when none does."""
    if first_ranks.size == 0:
        return float("nan")
    best = first_ranks.min()
    return 0.0 if not np.isfinite(best) else float(1.0 / best)


def dcg_discounts(n: int) -> np.ndarray:
    """``1 / log2(rank + 1)`` for ranks 1..n."""
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


def ndcg_at_k(first_ranks: np.ndarray, grades: np.ndarray, k: int) -> float:
    r"""Normalised DCG at ``k`` over anchors.

    :math:`DCG = \sum_{a : rank_a \le k} g_a / \log_2(rank_a + 1)`, with each anchor
    counted once at the rank where it is first covered;
    :math:`IDCG` places the ``k`` highest grades at ranks 1..k. The ratio is
    capped at 1: one chunk covering two anchors could otherwise exceed the ideal.
    """
    if first_ranks.size == 0:
        return float("nan")
    inside = first_ranks <= k
    dcg = float(np.sum(grades[inside] / np.log2(first_ranks[inside] + 1.0)))
    ideal = np.sort(grades)[::-1][:k]
    idcg = float(np.sum(ideal * dcg_discounts(ideal.size)))
    return min(1.0, dcg / idcg) if idcg > 0 else 0.0


def average_precision_at_k(first_ranks: np.ndarray, rank_hits: np.ndarray, k: int) -> float:
    r"""Average precision over the top ``k`` (trec_eval's ``map_cut_k`` for one question).

    :math:`AP@k = \frac{1}{|R|} \sum_{a : rank_a \le k} P@rank_a`, where :math:`P@r` is the share of the
    top ``r`` positions covering a relevant anchor; an anchor never covered in the top ``k`` adds 0.
    """
    if first_ranks.size == 0:
        return float("nan")
    hits_upto = np.cumsum(rank_hits[:k], dtype=np.float64)
    inside = first_ranks[first_ranks <= k].astype(np.int64)
    if inside.size == 0:
        return 0.0
    return float(np.sum(hits_upto[inside - 1] / inside) / first_ranks.size)


def r_precision(first_ranks: np.ndarray, rank_hits: np.ndarray) -> float:
    """Precision at ``R``, the number of relevant anchors (trec_eval's ``Rprec``)."""
    if first_ranks.size == 0:
        return float("nan")
    return precision_at_k(rank_hits, int(first_ranks.size))


def judged_at_k(judged: np.ndarray, k: int) -> float:
    """Share of the top ``k`` retrieved positions whose chunk covers an anchor with a judgment (relevant or judged
    not relevant): ir_measures' ``Judged@k``, which divides by the number retrieved when fewer than ``k``. With
    nothing retrieved nothing is unjudged: 1.0."""
    n = min(int(k), int(judged.size))
    return 1.0 if n == 0 else float(np.count_nonzero(judged[:n]) / n)


def recall_upper_at_k(first_ranks: np.ndarray, hole_ranks: np.ndarray, k: int) -> float:
    r"""Recall at ``k`` if every hole in the top ``k`` were a relevant anchor:
    :math:`(|\{a : rank_a \le k\}| + h_k) / (|R| + h_k)`, with :math:`h_k` the holes first retrieved in the top
    ``k``. Never below :func:`recall_at_k`; equal to it when the top ``k`` holds no hole."""
    if first_ranks.size == 0:
        return float("nan")
    h = int(np.count_nonzero(hole_ranks <= k))
    return float((np.count_nonzero(first_ranks <= k) + h) / (first_ranks.size + h))


def reciprocal_rank_upper(first_ranks: np.ndarray, hole_ranks: np.ndarray) -> float:
    """Reciprocal rank if every hole were relevant: 1 / the rank of the first chunk covering a relevant anchor or
    a hole (as deep as retrieval went)."""
    if first_ranks.size == 0:
        return float("nan")
    best = min(first_ranks.min(), hole_ranks.min() if hole_ranks.size else np.inf)
    return 0.0 if not np.isfinite(best) else float(1.0 / best)


def ndcg_upper_at_k(first_ranks: np.ndarray, grades: np.ndarray, hole_ranks: np.ndarray, k: int) -> float:
    """nDCG at ``k`` if every hole in the top ``k`` were relevant with the question's highest grade (added to the
    ideal ranking too; a hole could answer as well as the author's anchors, which a plain list grades 2).
    Usually above :func:`ndcg_at_k`; it can sit slightly below when a hole found late raises the ideal more than
    the gain (a question with relevant anchors never retrieved)."""
    if first_ranks.size == 0:
        return float("nan")
    holes = hole_ranks[hole_ranks <= k]
    return ndcg_at_k(np.concatenate([first_ranks, holes]), np.concatenate([grades, np.full(holes.size, grades.max())]), k)


def evidence_at_k(group_ranks: np.ndarray, k: int) -> float:
    r"""1.0 if every evidence group has an anchor covered in the top ``k``, else 0.0:
    :math:`\prod_g [\min_{a \in g} rank_a \le k]`, with ``group_ranks[g]`` the rank where any anchor of group
    :math:`g` is first covered (``inf`` if none is). A question needing several pieces of evidence is supported
    only when all of them reached the model; ``nan`` without groups."""
    if group_ranks.size == 0:
        return float("nan")
    return float(np.all(group_ranks <= k))
