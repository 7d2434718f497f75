"""Abstention by retrieval confidence, and its calibration on a golden set.

The gate answers ``not_found`` without generating when the top retrieved
score is below a threshold. Scores are on the retriever's own scale (BM25,
cosine, RRF...), so a threshold belongs to one retrieval configuration:
calibrate it on a golden set with both answerable and unanswerable questions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any

import numpy as np

from ..config import Opt
from ..errors import ConfigError, ParameterError
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
    and ``generator_refused`` split the answerable questions refused between them.

    ``threshold`` lies strictly between the observed scores ``between`` (under, over); ``at_share`` holds the
    figures expected at a given share of unanswerable questions (``unanswerable_share``, ``precision``,
    ``recall``, ``f1``, ``false_abstention``, ``answered_rate``), None when none was given; ``pr_curve`` is the
    gate's precision-recall curve, one point per cut, the chosen one marked."""

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
    between: list[float | None] = field(default_factory=list)  # the observed scores under and over the threshold
    at_share: dict[str, float] | None = None  # the figures expected at a given share of unanswerable questions
    pr_curve: list[dict[str, Any]] = field(default_factory=list)  # threshold, precision, recall, f1, answered_rate

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def abstention_scores(threshold: float, answerable: np.ndarray, unanswerable: np.ndarray,
                      refused_a: np.ndarray | None = None, refused_u: np.ndarray | None = None, *,
                      unanswerable_share: float | None = None) -> tuple[float, float, float]:
    """(precision, recall, F1) of 'abstain when score < threshold' at spotting unanswerable questions; with
    ``refused_a``/``refused_u`` (the generator refuses these anyway), of abstaining when either holds.

    With ``unanswerable_share`` P, the figures expected where a share P of the questions asked is unanswerable:
    recall R (share of unanswerable questions abstained on) and the share F of answerable ones refused are
    measured, and precision = P R / (P R + (1 - P) F). Without it, the golden set's own mix (tp / (tp + fp))."""
    a_out = (answerable < threshold) | (refused_a if refused_a is not None else False)
    u_out = (unanswerable < threshold) | (refused_u if refused_u is not None else False)
    p, r, f = _weighted(np.count_nonzero(u_out), np.count_nonzero(a_out), unanswerable.size, answerable.size,
                        unanswerable_share)
    return float(p), float(r), float(f)


