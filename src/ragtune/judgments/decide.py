"""Judge what decides: whether the unjudged sections could change a sweep's decision, and which to judge first.

A sweep recommends one configuration. Its figures count every unjudged section it retrieved (a *hole*) as not
relevant; judging the holes may move them. Here each hole ``h`` is a Bernoulli variable :math:`X_h` with an
estimated probability :math:`p_h` of being relevant, and one relevant hole is a relevant anchor for every
configuration (it enters each recall's denominator, whoever retrieved it). For configurations ``a`` and ``b``:

- per draw of the holes (``draws`` of them, seeded) the per-question paired difference :math:`d_q = m_b - m_a`
  of the sweep metric gives a verdict from the percentile bootstrap over questions (``resamples``, seeded, the
  same resamples in every draw): ``b`` would replace ``a`` when the ``confidence`` interval of the mean
  difference lies above 0 (``b`` significantly better), and ``a`` stands otherwise;
- the decision between them is *settled* when one verdict holds in at least ``confidence`` of the draws;
  otherwise it *could change* (the ``~`` mark of the sweep table). The ``~`` marks compare every configuration
  with the recommended one at once: in each draw their verdicts are Holm-corrected over the comparisons
  (:func:`holm_better`), the correction the sweep's comparisons with its baseline use. *Judge what decides*
  tests its one pair at Holm's first step, the level divided by the number of comparisons: a draw in which any
  configuration passes that step is a draw in which the recommendation changes.

*Judge what decides* orders the holes by how much judging one could move the mean paired difference between the
recommended configuration and the runner-up: :math:`p_h (1 - p_h) |\\Delta_h|`, where :math:`\\Delta_h` is the
mean difference with :math:`X_h = 1` minus with :math:`X_h = 0` (the other holes drawn), so the expected change
judging ``h`` brings is :math:`2 p_h (1 - p_h) |\\Delta_h|`. The *stop line* is the shortest head of that list
after which the decision is settled at ``confidence`` whatever the rest turn out to be: averaged over outcomes of
the head, the verdict most draws of the other holes give holds in at least ``confidence`` of them (200 outcomes
of the head, 20 draws of the rest each).

Where :math:`p_h` comes from is a function, ``probability(question_id, anchor, rank) -> p`` (``rank`` the best
rank any configuration retrieved the hole at). Without one, :func:`depth_rates` estimates it from the sweep itself.
With a judged pool sample (``sample`` and the ``golden`` set holding its judgments: ``ragtune pool --sample N``,
then the workbench) :func:`sample_probability` gives it instead: a hole judged is certain (1 or 0), a hole of the
pool not judged has :func:`~ragtune.judgments.estimate.hole_relevance`'s chance (the relevance model fitted on
the judged draws: question, depth stratum and how many pooled runs retrieved it), and a hole outside the pool (or every hole, while
no draw is judged) keeps the fallback.
Metrics modelled: ``recall@k``, ``hit@k``, ``precision@k`` and ``mrr``; for another metric :func:`decision_model`
returns None. Holes are named by the retrieved chunk's anchor (its first section); a hole below every
configuration's top k is left out (``k`` the metric's cutoff; for mrr, as deep as the records go): judging it
could only lower every configuration's recall a little, alike.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, CorpusNotFoundError
from ..golden import GoldenSet
from .estimate import sampled_relevance
from .sample import PoolSample

__all__ = ["HoleProbability", "depth_rates", "sample_probability", "DecisionModel", "decision_model", "DecidingHole", "Decides",
           "SUPPORTED", "decides_from_sweep", "holm_better"]

HoleProbability = Callable[[str, str, int], float]  # (question id, hole anchor, best rank) -> P(relevant)
SUPPORTED = ("recall", "hit", "precision", "mrr")


def _answerable(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [q for q in record["result"]["questions"] if q.get("answerable", True)]


def depth_rates(records: Sequence[Mapping[str, Any]], *, prior_strength: float = 10.0) -> HoleProbability:
    """The fallback estimate of :math:`p_h`: the rate of relevant hits among judged hits at the hole's rank, with
    a Beta prior.

    At rank ``r`` over every configuration and answerable question: the prior mean :math:`\\pi_r` is the share of
    hits known relevant (relevant hits / all hits), weighted as ``prior_strength`` hits; the data are the judged
    hits of the questions whose judgments include a section judged *not* relevant (questions whose holes someone
    judged; the relevant anchors an author wrote down were never a sample of the holes, so a golden set of
    answers alone leaves the prior): :math:`p_r = (rel_r + s\\pi_r) / (judged_r + s)`, clipped to [0.01, 0.99].
    Sampled-stratum rates (``ragtune pool --sample``) replace this by passing another ``probability``.
    """
    if prior_strength <= 0:
        raise ConfigError(f"prior_strength must be > 0 (pseudo-hits of the prior), got {prior_strength!r}")
    hits: dict[int, list[float]] = {}  # rank -> [all hits, relevant hits, judged hits (sampled), relevant of those]
    for record in records:
        for q in _answerable(record):
            sampled = any(h.get("judged") and not h.get("relevant") for h in q.get("retrieved", ()))
            for rank, h in enumerate(q.get("retrieved", ()), start=1):
                row = hits.setdefault(rank, [0.0, 0.0, 0.0, 0.0])
                row[0] += 1
                row[1] += bool(h.get("relevant"))
                if sampled and h.get("judged"):
                    row[2] += 1
                    row[3] += bool(h.get("relevant"))
    rates = {}
    for rank, (n, rel, judged, judged_rel) in hits.items():
        prior = rel / n if n else 0.0
        rates[rank] = min(0.99, max(0.01, (judged_rel + prior_strength * prior) / (judged + prior_strength)))
    deepest = max(rates) if rates else 0

    def probability(question: str, anchor: str, rank: int) -> float:
        return rates.get(min(rank, deepest), 0.01)

    return probability


def sample_probability(sample: PoolSample, golden: GoldenSet, fallback: HoleProbability) -> HoleProbability:
    """:math:`p_h` from a judged pool sample: 1.0 or 0.0 for a hole ``golden`` holds a judgment of (drawn or not),
    :func:`~ragtune.judgments.estimate.hole_relevance` for the pool's other holes, ``fallback`` for a hole the pool
    lacks, and for every unjudged hole while none of the sample's draws is judged (no estimate yet)."""
    if not isinstance(sample, PoolSample):
        raise ConfigError(f"sample must be a pool sample (read_pool_sample), got {type(sample).__name__}")
    if not isinstance(golden, GoldenSet):
        raise ConfigError(f"golden must be the golden set holding the sample's judgments, got {type(golden).__name__}")
    known = {i.id: (i.judged_anchors, i.relevant) for i in golden}
    if not any(h.question in known for h in sample.holes) and sample.holes:
        raise ConfigError("the pool sample's questions are none of the golden set's: give the golden set the pool "
                          "was drawn for")
    estimated, judged_draws = sampled_relevance(sample, golden)

    def probability(question: str, anchor: str, rank: int) -> float:
        judged, relevant = known.get(question, ((), {}))
        if anchor in judged:
            return 1.0 if relevant.get(anchor, 0) > 0 else 0.0
        p = estimated.get(question, {}).get(anchor) if judged_draws else None
        return fallback(question, anchor, rank) if p is None else p

    return probability


