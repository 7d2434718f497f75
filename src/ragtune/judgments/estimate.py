"""Metrics estimated from a judged sample of a pool, with 95% confidence intervals (``eval --pool-sample FILE``).

A pool sample (:mod:`.sample`) drew holes with known inclusion probabilities :math:`\\pi_i = m_h / N_h` within
each depth stratum :math:`h`. Once the drawn holes are judged, the share of relevant holes in the stratum is
estimated by inverse-probability weighting, :math:`\\hat p_h = \\frac{1}{N_h} \\sum_{i \\in S_h} y_i / \\pi_i`
(the Horvitz-Thompson total over the stratum's size; :math:`S_h` the judged draws, :math:`y_i` = 1 when judged
relevant; a drawn hole nobody judged yet is left out, :math:`m_h` counting the judged ones: missing at random).
Each hole's relevance is then known (judged, drawn or not) or expected at its stratum's rate
(:func:`hole_relevance`), as infAP infers the unsampled documents. Per question, with :math:`R` relevant anchors
judged (before the pool, or drawn and judged), :math:`R_k` of them covered in the top k, and :math:`p_i` each
unjudged hole's rate:

- recall@k :math:`= (R_k + \\sum_{i \\in C_k} p_i) / (R + \\sum_i p_i)`, :math:`C_k` the unjudged holes a top-k
  chunk covers;
- precision@k :math:`= \\frac{1}{k} \\sum_{r \\le k} v_r`, :math:`v_r` = 1 when rank :math:`r` covers a judged
  relevant anchor, else the chance one of the unjudged holes it covers is relevant,
  :math:`1 - \\prod_{i \\in r} (1 - p_i)` (0 for a chunk covering none).

The interval is the estimate :math:`\\pm 1.96` standard errors, the variance by linearisation: with
:math:`d_i` the slope of the mean in unjudged hole :math:`i`'s relevance,
:math:`\\widehat{Var} = \\sum_h (\\sum_{i \\in h} d_i)^2 Var(\\hat p_h) + \\sum_h \\tilde p_h (1 - \\tilde p_h)
\\sum_{i \\in h} d_i^2`: the uncertainty of the stratum rate (without replacement, :math:`(1 - m_h/N_h)
\\tilde p_h (1 - \\tilde p_h) / m_h`) and the spread of the unjudged holes around it, with the smoothed rate
:math:`\\tilde p_h = (x_h + 0.5) / (m_h + 1)` so that a stratum whose draws were all not relevant is not
taken as certain. It aims at the figure full judgments of the pool would give for this run on these questions
(the questions are fixed; ``bench/sampled.py`` measures how often it covers it). nDCG is not estimated (its ideal
ranking depends on every unknown grade at once): eval's judged-only figure and its upper bound stay its range.

:func:`hole_relevance` gives, per question and hole, the probability a hole is relevant (1 or 0 once judged, its
stratum's rate otherwise), for ordering what to judge next.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..errors import ConfigError, UnknownAnchorError
from ..evaluate.evaluate import EvalResult, covers
from ..golden import GoldenItem, GoldenSet
from .sample import PoolSample, SampledHole

__all__ = ["Interval", "SampledEstimate", "estimate_metrics", "hole_relevance", "Z95"]

Z95 = 1.959963984540054
ESTIMATED = ("recall", "precision")


@dataclass(frozen=True)
class Interval:
    """One metric estimated from the sample: eval's judged-only figure, the estimate and its 95% interval, and the
    worst and best cases (every unjudged hit not relevant, or relevant: eval's bounds; None where eval has none)."""

    metric: str
    judged: float
    estimate: float
    low: float
    high: float
    worst: float | None = None
    best: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "judged_only": self.judged, "estimate": self.estimate, "ci95": [self.low, self.high],
                "worst": self.worst, "best": self.best}


