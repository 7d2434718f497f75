"""Metrics estimated from a judged sample of a pool, with 95% confidence intervals (``eval --pool-sample FILE``).

A pool sample (:mod:`.sample`) drew holes with known inclusion probabilities :math:`\\pi_i = m_h / N_h` within
each depth stratum :math:`h` (:math:`m_h` counting the judged draws: a drawn hole nobody judged yet is left out,
missing at random). Once the drawn holes are judged:

- **How likely each unjudged hole is relevant** (:class:`RelevanceModel`, :func:`hole_relevance`): a logistic
  model with an effect per question, one per depth stratum and a slope in the log of how many pooled runs
  retrieved the hole, fitted to the judged holes, the spread between questions learnt from them. Relevant
  sections crowd into a few questions (model labels of two real pools: 0, 0, 0, 0, 0, 1, 1, ... 10 relevant holes
  a question), so a question's own draws count, and so does how many runs agree on a hole.
- **recall@k**, per question, by a difference estimator: the model's probability summed over the question's holes
  not judged before the sample, corrected by each judged draw's residual :math:`(y_i - p_i) / \\pi_i`, for the
  relevant holes in all (:math:`\\hat D`) and those a top-k chunk covers (:math:`\\hat N_k`); recall is
  :math:`(R_k + \\hat N_k) / (R + \\hat D)`, :math:`R` the relevant anchors judged otherwise and :math:`R_k`
  of them in the top k, never below what the judgments already show. Each total is unbiased for the question
  whatever the model (the model only narrows the interval); the ratio keeps a small bias (BENCHMARKS.md,
  sampled judgments). Its variance is by linearisation of the ratio,
  :math:`\\sum_i (1 - \\pi_i) ((c_i - r) (y_i - p_i) / (\\hat D \\pi_i))^2` over the question's judged draws
  (:math:`c_i` = 1 when a top-k chunk covers the hole), plus the model's spread for holes of a stratum with no
  judged draw; a question with no judged draw takes the variance the model implies for the sample it did not
  get. Questions are summed as independent.
- **precision@k** by Horvitz-Thompson, unbiased for the run whatever its holes: a top-k rank covering a relevant
  anchor judged before the pool counts 1, one covering no hole of the pool counts as eval counts it, and one
  covering holes counts :math:`\\sum_{i \\in S} w_i y_i / \\pi_i` over the judged draws it covers
  (:math:`w_i = 1 / (1 + \\sum_{j \\ne i} p_j)` over the other holes it covers, so that a chunk covering several
  relevant holes counts once); its variance is the stratified one, :math:`\\sum_h N_h^2 (1 - m_h/N_h) S_h^2 /
  m_h`, :math:`S_h^2` the spread of the judged draws' contributions, but never below what the stratum's smoothed
  rate implies for the holes the run retrieved (drawn or not): a few draws often hold no relevant hole the run
  retrieved, and their spread, 0, would make the interval a point.

Each interval is the estimate :math:`\\pm 1.96` standard errors, kept within [0, 1]. Both aim at the figure full
judgments of the pool would give for this run on these questions (the questions are fixed; ``bench/sampled.py``
measures how often the intervals cover it). nDCG is not estimated (its ideal ranking depends on every unknown grade
at once): eval's judged-only figure and its upper bound stay its range.
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

__all__ = ["Interval", "SampledEstimate", "estimate_metrics", "hole_relevance", "judged_draws", "sampled_relevance", "Z95"]

Z95 = 1.959963984540054
ESTIMATED = ("recall", "precision")


@dataclass(frozen=True)
class Interval:
    """One metric estimated from the sample: eval's judged-only figure, the estimate and its 95% interval, and the
    worst and best cases (every unjudged hit not relevant, or relevant: eval's bounds; None where eval has none).
    Recall and precision lie in [0, 1], and so do the estimate and the interval (a normal interval from few draws,
    or a sum of inverse-probability weights, can pass them)."""

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
    (drawn or not); otherwise :class:`RelevanceModel`'s, fitted to the pool's judged holes (its question's draws,
    its depth stratum, how many runs retrieved it)."""
    return _relevance(sample, golden)[0]


def sampled_relevance(sample: PoolSample, golden: GoldenSet) -> tuple[dict[str, dict[str, float]], int]:
    """(:func:`hole_relevance`, :func:`judged_draws`): with none judged, the unjudged holes' chances rest on
    nothing (what the decision model then falls back from)."""
    found, _ = _relevance(sample, golden)
    return found, judged_draws(sample, golden)


def judged_draws(sample: PoolSample, golden: GoldenSet) -> int:
    """How many of the sample's drawn holes ``golden`` holds a judgment of (no model fitted)."""
    return len(_judged_draws(sample, _by_id(golden))[0])


def _relevance(sample: PoolSample, golden: GoldenSet) -> tuple[dict[str, dict[str, float]],
                                                                  dict[str, dict[str, float]]]:
    """(hole_relevance, question -> hole -> the model's probability whether judged or not)."""
    items = _by_id(golden)
    known = {q: set(item.judged_anchors) for q, item in items.items()}
    mine = [h for h in sample.holes if h.question in items]
    judged = [(h, 1.0 if items[h.question].relevant.get(h.anchor, 0) > 0 else 0.0) for h in mine
              if h.anchor in known[h.question]]
    model = RelevanceModel([h.question for h in mine], [h.stratum for h in sample.holes],
                           [(h.question, h.stratum, h.runs, y) for h, y in judged])
    fitted: dict[str, dict[str, float]] = {}
    for h, p in zip(mine, model.probability([(h.question, h.stratum, h.runs) for h in mine])):
        fitted.setdefault(h.question, {})[h.anchor] = float(p)
    out = {q: dict(v) for q, v in fitted.items()}
    for h, y in judged:
        out[h.question][h.anchor] = y
    return out, fitted


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
    prob, fitted = _relevance(sample, golden)
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
    variance: dict[str, float] = {}  # recall: the sum of the questions' variances
    for q in questions:
        item = items[q.id]
        judged_q = set(item.judged_anchors)
        unknown = {h.anchor: h.stratum for h in holes.get(q.id, []) if h.anchor not in judged_q}
        top = list(q.retrieved)
        hit = _covering(top, unknown, corpus)
        outside += sum(1 for r, hs in zip(top, hit) if not r.get("judged") and not hs)
        every = {h.anchor: h.stratum for h in holes.get(q.id, [])}
        hit_all = _covering(top, every, corpus)  # per rank, the pool's holes its chunk covers
        base_hit = _covering(top, {a: "" for a in q.relevant if a not in every}, corpus)  # relevant before the pool
        draws_q = {h.anchor: (h.stratum, y) for h, y in draws if h.question == q.id}
        population = {a: s for a, s in every.items() if a in unknown or a in draws_q}
        for k in ks:
            value, var = _recall(q, k, population, draws_q, fitted.get(q.id, {}), pi, set().union(*hit_all[:k]))
            est[f"recall@{k}"] = est.get(f"recall@{k}", 0.0) + value / n_q
            variance[f"recall@{k}"] = variance.get(f"recall@{k}", 0.0) + var / n_q**2
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
                se = math.sqrt(variance[key])
            upper, judged = metrics.get(f"{name}_upper@{k}"), metrics.get(key)
            judged = math.nan if judged is None else float(judged)
            value = min(1.0, max(0.0, est[key]))  # inverse-probability weights can carry a sum past 1
            low, high = min(max(0.0, est[key] - z * se), value), max(min(1.0, est[key] + z * se), value)
            intervals.append(Interval(key, judged, value, low, high,
                                      judged if upper is not None else None, None if upper is None else float(upper)))
    drawn = sum(1 for q in questions for h in holes.get(q.id, []) if h.sampled)
    judged = sum(1 for h, _ in draws if h.question in {q.id for q in questions})
    return SampledEstimate(tuple(intervals), n_q, drawn, judged, outside)


def _recall(q: Any, k: int, population: Mapping[str, str], draws: Mapping[str, tuple[str, float]],
            fitted: Mapping[str, float], pi: Mapping[str, float], covered: set[str]) -> tuple[float, float]:
    """One question's recall@k estimated from its holes, and its variance: the model's probability of every hole not
    judged before the sample, corrected by the judged draws' residuals weighted by their inverse inclusion
    probability (a difference estimator: unbiased for the question's relevant holes, inside the top k and in all,
    whatever the model); the variance by linearisation of the ratio, never below what the model implies for the
    holes not drawn."""
    base = len(q.relevant) - sum(y for _, y in draws.values())  # relevant anchors judged outside the sample
    top = sum(1 for a, r in q.anchor_ranks.items() if r is not None and r <= k and a not in draws)
    total, inside = float(base), float(top)
    for a in population:
        c = a in covered
        total += fitted.get(a, 0.0)
        inside += c * fitted.get(a, 0.0)
        if a in draws:
            s, y = draws[a]
            total += (y - fitted.get(a, 0.0)) / pi[s]
            inside += c * (y - fitted.get(a, 0.0)) / pi[s]
    known = base + sum(y for _, y in draws.values())
    total = max(total, known)
    inside = min(max(inside, top + sum(y for a, (_, y) in draws.items() if a in covered)), total)
    r = inside / total if total > 0 else 0.0
    design, model, alone = 0.0, 0.0, 0.0
    for a, s in population.items():
        c, p = float(a in covered), fitted.get(a, 0.0)
        share = pi.get(s)
        if a in draws and share:
            design += (1 - share) * ((c - r) * (draws[a][1] - p) / total / share) ** 2
        spread = (c - r) ** 2 * _spread(p) / total**2
        model += spread * ((1 - share) / share if share else 1.0)
        alone += 0.0 if share else spread
    return r, (model if not draws else design + alone)


def _spread(p: float) -> float:
    """p (1 - p), with p kept inside [0.02, 0.98]: a probability estimated at 0 or 1 is not taken as certain."""
    p = min(0.98, max(0.02, p))
    return p * (1 - p)


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



TAUS = (0.5, 1.0, 2.0)
"""The spreads of the question effects (logit scale) the relevance model weighs by their marginal likelihood."""
PRIOR_SCALE = 3.0  # normal prior's scale on the overall logit, each depth stratum's effect and the runs' slope
DRAWS = 400  # draws of the model's posterior behind each hole's probability


@dataclass(frozen=True)
class _Fit:
    """One spread's fit of the relevance model: the mode, a square root of the covariance, its weight."""

    mode: np.ndarray
    root: np.ndarray
    weight: float


class RelevanceModel:
    """How likely each hole of a sampled pool is relevant: a logistic model with an effect per question, one per
    depth stratum, and a slope in the log of how many pooled runs retrieved the hole,
    ``logit p = mu + a_q + b_h + c log(runs)``, fitted to the judged holes of the pool.

    A question's effect has a normal prior of spread ``tau``, weighed over :data:`TAUS` by each one's marginal
    likelihood (Laplace approximation), so how much questions differ is learnt from the judgments; the overall
    level, the depth effects and the slope have normal priors of scale :data:`PRIOR_SCALE`. Each fit's posterior
    is taken as normal around its mode (Laplace), and a hole's probability is its mean over :data:`DRAWS` draws."""

    def __init__(self, questions: Sequence[str], strata: Sequence[str], judged: Sequence[tuple[str, str, int, float]]):
        self.questions = {q: i for i, q in enumerate(dict.fromkeys(questions))}
        self.strata = {s: i for i, s in enumerate(dict.fromkeys(strata))}
        x = self._rows([(q, s, r) for q, s, r, _ in judged])
        y = np.array([c for *_, c in judged], dtype=float)
        fits = [self._fit(x, y, tau) for tau in TAUS]
        top = max(f[1] for f in fits)
        total = sum(math.exp(f[1] - top) for f in fits)
        self.fits = tuple(_Fit(f[0].mode, f[0].root, math.exp(f[1] - top) / total) for f in fits)

    def _rows(self, holes: Sequence[tuple[str, str, int]]) -> np.ndarray:
        nq = len(self.questions)
        x = np.zeros((len(holes), 2 + nq + len(self.strata)))
        x[:, 0] = 1.0
        for j, (q, s, runs) in enumerate(holes):
            x[j, 1 + self.questions[q]] = 1.0
            x[j, 1 + nq + self.strata[s]] = 1.0
            x[j, -1] = math.log(max(1, runs))
        return x

    def _fit(self, x: np.ndarray, y: np.ndarray, tau: float) -> tuple[_Fit, float]:
        """Newton's method to the posterior mode; (the fit, the log marginal likelihood by Laplace)."""
        prec = np.r_[PRIOR_SCALE ** -2, np.full(len(self.questions), tau ** -2.0),
                     np.full(len(self.strata), PRIOR_SCALE ** -2), PRIOR_SCALE ** -2]
        theta = np.zeros(x.shape[1])
        for _ in range(100):
            p = _expit(x @ theta)
            hess = x.T @ (x * (p * (1 - p))[:, None]) + np.diag(prec)
            step = np.linalg.solve(hess, x.T @ (y - p) - prec * theta)
            theta += step
            if np.max(np.abs(step)) < 1e-9:
                break
        eta = x @ theta
        p = _expit(eta)
        hess = x.T @ (x * (p * (1 - p))[:, None]) + np.diag(prec)
        loglik = float(np.sum(y * eta - np.logaddexp(0.0, eta)))
        evidence = loglik - 0.5 * float(prec @ theta**2) + 0.5 * float(np.sum(np.log(prec))) \
            - 0.5 * float(np.linalg.slogdet(hess)[1])
        return _Fit(theta, np.linalg.cholesky(np.linalg.inv(hess)), 1.0), evidence

    def probability(self, holes: Sequence[tuple[str, str, int]], *, seed: int = 0) -> np.ndarray:
        """Each hole's (question, stratum, runs) probability of relevance: its mean over :data:`DRAWS` draws of the
        posterior (each spread's fit drawn in proportion to its weight), reproducibly from ``seed``."""
        return self.draws(holes, DRAWS, seed=seed).mean(axis=0) if holes else np.zeros(0)

    def draws(self, holes: Sequence[tuple[str, str, int]], n: int, *, seed: int = 0) -> np.ndarray:
        """``n`` x len(holes) probabilities of relevance drawn from the posterior (each spread's fit drawn in
        proportion to its weight), reproducibly from ``seed``."""
        rng = np.random.default_rng(seed)
        x = self._rows(holes)
        counts = rng.multinomial(n, [f.weight for f in self.fits])
        return np.concatenate([_expit((f.mode + rng.standard_normal((c, len(f.mode))) @ f.root.T) @ x.T)
                               for f, c in zip(self.fits, counts)])


def _expit(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))