@dataclass
class _Question:
    """One question across configurations: its relevant-anchor count and the union of holes."""

    id: str
    relevant: int
    holes: list[str]  # anchors; column order of X
    best_rank: list[int]
    # per configuration key: (first relevant rank, ranks holding a relevant hit, the relevant anchors' first ranks,
    # hole anchor -> the ranks it fills), ranks 1-based
    configs: dict[str, tuple[float, list[int], np.ndarray, dict[str, list[int]]]]
    column: dict[str, int]  # hole anchor -> its index in holes


def _parse_metric(metric: str) -> tuple[str, int | None]:
    name, _, k = metric.partition("@")
    if name not in SUPPORTED:
        return name, None
    if name == "mrr":
        return name, None
    if not k.isdigit():
        raise ConfigError(f"metric {metric!r} needs a cutoff (e.g. {name}@5)")
    return name, int(k)


def _questions(records: Sequence[Mapping[str, Any]], cutoff: int | None) -> list[_Question]:
    by_id: dict[str, _Question] = {}
    for record in records:
        for q in _answerable(record):
            item = by_id.get(q["id"])
            if item is None:
                item = by_id[q["id"]] = _Question(q["id"], len(q.get("relevant") or ()), [], [], {}, {})
            ranks: dict[str, list[int]] = {}
            relevant_ranks = []
            for rank, h in enumerate(q.get("retrieved", ()), start=1):
                if h.get("relevant"):
                    relevant_ranks.append(rank)
                elif not h.get("judged") and (cutoff is None or rank <= cutoff):
                    ranks.setdefault(str(h["anchor"]), []).append(rank)
            for a, rs in ranks.items():
                i = item.column.setdefault(a, len(item.holes))
                if i == len(item.holes):
                    item.holes.append(a)
                    item.best_rank.append(rs[0])
                else:
                    item.best_rank[i] = min(item.best_rank[i], rs[0])
            first = q.get("first_hit_rank")
            anchor_ranks = [r for r in (q.get("anchor_ranks") or {}).values() if r is not None]
            item.configs[record["key"]] = (math.inf if first is None else float(first), relevant_ranks,
                                           np.array(anchor_ranks, dtype=float), ranks)
    return list(by_id.values())


