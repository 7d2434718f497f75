"""``compare``: two systems on the same golden set, question by question.

Returns a :class:`Comparison` with the mean difference, a paired
significance test (seed recorded), win/tie/loss counts, and the questions
fixed and broken (first relevant hit inside the top k gained or lost).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import ConfigError
from .significance import bootstrap_test, randomization_test

__all__ = ["Comparison", "compare_runs", "metric_k", "per_question"]


def metric_k(metric: str, ks: tuple[int, ...] | list[int]) -> int:
    """The cut-off that decides 'fixed' and 'broken': the metric's own k, else the largest k."""
    _, _, k = metric.partition("@")
    return int(k) if k.isdigit() else max(ks)


def per_question(result: Mapping[str, Any], metric: str) -> dict[str, float]:
    """Per-question values of ``metric`` from an eval result dict (answerable questions only)."""
    out = {}
    for q in result["questions"]:
        if not q.get("answerable", True):
            continue
        scores = q.get("scores") or {}
        if metric not in scores:
            have = ", ".join(sorted(scores)) or "none"
            raise ConfigError(f"metric {metric!r} is not in the results (have: {have})")
        v = scores[metric]
        out[q["id"]] = float("nan") if v is None else float(v)
    return out


def _hits(result: Mapping[str, Any], k: int) -> dict[str, bool]:
    return {q["id"]: q.get("first_hit_rank") is not None and q["first_hit_rank"] <= k
            for q in result["questions"] if q.get("answerable", True)}


@dataclass(frozen=True)
class Comparison:
    metric: str
    baseline: str
    candidate: str
    n: int
    baseline_mean: float
    candidate_mean: float
    delta: float
    p_value: float
    test: str
    samples: int
    seed: int
    wins: int
    ties: int
    losses: int
    fixed: tuple[str, ...] = ()
    broken: tuple[str, ...] = ()
    k: int = 10
    p_adjusted: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["fixed"], d["broken"] = list(self.fixed), list(self.broken)
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_text(self) -> str:
        p = self.p_adjusted if self.p_adjusted is not None else self.p_value
        lines = [
            f"{self.metric}: {self.baseline} {self.baseline_mean:.4f} -> {self.candidate} {self.candidate_mean:.4f} "
            f"({self.delta:+.4f}, p={p:.4g}, {self.test} test, {self.samples} samples, seed {self.seed}, n={self.n})",
            f"wins {self.wins}  ties {self.ties}  losses {self.losses}",
            f"fixed ({len(self.fixed)}, first hit now in the top {self.k}): {', '.join(self.fixed) or '-'}",
            f"broken ({len(self.broken)}, first hit no longer in the top {self.k}): {', '.join(self.broken) or '-'}",
        ]
        return "\n".join(lines)

    def to_markdown(self) -> str:
        p = self.p_adjusted if self.p_adjusted is not None else self.p_value
        return (f"| metric | {self.baseline} | {self.candidate} | delta | p | W/T/L | fixed | broken |\n"
                f"|---|---|---|---|---|---|---|---|\n"
                f"| {self.metric} | {self.baseline_mean:.4f} | {self.candidate_mean:.4f} | {self.delta:+.4f} | {p:.4g} | "
                f"{self.wins}/{self.ties}/{self.losses} | {len(self.fixed)} | {len(self.broken)} |")


def compare_runs(baseline: Mapping[str, Any], candidate: Mapping[str, Any], *, metric: str = "recall@10",
                 test: str = "randomization", samples: int = 10000, seed: int = 0, names: tuple[str, str] = ("A", "B"),
                 tolerance: float = 1e-9) -> Comparison:
    """Compare two eval results (``EvalResult.to_dict()`` shape) on their shared answerable questions."""
    a = per_question(baseline, metric)
    b = per_question(candidate, metric)
    if set(a) != set(b):
        only = sorted(set(a) ^ set(b))
        raise ConfigError(f"the two results cover different questions ({len(only)} differ, e.g. {only[0]!r}); "
                          "compare runs of the same golden set")
    ids = sorted(a)
    xa = [a[i] for i in ids]
    xb = [b[i] for i in ids]
    if any(math.isnan(v) for v in xa + xb):
        raise ConfigError(f"metric {metric!r} is undefined for some questions")
    fn = randomization_test if test == "randomization" else bootstrap_test
    p = fn(xa, xb, n=samples, seed=seed)
    wins = sum(y > x + tolerance for x, y in zip(xa, xb))
    losses = sum(y < x - tolerance for x, y in zip(xa, xb))
    k = metric_k(metric, baseline.get("config", {}).get("ks", [10]))
    ha, hb = _hits(baseline, k), _hits(candidate, k)
    n = len(ids)
    mean_a = sum(xa) / n if n else float("nan")
    mean_b = sum(xb) / n if n else float("nan")
    return Comparison(
        metric=metric, baseline=names[0], candidate=names[1], n=n, baseline_mean=mean_a, candidate_mean=mean_b,
        delta=mean_b - mean_a, p_value=p, test=test, samples=samples, seed=seed, wins=wins, ties=n - wins - losses,
        losses=losses, fixed=tuple(i for i in ids if hb[i] and not ha[i]),
        broken=tuple(i for i in ids if ha[i] and not hb[i]), k=k,
    )
