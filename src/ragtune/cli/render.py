"""Plain-text rendering for the terminal: every command's human-readable output lives here, so the CLI
only parses flags and calls the library."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..evaluate.render import bar, render_eval
from ..paths import display_name as _shown
from ..pipeline.evaluation import _metric_of, candidate_gains, candidate_row, candidate_verdict, rerank_warning  # noqa: F401

__all__ = ["render_eval", "bar", "render_histogram", "render_chunking", "render_search", "render_answer",
           "render_answer_metrics", "render_candidates", "candidate_row", "candidate_gains", "candidate_verdict",
           "rerank_warning", "render_calibration", "render_gaps",
           "render_version_line", "render_diff", "chunk_record"]


def render_histogram(sizes: np.ndarray, bins: int = 8, width: int = 40) -> str:
    edges = np.unique(np.linspace(0, sizes.max() + 1, bins + 1).astype(int))
    counts, _ = np.histogram(sizes, bins=edges)
    top = max(1, counts.max())
    return "\n".join(f"  {lo:>6}-{hi - 1:<6} {n:>6}  {'#' * int(round(n / top * width))}"
                     for lo, hi, n in zip(edges, edges[1:], counts))


def chunk_record(c: Any, role: str) -> dict[str, Any]:
    return {"id": c.id, "doc_id": c.doc_id, "start": c.start, "end": c.end, "text": c.text, "embed_text": c.embed_text,
            "anchors": list(c.anchors), "heading_path": list(c.heading_path), "parent_id": c.parent_id,
            "tokens": c.tokens, "role": role}


def render_chunking(chunker: Any, n_docs: int, chunks: Sequence[Any], parents: Sequence[Any], elapsed: float,
                    samples: int = 3) -> str:
    from ..chunking.tokens import get_tokenizer

    cfg = getattr(chunker, "config", None)
    counter = get_tokenizer(getattr(cfg, "tokenizer", "regex"))
    sizes = np.asarray([c.tokens if c.tokens is not None else len(counter.spans(c.text)) for c in chunks], dtype=np.int64)
    lines = [f"chunker {chunker.name} {json.dumps(cfg.to_dict()) if cfg else ''}",
             f"{n_docs} documents -> {len(chunks)} chunks" + (f" in {len(parents)} parents" if parents else "")
             + f" ({elapsed:.2f} s)"]
    if sizes.size:
        lines.append(f"tokens per chunk: min {sizes.min()}  median {int(np.median(sizes))}  "
                     f"p95 {int(np.percentile(sizes, 95))}  max {sizes.max()}  total {sizes.sum()}")
        lines.append(render_histogram(sizes))
    for c in chunks[:samples]:
        lines.append(f"\n--- {_shown(c.anchor)} [{c.start}:{c.end}] {c.tokens} tokens"
                     + (f" parent {c.parent_id}" if c.parent_id else ""))
        lines.append(c.embed_text if len(c.embed_text) <= 400 else c.embed_text[:400] + " ...")
    return "\n".join(lines)


def render_search(ranking: Any, warm_up_s: float = 0.0) -> str:
    lines = [] if ranking.hits else ["no results (no query term occurs in the corpus)"]
    for i, h in enumerate(ranking.hits, start=1):
        lines.append(f"{i:>3}. {h.score:7.3f}  {_shown(h.chunk.anchor)}\n       {' '.join(h.chunk.text.split())[:100]}")
    stages = ", ".join(f"{s} {t * 1000:.1f}" for s, t in ranking.timings.items())
    warm = f"; models loaded before it in {warm_up_s * 1000:.0f} ms" if warm_up_s >= 0.0005 else ""
    lines.append(f"({sum(ranking.timings.values()) * 1000:.1f} ms: {stages}{warm})")
    return "\n".join(lines)


NOT_FOUND_WHY = {"gate": "retrieval confidence below the gate", "model": "the context does not contain the answer",
                 "refusal": "the model refused", "no_match": "no context sentence matches the question",
                 "no_context": "nothing was retrieved"}


def render_answer(ans: Any) -> str:
    if ans.outcome == "not_found":
        return f"not found in the context ({NOT_FOUND_WHY.get(ans.reason or '', ans.reason)})"
    lines = [ans.text]
    if ans.invalid_citations:
        lines.append(f"\nwarning: citation(s) to contexts that were not given: {ans.invalid_citations}")
    lines.append("\nsources:")
    for c in {c.n: c for c in ans.citations if c.valid}.values():
        span = f"characters {c.start}-{c.end}"
        where = f"{_cited(c.location)} of {_shown(c.doc_id)}, {span}" if c.location else f"{span} of {_shown(c.doc_id)}"
        lines.append(f"  [{c.n}] {_shown(c.anchor)}  ({where})")
    return "\n".join(lines)


def render_answer_metrics(answers: Mapping[str, Any]) -> str:
    lines = [f"\nanswers ({answers['generator']}, top {answers['k']} contexts"
             + (f", gate {answers['gate']:.4g}" if answers["gate"] is not None else "") + "):"]
    if answers.get("gate_info"):
        lines.append(f"  {answers['gate_info']['text']}")
    for key, value in answers["metrics"].items():
        if value is not None:
            lines.append(f"  {key:<30} {value:.3f}" if isinstance(value, float) else f"  {key:<30} {value}")
    if answers.get("abstentions"):  # who refused: the gate, or the generator (and why)
        from ..answer.evaluate import abstention_text

        lines += [f"  {line}" for line in abstention_text(answers["abstentions"])]
    j = answers.get("judge") or {}
    if j.get("usage"):
        lines.append(f"  judge {j['name']}: {j['usage']['calls']} calls, {j['usage']['input_tokens']} in / "
                     f"{j['usage']['output_tokens']} out tokens, ${j['cost']:.4f}")
    return "\n".join(lines)


def render_rerank_usage(usage: Mapping[str, Any]) -> str:
    """One line on what an LLM reranker spent and how its answers read; a warning when some fell back."""
    line = (f"reranker {usage.get('model', '?')}: {usage.get('calls', 0):,} calls, {usage.get('input_tokens', 0):,} "
            f"input and {usage.get('output_tokens', 0):,} output tokens, ${usage.get('cost') or 0.0:.4f}; "
            f"{usage.get('malformed', 0)} malformed, {usage.get('repaired', 0)} repaired, "
            f"{usage.get('fallbacks', 0)} fallbacks")
    if usage.get("fallbacks"):
        line += ("\nwarning: some windows kept their first-stage order (unreadable answers); the quality above "
                 "understates the reranker")
    return line


def render_candidates(rows: Sequence[Mapping[str, Any]], reranker: str, budget_ms: float = 300.0) -> str:
    """The candidates table (quality, rerank stage p50/p95, gain per 100 ms), a warning when no size beats the
    first stage, and the verdict for ``budget_ms``."""
    metric = _metric_of(rows)
    rows = candidate_gains(rows, metric)
    lines = [f"\nreranking ({reranker}) by number of candidates:",
             f"(p50/p95: the rerank stage alone; gain/100ms: {metric} gained over none per 100 ms of reranking p50)",
             f"{'candidates':>10}  {'recall@5':>8}  {'mrr':>6}  {'ndcg@10':>7}  {'p50 ms':>8}  {'p95 ms':>8}  "
             f"{'gain/100ms':>10}"]
    for r in rows:
        per = "" if r["candidates"] == "none" else f"{r['gain_per_100ms']:+.4f}"
        lines.append(f"{r['candidates']:>10}  {r['recall@5']:>8.3f}  {r['mrr']:>6.3f}  {r['ndcg@10']:>7.3f}  "
                     f"{r['rerank_p50_ms']:>8.1f}  {r['rerank_p95_ms']:>8.1f}  {per:>10}")
    if len(rows) > 1 and all(r["gain"] < 0 for r in rows[1:]):
        best = max(rows[1:], key=lambda r: r[metric])
        lines.append(rerank_warning(rows[0][metric], best[metric], reranker, metric) or "")
    lines.append(candidate_verdict(rows, budget_ms, metric)["text"])
    return "\n".join(lines)


def render_calibration(cal: Any, retriever: str, log: Mapping[str, Any] | None = None) -> str:
    """The calibration's lines; ``log``: the telemetry log's counts the share of unanswerable questions came from."""
    from ..answer.gate import threshold_text
    from ..answer.gate_report import share_source

    gen, t, share = getattr(cal, "generator", None), threshold_text(cal.threshold), cal.at_share
    source = share_source(log)
    refused = (f"answerable questions refused: {cal.false_abstention:.3f} = gate {cal.gate_refused:.3f} + "
               f"generator {cal.generator_refused:.3f}; answered {cal.answered_rate:.3f}" if gen else
               f"answerable questions refused: {cal.false_abstention:.3f}")
    lines = [f"threshold {t} on the top {retriever} score "
             f"({cal.n_answerable} answerable, {cal.n_unanswerable} unanswerable questions)"]
    if share is not None:
        lines.append(f"at an unanswerable share of {share['unanswerable_share']:.3g}"
                     + (f" ({source})" if source else "") + f": abstention precision "
                     f"{share['precision']:.3f}  recall {share['recall']:.3f}  F1 {share['f1']:.3f}  (answered "
                     f"{share['answered_rate']:.3f}; the threshold maximises the F1 expected at that share)")
    lines += [("on this golden set: " if share is not None else "") + f"abstention precision {cal.precision:.3f}  "
              f"recall {cal.recall:.3f}  F1 {cal.f1:.3f}  ({refused})",
              (f"with the {gen} generator's refusals (what eval --answers --gate {t} shows with the same "
               "generator and --answer-k)" if gen else "the gate alone (the generator's refusals not counted)"),
              f"separation AUC {cal.auc:.3f} (0.5 = the top score cannot tell answerable from unanswerable)",
              "\ncoverage vs risk (risk = answered questions that are unanswerable or lack evidence in the top k):"]
    for point in cal.curve[:: max(1, len(cal.curve) // 10)]:
        lines.append(f"  threshold {point['threshold']:>9.4g}  coverage {point['coverage']:.2f}  risk {point['risk']:.2f}")
    lines.append(f"\nuse it: ragtune eval ... --answers --gate {t}, ragtune answer ... --gate {t}   (valid for this "
                 "retrieval configuration only)")
    return "\n".join(lines)


def render_gaps(n_rows: int, clusters: Sequence[Mapping[str, Any]], since: str | None) -> str:
    lines = [f"{n_rows} not-found answers" + (f" since {since}" if since else "") + f", {len(clusters)} clusters"]
    for i, c in enumerate(clusters, start=1):
        lines.append(f"\n{i}. asked {'once' if c['size'] == 1 else str(c['size']) + ' times'} ({c['distinct']} distinct)")
        lines += [f"   - {q}" for q in c["examples"]]
        if c.get("nearest_anchors"):
            lines.append("   nearest anchors: " + ", ".join(a["anchor"] for a in c["nearest_anchors"]))
    return "\n".join(lines)


def render_version_line(v: Any, current: str | None) -> str:
    m = v.manifest
    emb = (m.get("embedding") or {}).get("model", "-")
    problem = getattr(v, "problem", None)
    return (f"{'*' if v.id == current else ' '} {v.id}  {m.get('created', '?')}  "
            f"{m.get('corpus', {}).get('documents', '?'):>6} docs {m.get('chunks', '?'):>7} chunks  "
            f"{m.get('config', {}).get('chunker', '?')}/{m.get('config', {}).get('retriever', '?')}  {emb}  "
            f"build {m.get('build_s', 0):.1f}s" + (f"  INCOMPLETE: {problem}" if problem else ""))


def render_diff(d: Mapping[str, Any]) -> str:
    lines = [f"{d['from']} -> {d['to']}: {len(d['added'])} added, {len(d['changed'])} changed, "
             f"{len(d['removed'])} removed documents"]
    for k in ("added", "changed", "removed"):
        lines += [f"  {k[0].upper()} {_shown(doc)}" for doc in d[k][:20]]
    lines += [f"  config {k}: {ch['from']!r} -> {ch['to']!r}" for k, ch in d["config"].items()]
    if d["embedding"]:
        lines.append(f"  embedding: {d['embedding']['from']} -> {d['embedding']['to']}")
    return "\n".join(lines)


def render_golden_report(report: Any, source: str) -> str:
    advice = "".join(f"\nsuggestion: {p.message}" for p in getattr(report, "advice", ()))
    if not report.ok:
        return (f"{len(report.problems)} problem(s) in {source}:\n" + "\n".join(f"- {p.message}" for p in report.problems)
                + advice)
    s = report.summary
    tags = ", ".join(f"{t} {n}" for t, n in s["tags"].items()) or "none"
    drafts = (f"\ndrafts: {s['drafts']} (never scored until accepted: ragtune golden review {source} --out "
              "accepted.jsonl)") if s.get("drafts") else ""
    return (f"ok: {s['questions']} questions ({s['answerable']} answerable, {s['unanswerable']} unanswerable"
            f"{', %d drafts' % s['drafts'] if s.get('drafts') else ''}), "
            f"{s['relevant_anchors']} relevant anchors, all found, in {s['documents']} of the corpus's "
            f"{s['corpus_documents']} documents\ntags: {tags}{_multistep(s)}{drafts}{advice}")


def _multistep(s: Mapping[str, Any]) -> str:
    """golden check's line on questions that need more than one search (none: nothing)."""
    parts = ([f"{s['evidence_questions']} with evidence groups"] if s.get("evidence_questions") else []) + \
        ([f"{s['conversations']} conversations ({s['turns']} turns)"] if s.get("conversations") else [])
    return f"\nmore than one search: {', '.join(parts)}" if parts else ""


