"""Evaluation: metrics over anchors, ``evaluate`` and its result."""

from .evaluate import DEFAULT_KS, EvalResult, Judgement, QuestionResult, covers, evaluate, judge
from .metrics import hit_at_k, ndcg_at_k, precision_at_k, recall_at_k, reciprocal_rank

__all__ = [
    "DEFAULT_KS",
    "EvalResult",
    "Judgement",
    "QuestionResult",
    "covers",
    "evaluate",
    "hit_at_k",
    "judge",
    "ndcg_at_k",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank",
]