@dataclass(frozen=True)
class SampledEstimate:
    """The metrics of one run estimated from a judged pool sample (:func:`estimate_metrics`)."""

    intervals: tuple[Interval, ...]
    questions: int  # answerable questions estimated over
    drawn: int  # holes drawn for these questions
    judged: int  # of them, judged
    outside: int  # unjudged hits in the top k that are not holes of the pool (counted as not relevant)

    def __getitem__(self, metric: str) -> Interval:
        for i in self.intervals:
            if i.metric == metric:
                return i
        raise KeyError(metric)

    def to_dict(self) -> dict[str, Any]:
        return {"questions": self.questions, "drawn": self.drawn, "judged": self.judged, "outside_pool": self.outside,
                "metrics": {i.metric: i.to_dict() for i in self.intervals}}

    def summary(self) -> str:
        """The lines eval prints: per metric the judged-only figure, the estimate with its 95% interval, the bounds."""
        lines = [f"estimated from the pool sample ({self.judged} of {self.drawn} drawn holes judged, {self.questions} "
                 "questions; 95% intervals):"]
        width = max(len(i.metric) for i in self.intervals) if self.intervals else 0
        for i in self.intervals:
            bounds = "" if i.worst is None or i.best is None else f"   worst..best {i.worst:.3f}..{i.best:.3f}"
            lines.append(f"  {i.metric:<{width}}  judged-only {i.judged:.3f}   estimate {i.estimate:.3f} "
                         f"[{i.low:.3f}, {i.high:.3f}]{bounds}")
        if self.judged < self.drawn:
            lines.append(f"  {self.drawn - self.judged} drawn hole(s) not judged yet: judge them for a narrower "
                         "interval")
        if self.outside:
            lines.append(f"  {self.outside} unjudged hit(s) in the top k are not in the pool (not pooled runs): "
                         "counted as not relevant")
        return "\n".join(lines)


def _by_id(golden: GoldenSet) -> dict[str, GoldenItem]:
    return {i.id: i for i in golden}


def _judged_draws(sample: PoolSample, items: Mapping[str, GoldenItem]) -> tuple[list[tuple[SampledHole, float]],
                                                                                  dict[str, tuple[int, int]]]:
    """The drawn holes that were judged, with y (1 relevant, 0 not), and per stratum (N_h, m_h)."""
    sizes: dict[str, int] = {}
    for h in sample.holes:
        sizes[h.stratum] = sizes.get(h.stratum, 0) + 1
    draws = []
    for h in sample.holes:
        item = items.get(h.question)
        if h.sampled and item is not None and h.anchor in item.judged_anchors:
            draws.append((h, 1.0 if item.relevant.get(h.anchor, 0) > 0 else 0.0))
    judged: dict[str, int] = {}
    for h, _ in draws:
        judged[h.stratum] = judged.get(h.stratum, 0) + 1
    return draws, {s: (n, judged.get(s, 0)) for s, n in sizes.items()}


def hole_relevance(sample: PoolSample, golden: GoldenSet) -> dict[str, dict[str, float]]:
    """Question id -> hole anchor -> the estimated probability that the hole is relevant: 1.0 or 0.0 once judged
    (drawn or not), otherwise its depth stratum's rate, the share of the stratum's judged draws found relevant
    (over all questions; the rate of all judged draws where the stratum has none judged, 0.0 with none at all)."""
    items = _by_id(golden)
    draws, _ = _judged_draws(sample, items)
    hits: dict[str, list[float]] = {}
    for h, y in draws:
        hits.setdefault(h.stratum, []).append(y)
    overall = float(np.mean([y for _, y in draws])) if draws else 0.0
    out: dict[str, dict[str, float]] = {}
    for h in sample.holes:
        item = items.get(h.question)
        if item is not None and h.anchor in item.judged_anchors:
            p = 1.0 if item.relevant.get(h.anchor, 0) > 0 else 0.0
        else:
            p = float(np.mean(hits[h.stratum])) if h.stratum in hits else overall
        out.setdefault(h.question, {})[h.anchor] = p
    return out