def render_review(c: Mapping[str, Any], out: str) -> str:
    """What ``golden review`` prints when it ends: how many drafts were accepted, edited, rejected, left."""
    return (f"\n{c['accepted']} accepted ({c['edited']} edited), {c['rejected']} rejected, {c['left']} left for "
            f"later; wrote {c['accepted'] + c['passed']} question(s) to {out}")


def render_plan(grid: Any, n_questions: int, out: str) -> str:
    """The line a sweep prints before it starts: configurations, metric, questions, where results go (a search
    says its own: sampler, trials, the size of the space)."""
    if hasattr(grid, "summary"):
        return grid.summary(n_questions, out)
    specs = grid.all_specs
    extra = "" if len(specs) == len(grid.specs) else " + the baseline"
    return (f"sweep: {len(specs)} configurations ({len(grid.specs)} in the grid{extra}), metric {grid.metric}, "
            f"{n_questions} questions; results in {out}")


def render_anchors(rows: Sequence[Mapping[str, Any]]) -> str:
    """One anchor a line, indented by its depth, with its title and aliases (names escaped: one line each)."""
    return "\n".join(f"{'  ' * len(r['heading_path'])}{_shown(r['anchor'])}  ({_shown(r['title'])})"
                     + (f"  also: {', '.join(map(_shown, r['aliases']))}" if r.get("aliases") else "") for r in rows)