class DecisionModel:
    """The holes of a sweep's records as Bernoulli draws, and the verdicts between configurations they allow.

    ``records`` are sweep run records (``runs/<key>.json``: ``key`` and ``result`` with per-question
    ``retrieved``); ``metric`` one of :data:`SUPPORTED` (``recall@5``); ``probability`` gives each hole's
    :math:`p_h` (default :func:`depth_rates`); with a judged pool ``sample`` and the ``golden`` set holding its
    judgments, :func:`sample_probability` gives it, ``probability`` (or :func:`depth_rates`) its fallback. Seeded:
    equal inputs give equal verdicts and orders.
    """

    def __init__(self, records: Sequence[Mapping[str, Any]], metric: str, *, probability: HoleProbability | None = None,
                 draws: int = 1000, resamples: int = 1000, seed: int = 0, confidence: float = 0.95,
                 sample: PoolSample | None = None, golden: GoldenSet | None = None):
        name, k = _parse_metric(metric)
        if name not in SUPPORTED:
            raise ConfigError(f"the decision model covers {', '.join(SUPPORTED)}; got metric {metric!r}")
        if not 0.5 < confidence < 1:
            raise ConfigError(f"confidence must be between 0.5 and 1 (e.g. 0.95), got {confidence!r}")
        if draws < 1 or resamples < 1:
            raise ConfigError(f"draws and resamples must be >= 1, got {draws!r} and {resamples!r}")
        self.metric, self.name, self.k = metric, name, k
        self.confidence, self.draws, self.seed = confidence, draws, seed
        self.keys = [r["key"] for r in records]
        self.questions = [q for q in _questions(records, k) if len(q.configs) == len(self.keys) and q.relevant]
        if (sample is None) != (golden is None):
            raise ConfigError("a pool sample needs the golden set holding its judgments (give both, or neither)")
        probability = probability or depth_rates(records)
        if sample is not None and golden is not None:
            probability = sample_probability(sample, golden, probability)
        rng = np.random.default_rng(seed)
        self.p = [np.array([float(probability(q.id, a, r)) for a, r in zip(q.holes, q.best_rank)]) for q in self.questions]
        for q, p in zip(self.questions, self.p):
            if p.size and (not np.all(np.isfinite(p)) or p.min() < 0 or p.max() > 1):
                raise ConfigError(f"question {q.id!r}: hole probabilities must lie in [0, 1]")
        self.x = [rng.random((draws, p.size)) < p for p in self.p]  # (draws, holes) per question
        n = len(self.questions)
        self.weights = (rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(np.float32) / n) if n else None
        self._values: dict[str, np.ndarray] = {}
        self._parts_memo: dict[tuple[int, str], tuple[float, np.ndarray, np.ndarray]] = {}

    # -- the metric under a draw -----------------------------------------------------------------------------------
    def _parts(self, qi: int, key: str) -> tuple[float, np.ndarray, np.ndarray]:
        """Configuration ``key`` on question ``qi``: what is found without the holes (relevant anchors covered,
        relevant ranks, or the first relevant rank for mrr), the weight of each hole (1 if in the top k, or the
        ranks it fills for precision) and each hole's first rank (inf when not retrieved)."""
        memo = self._parts_memo.get((qi, key))
        if memo is not None:
            return memo
        q = self.questions[qi]
        first, relevant_ranks, anchor_ranks, hole_ranks = q.configs[key]
        k = self.k or 0
        weight, rank = np.zeros(len(q.holes)), np.full(len(q.holes), np.inf)
        for a, rs in hole_ranks.items():
            i = q.column[a]
            rank[i] = rs[0]
            weight[i] = sum(1 for r in rs if r <= k) if self.name == "precision" else float(rs[0] <= k)
        base = (first if self.name == "mrr" else sum(1 for r in relevant_ranks if r <= k) if self.name == "precision"
                else float(np.count_nonzero(anchor_ranks <= k)))
        self._parts_memo[(qi, key)] = (base, weight, rank)
        return base, weight, rank

    def _finish(self, qi: int, base: float, found: np.ndarray, relevant_holes: np.ndarray) -> np.ndarray:
        """The metric from what is found (holes' weights summed, or the best rank for mrr) and the relevant holes."""
        if self.name == "mrr":
            return np.where(np.isfinite(found), 1.0 / found, 0.0)
        if self.name == "precision":
            return (base + found) / (self.k or 1)
        if self.name == "hit":
            return ((base + found) > 0).astype(float)
        return (base + found) / (self.questions[qi].relevant + relevant_holes)

    def _value(self, qi: int, key: str, x: np.ndarray) -> np.ndarray:
        """The metric of configuration ``key`` on question ``qi`` for each row of ``x`` (draws x holes, 0/1)."""
        base, weight, rank = self._parts(qi, key)
        if self.name == "mrr":
            found = np.minimum(base, np.where(x, rank, np.inf).min(axis=1, initial=np.inf))
        else:
            found = x @ weight
        return self._finish(qi, base, found, x.sum(axis=1))

    def _forced(self, qi: int, key: str) -> tuple[np.ndarray, np.ndarray]:
        """(draws, holes) twice: the metric with each hole forced relevant, then forced not, the others drawn."""
        x = self.x[qi].astype(float)
        base, weight, rank = self._parts(qi, key)
        if self.name == "mrr":
            up = np.empty_like(x)
            down = np.empty_like(x)
            for h in range(x.shape[1]):
                y = self.x[qi].copy()
                y[:, h] = True
                up[:, h] = self._value(qi, key, y)
                y[:, h] = False
                down[:, h] = self._value(qi, key, y)
            return up, down
        found, count = (x @ weight)[:, None] - x * weight, x.sum(axis=1)[:, None] - x
        return (self._finish(qi, base, found + weight, count + 1), self._finish(qi, base, found, count))

    def values(self, key: str) -> np.ndarray:
        """(questions, draws): the metric of configuration ``key`` on every question in every draw."""
        if key not in self._values:
            self._values[key] = np.array([self._value(i, key, x) for i, x in enumerate(self.x)]).reshape(
                len(self.questions), self.draws)
        return self._values[key]

    def _p_better(self, diffs: np.ndarray) -> np.ndarray:
        """Per draw (rows of ``diffs``: draws x questions), the one-sided bootstrap p-value that the mean difference
        is above 0: the share of resampled means at or below 0 (1 where the mean itself is at or below 0)."""
        out = np.ones(diffs.shape[0])
        if self.weights is None or diffs.size == 0:
            return out
        ahead = np.flatnonzero(diffs.mean(axis=1) > 1e-12)  # a mean at or below 0 keeps half its resamples there
        if ahead.size == 0:
            return out
        unique, inverse = np.unique(diffs[ahead], axis=0, return_inverse=True)  # equal draws are resampled once
        p = np.ones(unique.shape[0])
        for start in range(0, unique.shape[0], 256):
            means = np.einsum("dq,sq->ds", unique[start:start + 256].astype(np.float32), self.weights)
            p[start:start + 256] = np.count_nonzero(means <= 1e-6, axis=1) / means.shape[1]
        out[ahead] = p[np.ravel(inverse)]
        return out

    @property
    def comparisons(self) -> int:
        """How many configurations are compared with the recommended one: every other one."""
        return max(1, len(self.keys) - 1)

    def _verdicts(self, diffs: np.ndarray) -> np.ndarray:
        """Per draw, 1 where the mean difference is significantly above 0 among :attr:`comparisons`: fewer than
        ``(1 - confidence) / 2 / comparisons`` of the resampled means at or below 0, Holm's first step (a draw in
        which some configuration passes it is a draw in which the recommendation changes), else 0."""
        return (self._p_better(diffs) < (1 - self.confidence) / 2 / self.comparisons).astype(int)

    def settled_share(self, a: str, b: str) -> tuple[int, float]:
        """The verdict on ``b`` against ``a`` that most draws give (1: ``b`` significantly better, 0: not) and the
        share of draws giving it (:meth:`_verdicts`: at the level corrected for every comparison)."""
        verdicts = self._verdicts((self.values(b) - self.values(a)).T)
        better = float(np.mean(verdicts))
        return (1, better) if better > 0.5 else (0, 1.0 - better)

    def could_change(self, recommended: str) -> dict[str, float]:
        """Configuration key -> the share of draws whose verdict against ``recommended`` differs from the most
        common one, for each configuration where that share exceeds ``1 - confidence``. Every other configuration
        is compared with the recommended one at once, so in each draw the verdicts are Holm-corrected over them
        (:func:`holm_better`): with 38 challengers, one that is better by chance in a draw is not called
        significantly better, as the sweep's comparisons with its baseline are corrected."""
        others = [k for k in self.keys if k != recommended]
        if not others:
            return {}
        base = self.values(recommended)
        p = np.stack([self._p_better((self.values(k) - base).T) for k in others])  # (challengers, draws)
        better = holm_better(p, (1 - self.confidence) / 2).mean(axis=1)
        share = np.maximum(better, 1 - better)
        return {k: float(1 - s) for k, s in zip(others, share) if s < self.confidence}

    # -- judge what decides ----------------------------------------------------------------------------------------
    def decides(self, recommended: str, runner_up: str) -> Decides:
        """The holes ordered by how much their grade could move the mean paired difference between ``recommended``
        and ``runner_up``, and the stop line (see the module docstring)."""
        n = len(self.questions)
        rows = []
        for qi, q in enumerate(self.questions):
            if not q.holes:
                continue
            up_b, down_b = self._forced(qi, runner_up)
            up_a, down_a = self._forced(qi, recommended)
            deltas = ((up_b - up_a) - (down_b - down_a)).mean(axis=0) / n
            for h, delta in enumerate(deltas):
                p = float(self.p[qi][h])
                if p * (1 - p) * delta != 0.0:  # a hole that cannot move the difference is not listed
                    rows.append((p * (1 - p) * abs(float(delta)), qi, h, float(delta), p))
        rows.sort(key=lambda r: (-r[0], self.questions[r[1]].id, r[2]))
        holes = tuple(DecidingHole(self.questions[qi].id, self.questions[qi].holes[h], self.questions[qi].best_rank[h],
                                   p, delta, score) for score, qi, h, delta, p in rows)
        verdict, share = self.settled_share(recommended, runner_up)
        stop = 0 if share >= self.confidence else self._stop(recommended, runner_up, rows)
        return Decides(self.metric, recommended, runner_up, holes, stop, verdict, share, self.confidence)

    def _decided_share(self, a: str, b: str, rows: Sequence[tuple], m: int, *, heads: int = 200,
                       rests: int = 20) -> float:
        """How settled the verdict is once the first ``m`` holes of ``rows`` are judged: over outcomes of those
        (the first ``heads`` draws), the mean share of ``rests`` draws of the other holes that give the verdict most
        of them give (with ``m = 0``, the share :meth:`settled_share` measures)."""
        head: dict[int, set[int]] = {}
        for _, qi, h, _, _ in rows[:m]:
            head.setdefault(qi, set()).add(h)
        heads = min(heads, self.draws)
        rng = np.random.default_rng(self.seed + m + 1)
        rest = rng.integers(0, self.draws, size=rests * heads)  # the other holes from other draws
        diffs = []
        for qi, x in enumerate(self.x):
            x2 = x[rest].copy()
            for h in head.get(qi, ()):
                x2[:, h] = np.tile(x[:heads, h], rests)
            diffs.append(self._value(qi, b, x2) - self._value(qi, a, x2))
        verdicts = self._verdicts(np.array(diffs).reshape(len(self.x), rests * heads).T).reshape(rests, heads)
        better = verdicts.mean(axis=0)  # per outcome of the head: share of the rest's draws where b is better
        return float(np.mean(np.maximum(better, 1 - better)))

    def _stop(self, a: str, b: str, rows: Sequence[tuple]) -> int:
        lo, hi = 0, len(rows)  # decided with every listed hole judged (the others cannot move the difference)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._decided_share(a, b, rows, mid) >= self.confidence:
                hi = mid
            else:
                lo = mid + 1
        return lo


