"""ragtune golden check/draft/review, ragtune anchors, ragtune chunk."""

from __future__ import annotations

import json
import time

from ..golden_draft import draft_golden_set
from ..options import add_flags, kwargs
from ._common import add_chunker_flags, add_output, emit, int_in, pipeline_config, write_jsonl


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

    draft_golden_set(load_corpus(args.corpus), **kwargs(draft_golden_set, args))
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

    rows = load_corpus(args.corpus).anchor_table(args.doc)
    return emit(args, rows, render_anchors(rows)) or 0


def cmd_chunk(args) -> int:
    from ..chunking import chunk_documents
    from ..corpus import load_corpus
    from ..progress import progress_iter
    from ..registry import CHUNKERS
    from ..render import chunk_record, render_chunking

    corpus = load_corpus(args.corpus)
    config = pipeline_config(args).resolved(corpus.kind)
    chunker, t0 = CHUNKERS.build(config.chunker, options=config.chunker_config()), time.perf_counter()
    chunks, parents = chunk_documents(progress_iter(corpus.documents, "chunking", enabled=True), chunker)
    elapsed = time.perf_counter() - t0
    rows = [chunk_record(c, "child" if parents else "chunk") for c in chunks] + [chunk_record(p, "parent") for p in parents]
    if args.json:  # JSON Lines: one record per chunk
        return print("\n".join(json.dumps(r, ensure_ascii=False) for r in rows)) or 0
    print(render_chunking(chunker, len(corpus), chunks, parents, elapsed, args.samples))
    if args.out:
        write_jsonl(args.out, rows)
        print(f"\nwrote {len(rows)} records to {args.out}")
    return 0


def add(sub) -> None:
    golden = sub.add_parser("golden", help="golden set tools").add_subparsers(dest="golden_command", required=True)
    p = golden.add_parser("check", help="validate a golden set against a corpus")
    p.add_argument("--corpus", required=True)
    p.add_argument("--golden", required=True)
    p.add_argument("--split", default=None)
    add_output(p, "the report")
    p.set_defaults(func=cmd_golden_check)

    p = golden.add_parser("draft", help="propose draft questions per section with an LLM (review them next)")
    p.add_argument("--corpus", required=True)
    add_flags(p, draft_golden_set)
    p.set_defaults(func=cmd_golden_draft)

    p = golden.add_parser("review", help="accept, edit or reject draft questions in the terminal")
    p.add_argument("drafts", help="the draft file (`ragtune golden draft --out`)")
    p.add_argument("--out", required=True, metavar="FILE", help="where accepted questions go (appended)")
    p.set_defaults(func=cmd_golden_review)

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