def _read_result(result: EvalResult | Mapping[str, Any]) -> tuple[list[Any], dict[str, Any], tuple[int, ...]]:
    """(questions, mean metrics, ks) of an :class:`EvalResult` or of its ``to_dict()`` (an ``eval --json`` file)."""
    if isinstance(result, EvalResult):
        return list(result.questions), dict(result.metrics), tuple(result.ks)
    try:
        questions = [SimpleNamespace(id=str(q["id"]), answerable=bool(q["answerable"]), relevant=dict(q["relevant"]),
                                     anchor_ranks=dict(q["anchor_ranks"]), retrieved=list(q["retrieved"]))
                     for q in result["questions"]]
        return questions, dict(result["metrics"]), tuple(int(k) for k in result["config"]["ks"])
    except (KeyError, TypeError, ValueError):
        raise ConfigError("not an evaluation result: expected what `ragtune eval --json` writes (config.ks, "
                          "metrics, questions with relevant, anchor_ranks and retrieved)") from None


def estimate_metrics(result: EvalResult | Mapping[str, Any], golden: GoldenSet, sample: PoolSample, *,
                     corpus: Any = None, ks: Sequence[int] | None = None, z: float = Z95) -> SampledEstimate:
    """Estimate recall@k and precision@k of ``result`` (an eval over ``golden`` after the drawn holes of
    ``sample`` were judged: an :class:`EvalResult` or its ``to_dict()``) with ``z``-standard-error intervals (95%
    by default); see the module docstring. With ``corpus`` (anything with ``resolve(anchor)``) a retrieved chunk
    stands for every unjudged hole whose span it :func:`~ragtune.evaluate.covers`, as eval scores it; without, for
    the hole named by its anchor only."""
    questions_all, metrics, result_ks = _read_result(result)
    ks = tuple(ks or result_ks)
    if any(k > max(result_ks) for k in ks):
        raise ConfigError(f"k {max(ks)} is deeper than the evaluation kept ({max(result_ks)}); evaluate with it")
    items = _by_id(golden)
    draws, strata = _judged_draws(sample, items)
    rate = _rates(draws)
    prob = hole_relevance(sample, golden)
    holes = sample.by_question()
    questions = [q for q in questions_all if q.answerable and q.id in items]
    if not questions:
        raise ConfigError("no answerable question to estimate over: the golden set and the evaluation share none")
    n_q = len(questions)
    outside = 0
    est: dict[str, float] = {}
    grad: dict[str, dict[str, float]] = {}  # metric -> stratum -> d(mean) / d(stratum rate)
    squares: dict[str, dict[str, float]] = {}  # metric -> stratum -> sum of (d(mean) / d(y_i))^2 over unjudged holes
    for q in questions:
        item = items[q.id]
        unknown = {h.anchor: h.stratum for h in holes.get(q.id, []) if h.anchor not in item.judged_anchors}
        p = {a: prob[q.id][a] for a in unknown}
        top = list(q.retrieved)
        hit = _covering(top, unknown, corpus)
        outside += sum(1 for r, hs in zip(top, hit) if not r.get("judged") and not hs)
        den = len(q.relevant) + sum(p.values())
        for k in ks:
            covered = set().union(*hit[:k])
            num = sum(1 for r in q.anchor_ranks.values() if r is not None and r <= k) + sum(p[a] for a in covered)
            _add(est, grad, squares, f"recall@{k}", num / den if den else 0.0, n_q,
                 [(s, ((a in covered) / den - num / den**2) if den else 0.0) for a, s in unknown.items()])
            value, slope = 0.0, dict.fromkeys(unknown, 0.0)
            for r, hs in zip(top[:k], hit[:k]):
                if r.get("relevant"):
                    value += 1.0
                    continue
                miss = [1.0 - p[a] for a in hs]
                value += 1.0 - math.prod(miss)
                for i, a in enumerate(hs):
                    slope[a] += math.prod(miss[:i] + miss[i + 1:])
            _add(est, grad, squares, f"precision@{k}", value / k, n_q,
                 [(s, slope[a] / k) for a, s in unknown.items()])
    intervals = []
    for name in ESTIMATED:
        for k in ks:
            key = f"{name}@{k}"
            se = math.sqrt(sum(g * g * _rate_variance(rate.get(s), strata[s]) + squares[key][s] * _spread(rate.get(s))
                               for s, g in grad.get(key, {}).items()))
            upper, judged = metrics.get(f"{name}_upper@{k}"), metrics.get(key)
            judged = math.nan if judged is None else float(judged)
            intervals.append(Interval(key, judged, est[key], est[key] - z * se, est[key] + z * se,
                                      judged if upper is not None else None, None if upper is None else float(upper)))
    drawn = sum(1 for q in questions for h in holes.get(q.id, []) if h.sampled)
    judged = sum(1 for h, _ in draws if h.question in {q.id for q in questions})
    return SampledEstimate(tuple(intervals), n_q, drawn, judged, outside)


