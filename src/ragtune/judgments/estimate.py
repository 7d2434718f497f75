"""Metrics estimated from a judged sample of a pool, with 95% confidence intervals (``eval --pool-sample FILE``).

A pool sample (:mod:`.sample`) drew holes with known inclusion probabilities :math:`\\pi_i = m_h / N_h` within
each depth stratum :math:`h`. Once the drawn holes are judged, the share of relevant holes in the stratum is
estimated by inverse-probability weighting, :math:`\\hat p_h = \\frac{1}{N_h} \\sum_{i \\in S_h} y_i / \\pi_i`
(the Horvitz-Thompson total over the stratum's size; :math:`S_h` the judged draws, :math:`y_i` = 1 when judged
relevant; a drawn hole nobody judged yet is left out, :math:`m_h` counting the judged ones: missing at random).
Each hole's relevance is then known (judged, drawn or not) or estimated as the share of relevant draws in its
cell (its question's holes of its stratum), shrunk toward the stratum's rate,
:math:`p_i = (x_{qh} + s \\hat p_h) / (m_{qh} + s)` with :math:`s` = ``SHRINK`` (:func:`hole_relevance`): how
many relevant holes a question has varies far more between questions than within a stratum, so a question's
own draws count. Per question, with :math:`R` relevant anchors
judged (before the pool, or drawn and judged), :math:`R_k` of them covered in the top k, and :math:`p_i` each
unjudged hole's probability:

- recall@k :math:`= (R_k + \\sum_{i \\in C_k} p_i) / (R + \\sum_i p_i)`, :math:`C_k` the unjudged holes a top-k
  chunk covers;
- precision@k by Horvitz-Thompson, unbiased for the run whatever its holes: a top-k rank covering a relevant
  anchor judged before the pool counts 1, one covering no hole of the pool counts as eval counts it, and one
  covering holes counts :math:`\\sum_{i \\in S} w_i y_i / \\pi_i` over the judged draws it covers
  (:math:`\\pi_i = m_h / N_h`; :math:`w_i = 1 / (1 + \\sum_{j \\ne i} p_j)` over the other holes it covers, so
  that a chunk covering several relevant holes counts once); its variance is the stratified one, :math:`\\sum_h N_h^2 (1 - m_h/N_h) S_h^2 /
  m_h`, :math:`S_h^2` the spread of the judged draws' contributions, but never below what the stratum's smoothed
  rate implies for the holes the run retrieved (drawn or not): a few draws often hold no relevant hole the run
  retrieved, and their spread, 0, would make the interval a point.

Each interval is the estimate :math:`\\pm 1.96` standard errors. Recall's variance is by linearisation in the
unjudged holes' probabilities (:math:`d_i` the slope of the mean in :math:`p_i`): the stratum rates' sampling variance
(without replacement, :math:`(1 - m_h/N_h) \\tilde p (1 - \\tilde p) / m_h`) through the cells' weight on
them, each cell's own share's variance :math:`m_{qh} \\tilde p (1 - \\tilde p) / (m_{qh} + s)^2`, and each unjudged hole's
spread around its probability, :math:`d_i^2 p_i (1 - p_i)` (:math:`\\tilde p` smoothed by half a draw, and
probabilities kept inside [0.02, 0.98], so nothing estimated at 0 or 1 is taken as certain). Both aim at the
figure full judgments of the pool would give for this run on these questions
(the questions are fixed; ``bench/sampled.py`` measures how often it covers it). nDCG is not estimated (its ideal
ranking depends on every unknown grade at once): eval's judged-only figure and its upper bound stay its range.

:func:`hole_relevance` gives, per question and hole, the probability a hole is relevant (1 or 0 once judged, its
cell's shrunk share otherwise), for ordering what to judge next.
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

__all__ = ["Interval", "SampledEstimate", "estimate_metrics", "hole_relevance", "sampled_relevance", "Z95"]

Z95 = 1.959963984540054
ESTIMATED = ("recall", "precision")
SHRINK = 1.0  # judged draws' worth of the stratum's rate in each (question, stratum) cell's estimate
FEW_DRAWS = 5  # judged draws a question below which recall's interval missed in bench/sampled.py (3.8: 10% there)


@dataclass(frozen=True)
class Interval:
    """One metric estimated from the sample: eval's judged-only figure, the estimate and its 95% interval, and the
    worst and best cases (every unjudged hit not relevant, or relevant: eval's bounds; None where eval has none).
    Recall and precision lie in [0, 1], and so does the interval (a normal interval from few draws can pass them)."""

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
        if self.judged < FEW_DRAWS * self.questions:
            lines.append(f"  {self.judged / self.questions:.1f} judged draws a question: with fewer than {FEW_DRAWS}, "
                         "recall's estimate leans on the depth strata's rates and runs low where relevant sections "
                         "crowd into a few questions (BENCHMARKS.md, sampled judgments); judge a larger sample")
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
    known = {q: set(item.judged_anchors) for q, item in items.items()}  # (a property: computed once per question)
    for h in sample.holes:
        item = items.get(h.question)
        if h.sampled and item is not None and h.anchor in known[h.question]:
            draws.append((h, 1.0 if item.relevant.get(h.anchor, 0) > 0 else 0.0))
    judged: dict[str, int] = {}
    for h, _ in draws:
        judged[h.stratum] = judged.get(h.stratum, 0) + 1
    return draws, {s: (n, judged.get(s, 0)) for s, n in sizes.items()}


def hole_relevance(sample: PoolSample, golden: GoldenSet) -> dict[str, dict[str, float]]:
    """Question id -> hole anchor -> the estimated probability that the hole is relevant: 1.0 or 0.0 once judged
    (drawn or not); otherwise the share of relevant draws in its cell (its question's holes of its depth
    stratum), shrunk toward the stratum's rate over all questions: ``(x_qh + SHRINK * r_h) / (m_qh + SHRINK)``,
    the stratum's rate where the cell has no judged draw (the rate of all judged draws where the stratum has none,
    0.0 with none at all)."""
    return _relevance(sample, golden)[0]


def sampled_relevance(sample: PoolSample, golden: GoldenSet) -> tuple[dict[str, dict[str, float]], int]:
    """(:func:`hole_relevance`, how many of the sample's draws are judged): with none judged, the unjudged holes'
    chances rest on nothing (what the decision model then falls back from)."""
    found, cells, _ = _relevance(sample, golden)
    return found, sum(m for _, m in cells.values())


def _relevance(sample: PoolSample, golden: GoldenSet) -> tuple[dict[str, dict[str, float]],
                                                                  dict[tuple[str, str], tuple[float, int]],
                                                                  dict[str, float]]:
    """(hole_relevance, (question, stratum) -> (relevant draws, judged draws), stratum -> rate)."""
    items = _by_id(golden)
    draws, _ = _judged_draws(sample, items)
    hits: dict[str, list[float]] = {}
    cells: dict[tuple[str, str], tuple[float, int]] = {}
    for h, y in draws:
        hits.setdefault(h.stratum, []).append(y)
        x, m = cells.get((h.question, h.stratum), (0.0, 0))
        cells[(h.question, h.stratum)] = (x + y, m + 1)
    overall = float(np.mean([y for _, y in draws])) if draws else 0.0
    rate = {s: float(np.mean(v)) for s, v in hits.items()}
    out: dict[str, dict[str, float]] = {}
    known = {q: set(item.judged_anchors) for q, item in items.items()}
    for h in sample.holes:
        item = items.get(h.question)
        if item is not None and h.anchor in known[h.question]:
            p = 1.0 if item.relevant.get(h.anchor, 0) > 0 else 0.0
        else:
            x, m = cells.get((h.question, h.stratum), (0.0, 0))
            p = (x + SHRINK * rate.get(h.stratum, overall)) / (m + SHRINK)
        out.setdefault(h.question, {})[h.anchor] = p
    return out, cells, rate


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
    prob, cells, _ = _relevance(sample, golden)
    pi = {s: m / n for s, (n, m) in strata.items() if m}
    lin: dict[str, list[tuple[str, float]]] = {}  # precision: (stratum, z_i) per judged draw (Horvitz-Thompson)
    spread: dict[str, dict[str, tuple[float, float]]] = {}  # precision: stratum -> (sum c_i, sum c_i^2), every hole
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
        judged_q = set(item.judged_anchors)
        unknown = {h.anchor: h.stratum for h in holes.get(q.id, []) if h.anchor not in judged_q}
        p = {a: prob[q.id][a] for a in unknown}
        top = list(q.retrieved)
        hit = _covering(top, unknown, corpus)
        outside += sum(1 for r, hs in zip(top, hit) if not r.get("judged") and not hs)
        den = len(q.relevant) + sum(p.values())
        cell = {s: cells.get((q.id, s), (0.0, 0)) for s in set(unknown.values())}
        every = {h.anchor: h.stratum for h in holes.get(q.id, [])}
        hit_all = _covering(top, every, corpus)  # per rank, the pool's holes its chunk covers
        base_hit = _covering(top, {a: "" for a in q.relevant if a not in every}, corpus)  # relevant before the pool
        draws_q = {h.anchor: (h.stratum, y) for h, y in draws if h.question == q.id}
        for k in ks:
            covered = set().union(*hit[:k])
            num = sum(1 for r in q.anchor_ranks.values() if r is not None and r <= k) + sum(p[a] for a in covered)
            d_r = {a: ((a in covered) / den - num / den**2) if den else 0.0 for a in unknown}
            _add(est, grad, squares, f"recall@{k}", num / den if den else 0.0, n_q, unknown, d_r, p, cell)
            value, times, weight = 0.0, dict.fromkeys(draws_q, 0.0), {}
            for r, pooled, known in zip(top[:k], hit_all[:k], base_hit[:k]):
                if known or not pooled:
                    value += 1.0 if known or r.get("relevant") else 0.0
                    continue
                for a in pooled:  # a chunk covering several relevant holes is one relevant rank: each its share
                    share = 1.0 / (1.0 + sum(prob[q.id].get(b, 0.0) for b in pooled if b != a))
                    weight[a] = weight.get(a, 0.0) + share / k / n_q
                    if a in draws_q:
                        times[a] += share
                        value += share * draws_q[a][1] / pi[draws_q[a][0]]
            key = f"precision@{k}"
            est[key] = est.get(key, 0.0) + value / k / n_q
            lin.setdefault(key, []).extend((draws_q[a][0], draws_q[a][1] * t / k / n_q) for a, t in times.items())
            for a, c in weight.items():  # every hole's weight, drawn or not: the model floor of the variance
                c1, c2 = spread.setdefault(key, {}).get(every[a], (0.0, 0.0))
                spread[key][every[a]] = (c1 + c, c2 + c * c)
    intervals = []
    for name in ESTIMATED:
        for k in ks:
            key = f"{name}@{k}"
            if name == "precision":
                se = math.sqrt(_ht_variance(lin.get(key, []), strata, spread.get(key, {}), rate))
            else:
                se = math.sqrt(sum(g * g * _rate_variance(rate.get(s), strata[s]) + squares[key][s]
                                   for s, g in grad.get(key, {}).items()))
            upper, judged = metrics.get(f"{name}_upper@{k}"), metrics.get(key)
            judged = math.nan if judged is None else float(judged)
            intervals.append(Interval(key, judged, est[key], max(0.0, est[key] - z * se), min(1.0, est[key] + z * se),
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
         value: float, n_q: int, unknown: Mapping[str, str], slope: Mapping[str, float], p: Mapping[str, float],
         cell: Mapping[str, tuple[float, int]]) -> None:
    """Add one question's value to the mean of ``key`` and its variance terms: per stratum, the slope in the
    stratum's rate (each unjudged hole's slope times the cell's weight on that rate), the variance of the cell's own
    share of relevant draws, and the spread of each unjudged hole around its probability."""
    est[key] = est.get(key, 0.0) + value / n_q
    g, sq = grad.setdefault(key, {}), squares.setdefault(key, {})
    by: dict[str, float] = {}
    for a, s in unknown.items():
        d = slope[a] / n_q
        by[s] = by.get(s, 0.0) + d
        sq[s] = sq.get(s, 0.0) + d * d * _spread(p[a])
    for s, d in by.items():
        x, m = cell[s]
        g[s] = g.get(s, 0.0) + d * SHRINK / (m + SHRINK)
        if m:
            sq[s] = sq.get(s, 0.0) + d * d * m * _spread((x + 0.5) / (m + 1)) / (m + SHRINK) ** 2


def _spread(p: float) -> float:
    """p (1 - p), with p kept inside [0.02, 0.98]: a probability estimated at 0 or 1 is not taken as certain."""
    p = min(0.98, max(0.02, p))
    return p * (1 - p)


def _ht_variance(contrib: list[tuple[str, float]], strata: Mapping[str, tuple[int, int]],
                 spread: Mapping[str, tuple[float, float]], rates: Mapping[str, tuple[float, int]]) -> float:
    """Stratified without-replacement variance of a Horvitz-Thompson total of z: ``sum_h N_h^2 (1 - m_h/N_h)
    S_h^2 / m_h``. S_h^2 is the larger of s_h^2 over the stratum's m_h judged draws (the draws not listed add
    z = 0) and what the stratum's smoothed rate implies: with z_i = c_i y_i (c_i a hole's weight in the run's
    top k, known for every hole, drawn or not, sums in ``spread``) and each y_i relevant with the smoothed rate
    ``(x + 0.5) / (m + 1)``, the expected population variance ``(p sum c^2 - (p (1 - p) sum c^2 + p^2 (sum
    c)^2) / N) / (N - 1)``. Few draws often hold no relevant hole the run retrieved: s_h^2 is then 0 and the
    interval a point, though the unjudged holes the run retrieved may be relevant."""
    by: dict[str, list[float]] = {}
    for s, v in contrib:
        by.setdefault(s, []).append(v)
    var = 0.0
    for s, (n, m) in strata.items():
        if m < 1 or m >= n:
            continue
        zs = np.zeros(m)
        vals = by.get(s, [])
        zs[: len(vals)] = vals
        x, _ = rates.get(s, (0.0, 0))
        p = (x + 0.5) / (m + 1)
        c1, c2 = spread.get(s, (0.0, 0.0))
        model = max(0.0, p * c2 - (p * (1 - p) * c2 + p * p * c1 * c1) / n) / (n - 1)
        var += n * n * (1 - m / n) * max(model, float(np.var(zs, ddof=1)) if m > 1 else 0.0) / m
    return var


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