def holm_better(p: np.ndarray, alpha: float) -> np.ndarray:
    """Holm's step-down procedure down each column of ``p`` (comparisons x draws of one-sided p-values): True where
    the comparison is significant at family-wise level ``alpha`` in that draw."""
    m = p.shape[0]
    order = np.argsort(p, axis=0, kind="stable")
    ranked = np.take_along_axis(p, order, axis=0)
    passed = np.cumprod(ranked < alpha / (m - np.arange(m))[:, None], axis=0).astype(bool)  # stops at the first miss
    out = np.zeros_like(passed)
    np.put_along_axis(out, order, passed, axis=0)
    return out


@dataclass(frozen=True)
class DecidingHole:
    question: str
    anchor: str
    rank: int  # the best rank any configuration retrieved it at
    p: float  # estimated probability that it is relevant
    delta: float  # mean paired difference (runner-up minus recommended) if relevant, minus if not
    score: float  # p (1 - p) |delta|

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "anchor": self.anchor, "rank": self.rank, "p": self.p,
                "delta": self.delta, "score": self.score}


_VERDICT = {1: "significantly better than", 0: "not significantly better than"}


def _share(share: float, confidence: float) -> str:
    """A percentage with the digits that keep it on its side of ``confidence`` (94.9%, never a rounded 95%)."""
    for digits in range(4):
        text = f"{share:.{digits}%}"
        if (float(text[:-1]) / 100 >= confidence) == (share >= confidence):
            return text
    return f"{share:.4%}"


