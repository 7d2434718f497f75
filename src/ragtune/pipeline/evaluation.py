"""Evaluating a built pipeline: the golden set run through its retriever, and the shortlist-size study of a
reranker (quality and latency per number of candidates, with the verdict for a latency budget)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..evaluate.evaluate import DEFAULT_KS, EvalResult, evaluate
from ..golden import GoldenSet
from .build import Pipeline

__all__ = ["run_eval", "evaluate_reranking", "compare_candidates", "first_stage_check", "candidate_row", "candidate_gains",
           "candidate_verdict", "rerank_warning"]


def run_eval(pipeline: Pipeline, golden: GoldenSet, *, ks: Sequence[int] = DEFAULT_KS, depth: int = 100,
             filters: Any = None, show_progress: bool = False, k_unit: str | None = None) -> EvalResult:
    """Evaluate ``pipeline`` on ``golden``; ``k_unit`` = ``chunk`` | ``doc`` | None (what the golden set labels).

    The pipeline's models are loaded (:meth:`Pipeline.warm_up`) before the first search is timed, so a load
    is not counted as that question's latency; its time is reported apart, as ``latency_ms["warm_up_ms"]``."""
    config = {**pipeline.describe(), "golden": golden.source}
    if filters is not None:
        config["filter"] = str(filters)
    warm_s = pipeline.warm_up()
    result = evaluate(pipeline.retriever, golden, pipeline.corpus, ks=ks, depth=depth, config=config,
                      filters=filters, show_progress=show_progress, k_unit=k_unit)
    if not result.latency_ms:
        return result
    return replace(result, latency_ms={**result.latency_ms, "warm_up_ms": warm_s * 1000.0})


def evaluate_reranking(pipeline: Pipeline, golden: GoldenSet, *, candidates: Sequence[int] | None = None,
                       budget_ms: float = 300.0, **eval_options: Any) -> tuple[EvalResult, dict[str, Any]]:
    """:func:`run_eval`, and what a reranked pipeline also owes the user: with several ``candidates`` the shortlist
    study (``candidates_table``, ``candidates_verdict`` for ``budget_ms``), else the first-stage check
    (``rerank_warning``); an LLM reranker's ``rerank_usage``. Returns ``(result, extras)``; extras hold only
    what applies."""
    result = run_eval(pipeline, golden, **eval_options)
    extras: dict[str, Any] = {}
    if pipeline.reranker is not None and candidates and len(candidates) > 1:
        table = compare_candidates(pipeline, golden, candidates, **eval_options)
        extras.update(candidates_table=table, candidates_verdict=candidate_verdict(table, budget_ms))
    else:
        warning = first_stage_check(pipeline, result, golden, **{**eval_options, "show_progress": False})
        if warning:
            extras["rerank_warning"] = warning
    usage = getattr(pipeline.reranker, "usage", None)
    if usage:
        extras["rerank_usage"] = usage
    return result, extras


def compare_candidates(pipeline: Pipeline, golden: GoldenSet, candidates: Sequence[int], **eval_options: Any) -> list[dict]:
    """Quality and latency of reranking per shortlist size, with a no-rerank row first (same index throughout):
    per row the metrics, the search's and the rerank stage's own p50/p95, the gain over no reranking and the
    gain per 100 ms. :func:`candidate_verdict` turns the rows into the verdict for a budget."""
    rows = [candidate_row("none", run_eval(pipeline.with_reranker(None), golden, **eval_options))]
    rows += [candidate_row(n, run_eval(pipeline.with_reranker(pipeline.reranker, n), golden, **eval_options))
             for n in candidates]
    return candidate_gains(rows)


def first_stage_check(pipeline: Pipeline, result: EvalResult, golden: GoldenSet, **eval_options: Any) -> str | None:
    """For a run with a reranker: evaluate the first stage alone over the same index (cheap: no reranking) and
    return one warning line when ``result`` scored lower on nDCG@10 (MRR without 10 among the cut-offs)."""
    if pipeline.reranker is None:
        return None
    plain = run_eval(pipeline.with_reranker(None), golden, **eval_options).metrics
    metric = "ndcg@10" if "ndcg@10" in plain else "mrr"
    return rerank_warning(plain.get(metric, float("nan")), result.metrics.get(metric, float("nan")),
                          pipeline.reranker.name, metric)


