"""Abstention by retrieval confidence, and its calibration on a golden set.

The gate answers ``not_found`` without generating when the top retrieved
score is below a threshold. Scores are on the retriever's own scale (BM25,
cosine, RRF...), so a threshold belongs to one retrieval configuration:
calibrate it on a golden set with both answerable and unanswerable questions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..types import Ranking

__all__ = ["ConfidenceGate", "Calibration", "calibrate_threshold", "top_score"]


def top_score(ranking: Ranking) -> float:
    return ranking.hits[0].score if ranking.hits else float("-inf")


@dataclass(frozen=True)
class ConfidenceGate:
    threshold: float

    def allows(self, ranking: Ranking) -> bool:
        return top_score(ranking) >= self.threshold


@dataclass(frozen=True)
class Calibration:
    """Abstention quality at the chosen threshold; positives are the questions that should be abstained on."""

    threshold: float
    precision: float
    recall: float
    f1: float
    n_answerable: int
    n_unanswerable: int
    curve: list[dict[str, float]] = field(default_factory=list)  # threshold, coverage, risk

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def abstention_scores(threshold: float, answerable: np.ndarray, unanswerable: np.ndarray) -> tuple[float, float, float]:
    """(precision, recall, F1) of 'abstain when score < threshold' at spotting unanswerable questions."""
    tp = int(np.count_nonzero(unanswerable < threshold))
    fp = int(np.count_nonzero(answerable < threshold))
    fn = unanswerable.size - tp
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def calibrate_threshold(answerable: Sequence[float], unanswerable: Sequence[float], *,
                        no_evidence: Sequence[bool] | None = None) -> Calibration:
    """The threshold that maximises abstention F1, plus a coverage-vs-risk curve.

    ``no_evidence`` (aligned with ``answerable``) marks answerable questions whose
    retrieved context holds no relevant anchor; answering those is a risk too.
    Coverage = share of all questions answered; risk = share of answered
    questions that are unanswerable or lack evidence in the context.
    """
    a = np.asarray(answerable, dtype=np.float64)
    u = np.asarray(unanswerable, dtype=np.float64)
    if a.size == 0 or u.size == 0:
        raise ConfigError(f"calibration needs answerable and unanswerable questions, got {a.size} and {u.size}; "
                          "add questions with \"relevant\": [] to the golden set")
    ne = np.asarray(no_evidence if no_evidence is not None else np.zeros(a.size, dtype=bool), dtype=bool)
    finite = np.concatenate([a, u])
    finite = finite[np.isfinite(finite)]
    candidates = np.unique(np.concatenate([finite, [np.inf]])) if finite.size else np.array([np.inf])
    best = max(candidates, key=lambda t: (abstention_scores(t, a, u)[2], -t))
    p, r, f = abstention_scores(best, a, u)
    curve = []
    for t in np.unique(np.quantile(finite, np.linspace(0, 1, 41))) if finite.size else []:
        answered_a = a >= t
        answered_u = u >= t
        n_answered = int(answered_a.sum() + answered_u.sum())
        bad = int(answered_u.sum() + (answered_a & ne).sum())
        curve.append({"threshold": float(t), "coverage": n_answered / (a.size + u.size),
                      "risk": bad / n_answered if n_answered else 0.0})
    return Calibration(float(best), p, r, f, int(a.size), int(u.size), curve)
