"""Plain-text rendering of evaluation results for the terminal."""

from __future__ import annotations

import math

from ..paths import display_name
from .evaluate import EvalResult

__all__ = ["render_eval", "bar", "judged_line"]


def bar(value: float, width: int = 20) -> str:
    if math.isnan(value):
        return "." * width
    filled = int(round(max(0.0, min(1.0, value)) * width))
    return "#" * filled + "." * (width - filled)


def _fmt(v: float) -> str:
    return "  n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def judged_line(m: dict, kmax: int) -> str:
    """One line on how much of the top 10 was judged and how far the unjudged hits could move the figures."""
    judged = m["judged@10"]
    if judged >= 1.0:
        return "judged@10 1.00: every hit in the top 10 has a judgment, so the figures above are exact"
    moves = [(label, m[low], m[up]) for label, low, up in (
        ("nDCG@10", "ndcg@10", "ndcg_upper@10"), (f"recall@{kmax}", f"recall@{kmax}", f"recall_upper@{kmax}"),
        ("MRR", "mrr", "mrr_upper")) if low in m and up in m]
    return f"judged@10 {_fmt(judged)}: unjudged hits could lift " + ", ".join(
        f"{label} from {_fmt(low)} {'up to' if up >= low else 'to'} {_fmt(up)}" for label, low, up in moves)


def render_eval(result: EvalResult, *, failures: int = 5) -> str:
    ks = result.ks
    m = result.metrics
    lines: list[str] = []
    unit = result.config.get("k_unit")
    if unit:
        lines.append("top-k counts " + ("distinct documents (--k-unit doc)" if unit == "doc" else "chunks (--k-unit chunk)"))
    if not result.n_answerable:
        lines.append("no answerable questions: retrieval metrics need at least one question with relevant anchors")
    else:
        for k in ks:
            name = f"recall@{k}"
            lines.append(f"{name:<11}{m[name]:.2f}  {bar(m[name])}")
        lines.append(f"reranker headroom = recall@{ks[-1]} - recall@{ks[0]} = {m['reranker_headroom']:.2f}")
        lines.append("")
        lines.append("  ".join(f"hit@{k} {_fmt(m[f'hit@{k}'])}" for k in ks))
        lines.append("  ".join(f"precision@{k} {_fmt(m[f'precision@{k}'])}" for k in ks))
        lines.append(f"mrr {_fmt(m['mrr'])}  ndcg@10 {_fmt(m['ndcg@10'])}")
        lines.append("context tokens (mean): " + "  ".join(f"@{k} {m[f'context_tokens@{k}']:.0f}" for k in ks))
        if "judged@10" in m:
            lines.append(judged_line(m, ks[-1]))
    lines.append(
        f"questions {len(result.questions)}: {result.n_answerable} answerable, "
        f"{result.n_unanswerable} unanswerable (excluded from retrieval means); labels "
        + str(result.config.get("labels", "human"))
    )
    lat = result.latency_ms
    if lat:
        stages = ", ".join(f"{s} p50 {v['p50']:.1f} p95 {v['p95']:.1f}" for s, v in lat.get("stages", {}).items())
        lines.append(f"search latency ms: p50 {lat['p50']:.1f}  p95 {lat['p95']:.1f}" + (f"  ({stages})" if stages else ""))
        if lat.get("warm_up_ms") is not None:
            lines.append(f"model warm-up before the first timed search: {lat['warm_up_ms']:.0f} ms (not in the latency)")
    if result.by_tag:
        lines.append("")
        cols = [f"recall@{k}" for k in ks] + ["mrr", "ndcg@10"]
        width = max(len(t) for t in result.by_tag) + 2
        lines.append(f"{'tag':<{width}}{'n':>4}  " + "  ".join(f"{c:>9}" for c in cols))
        for tag, row in result.by_tag.items():
            lines.append(f"{tag:<{width}}{int(row['n']):>4}  " + "  ".join(f"{_fmt(row[c]):>9}" for c in cols))
    worst = result.failures(failures) if failures else []
    if worst:
        lines.append("")
        lines.append(f"worst failures (of {result.n_answerable} answerable):")
        for q in worst:
            rank = q.first_hit_rank if q.first_hit_rank is not None else "none"
            lines.append(f"- [{q.id}] {q.q}")
            lines.append(f"    expected: {', '.join(map(display_name, q.relevant))}   first hit rank: {rank}")
            top = ", ".join(display_name(r["anchor"]) for r in q.retrieved[:3]) or "(nothing retrieved)"
            lines.append(f"    top 3:    {top}")
    return "\n".join(lines)
