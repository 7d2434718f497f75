"""Plain-text rendering of evaluation results for the terminal."""

from __future__ import annotations

import math

from ..paths import display_name
from .evaluate import EvalResult
from .searches import render_searches, render_turns
from .table import shown_keys, shown_rows

__all__ = ["render_eval", "bar", "judged_line"]

CURVE = "recall"  # drawn as a bar per k, and whose spread from the smallest k to the largest is the reranker headroom


def bar(value: float, width: int = 20) -> str:
    if math.isnan(value):
        return "." * width
    filled = int(round(max(0.0, min(1.0, value)) * width))
    return "#" * filled + "." * (width - filled)


def _fmt(v: float, digits: int = 3) -> str:
    return "  n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def _figures(m: dict, ks: tuple[int, ...]) -> list[str]:
    """The lines of figures under the recall bars, from the metric table's ``eval`` rows in table order: a line per
    row with a cut-off (``hit@5 0.700  hit@10 0.800``; a count as ``context tokens (mean): @5 420``), and the rows
    with one figure each (``mrr``, ``ndcg@10``) together on one line, where the first of them comes."""
    lines: list[str | list[str]] = []
    single: list[str] = []  # the line of single figures, placed where its first figure comes
    for row in shown_rows("eval"):
        if row.name == CURVE:
            continue
        digits = 3 if row.bounded else 0
        keys = [(k, row.key(k)) for k in row.shown_cutoffs("eval", ks) if row.key(k) in m]
        if not keys:
            continue
        if not row.takes_k or row.always_k:
            if not single:
                lines.append(single)
            single += [f"{key} {_fmt(m[key], digits)}" for _, key in keys]
        elif row.bounded:
            lines.append("  ".join(f"{key} {_fmt(m[key], digits)}" for _, key in keys))
        else:
            lines.append(f"{row.name.replace('_', ' ')} (mean): " + "  ".join(f"@{k} {_fmt(m[key], 0)}" for k, key in keys))
    return ["  ".join(x) if isinstance(x, list) else x for x in lines]


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
            name = f"{CURVE}@{k}"
            lines.append(f"{name:<11}{m[name]:.2f}  {bar(m[name])}")
        lines.append(f"reranker headroom = {CURVE}@{ks[-1]} - {CURVE}@{ks[0]} = {m['reranker_headroom']:.2f}")
        lines.append("")
        lines += _figures(m, ks)
        if "judged@10" in m:
            lines.append(judged_line(m, ks[-1]))
    lines.append(
        f"questions {len(result.questions)}: {result.n_answerable} answerable, "
        f"{result.n_unanswerable} unanswerable (excluded from retrieval means); labels "
        + str(result.config.get("labels", "human"))
    )
    if result.config.get("labels") == "all":
        lines.append("labels all: LLM labels fill holes here and carry the judge's bias; `ragtune golden ppi` corrects "
                     "these figures with the questions people judged")
    lat = result.latency_ms
    if lat:
        stages = ", ".join(f"{s} p50 {v['p50']:.1f} p95 {v['p95']:.1f}" for s, v in lat.get("stages", {}).items())
        lines.append(f"search latency ms: p50 {lat['p50']:.1f}  p95 {lat['p95']:.1f}" + (f"  ({stages})" if stages else ""))
        if lat.get("warm_up_ms") is not None:
            lines.append(f"model warm-up before the first timed search: {lat['warm_up_ms']:.0f} ms (not in the latency)")
    if result.by_tag:
        lines.append("")
        cols = shown_keys("tags", ks)
        width = max(len(t) for t in result.by_tag) + 2
        lines.append(f"{'tag':<{width}}{'n':>4}  " + "  ".join(f"{c:>9}" for c in cols))
        for tag, row in result.by_tag.items():
            lines.append(f"{tag:<{width}}{int(row['n']):>4}  " + "  ".join(f"{_fmt(row.get(c)):>9}" for c in cols))
    for part in (render_searches(result.searches), render_turns(result.turns, shown_keys("tags", ks))):
        if part:
            lines += ["", *part]
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
