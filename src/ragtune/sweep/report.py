"""The sweep report: one self-contained HTML file (no network, no CDN).

Sections: the ranked table (click a header to sort), recall@k curves,
reranker headroom bars, a size x overlap heatmap per strategy, quality vs
latency with the Pareto frontier, and a failure explorer (per question:
expected anchors, retrieved chunks, fixed/broken against the baseline).
Charts are SVG drawn by a small inline script from the embedded JSON.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any

from .results import SweepResult

__all__ = ["render_report", "write_report"]

DETAIL_CONFIGS = 12  # configurations whose per-question retrievals are embedded for the failure explorer
DETAIL_HITS = 5


def _report_data(sweep: SweepResult) -> dict[str, Any]:
    ranked = sweep.ranked()
    detail_keys = {r["key"] for r in ranked[:DETAIL_CONFIGS]} | {sweep.baseline_key}
    configs = []
    for r in ranked:
        res = r["result"]
        entry = {"key": r["key"], "label": r["label"], "spec": {**r["spec"], **{k: v for k, v in (r.get("chunker_config") or {}).items() if k in ("size", "overlap")}},
                 "metrics": res["metrics"],
                 "stats": r["stats"], "vs": r.get("vs_baseline")}
        if r["key"] in detail_keys:
            entry["questions"] = [
                {"id": q["id"], "q": q["q"], "relevant": list(q["relevant"]), "first": q["first_hit_rank"],
                 "score": q["scores"].get(sweep.metric),
                 "hits": [{"anchor": h["anchor"], "score": h["score"], "rel": h["relevant"], "text": h.get("text", "")[:240]}
                          for h in q["retrieved"][:DETAIL_HITS]]}
                for q in res["questions"] if q["answerable"]]
        configs.append(entry)
    return {"metric": sweep.metric, "ks": list(sweep.grid.ks), "baseline": sweep.baseline_key, "test": sweep.grid.test,
            "seed": sweep.grid.seed, "samples": sweep.grid.samples, "configs": configs}


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
header{padding:20px 28px;background:#fff;border-bottom:1px solid var(--line)}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:0 0 10px}
.sub{color:var(--muted)} main{padding:20px 28px;display:grid;gap:20px}
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:16px 18px;overflow:auto}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:20px}
table{border-collapse:collapse;width:100%} th,td{padding:5px 8px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
th{cursor:pointer;user-select:none;background:#f5f6f8;position:sticky;top:0} th:first-child,td:first-child,td.l,th.l{text-align:left}
tr.base td{background:#eef3ff} tr:hover td{background:#f7f9ff}
.pos{color:var(--good)} .neg{color:var(--bad)} .sig{font-weight:600}
.kpi{display:flex;gap:28px;flex-wrap:wrap;margin-top:10px} .kpi div{font-size:13px;color:var(--muted)} .kpi b{display:block;font-size:20px;color:var(--fg)}
svg text{font-size:11px;fill:#475467} .legend span{display:inline-block;margin-right:12px;font-size:12px}
.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;vertical-align:middle}
select{font:inherit;padding:4px 6px;max-width:100%} .q{border-top:1px solid var(--line);padding:8px 0}
.q .head{cursor:pointer} .tag{display:inline-block;padding:0 6px;border-radius:8px;font-size:11px;margin-left:6px}
.fixed{background:#dcfae6;color:#067647} .broken{background:#fee4e2;color:#b42318} .miss{background:#f2f4f7;color:#475467}
.hits{margin:6px 0 0 14px;display:none} .open .hits{display:block} .hit{margin:4px 0;color:#344054}
.hit code{background:#f2f4f7;padding:0 4px;border-radius:4px} .hit.rel code{background:#dcfae6}
.snip{color:var(--muted);font-size:12px;white-space:normal}
</style></head><body>
<header><h1>__TITLE__</h1><div class="sub" id="sub"></div><div class="kpi" id="kpi"></div></header>
<main>
<section class="card"><h2>Ranked configurations</h2><div class="sub">Click a column to sort. Δ and p compare with the baseline (paired test, Holm-corrected); W/T/L = questions won, tied, lost.</div><div id="table"></div></section>
<div class="grid2">
<section class="card"><h2>recall@k curves</h2><div id="curves"></div></section>
<section class="card"><h2>Reranker headroom (recall@max k − recall@min k)</h2><div id="headroom"></div></section>
</div>
<div class="grid2">
<section class="card"><h2>Quality vs latency</h2><div class="sub">p95 search latency; the line joins the Pareto-optimal configurations.</div><div id="scatter"></div></section>
<section class="card"><h2>Size × overlap</h2><div class="sub">Best value of the metric per cell, one map per strategy.</div><div id="heat"></div></section>
</div>
<section class="card"><h2>Failure explorer</h2><div class="sub">Per question: expected anchors and the top retrieved chunks. Tags mark questions fixed or broken against the baseline.</div>
<p><select id="pick"></select> <label><input type="checkbox" id="onlyfail" checked> only questions not fully answered</label></p><div id="explorer"></div></section>
</main>
<script type="application/json" id="data">__DATA__</script>
<script>
const D = JSON.parse(document.getElementById('data').textContent);
const M = D.metric, C = D.configs, base = C.find(c => c.key === D.baseline);
const palette = ['#3055d8','#e0663d','#11845b','#9b51e0','#d4a017','#0e9aa7','#c0392b','#6c757d','#ff69b4','#2f4f4f'];
const esc = s => String(s ?? '').replace(/[&<>"]/g, ch => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[ch]));
const fmt = (v, d=3) => v == null || Number.isNaN(v) ? '–' : Number(v).toFixed(d);
const val = (c, m=M) => c.metrics[m];
const lowerBetter = M.startsWith('context_tokens');
document.getElementById('sub').textContent = `${C.length} configurations · metric ${M} · ${D.test} test, ${D.samples} samples, seed ${D.seed} · baseline: ${base.label}`;
const best = C[0];
document.getElementById('kpi').innerHTML = `<div>best ${esc(M)}<b>${fmt(val(best))}</b>${esc(best.label)}</div>` +
  `<div>baseline<b>${fmt(val(base))}</b>${esc(base.label)}</div>` +
  `<div>significantly better<b>${C.filter(c => c.vs && c.vs.p_holm < 0.05 && (lowerBetter ? c.vs.delta < 0 : c.vs.delta > 0)).length}</b>p&lt;0.05 after Holm</div>`;

// ranked table
const cols = [['#', c => C.indexOf(c) + 1], ['configuration', c => c.label, 'l'],
  ...D.ks.map(k => [`recall@${k}`, c => val(c, `recall@${k}`)]), ['mrr', c => val(c, 'mrr')], ['ndcg@10', c => val(c, 'ndcg@10')],
  [`ctx tokens@${D.ks[0]}`, c => val(c, `context_tokens@${D.ks[0]}`)], ['chunks', c => c.stats.chunks],
  ['p95 ms', c => c.stats.latency_ms.p95], ['Δ', c => c.vs ? c.vs.delta : null], ['p', c => c.vs ? c.vs.p_holm : null],
  ['W/T/L', c => c.vs ? c.vs.wins - c.vs.losses : null]];
let sortCol = 0, sortDir = 1;
function drawTable() {
  const rows = [...C].sort((a, b) => { const x = cols[sortCol][1](a), y = cols[sortCol][1](b);
    if (x == null) return 1; if (y == null) return -1; return (x < y ? -1 : x > y ? 1 : 0) * sortDir; });
  let h = '<table><thead><tr>' + cols.map((c, i) => `<th class="${c[2]||''}" data-i="${i}">${esc(c[0])}${i === sortCol ? (sortDir > 0 ? ' ▲' : ' ▼') : ''}</th>`).join('') + '</tr></thead><tbody>';
  for (const c of rows) {
    const vs = c.vs;
    h += `<tr class="${c.key === D.baseline ? 'base' : ''}">` + cols.map((col, i) => {
      let v = col[1](c);
      if (col[0] === 'configuration') return `<td class="l">${esc(v)}${c.key === D.baseline ? ' <span class="tag miss">baseline</span>' : ''}</td>`;
      if (col[0] === 'Δ') return `<td class="${v > 0 ? 'pos' : v < 0 ? 'neg' : ''}">${v == null ? '' : (v > 0 ? '+' : '') + fmt(v)}</td>`;
      if (col[0] === 'p') return `<td class="${v != null && v < 0.05 ? 'sig' : ''}">${v == null ? '' : Number(v).toPrecision(2)}</td>`;
      if (col[0] === 'W/T/L') return `<td>${vs ? `${vs.wins}/${vs.ties}/${vs.losses}` : ''}</td>`;
      if (col[0] === '#' || col[0] === 'chunks') return `<td>${v}</td>`;
      if (col[0].startsWith('ctx') || col[0] === 'p95 ms') return `<td>${fmt(v, col[0] === 'p95 ms' ? 1 : 0)}</td>`;
      return `<td>${fmt(v)}</td>`; }).join('') + '</tr>';
  }
  document.getElementById('table').innerHTML = h + '</tbody></table>';
  document.querySelectorAll('#table th').forEach(th => th.onclick = () => { const i = +th.dataset.i; sortDir = i === sortCol ? -sortDir : (i < 2 ? 1 : -1); sortCol = i; drawTable(); });
}
drawTable();

// chart helpers
function axes(w, h, pad, xt, yt, xl, yl) {
  let s = `<line x1="${pad.l}" y1="${h-pad.b}" x2="${w-pad.r}" y2="${h-pad.b}" stroke="#98a2b3"/><line x1="${pad.l}" y1="${pad.t}" x2="${pad.l}" y2="${h-pad.b}" stroke="#98a2b3"/>`;
  for (const [x, t] of xt) s += `<text x="${x}" y="${h-pad.b+14}" text-anchor="middle">${esc(t)}</text>`;
  for (const [y, t] of yt) s += `<text x="${pad.l-6}" y="${y+4}" text-anchor="end">${esc(t)}</text><line x1="${pad.l}" x2="${w-pad.r}" y1="${y}" y2="${y}" stroke="#f0f1f3"/>`;
  s += `<text x="${(w+pad.l-pad.r)/2}" y="${h-2}" text-anchor="middle">${esc(xl)}</text><text transform="translate(12 ${(h-pad.b+pad.t)/2}) rotate(-90)" text-anchor="middle">${esc(yl)}</text>`;
  return s;
}
const shown = [base, ...C.filter(c => c !== base)].slice(0, 8);
(function curves() {
  const w = 520, h = 300, pad = {l: 46, r: 12, t: 12, b: 36}, ks = D.ks;
  const vals = shown.flatMap(c => ks.map(k => val(c, `recall@${k}`))).filter(v => v != null);
  const lo = Math.max(0, Math.min(...vals) - 0.05), hi = Math.min(1, Math.max(...vals) + 0.02);
  const X = i => pad.l + (ks.length === 1 ? 0.5 : i / (ks.length - 1)) * (w - pad.l - pad.r), Y = v => h - pad.b - (v - lo) / (hi - lo || 1) * (h - pad.t - pad.b);
  let s = axes(w, h, pad, ks.map((k, i) => [X(i), `@${k}`]), [0, .25, .5, .75, 1].map(f => lo + f * (hi - lo)).map(v => [Y(v), v.toFixed(2)]), 'k', 'recall');
  let leg = '';
  shown.forEach((c, j) => { const col = palette[j % palette.length];
    s += `<polyline fill="none" stroke="${col}" stroke-width="${c === base ? 3 : 2}" ${c === base ? 'stroke-dasharray="5 3"' : ''} points="${ks.map((k, i) => `${X(i)},${Y(val(c, `recall@${k}`))}`).join(' ')}"><title>${esc(c.label)}</title></polyline>`;
    ks.forEach((k, i) => s += `<circle cx="${X(i)}" cy="${Y(val(c, `recall@${k}`))}" r="3" fill="${col}"><title>${esc(c.label)}: recall@${k} ${fmt(val(c, `recall@${k}`))}</title></circle>`);
    leg += `<span><i style="background:${col}"></i>${esc(c.label)}${c === base ? ' (baseline)' : ''}</span>`; });
  document.getElementById('curves').innerHTML = `<svg viewBox="0 0 ${w} ${h}" width="100%">${s}</svg><div class="legend">${leg}</div>`;
})();
(function headroom() {
  const rows = shown, w = 520, bh = 22, pad = 230, h = rows.length * bh + 24;
  const mx = Math.max(0.01, ...rows.map(c => val(c, 'reranker_headroom') || 0));
  let s = '';
  rows.forEach((c, i) => { const v = val(c, 'reranker_headroom') || 0, bw = v / mx * (w - pad - 50);
    s += `<text x="${pad - 6}" y="${i * bh + 15}" text-anchor="end">${esc(c.label.length > 36 ? c.label.slice(0, 35) + '…' : c.label)}</text><rect x="${pad}" y="${i * bh + 4}" width="${bw}" height="${bh - 8}" fill="${palette[i % palette.length]}" rx="3"><title>${esc(c.label)}</title></rect><text x="${pad + bw + 4}" y="${i * bh + 15}">${fmt(v)}</text>`; });
  document.getElementById('headroom').innerHTML = `<svg viewBox="0 0 ${w} ${h}" width="100%">${s}</svg>`;
})();
(function scatter() {
  const w = 520, h = 300, pad = {l: 46, r: 12, t: 12, b: 36};
  const pts = C.map(c => ({c, x: c.stats.latency_ms.p95, y: val(c)})).filter(p => p.y != null);
  const xs = pts.map(p => p.x), ys = pts.map(p => p.y);
  const x0 = 0, x1 = Math.max(...xs) * 1.08 || 1, y0 = Math.min(...ys) - 0.02, y1 = Math.max(...ys) + 0.02;
  const X = v => pad.l + (v - x0) / (x1 - x0) * (w - pad.l - pad.r), Y = v => h - pad.b - (v - y0) / (y1 - y0 || 1) * (h - pad.t - pad.b);
  const better = (a, b) => lowerBetter ? a < b : a > b;
  const front = pts.filter(p => !pts.some(q => q !== p && q.x <= p.x && (better(q.y, p.y) || q.y === p.y) && (q.x < p.x || better(q.y, p.y)))).sort((a, b) => a.x - b.x);
  let s = axes(w, h, pad, [0, .25, .5, .75, 1].map(f => [X(x0 + f * (x1 - x0)), (x0 + f * (x1 - x0)).toFixed(1)]), [0, .5, 1].map(f => [Y(y0 + f * (y1 - y0)), (y0 + f * (y1 - y0)).toFixed(3)]), 'p95 latency (ms)', M);
  s += `<polyline fill="none" stroke="#11845b" stroke-width="2" points="${front.map(p => `${X(p.x)},${Y(p.y)}`).join(' ')}"/>`;
  for (const p of pts) { const onF = front.includes(p);
    s += `<circle cx="${X(p.x)}" cy="${Y(p.y)}" r="${p.c === base ? 6 : 4.5}" fill="${p.c === base ? '#fff' : onF ? '#11845b' : '#3055d8'}" stroke="${p.c === base ? '#1d2330' : 'none'}" stroke-width="2" opacity=".85"><title>${esc(p.c.label)}\n${M} ${fmt(p.y)} · p95 ${fmt(p.x, 1)} ms${onF ? ' · Pareto-optimal' : ''}</title></circle>`; }
  document.getElementById('scatter').innerHTML = `<svg viewBox="0 0 ${w} ${h}" width="100%">${s}</svg><div class="legend"><span><i style="background:#11845b"></i>Pareto-optimal</span><span><i style="background:#3055d8"></i>other</span><span><i style="background:#fff;border:2px solid #1d2330"></i>baseline</span></div>`;
})();
(function heat() {
  const byStrat = {};
  for (const c of C) { const s = c.spec; if (s.size == null) continue; const key = s.chunker;
    (byStrat[key] = byStrat[key] || []).push(c); }
  let out = '';
  for (const [strat, cs] of Object.entries(byStrat)) {
    const sizes = [...new Set(cs.map(c => c.spec.size))].sort((a, b) => a - b), ovs = [...new Set(cs.map(c => c.spec.overlap ?? 0))].sort((a, b) => a - b);
    const cell = {}; for (const c of cs) { const k = `${c.spec.size}|${c.spec.overlap ?? 0}`, v = val(c); if (v != null && (cell[k] == null || (lowerBetter ? v < cell[k].v : v > cell[k].v))) cell[k] = {v, c}; }
    const vals = Object.values(cell).map(x => x.v), lo = Math.min(...vals), hi = Math.max(...vals);
    const cw = 70, ch = 26, pl = 70, pt = 30, w = pl + ovs.length * cw + 10, h = pt + sizes.length * ch + 24;
    let s = `<text x="4" y="12" style="font-weight:600">${esc(strat)}</text><text x="${pl - 6}" y="12" text-anchor="end"></text><text x="${pl}" y="${pt - 4}">overlap →</text><text x="4" y="${pt + 14}">size ↓</text>`;
    ovs.forEach((o, j) => s += `<text x="${pl + j * cw + cw / 2}" y="${h - 6}" text-anchor="middle">${o}</text>`);
    sizes.forEach((z, i) => { s += `<text x="${pl - 6}" y="${pt + i * ch + 17}" text-anchor="end">${z}</text>`;
      ovs.forEach((o, j) => { const e = cell[`${z}|${o}`]; if (!e) return; let f = hi > lo ? (e.v - lo) / (hi - lo) : 1; if (lowerBetter) f = 1 - f;
        s += `<rect x="${pl + j * cw}" y="${pt + i * ch}" width="${cw - 2}" height="${ch - 2}" rx="3" fill="rgb(${Math.round(240 - 190 * f)},${Math.round(244 - 110 * f)},${Math.round(255 - 40 * f)})"><title>${esc(e.c.label)}: ${fmt(e.v)}</title></rect><text x="${pl + j * cw + cw / 2 - 1}" y="${pt + i * ch + 17}" text-anchor="middle" style="fill:${f > .6 ? '#fff' : '#1d2330'}">${fmt(e.v)}</text>`; }); });
    out += `<svg viewBox="0 0 ${w} ${h}" width="${Math.min(w, 520)}" style="margin:0 16px 12px 0">${s}</svg>`;
  }
  document.getElementById('heat').innerHTML = out || '<p class="sub">No sized strategies in this sweep.</p>';
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