def _where(loc: Mapping[str, Any]) -> str:
    """``{"line": 4, "line_end": 17}`` -> ``line 4-17``."""
    return ", ".join(f"{k} {v}" + (f"-{loc[k + '_end']}" if k + "_end" in loc else "")
                     for k, v in loc.items() if not k.endswith("_end"))


def _cited(loc: Mapping[str, Any]) -> str:
    """``{"line": 4, "line_end": 17}`` -> ``lines 4-17`` (a citation's place in its source file)."""
    return ", ".join(f"{k}s {v}-{loc[k + '_end']}" if k + "_end" in loc and k in ("line", "page", "paragraph", "cell")
                     else _where({k: v, **({k + "_end": loc[k + "_end"]} if k + "_end" in loc else {})})
                     for k, v in loc.items() if not k.endswith("_end"))


def render_document(d: Mapping[str, Any], *, text: bool = True) -> str:
    """``ragtune corpus show``: the document's extracted text, then its sections."""
    head = (f"{_shown(d['id'])}  ({d['format'] or 'in memory'}; {d['characters']:,} characters, "
            f"{len(d['sections'])} sections)\ntitle: {_shown(d['title'])}\nsource: {_shown(str(d['source']))}")
    rows = [f"{'  ' * (s['level'] - 1)}{_shown(s['anchor'])}  [{s['start']}:{s['end']}]"
            + (f"  {_where(s['location'])}" if s["location"] else "")
            + (f"  also: {', '.join(map(_shown, s['aliases']))}" if s["aliases"] else "") for s in d["sections"]]
    body = f"\n\n--- text ---\n{d['text']}\n--- end of text ---" if text else ""
    return head + body + "\n\nsections:\n" + ("\n".join(rows) or "  (none)")