def _weighted(tp: Any, fp: Any, n_u: int, n_a: int, share: float | None) -> tuple[Any, Any, Any]:
    """Precision, recall and F1 from abstention counts (scalars or arrays, one per threshold), at the golden set's
    own mix of questions (``share`` None) or reweighted to a share of unanswerable questions."""
    tp, fp = np.asarray(tp, dtype=np.float64), np.asarray(fp, dtype=np.float64)
    r = tp / n_u if n_u else np.zeros_like(tp)
    if share is None:
        hit, out = tp, tp + fp
    else:
        hit, out = share * r, share * r + (1.0 - share) * (fp / n_a if n_a else 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(out > 0, hit / np.where(out > 0, out, 1.0), 0.0)
        f = np.where(p + r > 0, 2 * p * r / np.where(p + r > 0, p + r, 1.0), 0.0)
    return p, r, f


def place_threshold(below: float, at: float) -> float:
    """A threshold for 'abstain when score < t' that keeps ``below`` under it and ``at`` over it, placed between
    the two and as short as it can be: the shortest decimal strictly between them (the midpoint rounded to the
    fewest significant digits that still fall strictly between). Its ``repr`` is that decimal, so a threshold
    printed and read back splits every score exactly as the one chosen did, and a new question scoring between
    the two observed scores is not decided by which of them happened to be the cut.

    ``below`` not finite (nothing observed under the cut), or no float strictly between: ``at`` itself."""
    below, at = float(below), float(at)
    if not (math.isfinite(below) and math.isfinite(at) and below < at):
        return at
    mid = below + (at - below) / 2
    for digits in range(1, 18):
        t = float(f"{mid:.{digits}g}")
        if below < t < at:
            return t
    return at


def threshold_text(threshold: float) -> str:
    """The threshold as it is printed in a ``--gate`` option: the fewest significant digits that read back as the
    same float (``0.03201``, ``4``, ``1e+09``), never a rounding that could move a question across it."""
    t = float(threshold)
    for digits in range(1, 18):
        text = f"{t:.{digits}g}"
        if float(text) == t:
            return text
    return repr(t)


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
                        no_evidence: Sequence[bool] | None = None, objective: str | None = None,
                        refused_answerable: Sequence[bool] | None = None,
                        refused_unanswerable: Sequence[bool] | None = None,
                        generator: str | None = None, unanswerable_share: float | None = None) -> Calibration:
    """The threshold that best separates the two kinds of question, plus a coverage-vs-risk curve and the gate's
    precision-recall curve.

    ``objective="balanced"`` (the default without ``unanswerable_share``) maximises recall on unanswerable
    questions minus the share of answerable questions refused (Youden's J): unlike F1 it never rewards refusing
    everything when half the questions are unanswerable, and it does not depend on the mix of questions.
    ``objective="f1"`` maximises abstention F1.

    ``unanswerable_share`` P (0 < P < 1): the share of unanswerable questions expected where the gate will run.
    The golden set's questions are reweighted to it (:func:`abstention_scores`), the threshold maximises the F1
    expected at P (the default objective then), and ``at_share`` holds precision, recall, F1 and answered rate
    at P. The top-level figures stay those of the golden set's own mix, which ``eval --answers --gate`` measures.

    The threshold is placed between the two adjacent observed scores around the cut (:func:`place_threshold`),
    never on one of them, so it prints short and reproduces its figures exactly.

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
    share = None if unanswerable_share is None else float(unanswerable_share)
    if share is not None and not 0.0 < share < 1.0:
        raise ParameterError("{} " + f"{share}: give the share of unanswerable questions expected, strictly "
                             "between 0 and 1", "unanswerable_share")
    objective = objective or ("balanced" if share is None else "f1")
    if objective not in ("balanced", "f1"):
        raise ConfigError(f"objective {objective!r}: choose balanced or f1")
    finite = np.concatenate([a, u])
    finite = finite[np.isfinite(finite)]
    candidates = np.unique(np.concatenate([finite, [np.inf]]))
    # abstentions at each candidate cut (abstain when score < candidate), counted for all cuts at once
    tp = _abstained(candidates, u, ru)
    fp = _abstained(candidates, a, ra)
    _, r, f = _weighted(tp, fp, u.size, a.size, share)
    goal = f if objective == "f1" else r - fp / a.size
    best = int(np.argmax(goal))  # the first maximum: the lowest threshold among equals
    threshold = _cut(candidates, best)
    p_, r_, f_ = abstention_scores(threshold, a, u, ra, ru)
    at_share = None
    if share is not None:
        ps, rs, fs = abstention_scores(threshold, a, u, ra, ru, unanswerable_share=share)
        at_share = {"unanswerable_share": share, "precision": ps, "recall": rs, "f1": fs,
                    "false_abstention": float(fp[best] / a.size),
                    "answered_rate": float(1.0 - share * rs - (1.0 - share) * fp[best] / a.size)}
    auc = _auc(np.where(np.isfinite(a), a, -1e300), np.where(np.isfinite(u), u, -1e300))
    answered = int(np.count_nonzero((a >= threshold) & ~ra) + np.count_nonzero((u >= threshold) & ~ru))
    return Calibration(threshold, p_, r_, f_, int(a.size), int(u.size), objective,
                       float(np.mean((a < threshold) | ra)), auc, _risk_curve(finite, a, u, ra, ru, ne),
                       gate_refused=float(np.mean(a < threshold)),
                       generator_refused=float(np.mean((a >= threshold) & ra)),
                       answered_rate=answered / (a.size + u.size), generator=generator,
                       between=_between(candidates, best), at_share=at_share,
                       pr_curve=_pr_curve(candidates, tp, fp, u.size, a.size, share, best))


def _abstained(cuts: np.ndarray, scores: np.ndarray, refused: np.ndarray) -> np.ndarray:
    """For each cut, how many questions are abstained on: scored below it, or refused by the generator anyway."""
    passing = np.sort(scores[~refused])
    return np.count_nonzero(refused) + np.searchsorted(passing, cuts, side="left")


def _cut(candidates: np.ndarray, i: int) -> float:
    """The threshold for 'abstain below candidates[i]', placed between it and the observed score under it; above
    every observed score (refuse all), a short number above the highest."""
    if i == 0:
        return float(candidates[0])
    below, at = float(candidates[i - 1]), float(candidates[i])
    if math.isinf(at) and math.isfinite(below):
        at = below + max(1.0, abs(below))
    return place_threshold(below, at)


def _between(candidates: np.ndarray, i: int) -> list[float | None]:
    """The two observed scores the threshold lies between (None where there is none)."""
    below = float(candidates[i - 1]) if i > 0 else None
    return [below, float(candidates[i]) if math.isfinite(candidates[i]) else None]


def _risk_curve(finite: np.ndarray, a: np.ndarray, u: np.ndarray, ra: np.ndarray, ru: np.ndarray,
                ne: np.ndarray) -> list[dict[str, float]]:
    curve = []
    for t in np.unique(np.quantile(finite, np.linspace(0, 1, 41))) if finite.size else []:
        answered_a = (a >= t) & ~ra
        answered_u = (u >= t) & ~ru
        n_answered = int(answered_a.sum() + answered_u.sum())
        bad = int(answered_u.sum() + (answered_a & ne).sum())
        curve.append({"threshold": float(t), "coverage": n_answered / (a.size + u.size),
                      "risk": bad / n_answered if n_answered else 0.0})
    return curve


PR_POINTS = 200  # most points of the precision-recall curve kept (the chosen one always among them)


def _pr_curve(candidates: np.ndarray, tp: np.ndarray, fp: np.ndarray, n_u: int, n_a: int, share: float | None,
              best: int) -> list[dict[str, Any]]:
    """The gate's precision-recall curve: one point per cut between observed scores (at most ``PR_POINTS``,
    evenly spread, the chosen one marked ``chosen``), each with its placed threshold and the figures at the
    golden set's mix or at ``share``."""
    p, r, f = _weighted(tp, fp, n_u, n_a, share)
    w = 0.5 if share is None else share
    u_out, a_out = (tp / n_u, fp / n_a) if share is not None else (None, None)
    keep = np.unique(np.concatenate([np.linspace(0, candidates.size - 1, min(PR_POINTS, candidates.size)).round()
                                     .astype(int), [best]]))
    points = []
    for i in keep.tolist():
        answered = (1.0 - w * u_out[i] - (1.0 - w) * a_out[i] if u_out is not None
                    else 1.0 - (tp[i] + fp[i]) / (n_u + n_a))
        points.append({"threshold": _cut(candidates, i), "precision": float(p[i]), "recall": float(r[i]),
                       "f1": float(f[i]), "answered_rate": float(answered), "chosen": i == best})
    return points


