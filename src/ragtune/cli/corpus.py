"""ragtune golden check/draft/review, ragtune anchors, ragtune chunk."""

from __future__ import annotations

import json
import time

from ._common import add_chunker_flags, add_output, emit, finite_float, int_in, pipeline_config, write_jsonl


def cmd_golden_check(args) -> int:
    from ..corpus import load_corpus
    from ..golden import check_golden, load_golden
    from ..render import render_golden_report

    corpus = load_corpus(args.corpus)
    report = check_golden(load_golden(args.golden, split=args.split, strict=False), corpus)
    text = render_golden_report(report, args.golden, len(corpus))
    if report.summary.get("drafts"):
        text += (f"\ndrafts: {report.summary['drafts']} (never scored until accepted: "
                 f"ragtune golden review {args.golden} --out accepted.jsonl)")
    emit(args, report.to_dict(), text)
    return 0 if report.ok else 1


def cmd_golden_draft(args) -> int:
    from ..corpus import load_corpus
    from ..golden_draft import KINDS, DraftLLM, draft_golden, draft_units, estimate_draft_cost, write_drafts

    llm = DraftLLM(args.generator, base_url=args.base_url)  # checks the name before any work
    units = draft_units(load_corpus(args.corpus), per_section=args.per_section, limit=args.limit,
                        kinds=[k.strip() for k in args.kinds.split(",")] if args.kinds else KINDS)
    est = estimate_draft_cost(units, generator=llm.name, price_in=args.price_in, price_out=args.price_out)
    print(f"estimate: {est['calls']} calls to {llm.name} ({est['sections']} sections, {est['questions']} questions), "
          f"about {est['input_tokens']:,} input and {est['output_tokens']:,} output tokens"
          + (f", ${est['cost']:.4f}" if est["cost"] else " (give --price-in/--price-out for a cost in $)"))
    if args.dry_run:
        return 0
    result = draft_golden(units, llm, max_overlap=args.max_overlap, drop_copies=args.drop_copies)
    write_drafts(result.items, args.out)
    d = result.to_dict()
    tags = ", ".join(f"{k} {n}" for k, n in d["tags"].items() if n)
    print(f"wrote {d['drafts']} draft question(s) to {args.out} ({tags or 'none'}); {d['flagged']} flagged as copying "
          f"the section, {d['dropped']} dropped; {d['usage'].get('calls', 0)} calls, "
          f"{d['usage'].get('input_tokens', 0):,} input and {d['usage'].get('output_tokens', 0):,} output tokens")
    if result.failed:
        print(f"no readable questions for {len(result.failed)} section(s): {', '.join(result.failed[:10])}")
    print(f"next: ragtune golden review {args.out} --out golden.jsonl")
    return 0


def cmd_golden_review(args) -> int:
    from ..golden_draft import review_drafts

    c = review_drafts(args.drafts, args.out)
    print(f"\n{c['accepted']} accepted ({c['edited']} edited), {c['rejected']} rejected, {c['left']} left for later; "
          f"wrote {c['accepted'] + c['passed']} question(s) to {args.out}")
    return 0


def cmd_anchors(args) -> int:
    from ..corpus import load_corpus
    from ..render import render_anchors

    corpus = load_corpus(args.corpus)
    rows = []
    for d in ([corpus[args.doc]] if args.doc else list(corpus)):
        rows.append({"anchor": d.id, "title": d.title, "heading_path": []})
        rows.extend({"anchor": s.anchor, "title": s.title, "heading_path": list(s.heading_path)} for s in d.sections)
    emit(args, rows, render_anchors(rows))
    return 0


def cmd_chunk(args) -> int:
    from ..chunking import chunk_documents
    from ..corpus import load_corpus
    from ..progress import progress_iter
    from ..registry import CHUNKERS
    from ..render import chunk_record, render_chunking

    corpus = load_corpus(args.corpus)
    config = pipeline_config(args).resolved(corpus.kind)
    chunker = CHUNKERS.build(config.chunker, options=config.chunker_config())
    t0 = time.perf_counter()
    chunks, parents = chunk_documents(progress_iter(corpus.documents, "chunking", enabled=True), chunker)
    elapsed = time.perf_counter() - t0
    rows = [chunk_record(c, "child" if parents else "chunk") for c in chunks] + [chunk_record(p, "parent") for p in parents]
    if args.json:  # JSON Lines: one record per chunk
        print("\n".join(json.dumps(r, ensure_ascii=False) for r in rows))
        return 0
    print(render_chunking(chunker, len(corpus), chunks, parents, elapsed, args.samples))
    if args.out:
        write_jsonl(args.out, rows)
        print(f"\nwrote {len(rows)} records to {args.out}")
    return 0


def add(sub) -> None:
    p_golden = sub.add_parser("golden", help="golden set tools").add_subparsers(dest="golden_command", required=True)
    p = p_golden.add_parser("check", help="validate a golden set against a corpus")
    p.add_argument("--corpus", required=True)
    p.add_argument("--golden", required=True)
    p.add_argument("--split", default=None)
    add_output(p, "the report")
    p.set_defaults(func=cmd_golden_check)

    d = p_golden.add_parser("draft", help="propose draft questions per section with an LLM (review them next)")
    d.add_argument("--corpus", required=True)
    d.add_argument("--generator", required=True, help="anthropic, anthropic:<model> or openai:<model>")
    d.add_argument("--out", required=True, metavar="FILE", help="the draft golden set (JSONL)")
    d.add_argument("--per-section", type=int_in(0, 20), default=2, dest="per_section",
                   help="paraphrase questions per section (default 2)")
    d.add_argument("--kinds", default=None, help="comma-separated kinds to ask (default all: paraphrase,identifier,"
                                                 "multi-hop,near-duplicate,unanswerable)")
    d.add_argument("--limit", type=int_in(1, 1_000_000), default=None, help="draft from the first N sections only")
    d.add_argument("--max-overlap", type=finite_float, default=0.5, dest="max_overlap",
                   help="flag questions sharing more than this share of content words with the section's heading "
                        "and first sentence (default 0.5)")
    d.add_argument("--drop-copies", action="store_true", dest="drop_copies", help="drop flagged questions instead")
    d.add_argument("--base-url", default=None, dest="base_url", help="the API's base URL (default: the provider's)")
    d.add_argument("--price-in", type=finite_float, default=0.0, dest="price_in", help="$ per million input tokens")
    d.add_argument("--price-out", type=finite_float, default=0.0, dest="price_out", help="$ per million output tokens")
    d.add_argument("--dry-run", action="store_true", dest="dry_run", help="print the cost estimate and stop")
    d.set_defaults(func=cmd_golden_draft)

    r = p_golden.add_parser("review", help="accept, edit or reject draft questions in the terminal")
    r.add_argument("drafts", help="the draft file (`ragtune golden draft --out`)")
    r.add_argument("--out", required=True, metavar="FILE", help="where accepted questions go (appended)")
    r.set_defaults(func=cmd_golden_review)

    p = sub.add_parser("anchors", help="list the anchors of a corpus")
    p.add_argument("--corpus", required=True)
    p.add_argument("--doc", default=None, help="only this document")
    add_output(p, "the anchors")
    p.set_defaults(func=cmd_anchors)

    p = sub.add_parser("chunk", help="chunk a corpus and show what came out")
    p.add_argument("--corpus", required=True)
    add_chunker_flags(p)
    p.add_argument("--samples", type=int_in(0, 10_000), default=3, help="sample chunks to print (default 3)")
    add_output(p, "one record per chunk (JSON Lines)")
    p.set_defaults(func=cmd_chunk)
