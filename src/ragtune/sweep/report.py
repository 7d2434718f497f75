"""The sweep report: one self-contained HTML file (no network, no CDN).

Sections: the ranked table (click a header to sort; every mean and delta with
its bootstrap interval, ties broken by a second metric, then latency), recall@k
curves (identical curves merged under one entry, with error bars), reranker
headroom bars, quality vs end-to-end latency with the Pareto frontier and a
table of latency by stage, size x overlap heatmaps sharing one colour scale,
a failure explorer (per question: expected anchors, retrieved chunks,
fixed/broken against the baseline), and, when a configuration searched more than once per question (a multi-step
strategy), recall against the context tokens spent (one curve per configuration; a table of recall and tokens after
each search). When nothing differs significantly from
the baseline, one line says how many questions it would take.
Charts are SVG drawn by a small inline script from the embedded JSON; the
page fits a 900 px window without horizontal scrolling.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any

from ..evaluate.table import metric_table
from .results import CONFIDENCE, SweepResult, columns

__all__ = ["render_report", "write_report"]

DETAIL_CONFIGS = 12  # configurations whose per-question retrievals are embedded for the failure explorer
DETAIL_HITS = 5
CURVE = "recall"  # the metric drawn against k, and whose spread from the smallest k to the largest is the headroom
HEADROOM = "reranker_headroom"  # the mean that evaluation derives from it (not a metric of the table)


def _columns(sweep: SweepResult) -> list[str]:
    """The metric columns of the ranked table: the metric table's ``report`` columns (recall at every k, mrr,
    ndcg@10, the context tokens at the first k), with the sweep metric when it is none of those."""
    return columns("report", sweep.grid.ks, sweep.metric)


def _selection_note(sweep: SweepResult) -> str | None:
    from .holdout import folds_text, selection_text
    from .space import search_text

    chosen = sweep.selection()
    notes = [search_text(sweep.search, sweep.metric)] if sweep.search is not None else []
    if chosen:
        notes.append((folds_text if sweep.grid.folds else selection_text)(chosen, sweep.metric))
    return " ".join(notes) or None


def _report_data(sweep: SweepResult) -> dict[str, Any]:
    ranked = sweep.ranked()
    held = sweep.held_out()
    unsettled = sweep.unsettled()  # marked "~": the rank could change once the unjudged hits are judged
    detail_keys = {r["key"] for r in ranked[:DETAIL_CONFIGS]} | {sweep.baseline_key}
    configs = []
    for r in ranked:
        res = r["result"]
        entry = {"key": r["key"], "label": r["label"], "unsettled": r["key"] in unsettled, "spec": {**r["spec"], **{k: v for k, v in (r.get("chunker_config") or {}).items() if k in ("size", "overlap")}},
                 "metrics": res["metrics"], "ci": r.get("ci") or {},
                 "stats": r["stats"], "vs": r.get("vs_baseline")}
        if res.get("searches"):  # a multi-step strategy: recall against tokens, and after each search
            entry["searches"] = {k: res["searches"][k] for k in ("by_tokens", "by_search")}
        if r["key"] in detail_keys:
            entry["questions"] = [
                {"id": q["id"], "q": q["q"], "relevant": list(q["relevant"]), "first": q["first_hit_rank"],
                 "score": q["scores"].get(sweep.metric),
                 "hits": [{"anchor": h["anchor"], "score": h["score"], "rel": h["relevant"], "text": h.get("text", "")[:240]}
                          for h in q["retrieved"][:DETAIL_HITS]]}
                for q in res["questions"] if q["answerable"]]
        configs.append(entry)
    return {"metric": sweep.metric, "ks": list(sweep.grid.ks), "baseline": sweep.baseline_key, "test": sweep.grid.test,
            "seed": sweep.grid.seed, "samples": sweep.grid.samples, "tie": sweep.tie_metric,
            "ranking": sweep.ranking_rule, "confidence": CONFIDENCE, "power_note": sweep.power_note(),
            "judged_note": sweep.judged_note(), "interval_note": sweep.interval_note(), "selection_note": _selection_note(sweep),
            "recommended": sweep.recommendation(held) if ranked else None, "in_sample": held is not None, "columns": _columns(sweep), "curve": CURVE, "headroom": HEADROOM,
            "metric_table": {r["name"]: {k: r[k] for k in ("label", "takes_k", "bounded", "higher_is_better",
                                                          "description")} for r in metric_table()
                             if not r.get("unit")},  # evidence@1000tok reads as the evidence row, its budget the k
            "configs": configs}


def render_report(sweep: SweepResult, *, title: str = "ragtune sweep") -> str:
    data = json.dumps(_report_data(sweep), ensure_ascii=False, default=str).replace("</", "<\\/")
    return _TEMPLATE.replace("__TITLE__", html.escape(title)).replace("__DATA__", data)


def write_report(sweep: SweepResult, out_dir: str | os.PathLike[str], *, title: str = "ragtune sweep") -> Path:
    path = Path(out_dir) / "report.html"
    path.write_text(render_report(sweep, title=title), encoding="utf-8")
    return path


_TEMPLATE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
:root{--fg:#1d2330;--muted:#667085;--line:#e4e7ec;--accent:#3055d8;--good:#11845b;--bad:#c0392b;--bg:#fafbfc}
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:var(--fg);background:var(--bg);margin:0}
header{padding:18px 24px;background:#fff;border-bottom:1px solid var(--line)}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:0 0 8px}
.sub{color:var(--muted)} main{padding:18px 24px;display:grid;gap:18px;grid-template-columns:minmax(0,1fr)}
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:14px 16px;min-width:0}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,600px),1fr));gap:18px}
.note{margin:8px 0 0;padding:6px 10px;border-left:3px solid #d4a017;background:#fffbeb;color:#4a3b00}
table{border-collapse:collapse;width:100%;font-size:12.5px} th,td{padding:4px 5px;border-bottom:1px solid var(--line);text-align:right;vertical-align:top}
td{white-space:nowrap} th{cursor:pointer;user-select:none;background:#f5f6f8;font-weight:600;vertical-align:bottom}
th:first-child,td:first-child,td.l,th.l{text-align:left} td.l{white-space:normal;min-width:9em}
tr.base td{background:#eef3ff} tbody tr:hover td{background:#f7f9ff}
small.ci{display:block;color:var(--muted);font-size:10.5px;line-height:1.2}
.pos{color:var(--good)} .neg{color:var(--bad)} .sig{font-weight:600}
.kpi{display:flex;gap:24px;flex-wrap:wrap;margin-top:10px} .kpi div{font-size:13px;color:var(--muted)} .kpi b{display:block;font-size:20px;color:var(--fg)}
.kpi small{font-size:12px;color:var(--muted);font-weight:400;margin-left:4px}
#recommended{flex:1 1 100%;border:2px solid var(--good);border-radius:10px;padding:10px 14px;background:#f3fbf6;color:var(--fg)}
#recommended .head{display:block;font-size:12px;font-weight:600;text-transform:uppercase;color:var(--good)}
#recommended .lbl{display:block;font-weight:600;overflow-wrap:anywhere} #recommended .why{display:block;color:var(--muted);font-size:12.5px}
.kpi small.is{display:block;margin-left:0}
svg{display:block;max-width:100%;height:auto} svg text{font-size:11px;fill:#475467} svg .t{font-weight:600;fill:#1d2330}
.legend{font-size:12px;margin-top:6px} .legend>div{margin:2px 0} .legend span.item{display:inline-block;margin-right:12px}
.legend i{display:inline-block;width:12px;height:10px;border-radius:2px;margin-right:5px;vertical-align:middle}
.legend .also{color:var(--muted)}
.heats{display:flex;flex-wrap:wrap;gap:6px 18px;align-items:flex-start}
.scale{display:flex;align-items:center;gap:6px;font-size:12px;color:var(--muted);margin:4px 0 8px}
.scale .bar{width:160px;height:10px;border-radius:3px}
select{font:inherit;padding:4px 6px;max-width:100%} .q{border-top:1px solid var(--line);padding:8px 0;overflow-wrap:anywhere}
.q .head{cursor:pointer} .tag{display:inline-block;padding:0 6px;border-radius:8px;font-size:11px;margin-left:6px}
.fixed{background:#dcfae6;color:#067647} .broken{background:#fee4e2;color:#b42318} .miss{background:#f2f4f7;color:#475467}
.hits{margin:6px 0 0 14px;display:none} .open .hits{display:block} .hit{margin:4px 0;color:#344054}
.hit code{background:#f2f4f7;padding:0 4px;border-radius:4px} .hit.rel code{background:#dcfae6}
.snip{color:var(--muted);font-size:12px;white-space:normal}
details{margin-top:8px} summary{cursor:pointer;color:var(--accent)}
@media (max-width:1000px){header{padding:14px 14px} main{padding:12px 10px;gap:12px} .card{padding:12px 10px}}
</style></head><body>
<header><h1>__TITLE__</h1><div class="sub" id="sub"></div><div class="kpi" id="kpi"></div><div id="power"></div></header>
<main>
<section class="card"><h2>Ranked configurations</h2><div class="sub" id="rule"></div><div id="table"></div></section>
<div class="grid2">
<section class="card"><h2>recall@k curves</h2><div class="sub">Mean recall at each k; bars: <span class="ci-level"></span> bootstrap intervals. Configurations with identical curves share one line and one legend entry.</div><div id="curves"></div></section>
<section class="card"><h2>Reranker headroom</h2><div class="sub">recall at the largest k minus recall at the smallest, with <span class="ci-level"></span> intervals.</div><div id="headroom"></div></section>
</div>
<div class="grid2">
<section class="card"><h2>Quality vs latency</h2><div class="sub" id="scatter-sub"></div><div id="scatter"></div><div id="stages"></div></section>
<section class="card"><h2>Size × overlap</h2><div class="sub">Best value of <span class="metric"></span> per cell (interval below it), one map per strategy, one colour scale for all maps.</div><div id="heat"></div></section>
</div>
<template id="tokens-slot"></template>
<section class="card"><h2>Failure explorer</h2><div class="sub">Per question: expected anchors and the top retrieved chunks. Tags mark questions fixed or broken against the baseline.</div>
<p><select id="pick"></select> <label><input type="checkbox" id="onlyfail" checked> only questions not fully answered</label></p><div id="explorer"></div></section>
</main>
<script type="application/json" id="data">__DATA__</script>
<script>
const D = JSON.parse(document.getElementById('data').textContent);
const M = D.metric, C = D.configs, base = C.find(c => c.key === D.baseline);
const palette = ['#3055d8','#e0663d','#11845b','#9b51e0','#d4a017','#0e9aa7','#c0392b','#6c757d','#ff69b4','#2f4f4f'];
const esc = s => String(s ?? '').replace(/[&<>"]/g, ch => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[ch]));
const brk = s => esc(s).replace(/([\/+@-])/g, '$1<wbr>');
const fmt = (v, d=3) => v == null || Number.isNaN(v) ? '–' : Number(v).toFixed(d);
const sgn = (v, d=3) => v == null ? '' : (v > 0 ? '+' : v < 0 ? '−' : '±') + Math.abs(v).toFixed(d);
const val = (c, m=M) => c.metrics[m];
const ciOf = (c, m=M) => (c.ci || {})[m];
// what the page knows of a metric comes from the metric table in the data: label, 0-1 scale, direction
const info = m => { const [name, k] = String(m).split('@'), row = D.metric_table[name] || {label: name, bounded: true, higher_is_better: true};
  return {...row, k, label: row.label + (k ? `@${k}` : '')}; };
const lowerBetter = !info(M).higher_is_better;
const digits = m => info(m).bounded ? 2 : 0;
const curveAt = k => `${D.curve}@${k}`;
const ciText = (ci, m=M) => ci && ci[0] != null ? `${fmt(ci[0], digits(m))}–${fmt(ci[1], digits(m))}` : '';
const dCiText = ci => ci && ci[0] != null ? `[${sgn(ci[0], 2)}, ${sgn(ci[1], 2)}]` : '';
const fmtMs = v => v == null ? '–' : v < 1 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0);
const lat = (c, w='p50') => (c.stats.latency_ms || {})[w];
const stages = c => Object.entries((c.stats.latency_ms || {}).stages || {});
const stagesText = c => stages(c).map(([s, v]) => `${s} ${fmtMs(v.p50)}`).join(' · ');
const pct = `${Math.round(D.confidence * 100)}%`;
document.querySelectorAll('.ci-level').forEach(e => e.textContent = pct);
document.querySelectorAll('.metric').forEach(e => e.textContent = M);
const lat0 = (C.find(c => (c.stats.latency_ms || {}).questions) || {stats: {latency_ms: {}}}).stats.latency_ms;
document.getElementById('sub').textContent = `${C.length} configurations · metric ${M} · ${D.test} test, ${D.samples} samples, seed ${D.seed} · baseline: ${base.label}`;
// the headline card: the one recommended configuration and why; with a held-out figure, that figure leads and the
// figures scored on every question are labelled in-sample
const R = D.recommended, rec = R && C.find(c => c.key === R.key), IS = D.in_sample ? ' (in-sample)' : '';
const sigBetter = C.filter(c => c.vs && c.vs.p_holm < 0.05 && (lowerBetter ? c.vs.delta < 0 : c.vs.delta > 0));
const ho = (v, ci) => `<b>${fmt(v)}<small>${ci ? `[${fmt(ci[0])}, ${fmt(ci[1])}]` : ''} held out</small></b>`;
document.getElementById('kpi').innerHTML = (rec ? `<div id="recommended"><span class="head">recommended</span>` +
    (R.held_out != null ? ho(R.held_out, R.held_out_ci) + `<small class="is">${esc(M)} ${fmt(val(rec))} in-sample</small>`
     : `<b>${fmt(val(rec))}<small>${esc(M)} ${ciText(ciOf(rec))}</small></b>`) +
    `<span class="lbl">${esc(rec.label)}</span><span class="why">${esc(R.reason)}</span></div>` : '') +
  `<div>baseline${R && R.held_out != null ? ho(R.baseline_held_out, null) + `<small class="is">${fmt(val(base))} in-sample</small>`
     : `<b>${fmt(val(base))}<small>${ciText(ciOf(base))}</small></b>`}${esc(base.label)}</div>` +
  `<div>significantly better${IS}<b>${sigBetter.length}</b>p&lt;0.05 after Holm</div>`;
if (D.power_note) document.getElementById('power').innerHTML = `<p class="note" id="power-note">${esc(D.power_note)}</p>`;
if (D.judged_note) document.getElementById('power').insertAdjacentHTML('beforeend', `<p class="note" id="judged-note">${esc(D.judged_note)}</p>`);
if (D.selection_note) document.getElementById('power').insertAdjacentHTML('beforeend', `<p class="note" id="selection-note">${esc(D.selection_note)}</p>`);

// ranked table
document.getElementById('rule').innerHTML = `# ${esc(D.ranking)}. Small grey figures: ${pct} bootstrap intervals. Δ and p compare with the baseline on ${esc(M)} (paired ${esc(D.test)} test, Holm-corrected); W/T/L = questions won, tied, lost. Latency: end to end per question, query embedding included` +
  (lat0.questions ? `, median of ${lat0.repeats} timings of ${lat0.questions} questions; hover for stages` : '') + '.' +
  (D.interval_note ? ` <span id="interval-note">Under Δ: ${esc(D.interval_note)}.</span>` : '') + ' Click a column to sort.';
const metricCol = m => [info(m).label + IS, c => val(c, m), '', m];
const cols = [['#', c => C.indexOf(c) + 1], ['configuration', c => c.label + (c.unsettled ? ' ~' : ''), 'l'],
  ...D.columns.map(metricCol), ['chunks', c => c.stats.chunks],
  ['ms p50 / p95', c => lat(c)], ['Δ', c => c.vs ? c.vs.delta : null], ['p', c => c.vs ? c.vs.p_holm : null],
  ['W/T/L', c => c.vs ? c.vs.wins - c.vs.losses : null]];
let sortCol = 0, sortDir = 1;
function drawTable() {
  const rows = [...C].sort((a, b) => { const x = cols[sortCol][1](a), y = cols[sortCol][1](b);
    if (x == null) return 1; if (y == null) return -1; return (x < y ? -1 : x > y ? 1 : 0) * sortDir; });
  let h = '<table><thead><tr>' + cols.map((c, i) => `<th class="${c[2]||''}" data-i="${i}">${brk(c[0])}${i === sortCol ? (sortDir > 0 ? ' ▲' : ' ▼') : ''}</th>`).join('') + '</tr></thead><tbody>';
  for (const c of rows) {
    const vs = c.vs;
    h += `<tr class="${c.key === D.baseline ? 'base' : ''}">` + cols.map((col, i) => {
      const v = col[1](c), name = col[0];
      if (name === 'configuration') return `<td class="l">${brk(v)}${c.key === D.baseline ? ' <span class="tag miss">baseline</span>' : ''}${R && c.key === R.key ? ' <span class="tag fixed">recommended</span>' : ''}</td>`;
      if (name === 'Δ') return `<td class="${v > 0 ? 'pos' : v < 0 ? 'neg' : ''}">${v == null ? '' : sgn(v)}<small class="ci">${vs ? dCiText(vs.delta_ci) : ''}</small></td>`;
      if (name === 'p') return `<td class="${v != null && v < 0.05 ? 'sig' : ''}">${v == null ? '' : Number(v).toPrecision(2)}</td>`;
      if (name === 'W/T/L') return `<td>${vs ? `${vs.wins}/${vs.ties}/${vs.losses}` : ''}</td>`;
      if (name === '#' || name === 'chunks') return `<td>${v}</td>`;
      if (name.startsWith('ms')) return `<td title="${esc(stagesText(c))}">${fmtMs(v)} / ${fmtMs(lat(c, 'p95'))}</td>`;
      const m = col[3];
      return `<td>${fmt(v, digits(m) ? 3 : 0)}<small class="ci">${ciText(ciOf(c, m), m)}</small></td>`; }).join('') + '</tr>';
  }
  document.getElementById('table').innerHTML = h + '</tbody></table>';
  document.querySelectorAll('#table th').forEach(th => th.onclick = () => { const i = +th.dataset.i; sortDir = i === sortCol ? -sortDir : (i < 2 ? 1 : -1); sortCol = i; drawTable(); });
}
drawTable();

// chart helpers
function axes(w, h, pad, xt, yt, xl, yl) {
  let s = `<line x1="${pad.l}" y1="${h-pad.b}" x2="${w-pad.r}" y2="${h-pad.b}" stroke="#98a2b3"/><line x1="${pad.l}" y1="${pad.t}" x2="${pad.l}" y2="${h-pad.b}" stroke="#98a2b3"/>`;
  for (const [y, t] of yt) s += `<line x1="${pad.l}" x2="${w-pad.r}" y1="${y}" y2="${y}" stroke="#f0f1f3"/><text class="tick" x="${pad.l-6}" y="${y+4}" text-anchor="end">${esc(t)}</text>`;
  for (const [x, t] of xt) s += `<text class="tick" x="${x}" y="${h-pad.b+16}" text-anchor="middle">${esc(t)}</text>`;
  s += `<text class="axis-title" x="${(w+pad.l-pad.r)/2}" y="${h-4}" text-anchor="middle">${esc(xl)}</text><text class="axis-title" transform="translate(13 ${(h-pad.b+pad.t)/2}) rotate(-90)" text-anchor="middle">${esc(yl)}</text>`;
  return s;
}
const ebar = (x, y0, y1, col, cap=4) => `<g class="ebar" stroke="${col}" stroke-width="1.3"><line x1="${x}" x2="${x}" y1="${y0}" y2="${y1}"/><line x1="${x-cap}" x2="${x+cap}" y1="${y0}" y2="${y0}"/><line x1="${x-cap}" x2="${x+cap}" y1="${y1}" y2="${y1}"/></g>`;
// identical recall@k curves are one group, listed in rank order; the baseline's group first
const curveKey = c => D.ks.map(k => { const v = val(c, curveAt(k)); return v == null ? 'x' : v.toFixed(12); }).join('|');
const groups = [];
for (const c of C) { const key = curveKey(c); let g = groups.find(g => g.key === key); if (!g) groups.push(g = {key, members: []}); g.members.push(c); }
for (const g of groups) { g.rep = g.members.includes(base) ? base : g.members[0]; g.isBase = g.members.includes(base);
  g.ci = m => { const cis = g.members.map(c => ciOf(c, m)).filter(x => x && x[0] != null); return cis.length ? [Math.min(...cis.map(x => x[0])), Math.max(...cis.map(x => x[1]))] : null; }; }
const baseGroup = groups.find(g => g.isBase);
const shown = [baseGroup, ...groups.filter(g => g !== baseGroup)].slice(0, 8);
shown.forEach((g, j) => g.col = g.isBase ? '#1d2330' : palette[(j - 1) % palette.length]);
const hidden = groups.length - shown.length;
const legendEntry = g => `<div class="item"><i style="background:${g.col}"></i><b>${esc(g.rep.label)}</b>${g.isBase ? ' (baseline, dashed)' : ''}` +
  (g.members.length > 1 ? ` <span class="also">and ${g.members.length - 1} more with the same curve: ${g.members.filter(c => c !== g.rep).map(c => esc(c.label)).join(', ')}</span>` : '') + '</div>';
(function curves() {
  const w = 560, h = 300, pad = {l: 58, r: 14, t: 12, b: 42}, ks = D.ks;
  const vals = shown.flatMap(g => ks.flatMap(k => { const m = curveAt(k), ci = g.ci(m); return [val(g.rep, m), ...(ci || [])]; })).filter(v => v != null);
  const lo = Math.max(0, Math.min(...vals) - 0.03), hi = Math.min(1, Math.max(...vals) + 0.03);
  const inner = w - pad.l - pad.r - 40, X = i => pad.l + 20 + (ks.length === 1 ? 0.5 : i / (ks.length - 1)) * inner;
  const Y = v => h - pad.b - (v - lo) / (hi - lo || 1) * (h - pad.t - pad.b);
  let s = axes(w, h, pad, ks.map((k, i) => [X(i), `${k}`]), [0, .25, .5, .75, 1].map(f => lo + f * (hi - lo)).map(v => [Y(v), v.toFixed(2)]), 'k (number of chunks retrieved)', info(curveAt('k')).label);
  const order = [...shown.filter(g => !g.isBase), baseGroup];  // the baseline is drawn last, on top
  order.forEach(g => { const j = shown.indexOf(g), dx = (j - (shown.length - 1) / 2) * 3, c = g.rep;
    s += `<polyline class="curve" fill="none" stroke="${g.col}" stroke-width="${g.isBase ? 2.5 : 2}" ${g.isBase ? 'stroke-dasharray="6 4"' : ''} points="${ks.map((k, i) => `${X(i) + dx},${Y(val(c, curveAt(k)))}`).join(' ')}"><title>${esc(g.members.map(m => m.label).join('\n'))}</title></polyline>`;
    ks.forEach((k, i) => { const m = curveAt(k), ci = g.ci(m); if (ci) s += ebar(X(i) + dx, Y(ci[0]), Y(ci[1]), g.col, 3);
      s += `<circle cx="${X(i) + dx}" cy="${Y(val(c, m))}" r="3" fill="${g.col}"><title>${esc(c.label)}${g.members.length > 1 ? ` (+${g.members.length - 1} identical)` : ''}: ${m} ${fmt(val(c, m))} [${ciText(ci, m)}]</title></circle>`; }); });
  document.getElementById('curves').innerHTML = `<svg viewBox="0 0 ${w} ${h}" width="${w}">${s}</svg><div class="legend">${shown.map(legendEntry).join('')}` +
    (hidden > 0 ? `<div class="also">${hidden} more distinct curve(s) not drawn; the table lists every configuration.</div>` : '') + '</div>';
})();
(function headroom() {
  const rows = shown, w = 560, bh = 26, pad = 250, h = rows.length * bh + 10, m = D.headroom;
  const mx = Math.max(0.01, ...rows.map(g => Math.max(val(g.rep, m) || 0, (g.ci(m) || [0, 0])[1])));
  const span = w - pad - 52, B = v => pad + v / mx * span;
  let s = '';
  rows.forEach((g, i) => { const c = g.rep, v = val(c, m) || 0, ci = g.ci(m), y = i * bh + 4;
    let name = c.label + (g.members.length > 1 ? ` (+${g.members.length - 1})` : '');
    if (name.length > 38) name = name.slice(0, 37) + '…';
    s += `<text x="${pad - 8}" y="${y + 13}" text-anchor="end">${esc(name)}<title>${esc(g.members.map(x => x.label).join('\n'))}</title></text>`;
    s += `<rect x="${pad}" y="${y}" width="${Math.max(0, B(v) - pad)}" height="${bh - 10}" fill="${g.col}" opacity=".85" rx="3"><title>${esc(c.label)}: ${fmt(v)} [${ciText(ci, m)}]</title></rect>`;
    if (ci) { const my = y + (bh - 10) / 2;
      s += `<g class="ebar" stroke="#1d2330" stroke-width="1.3"><line x1="${B(ci[0])}" x2="${B(ci[1])}" y1="${my}" y2="${my}"/><line x1="${B(ci[0])}" x2="${B(ci[0])}" y1="${my - 4}" y2="${my + 4}"/><line x1="${B(ci[1])}" x2="${B(ci[1])}" y1="${my - 4}" y2="${my + 4}"/></g>`; }
    s += `<text x="${Math.max(B(v), ci ? B(ci[1]) : 0) + 5}" y="${y + 12}">${fmt(v, 2)}</text>`; });
  document.getElementById('headroom').innerHTML = `<svg viewBox="0 0 ${w} ${h}" width="${w}">${s}</svg><div class="sub">Colours and merged entries as in the ${esc(info(curveAt('k')).label)} legend; a line across a bar spans its interval.</div>`;
})();
(function scatter() {
  const w = 560, h = 320, pad = {l: 58, r: 16, t: 12, b: 42};
  const pts = C.map(c => ({c, x: lat(c), y: val(c), ci: ciOf(c)})).filter(p => p.y != null && p.x != null);
  document.getElementById('scatter-sub').textContent = `${M} against end-to-end latency per question (p50 across the questions timed, query embedding included); bars: ${pct} intervals. The green line joins the Pareto-optimal configurations.`;
  if (!pts.length) { document.getElementById('scatter').innerHTML = '<p class="sub">No latency recorded.</p>'; return; }
  const xs = pts.map(p => Math.max(p.x, 1e-4)), ys = pts.flatMap(p => [p.y, ...(p.ci || [])]);
  const xmin = Math.min(...xs), xmax = Math.max(...xs), log = xmax / xmin >= 5;
  let X, xt;
  const L = w - pad.l - pad.r - 24;
  if (log) { const a = Math.floor(Math.log10(xmin)), b = Math.ceil(Math.log10(xmax)) === Math.floor(Math.log10(xmin)) ? a + 1 : Math.ceil(Math.log10(xmax));
    X = v => pad.l + 12 + (Math.log10(Math.max(v, 1e-4)) - a) / (b - a) * L;
    xt = []; for (let e = a; e <= b; e++) xt.push([X(10 ** e), e < 0 ? (10 ** e).toFixed(-e) : String(10 ** e)]);
  } else { const x1 = xmax * 1.1 || 1; X = v => pad.l + 12 + v / x1 * L; xt = [0, .25, .5, .75, 1].map(f => [X(f * x1), fmtMs(f * x1)]); }
  const unit = info(M).bounded, y0 = unit ? Math.max(0, Math.min(...ys) - 0.02) : Math.min(...ys) * 0.95, y1 = unit ? Math.min(1, Math.max(...ys) + 0.02) : Math.max(...ys) * 1.05, Y = v => h - pad.b - (v - y0) / (y1 - y0 || 1) * (h - pad.t - pad.b);
  const better = (a, b) => lowerBetter ? a < b : a > b;
  const front = pts.filter(p => !pts.some(q => q !== p && q.x <= p.x && (better(q.y, p.y) || q.y === p.y) && (q.x < p.x || better(q.y, p.y)))).sort((a, b) => a.x - b.x);
  let s = axes(w, h, pad, xt, [0, .25, .5, .75, 1].map(f => [Y(y0 + f * (y1 - y0)), (y0 + f * (y1 - y0)).toFixed(digits(M) ? 2 : 0)]), `p50 latency per question, end to end (ms${log ? ', log scale' : ''})`, M);
  for (const p of pts) if (p.ci) s += ebar(X(p.x), Y(p.ci[0]), Y(p.ci[1]), '#98a2b3', 3);
  s += `<polyline fill="none" stroke="#11845b" stroke-width="2" points="${front.map(p => `${X(p.x)},${Y(p.y)}`).join(' ')}"/>`;
  for (const p of [...pts.filter(p => p.c !== base), ...pts.filter(p => p.c === base)]) { const onF = front.includes(p);
    s += `<circle class="pt" cx="${X(p.x)}" cy="${Y(p.y)}" r="${p.c === base ? 6 : 4.5}" fill="${p.c === base ? '#fff' : onF ? '#11845b' : '#3055d8'}" stroke="${p.c === base ? '#1d2330' : 'none'}" stroke-width="2" opacity=".85"><title>${esc(p.c.label)}\n${M} ${fmt(p.y)} [${ciText(p.ci)}]\nlatency p50 ${fmtMs(p.x)} ms, p95 ${fmtMs(lat(p.c, 'p95'))} ms\n${esc(stagesText(p.c))}${onF ? '\nPareto-optimal' : ''}</title></circle>`; }
  document.getElementById('scatter').innerHTML = `<svg viewBox="0 0 ${w} ${h}" width="${w}">${s}</svg><div class="legend"><span class="item"><i style="background:#11845b"></i>Pareto-optimal</span><span class="item"><i style="background:#3055d8"></i>other</span><span class="item"><i style="background:#fff;border:2px solid #1d2330;box-sizing:border-box"></i>baseline</span></div>`;
  // latency by stage: the frontier and the baseline, then every configuration on request
  const table = list => { const names = [...new Set(list.flatMap(c => stages(c).map(([s]) => s)))]; return '<table class="stages"><thead><tr><th class="l">configuration</th><th>' + esc(M) + '</th><th>p50 ms</th><th>p95 ms</th>' + names.map(n => `<th>${brk(n)} p50</th>`).join('') + '</tr></thead><tbody>' +
    list.map(c => { const st = Object.fromEntries(stages(c)); return `<tr class="${c === base ? 'base' : ''}"><td class="l">${brk(c.label)}</td><td>${fmt(val(c))}<small class="ci">${ciText(ciOf(c))}</small></td><td>${fmtMs(lat(c))}</td><td>${fmtMs(lat(c, 'p95'))}</td>` +
      names.map(n => `<td>${st[n] ? fmtMs(st[n].p50) : '–'}</td>`).join('') + '</tr>'; }).join('') + '</tbody></table>'; };
  const key = [...new Set([...front.map(p => p.c), base])];
  document.getElementById('stages').innerHTML = `<h3 style="font-size:14px;margin:12px 0 4px">Latency by stage (ms), Pareto-optimal and baseline</h3>${table(key)}` +
    `<details><summary>all ${C.length} configurations</summary>${table([...C].sort((a, b) => (lat(a) ?? Infinity) - (lat(b) ?? Infinity)))}</details>` +
    (lat0.questions ? `<div class="sub">Each of ${lat0.questions} questions searched ${lat0.repeats} times after the evaluation pass; median per question, then p50 and p95 across questions. Stages do not add up exactly to the total, which also holds the glue between them.</div>` : '');
})();
(function heat() {
  const byStrat = {};
  for (const c of C) { const s = c.spec; if (s.size == null) continue; (byStrat[s.chunker] = byStrat[s.chunker] || []).push(c); }
  const maps = Object.entries(byStrat).map(([strat, cs]) => {
    const cell = {}; for (const c of cs) { const k = `${c.spec.size}|${c.spec.overlap ?? 0}`, v = val(c); if (v != null && (cell[k] == null || better(v, cell[k].v))) cell[k] = {v, c}; }
    return {strat, cs, cell}; });
  function better(a, b) { return lowerBetter ? a < b : a > b; }
  // one scale for every map: the sweep metric's range over all cells
  const all = maps.flatMap(m => Object.values(m.cell).map(x => x.v)), lo = Math.min(...all), hi = Math.max(...all);
  const shade = v => { let f = hi > lo ? (v - lo) / (hi - lo) : 1; if (lowerBetter) f = 1 - f;
    return {f, fill: `rgb(${Math.round(240 - 190 * f)},${Math.round(244 - 110 * f)},${Math.round(255 - 40 * f)})`}; };
  let out = '';
  for (const {strat, cs, cell} of maps) {
    const sizes = [...new Set(cs.map(c => c.spec.size))].sort((a, b) => a - b), ovs = [...new Set(cs.map(c => c.spec.overlap ?? 0))].sort((a, b) => a - b);
    const cw = 78, ch = 38, pl = 58, pt = 40, w = Math.max(pl + ovs.length * cw + 6, 200), h = pt + sizes.length * ch + 22;
    let s = `<text class="t" x="4" y="13">${esc(strat)}</text><text x="4" y="${pt - 6}">size ↓</text><text x="${pl}" y="${pt - 6}">overlap →</text>`;
    ovs.forEach((o, j) => s += `<text x="${pl + j * cw + cw / 2}" y="${h - 6}" text-anchor="middle">${o}</text>`);
    sizes.forEach((z, i) => { s += `<text x="${pl - 8}" y="${pt + i * ch + 22}" text-anchor="end">${z}</text>`;
      ovs.forEach((o, j) => { const e = cell[`${z}|${o}`]; if (!e) return; const {f, fill} = shade(e.v), tc = f > .6 ? '#fff' : '#1d2330', x = pl + j * cw, y = pt + i * ch;
        s += `<g class="cell" data-value="${e.v}"><rect x="${x}" y="${y}" width="${cw - 3}" height="${ch - 3}" rx="3" fill="${fill}"><title>${esc(e.c.label)}: ${fmt(e.v)} [${ciText(ciOf(e.c))}]</title></rect>` +
          `<text class="v" x="${x + (cw - 3) / 2}" y="${y + 15}" text-anchor="middle" style="fill:${tc};font-weight:600">${fmt(e.v, digits(M) ? 3 : 0)}</text>` +
          `<text class="v ci" x="${x + (cw - 3) / 2}" y="${y + 29}" text-anchor="middle" style="fill:${tc};font-size:10px">${ciText(ciOf(e.c))}</text></g>`; }); });
    out += `<svg class="heatmap" viewBox="0 0 ${w} ${h}" width="${w}">${s}</svg>`;
  }
  const grad = [0, .5, 1].map(f => shade(lowerBetter ? hi - f * (hi - lo) : lo + f * (hi - lo)).fill).join(',');
  document.getElementById('heat').innerHTML = out ? `<div class="scale">${esc(M)}: <span>${fmt(lowerBetter ? hi : lo, digits(M) ? 3 : 0)}</span><span class="bar" style="background:linear-gradient(to right,${grad})"></span><span>${fmt(lowerBetter ? lo : hi, digits(M) ? 3 : 0)}</span>(darker is better, same scale in every map)</div><div class="heats">${out}</div>` : '<p class="sub">No sized strategies in this sweep.</p>';
})();
(function tokens() {
  const cs = C.filter(c => c.searches).slice(0, 8);
  if (!cs.length) return;  // the card exists only when some configuration searched more than once
  document.getElementById('tokens-slot').outerHTML = `<section class="card" id="tokens-card"><h2>Recall against context tokens</h2><div class="sub">Configurations that searched more than once per question: mean recall of the top hits that fit in each context budget (the hits every search handed the model, in order, repeats left out), and below, recall and tokens after each search.</div><div id="tokens"></div></section>`;
  const w = 560, h = 280, pad = {l: 58, r: 14, t: 12, b: 42}, bs = cs[0].searches.by_tokens.map(p => p.tokens);
  const inner = w - pad.l - pad.r - 40, X = i => pad.l + 20 + (bs.length === 1 ? 0.5 : i / (bs.length - 1)) * inner;
  const Y = v => h - pad.b - v * (h - pad.t - pad.b);
  let s = axes(w, h, pad, bs.map((b, i) => [X(i), `${b}`]), [0, .25, .5, .75, 1].map(v => [Y(v), v.toFixed(2)]), 'context budget (tokens, each step doubles)', 'recall');
  cs.forEach((c, j) => { const col = c === base ? '#1d2330' : palette[j % palette.length], pts = c.searches.by_tokens;
    s += `<polyline class="tok-curve" fill="none" stroke="${col}" stroke-width="2" points="${pts.map((p, i) => `${X(i)},${Y(p.recall ?? 0)}`).join(' ')}"><title>${esc(c.label)}</title></polyline>`;
    pts.forEach((p, i) => s += `<circle cx="${X(i)}" cy="${Y(p.recall ?? 0)}" r="3" fill="${col}"><title>${esc(c.label)}: recall ${fmt(p.recall)} within ${p.tokens} tokens</title></circle>`); });
  const most = Math.max(...cs.map(c => c.searches.by_search.length));
  const head = '<tr><th class="l">configuration</th>' + Array.from({length: most}, (_, i) => `<th>after search ${i + 1}: recall · tokens</th>`).join('') + '</tr>';
  const rows = cs.map(c => `<tr class="${c === base ? 'base' : ''}"><td class="l">${brk(c.label)}</td>` + Array.from({length: most}, (_, i) => { const r = c.searches.by_search[i];
    return `<td>${r ? `${fmt(r.recall)} · ${fmt(r.context_tokens, 0)}<small class="ci">${r.questions} q, +${fmt(r.new_relevant, 2)} new, ${fmt(r.redundant, 2)} repeated</small>` : '–'}</td>`; }).join('') + '</tr>').join('');
  document.getElementById('tokens').innerHTML = `<svg viewBox="0 0 ${w} ${h}" width="${w}">${s}</svg><div class="legend">` +
    cs.map((c, j) => `<span class="item"><i style="background:${c === base ? '#1d2330' : palette[j % palette.length]}"></i>${esc(c.label)}</span>`).join('') +
    `</div><table class="by-search"><thead>${head}</thead><tbody>${rows}</tbody></table>`;
})();
// failure explorer
const detailed = C.filter(c => c.questions);
const pick = document.getElementById('pick');
pick.innerHTML = detailed.map(c => `<option value="${c.key}">${esc(c.label)}${c.key === D.baseline ? ' (baseline)' : ''}</option>`).join('');
function explore() {
  const c = detailed.find(x => x.key === pick.value), only = document.getElementById('onlyfail').checked;
  const fixed = new Set(c.vs ? c.vs.fixed : []), broken = new Set(c.vs ? c.vs.broken : []);
  let h = '', n = 0;
  for (const q of c.questions) {
    if (only && q.score != null && q.score >= 1 && !broken.has(q.id)) continue; n++;
    const tags = (fixed.has(q.id) ? '<span class="tag fixed">fixed</span>' : '') + (broken.has(q.id) ? '<span class="tag broken">broken</span>' : '') + (q.first == null ? '<span class="tag miss">no hit</span>' : '');
    h += `<div class="q"><div class="head"><b>${esc(q.id)}</b> ${esc(q.q)} ${tags} <span class="sub">${esc(M)} ${fmt(q.score)} · first hit ${q.first ?? '–'}</span></div><div class="hits"><div class="sub">expected: ${q.relevant.map(a => `<code>${esc(a)}</code>`).join(' ')}</div>` +
      q.hits.map((x, i) => `<div class="hit ${x.rel ? 'rel' : ''}">${i + 1}. <code>${esc(x.anchor)}</code> <span class="sub">${fmt(x.score)}</span>${x.rel ? ' ✓' : ''}<div class="snip">${esc(x.text)}</div></div>`).join('') + '</div></div>';
  }
  const ex = document.getElementById('explorer');
  ex.innerHTML = (n ? h : '<p class="sub">Every question fully answered.</p>');
  ex.querySelectorAll('.q .head').forEach(e => e.onclick = () => e.parentNode.classList.toggle('open'));
}
pick.onchange = explore; document.getElementById('onlyfail').onchange = explore; explore();
</script></body></html>
"""