def candidate_row(candidates: Any, result: Any) -> dict[str, Any]:
    """One row of the candidates table: quality, the whole search's p50/p95 and the rerank stage's own."""
    m = result.metrics
    lat = result.latency_ms or {}
    stage = (lat.get("stages") or {}).get("rerank")
    none = float("nan") if lat else 0.0  # rankings without timings: unknown
    return {"candidates": candidates, "recall@5": m.get("recall@5", float("nan")), "mrr": m.get("mrr", float("nan")),
            "ndcg@10": m.get("ndcg@10", float("nan")), "p50_ms": lat.get("p50", float("nan")),
            "p95_ms": lat.get("p95", float("nan")),
            "rerank_p50_ms": stage["p50"] if stage else (0.0 if candidates == "none" else none),
            "rerank_p95_ms": stage["p95"] if stage else (0.0 if candidates == "none" else none)}


def _metric_of(rows: Sequence[Mapping[str, Any]]) -> str:
    """nDCG@10, or MRR when 10 is not among the cut-offs."""
    return "ndcg@10" if rows and rows[0].get("ndcg@10") == rows[0].get("ndcg@10") else "mrr"


def candidate_gains(rows: Sequence[Mapping[str, Any]], metric: str | None = None) -> list[dict[str, Any]]:
    """The rows (the first is the no-rerank row) with ``gain`` (``metric`` minus the first row's) and
    ``gain_per_100ms`` (gain divided by the rerank stage's p50, per 100 ms)."""
    metric = metric or _metric_of(rows)
    base = rows[0][metric] if rows else float("nan")
    out = []
    for r in rows:
        gain = r[metric] - base
        cost = r.get("rerank_p50_ms", float("nan"))
        per = gain / cost * 100.0 if r["candidates"] != "none" and cost and cost > 0 else float("nan")
        out.append({**r, "gain": 0.0 if r["candidates"] == "none" else gain, "gain_per_100ms": per})
    return out


def candidate_verdict(rows: Sequence[Mapping[str, Any]], budget_ms: float = 300.0,
                      metric: str | None = None) -> dict[str, Any]:
    """The shortlist size to rerank: of the sizes that raise ``metric`` over the first row (no reranking) and
    whose rerank p95 fits ``budget_ms``, the one with the largest gain (the smaller size on a tie); else skip.
    Returns ``{"candidates": N or None, "metric", "budget_ms", "text"}``."""
    metric = metric or _metric_of(rows)
    rows = candidate_gains(rows, metric)
    ranked = [r for r in rows[1:] if r["gain"] == r["gain"]]
    better = [r for r in ranked if r["gain"] > 0]
    fits = [r for r in better if r["rerank_p95_ms"] == r["rerank_p95_ms"] and r["rerank_p95_ms"] <= budget_ms]
    if fits:
        best = max(fits, key=lambda r: (r["gain"], -r["candidates"]))
        text = (f"verdict: rerank {best['candidates']} candidates ({metric} {best['gain']:+.3f}, rerank p95 "
                f"{best['rerank_p95_ms']:.0f} ms <= {budget_ms:g} ms budget)")
        return {"candidates": best["candidates"], "metric": metric, "budget_ms": budget_ms, "text": text}
    if better:
        best = max(better, key=lambda r: r["gain"])
        why = (f"the best gain ({best['candidates']} candidates, {metric} {best['gain']:+.3f}) needs rerank p95 "
               f"{best['rerank_p95_ms']:.0f} ms > {budget_ms:g} ms")
    else:
        why = f"no shortlist size raises {metric} over the first stage"
    return {"candidates": None, "metric": metric, "budget_ms": budget_ms,
            "text": f"verdict: skip reranking for this budget ({why})"}


def rerank_warning(first_stage: float, reranked: float, reranker: str, metric: str = "ndcg@10") -> str | None:
    """One line when reranking scored lower than the first stage alone (None otherwise)."""
    if not (first_stage == first_stage and reranked == reranked) or reranked >= first_stage:
        return None
    return (f"warning: reranking with {reranker} lowers {metric} from {first_stage:.3f} (first stage alone) to "
            f"{reranked:.3f}; drop --rerank, or try --rerank-mode fuse or another reranker")