def render_built(v: Any, current: str | None, stats: Mapping[str, Any] | None = None) -> str:
    m = v.manifest
    if stats is None:
        return (f"built {v.id}: {m['chunks']} chunks from {m['corpus']['documents']} documents in {m['build_s']:.1f} s; "
                f"current: {current}")
    return (f"refreshed into {v.id} (from {m['parent_version']}): {len(stats['added'])} added, "
            f"{len(stats['changed'])} changed, {len(stats['removed'])} removed; {stats['chunks_new']} chunks new, "
            f"{stats['chunks_reused']} reused, {stats.get('texts_embedded', 0)} texts embedded, {m['build_s']:.2f} s; "
            f"current: {current}")


def render_compare(report: Any, *, full: bool, out: str | None) -> str:
    """``ragtune compare``: the digest, then every table with ``--all`` (else how to get them)."""
    text = report.digest()
    if full:
        text += "\n\n" + report.to_text()
    else:
        text += (f"\n\nthe full tables ({len(report.rows)} rows), fixed and broken questions and notes: --all"
                 + ("" if out else ", or --out FILE.html / .md"))
    return text + (f"\n\nwrote {out}" if out else "")


def render_outside(result: Any) -> str:
    """What ``eval --endpoint/--run`` prints under the metrics: how hits matched, questions the run had that the
    golden set lacks, questions that failed, the HTTP request counts."""
    from ..evaluate.match import MatchReport

    m = result.matching
    lines = [MatchReport.from_dict(m).summary()] if m else []
    skipped = m.get("questions_not_in_golden") if m else None
    if skipped:
        lines.append(f"skipped {len(skipped)} question(s) of the run that the golden set lacks: "
                     f"{', '.join(skipped[:5])}{' ...' if len(skipped) > 5 else ''}")
    failed = result.config.get("failed") or {}
    if failed.get("count"):
        lines.append(f"FAILED {failed['count']} of {len(result.questions)} question(s), scored as retrieving "
                     "nothing (--fail-fast stops at the first):")
        for f in failed.get("questions", [])[:5]:
            lines.append(f"  {f['question']}: {f['error'][:300]}")
        if failed["count"] > 5:
            lines.append(f"  ... and {failed['count'] - 5} more (up to 200 listed with --json)")
    http = result.config.get("http")
    if http:
        lines.append(f"HTTP requests {http['requests']}, retries {http['retries']}")
    return "\n".join(lines)
