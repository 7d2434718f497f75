"""Abstention by retrieval confidence, and its calibration on a golden set.

The gate answers ``not_found`` without generating when the top retrieved
score is below a threshold. Scores are on the retriever's own scale (BM25,
cosine, RRF...), so a threshold belongs to one retrieval configuration:
calibrate it on a golden set with both answerable and unanswerable questions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any

import numpy as np

from ..config import Opt
from ..errors import ConfigError
from ..types import Ranking

__all__ = ["ConfidenceGate", "Calibration", "calibrate_retriever", "calibrate_threshold", "cross_validated_gates",
           "top_score"]


def top_score(ranking: Ranking) -> float:
    return ranking.hits[0].score if ranking.hits else float("-inf")


@dataclass(frozen=True)
class ConfidenceGate:
    threshold: float

    def allows(self, ranking: Ranking) -> bool:
        return top_score(ranking) >= self.threshold


@dataclass(frozen=True)
class Calibration:
    """Abstention quality at the chosen threshold; positives are the questions that should be abstained on.

    With the generator's refusals given (``generator`` names it), an abstention is the gate's or the generator's,
    as ``eval --answers`` counts them: ``precision``, ``recall``, ``f1``, ``false_abstention`` and ``answered_rate``
    are those of the two together, the figures eval then shows with this threshold as its gate; ``gate_refused``
    and ``generator_refused`` split the answerable questions refused between them."""

    threshold: float
    precision: float
    recall: float
    f1: float
    n_answerable: int
    n_unanswerable: int
    objective: str = "balanced"
    false_abstention: float = 0.0  # share of answerable questions the gate would refuse
    auc: float = 0.5  # P(an unanswerable question scores below an answerable one): 0.5 = the score cannot tell them apart
    curve: list[dict[str, float]] = field(default_factory=list)  # threshold, coverage, risk
    gate_refused: float = 0.0  # share of answerable questions below the threshold
    generator_refused: float = 0.0  # share of answerable questions the gate passes and the generator refuses
    answered_rate: float = 1.0  # share of all questions answered (neither gate nor generator refused)
    generator: str | None = None  # whose refusals were counted; None: the gate alone

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def abstention_scores(threshold: float, answerable: np.ndarray, unanswerable: np.ndarray,
                      refused_a: np.ndarray | None = None, refused_u: np.ndarray | None = None
                      ) -> tuple[float, float, float]:
    """(precision, recall, F1) of 'abstain when score < threshold' at spotting unanswerable questions; with
    ``refused_a``/``refused_u`` (the generator refuses these anyway), of abstaining when either holds."""
    tp = int(np.count_nonzero((unanswerable < threshold) | (refused_u if refused_u is not None else False)))
    fp = int(np.count_nonzero((answerable < threshold) | (refused_a if refused_a is not None else False)))
    fn = unanswerable.size - tp
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def _auc(answerable: np.ndarray, unanswerable: np.ndarray) -> float:
    """Mann-Whitney AUC that a random unanswerable question scores below a random answerable one."""
    both = np.concatenate([unanswerable, answerable])
    ranks = np.empty(both.size)
    order = np.argsort(both, kind="mergesort")
    ranks[order] = np.arange(1, both.size + 1)
    for v in np.unique(both):  # average ranks of ties
        tie = both == v
        ranks[tie] = ranks[tie].mean()
    r_ans = ranks[unanswerable.size:].sum()
    n_a, n_u = answerable.size, unanswerable.size
    return float((r_ans - n_a * (n_a + 1) / 2) / (n_a * n_u))


def calibrate_threshold(answerable: Sequence[float], unanswerable: Sequence[float], *,
                        no_evidence: Sequence[bool] | None = None, objective: str = "balanced",
                        refused_answerable: Sequence[bool] | None = None,
                        refused_unanswerable: Sequence[bool] | None = None,
                        generator: str | None = None) -> Calibration:
    """The threshold that best separates the two kinds of question, plus a coverage-vs-risk curve.

    ``objective="balanced"`` (default) maximises recall on unanswerable questions
    minus the share of answerable questions refused (Youden's J): unlike F1 it
    never rewards refusing everything when half the questions are unanswerable.
    ``objective="f1"`` maximises abstention F1.

    ``no_evidence`` (aligned with ``answerable``) marks answerable questions whose
    retrieved context holds no relevant anchor; answering those is a risk too.
    Coverage = share of all questions answered; risk = share of answered
    questions that are unanswerable or lack evidence in the context.

    ``refused_answerable`` / ``refused_unanswerable`` (aligned with the scores) mark questions the generator
    refuses whatever the gate does (the extractive generator's ``no_match``, a model's not-found): they count as
    abstentions in the objective, the figures and the curve, so the threshold is chosen, and its figures
    given, for the gate and ``generator`` together, as ``eval --answers`` will measure them.
    """
    a = np.asarray(answerable, dtype=np.float64)
    u = np.asarray(unanswerable, dtype=np.float64)
    if a.size == 0 or u.size == 0:
        raise ConfigError(f"calibration needs answerable and unanswerable questions, got {a.size} and {u.size}; "
                          "add questions with \"relevant\": [] to the golden set")
    ne = np.asarray(no_evidence if no_evidence is not None else np.zeros(a.size, dtype=bool), dtype=bool)
    ra = np.asarray(refused_answerable if refused_answerable is not None else np.zeros(a.size), dtype=bool)
    ru = np.asarray(refused_unanswerable if refused_unanswerable is not None else np.zeros(u.size), dtype=bool)
    if ra.shape != a.shape or ru.shape != u.shape:
        raise ConfigError(f"refused_answerable and refused_unanswerable must align with the scores ({a.size} and "
                          f"{u.size}), got {ra.size} and {ru.size}")
    finite = np.concatenate([a, u])
    finite = finite[np.isfinite(finite)]
    candidates = np.unique(np.concatenate([finite, [np.inf]])) if finite.size else np.array([np.inf])
    if objective not in ("balanced", "f1"):
        raise ConfigError(f"objective {objective!r}: choose balanced or f1")

    def goal(t: float) -> float:
        p_, r_, f_ = abstention_scores(t, a, u, ra, ru)
        return f_ if objective == "f1" else r_ - float(np.mean((a < t) | ra))

    best = max(candidates, key=lambda t: (goal(t), -t))
    p, r, f = abstention_scores(best, a, u, ra, ru)
    auc = _auc(np.where(np.isfinite(a), a, -1e300), np.where(np.isfinite(u), u, -1e300))
    curve = []
    for t in np.unique(np.quantile(finite, np.linspace(0, 1, 41))) if finite.size else []:
        answered_a = (a >= t) & ~ra
        answered_u = (u >= t) & ~ru
        n_answered = int(answered_a.sum() + answered_u.sum())
        bad = int(answered_u.sum() + (answered_a & ne).sum())
        curve.append({"threshold": float(t), "coverage": n_answered / (a.size + u.size),
                      "risk": bad / n_answered if n_answered else 0.0})
    answered = int(np.count_nonzero((a >= best) & ~ra) + np.count_nonzero((u >= best) & ~ru))
    return Calibration(float(best), p, r, f, int(a.size), int(u.size), objective, float(np.mean((a < best) | ra)), auc,
                       curve, gate_refused=float(np.mean(a < best)),
                       generator_refused=float(np.mean((a >= best) & ra)), answered_rate=answered / (a.size + u.size),
                       generator=generator)


def calibrate_retriever(retriever: Any, golden: Any, corpus: Any, *, k: int = 5, filters: Any = None,
                        show_progress: bool = False,
                        generator: Annotated[str | None, Opt(
                            "the generator eval --answers will use: the questions it refuses from the top k (no "
                            "matching sentence, a model's not-found) count as abstentions, so the figures printed "
                            "are those eval shows with this gate; none: the gate alone", metavar="NAME")
                        ] = "extractive") -> Calibration:
    """Search every golden question, then calibrate the gate on the top scores: answerable questions should pass,
    unanswerable ones (and answerable ones whose evidence is not in the top ``k``) should be refused.

    With a ``generator`` (a name, default ``extractive``; an object with ``generate``; None or ``"none"`` for the
    gate alone), every question is also answered from its top ``k`` contexts, and the ones it refuses count as
    abstentions (:func:`calibrate_threshold`): the figures are then those ``eval --answers --gate T`` shows with
    the same generator and ``--answer-k k``. An LLM generator makes one call per question."""
    from ..evaluate.evaluate import covers
    from ..progress import progress_iter
    from ..retrieve.base import search

    if isinstance(generator, str):
        from . import make_generator

        generator = None if generator.strip().lower() == "none" else make_generator(generator)
    answerable, unanswerable, no_evidence, refused_a, refused_u = [], [], [], [], []
    for item in progress_iter(golden.items, "calibrating", enabled=show_progress):
        ranking = search(retriever, item.q, k, filters)
        score = top_score(ranking)
        refused = (generator is not None and
                   generator.generate(item.q, tuple(h.chunk for h in ranking.hits)).outcome == "not_found")
        if item.answerable:
            spans = [corpus.resolve(a) for a in item.relevant]
            answerable.append(score)
            no_evidence.append(not any(covers(h.chunk, s) for h in ranking.hits for s in spans))
            refused_a.append(refused)
        else:
            unanswerable.append(score)
            refused_u.append(refused)
    return calibrate_threshold(answerable, unanswerable, no_evidence=no_evidence, refused_answerable=refused_a,
                               refused_unanswerable=refused_u,
                               generator=getattr(generator, "name", None) if generator is not None else None)


def cross_validated_gates(answerable: Sequence[bool], scores: Sequence[float], no_evidence: Sequence[bool], *,
                          folds: int = 5) -> tuple[list[float | None], dict[str, Any]]:
    """A gate threshold for every question, calibrated without it: questions are split into ``folds`` folds
    (stratified: answerable and unanswerable ones dealt round-robin in order), each fold's threshold is
    :func:`calibrate_threshold` on the other folds, applied to that fold. So the threshold a question is judged
    with never saw it, and the resulting abstention figures estimate those of a gate calibrated on the whole set
    and used on new questions.

    ``no_evidence`` marks answerable questions whose context lacks a relevant anchor. Returns (per question
    threshold, or None for all when the set cannot be calibrated: fewer than two answerable or two unanswerable
    questions; a description: ``mode``, ``folds``, ``thresholds``, ``reason``)."""
    answerable = [bool(a) for a in answerable]
    n_u = answerable.count(False)
    n_a = len(answerable) - n_u
    n = min(int(folds), n_a, n_u)
    if n < 2:
        return [None] * len(answerable), {
            "mode": "none", "folds": 0, "thresholds": [],
            "reason": f"cross-validation needs at least 2 answerable and 2 unanswerable questions, got {n_a} and {n_u}"}
    fold_of: list[int] = []
    dealt = {True: 0, False: 0}
    for a in answerable:
        fold_of.append(dealt[a] % n)
        dealt[a] += 1
    thresholds = []
    for f in range(n):
        train = [i for i in range(len(answerable)) if fold_of[i] != f]
        cal = calibrate_threshold([scores[i] for i in train if answerable[i]],
                                  [scores[i] for i in train if not answerable[i]],
                                  no_evidence=[no_evidence[i] for i in train if answerable[i]])
        thresholds.append(cal.threshold)
    return [thresholds[f] for f in fold_of], {"mode": "cross-validated", "folds": n, "thresholds": thresholds}