def calibrate_retriever(retriever: Any, golden: Any, corpus: Any, *, k: int = 5, filters: Any = None,
                        show_progress: bool = False,
                        generator: Annotated[str | None, Opt(
                            "the generator eval --answers will use: the questions it refuses from the top k (no "
                            "matching sentence, a model's not-found) count as abstentions, so the figures printed "
                            "are those eval shows with this gate; none: the gate alone", metavar="NAME")
                        ] = "extractive",
                        unanswerable_share: Annotated[float | None, Opt(
                            "the share of unanswerable questions expected in production: the threshold maximises "
                            "the abstention F1 expected at that share, and its precision and recall at it are "
                            "printed", lo=1e-6, hi=1 - 1e-6, metavar="P")] = None) -> Calibration:
    """Search every golden question, then calibrate the gate on the top scores: answerable questions should pass,
    unanswerable ones (and answerable ones whose evidence is not in the top ``k``) should be refused.

    With a ``generator`` (a name, default ``extractive``; an object with ``generate``; None or ``"none"`` for the
    gate alone), every question is also answered from its top ``k`` contexts, and the ones it refuses count as
    abstentions (:func:`calibrate_threshold`): the figures are then those ``eval --answers --gate T`` shows with
    the same generator and ``--answer-k k``. An LLM generator makes one call per question.

    ``unanswerable_share``: see :func:`calibrate_threshold`."""
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
                               refused_unanswerable=refused_u, unanswerable_share=unanswerable_share,
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
