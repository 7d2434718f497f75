"""The calibration as a page: the gate's precision-recall curve with the chosen threshold marked, and its figures.

One self-contained HTML file (inline SVG drawn here, no script, nothing loaded from elsewhere), written by
``ragtune calibrate --report FILE``.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from ..io import write_atomic
from .gate import Calibration, threshold_text

__all__ = ["render_gate_report", "write_gate_report", "pr_curve_svg", "share_source"]

_W, _H, _M = 560, 380, 48  # width, height, margin of the plot


def _xy(recall: float, precision: float) -> tuple[float, float]:
    return _M + recall * (_W - 2 * _M), _H - _M - precision * (_H - 2 * _M)


def pr_curve_svg(points: list[Mapping[str, Any]]) -> str:
    """The precision-recall curve of the gate (abstention recall across, precision up), one point per threshold
    in increasing order, the ``chosen`` one drawn as a ring and labelled with its threshold."""
    parts = [f'<svg viewBox="0 0 {_W} {_H}" width="{_W}" role="img" aria-label="precision-recall curve of the gate">',
             f'<rect x="{_M}" y="{_M}" width="{_W - 2 * _M}" height="{_H - 2 * _M}" fill="none" stroke="#d0d5dd"/>']
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x, _ = _xy(tick, 0.0)
        _, y = _xy(0.0, tick)
        parts.append(f'<text x="{x:.1f}" y="{_H - _M + 16}" text-anchor="middle">{tick:g}</text>'
                     f'<text x="{_M - 8}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
    parts.append(f'<text x="{_W / 2}" y="{_H - 8}" text-anchor="middle">abstention recall (unanswerable questions '
                 'refused)</text>')
    parts.append(f'<text x="14" y="{_H / 2}" text-anchor="middle" transform="rotate(-90 14 {_H / 2})">abstention '
                 'precision</text>')
    xy = [_xy(p["recall"], p["precision"]) for p in points]
    parts.append('<polyline fill="none" stroke="#3055d8" stroke-width="2" points="'
                 + " ".join(f"{x:.1f},{y:.1f}" for x, y in xy) + '"/>')
    parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2" fill="#3055d8"/>' for x, y in xy]
    for p, (x, y) in zip(points, xy):
        if p.get("chosen"):
            label = (f"gate {threshold_text(p['threshold'])}: precision {p['precision']:.3f}, "
                     f"recall {p['recall']:.3f}")
            anchor = "end" if x > _W / 2 else "start"
            parts.append(f'<circle class="chosen" cx="{x:.1f}" cy="{y:.1f}" r="6" fill="none" stroke="#c4320a" '
                         f'stroke-width="2.5"/><text class="t" x="{x + (-10 if anchor == "end" else 10):.1f}" '
                         f'y="{max(y - 10, _M + 12):.1f}" text-anchor="{anchor}">{escape(label)}</text>')
    return "\n".join(parts) + "</svg>"


def _figures_row(name: str, f: Mapping[str, Any]) -> str:
    return (f"<tr><td>{escape(name)}</td><td>{f['precision']:.3f}</td><td>{f['recall']:.3f}</td>"
            f"<td>{f['f1']:.3f}</td><td>{f['answered_rate']:.3f}</td></tr>")


def share_source(log: Mapping[str, Any] | None) -> str | None:
    """Where a share of unanswerable questions came from, in words: ``the not-found share of LOG: 12 of 80
    answers`` for a telemetry log's counts (``log``, ``not_found``, ``answers``); None for none."""
    return f"the not-found share of {log['log']}: {log['not_found']} of {log['answers']} answers" if log else None


def write_gate_report(path: str, cal: Calibration, *, retriever: str, log: Mapping[str, Any] | None = None) -> None:
    """Write :func:`render_gate_report` to ``path`` (at once: a reader never sees half a page)."""
    write_atomic(path, render_gate_report(cal, retriever=retriever, share_source=share_source(log)))


def render_gate_report(cal: Calibration, *, retriever: str, share_source: str | None = None,
                       title: str = "ragtune calibrate") -> str:
    """The page: the chosen threshold, the figures at the golden set's own mix of questions (those ``eval
    --answers --gate`` measures) and, when a share of unanswerable questions was given, at that share, then
    the precision-recall curve with the chosen point."""
    gold = {"precision": cal.precision, "recall": cal.recall, "f1": cal.f1, "answered_rate": cal.answered_rate}
    mix = cal.n_unanswerable / (cal.n_answerable + cal.n_unanswerable)
    rows = [_figures_row(f"this golden set (unanswerable share {mix:.3f})", gold)]
    share = cal.at_share
    if share is not None:
        rows.append(_figures_row(f"expected at unanswerable share {share['unanswerable_share']:.3g}"
                                 + (f" ({share_source})" if share_source else ""), share))
    curve_of = (f"at the unanswerable share {share['unanswerable_share']:.3g}" if share is not None
                else "on this golden set")
    t = threshold_text(cal.threshold)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>
<style>body{{font:14px/1.5 system-ui,sans-serif;color:#1d2330;margin:2em auto;max-width:760px}}
table{{border-collapse:collapse}} td,th{{padding:2px 10px;border-bottom:1px solid #e4e7ec;text-align:right}}
td:first-child,th:first-child{{text-align:left}} svg text{{font-size:11px;fill:#475467}} svg .t{{font-weight:600;fill:#1d2330}}
code{{background:#f2f4f7;padding:1px 4px}}</style></head><body>
<h1>{escape(title)}</h1>
<p>Threshold <code>{escape(t)}</code> on the top {escape(retriever)} score, chosen by the {escape(cal.objective)} objective
from {cal.n_answerable} answerable and {cal.n_unanswerable} unanswerable questions
{escape(f"with the {cal.generator} generator's refusals" if cal.generator else "(the gate alone)")}.
Use it: <code>ragtune eval ... --answers --gate {escape(t)}</code>, <code>ragtune answer ... --gate {escape(t)}</code>.</p>
<table><tr><th></th><th>precision</th><th>recall</th><th>F1</th><th>answered</th></tr>
{chr(10).join(rows)}</table>
<h2>Precision and recall of the gate</h2>
<p>One point per threshold between two observed top scores, {escape(curve_of)}; the ring marks the chosen one.
Separation AUC {cal.auc:.3f} (0.5: the top score cannot tell answerable from unanswerable).</p>
{pr_curve_svg(cal.pr_curve)}
</body></html>
"""