@dataclass(frozen=True)
class Decides:
    """Holes in the order that decides between the recommended configuration and the runner-up, and where to stop."""

    metric: str
    recommended: str
    runner_up: str
    holes: tuple[DecidingHole, ...]
    stop: int  # judge holes[:stop]; 0 when the decision is already settled
    verdict: int  # the runner-up against the recommended, in most draws: 1 significantly better, 0 not
    share: float  # of the draws giving that verdict
    confidence: float
    labels: Mapping[str, str] | None = None
    after: int = 5  # holes printed after the stop line

    @property
    def settled(self) -> bool:
        return self.share >= self.confidence

    def _name(self, key: str) -> str:
        return (self.labels or {}).get(key, key)

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "recommended": self.recommended, "runner_up": self.runner_up,
                "settled": self.settled, "verdict": self.verdict, "share": self.share, "confidence": self.confidence,
                "stop": self.stop, "holes": [h.to_dict() for h in self.holes]}

    def __str__(self) -> str:
        head = (f"judge what decides: {self._name(self.runner_up)} (runner-up) against {self._name(self.recommended)} "
                f"(recommended) on {self.metric}: {_VERDICT[self.verdict]} it in {_share(self.share, self.confidence)} of "
                "draws of the holes")
        if self.settled:
            return head + f"\nthe decision is already settled at {self.confidence:.0%} confidence: nothing to judge"
        lines = [head]
        shown = self.holes[:self.stop + self.after]
        for i, h in enumerate(shown, start=1):
            lines.append(f"{i:>4}  {h.question:<12} {h.anchor}  rank {h.rank}  p {h.p:.2f}  moves the difference "
                         f"{h.delta:+.4f}")
            if i == self.stop:
                lines.append(f"---- stop: with these {self.stop} judged the decision is settled at "
                             f"{self.confidence:.0%} confidence whatever the other {len(self.holes) - self.stop} "
                             "turn out to be")
        if len(self.holes) > len(shown):
            lines.append(f"     ... {len(self.holes) - len(shown)} more, each moving the difference less")
        return "\n".join(lines)


