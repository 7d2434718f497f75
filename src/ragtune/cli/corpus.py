"""ragtune golden check, ragtune anchors, ragtune chunk."""

from __future__ import annotations

import json
import time

from ._common import add_chunker_flags, add_output, emit, int_in, pipeline_config, write_jsonl


def cmd_golden_check(args) -> int:
    from ..corpus import load_corpus
    from ..golden import check_golden, load_golden
    from ..render import render_golden_report

    corpus = load_corpus(args.corpus)
    report = check_golden(load_golden(args.golden, split=args.split, strict=False), corpus)
    emit(args, report.to_dict(), render_golden_report(report, args.golden, len(corpus)))
    return 0 if report.ok else 1


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
    p = sub.add_parser("golden", help="golden set tools").add_subparsers(dest="golden_command", required=True)
    p = p.add_parser("check", help="validate a golden set against a corpus")
    p.add_argument("--corpus", required=True)
    p.add_argument("--golden", required=True)
    p.add_argument("--split", default=None)
    add_output(p, "the report")
    p.set_defaults(func=cmd_golden_check)

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
