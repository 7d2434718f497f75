"""Sweep results: ranking, significance against the baseline, the printed table and results.json."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..evaluate.compare import compare
from ..evaluate.run import Run
from .grid import Grid, GridError

__all__ = ["SweepResult", "summarize"]


@dataclass
class SweepResult:
    grid: Grid
    records: list[dict]
    baseline_key: str

    @property
    def metric(self) -> str:
        return self.grid.metric

    def value(self, record: dict, metric: str | None = None) -> float:
        v = record["result"]["metrics"].get(metric or self.metric)
        return float("nan") if v is None else float(v)

    def ranked(self) -> list[dict]:
        """Best first by the sweep metric (lower is better only for context_tokens)."""
        sign = 1 if self.metric.startswith("context_tokens") else -1
        return sorted(self.records, key=lambda r: (math.isnan(self.value(r)), sign * self.value(r)
                                                    if not math.isnan(self.value(r)) else 0, r["label"]))

    @property
    def baseline(self) -> dict:
        return next(r for r in self.records if r["key"] == self.baseline_key)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "test": self.grid.test,
            "samples": self.grid.samples,
            "seed": self.grid.seed,
            "correction": "holm",
            "ks": list(self.grid.ks),
            "baseline": self.baseline_key,
            "grid": dict(self.grid.raw),
            "configs": [_public(r) for r in self.ranked()],
        }

    def write(self, out_dir: str | os.PathLike[str]) -> Path:
        path = Path(out_dir) / "results.json"
        path.write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
        return path

    def table(self, *, limit: int | None = None) -> str:
        ks = self.grid.ks
        cols = [f"recall@{k}" for k in ks[:2]] + ["mrr", "ndcg@10"]
        if self.metric not in cols:
            cols.append(self.metric)
        head = (f"{'#':>3} {'strategy':<13}{'size':>6}{'overlap':>8} {'prefix':<7}{'retriever':<18}"
                + "".join(f"{c:>11}" for c in cols) + f"{'p95 ms':>8}  vs baseline")
        lines = [head]
        for n, r in enumerate(self.ranked()[:limit], start=1):
            spec = r["spec"]
            retr = spec["retriever"] + (f"+{spec['rerank']}@{spec['candidates']}" if spec.get("rerank") else "")
            vs = r.get("vs_baseline")
            if r["key"] == self.baseline_key:
                cmp = "(baseline)"
            elif vs:
                cmp = f"{vs['delta']:+.3f} (p={vs['p_holm']:.3g}) {vs['wins']}/{vs['ties']}/{vs['losses']}"
            else:
                cmp = ""
            full = r.get("chunker_config", spec)
            size = full.get("size", "-")
            overlap = full.get("overlap", "-")
            values = "".join(f"{self.value(r, c):>11.3f}" for c in cols)
            lines.append(f"{n:>3} {spec['chunker']:<13}{size!s:>6}{overlap!s:>8} {'yes' if spec.get('prefix') else 'no':<7}"
                         f"{retr:<18}{values}{r['stats']['latency_ms']['p95']:>8.1f}  {cmp}")
        q = next((r["stats"].get("query_embedding_ms") for r in self.records if r["stats"].get("query_embedding_ms")), None)
        if q:
            lines.append(f"(p95 ms leaves out embedding the query, measured once per embedder: p50 {q['p50']:.1f} ms, "
                         f"p95 {q['p95']:.1f} ms)")
        return "\n".join(lines)


def _public(r: dict) -> dict:
    """A record for results.json: config, metrics, stats, comparison and per-question scores."""
    res = r["result"]
    return {
        "key": r["key"], "label": r["label"], "config": r["spec"], "chunker_config": r.get("chunker_config"),
        "metrics": res["metrics"],
        "by_tag": res.get("by_tag", {}), "stats": r["stats"], "latency_ms": res.get("latency_ms", {}),
        "vs_baseline": r.get("vs_baseline"),
        "questions": [{"id": q["id"], "answerable": q["answerable"], "first_hit_rank": q["first_hit_rank"],
                       "scores": q["scores"]} for q in res["questions"]],
    }


def summarize(grid: Grid, records: Sequence[dict]) -> SweepResult:
    """Compare every configuration with the baseline (paired test, Holm-corrected)."""
    records = list(records)
    base = next((r for r in records if r["key"] == grid.baseline.key), None)
    if base is None:
        raise GridError("the baseline configuration is not among the results; resolve the grid for the corpus "
                        "(grid.resolved(corpus.kind)) before running and summarising")
    others = [r for r in records if r is not base]
    if others:
        # runs are named by key: keys are unique, labels need not be
        runs = [Run.from_result(r["result"], name=r["key"]) for r in [base, *others]]
        report = compare(runs, metrics=(grid.metric,), test=grid.test, correction="holm", samples=grid.samples,
                         seed=grid.seed)
        for r in others:
            c = report.row(r["key"], grid.metric)
            r["vs_baseline"] = {"delta": c.delta, "p": c.p_value, "p_holm": c.p_adjusted, "wins": c.wins,
                                "ties": c.ties, "losses": c.losses, "fixed": list(c.fixed), "broken": list(c.broken),
                                "k": c.k, "n": c.n, "delta_ci": [c.delta_low, c.delta_high], "mde": c.mde,
                                "needed": c.needed}
    base["vs_baseline"] = None
    return SweepResult(grid, records, base["key"])