def decision_model(records: Sequence[Mapping[str, Any]], metric: str, **options: Any) -> DecisionModel | None:
    """A :class:`DecisionModel`, or None when ``metric`` is not one it models or a record lacks per-question
    retrieved hits."""
    if _parse_metric(metric)[0] not in SUPPORTED:
        return None
    if any(q.get("retrieved") is None for r in records for q in _answerable(r)):
        return None
    return DecisionModel(records, metric, **options)


def decides_from_sweep(sweep: str | os.PathLike[str], *, probability: HoleProbability | None = None,
                       draws: int = 1000, seed: int | None = None, confidence: float = 0.95) -> Decides:
    """:meth:`DecisionModel.decides` for a sweep folder (or its ``results.json``): its recommended configuration
    (``recommended`` in results.json, else the top ranked) against the best ranked other one."""
    path = Path(sweep)
    folder = path.parent if path.name == "results.json" else path
    results = folder / "results.json"
    if not results.is_file():
        raise CorpusNotFoundError(f"{results}: no such file; give a sweep folder (`ragtune sweep --out DIR`) or its "
                                  "results.json")
    data = json.loads(results.read_text(encoding="utf-8"))
    ranked = [c["key"] for c in data.get("configs", ())]
    if len(ranked) < 2:
        raise ConfigError(f"{results}: fewer than two configurations; nothing decides between them")
    rec = data.get("recommended")
    rec = rec.get("key") if isinstance(rec, Mapping) else rec
    rec = rec if rec in ranked else ranked[0]
    runner = next(k for k in ranked if k != rec)
    records = []
    for key in ranked:
        run = folder / "runs" / f"{key}.json"
        if not run.is_file():
            raise CorpusNotFoundError(f"{run}: no such run; the sweep folder is incomplete (rerun `ragtune sweep`)")
        records.append(json.loads(run.read_text(encoding="utf-8")))
    model = decision_model(records, data["metric"], probability=probability, draws=draws,
                           seed=data.get("seed", 0) if seed is None else seed, confidence=confidence)
    if model is None:
        raise ConfigError(f"{results}: the sweep metric {data['metric']!r} is not one the decision model covers "
                          f"({', '.join(SUPPORTED)})")
    found = model.decides(rec, runner)
    return Decides(**{**found.__dict__, "labels": {c["key"]: c["label"] for c in data["configs"]}})