def _covering(top: list[Mapping[str, Any]], unknown: Mapping[str, str], corpus: Any) -> list[set[str]]:
    """Per retrieved rank, the unjudged holes its chunk covers (by span with a corpus, else by its anchor)."""
    if corpus is None:
        return [{r.get("anchor")} & set(unknown) for r in top]  # type: ignore[operator]
    spans = {}
    for a in unknown:
        try:
            spans[a] = corpus.resolve(a)
        except UnknownAnchorError:
            continue
    out = []
    for r in top:
        chunk = SimpleNamespace(doc_id=r.get("doc_id"), start=int(r.get("start") or 0), end=int(r.get("end") or 0))
        out.append({a for a, span in spans.items() if covers(chunk, span)} or ({r.get("anchor")} & set(unknown)))
    return out


def _add(est: dict[str, float], grad: dict[str, dict[str, float]], squares: dict[str, dict[str, float]], key: str,
         value: float, n_q: int, slopes: list[tuple[str, float]]) -> None:
    """Add one question's value to the mean of ``key``, and its slope in each unjudged hole's relevance (summed per
    stratum, and squared)."""
    est[key] = est.get(key, 0.0) + value / n_q
    g, sq = grad.setdefault(key, {}), squares.setdefault(key, {})
    for s, d in slopes:
        g[s] = g.get(s, 0.0) + d / n_q
        sq[s] = sq.get(s, 0.0) + (d / n_q) ** 2


def _spread(xm: tuple[float, int] | None) -> float:
    """p (1 - p) of a stratum's smoothed rate: how much one unjudged hole's relevance varies around it."""
    x, m = xm or (0.0, 0)
    p = (x + 0.5) / (m + 1)
    return p * (1 - p)


def _rates(draws: list[tuple[SampledHole, float]]) -> dict[str, tuple[float, int]]:
    """Stratum -> (relevant judged draws, judged draws)."""
    out: dict[str, tuple[float, int]] = {}
    for h, y in draws:
        x, m = out.get(h.stratum, (0.0, 0))
        out[h.stratum] = (x + y, m + 1)
    return out


def _rate_variance(xm: tuple[float, int] | None, nm: tuple[int, int]) -> float:
    """Variance of a stratum's rate estimated from ``m`` judged draws of its ``N`` holes, without replacement. The
    rate in the variance is smoothed, ``(x + 0.5) / (m + 1)``, so a stratum whose draws were all not relevant
    (or all relevant) still says how unsure it is; a stratum with no judged draw counts as rate 0.5 from one."""
    n, _ = nm
    x, m = xm or (0.0, 0)
    p = (x + 0.5) / (m + 1)
    if m == 0:
        return 0.25
    return max(0.0, 1 - m / n) * p * (1 - p) / m


