"""ragtune golden check/draft/review, ragtune pool, ragtune corpus show, ragtune anchors, ragtune chunk."""

from __future__ import annotations

import json
import time

from ..corpus import load_corpus
from ..judgments import agreement, llm_labels, pool, ppi
from ..golden import check_golden, load_golden
from ..judgments.draft import draft_golden_set, review_drafts
from .options import add_flags, call, kwargs
from .render import chunk_record, render_anchors, render_document, render_chunking, render_golden_report, render_review
from ._common import add_chunker_flags, command, emit, int_in, pipeline_config, write_jsonl


def cmd_golden_check(args) -> int:
    corpus = load_corpus(args.corpus)
    report = check_golden(load_golden(args.golden, split=args.split, strict=False, labels="all"), corpus)
    return emit(args, report.to_dict(), render_golden_report(report, args.golden)) or int(not report.ok)


def cmd_golden_draft(args) -> int:
    draft_golden_set(load_corpus(args.corpus), **kwargs(draft_golden_set, args))
    return 0


def cmd_golden_review(args) -> int:
    return print(render_review(review_drafts(args.drafts, args.out), args.out)) or 0


def cmd_anchors(args) -> int:
    rows = load_corpus(args.corpus).anchor_table(args.doc)
    return emit(args, rows, render_anchors(rows)) or 0


def cmd_corpus_show(args) -> int:
    d = load_corpus(args.corpus).describe(args.doc)
    return emit(args, d, render_document(d, text=not args.sections_only)) or 0


def cmd_chunk(args) -> int:
    from ..chunking import chunk_documents
    from ..progress import progress_iter
    from ..registry import CHUNKERS

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
    command(golden, "check", cmd_golden_check, "validate a golden set against a corpus", output="the report",
            inputs="corpus golden split")
    add_flags(command(golden, "draft", cmd_golden_draft, "propose draft questions per section with an LLM (review "
                      "them next)", inputs="corpus"), draft_golden_set)
    add_flags(command(golden, "judge", call(llm_labels.judge_pool), "grade a pool's holes with an LLM"), llm_labels.judge_pool)
    add_flags(command(golden, "agreement", call(agreement.golden_agreement), "kappa between two label sets",
                      output="the agreement"), agreement.golden_agreement)
    add_flags(command(golden, "ppi", call(ppi.golden_ppi), "metrics filled by LLM labels, with prediction-powered "
                      "intervals from a people-judged sample", output="the estimates"), ppi.golden_ppi)
    p = command(golden, "review", cmd_golden_review, "accept, edit or reject draft questions in the terminal")
    p.add_argument("drafts", help="the draft file (`ragtune golden draft --out`)")
    p.add_argument("--out", required=True, metavar="FILE", help="where accepted questions go (appended)")
    add_flags(command(sub, "pool", call(pool.pool_runs), "pool the top k of runs: the sections nobody judged"), pool.pool_runs)
    corpus = sub.add_parser("corpus", help="look at a corpus as ragtune loads it").add_subparsers(
        dest="corpus_command", required=True)
    p = command(corpus, "show", cmd_corpus_show, "print a document's extracted text and its sections (to debug "
                "extraction)", output="the document", inputs="corpus")
    p.add_argument("doc", help="the document id (as `ragtune anchors` lists it)")
    p.add_argument("--sections-only", action="store_true", help="the sections without the text")
    p = command(sub, "anchors", cmd_anchors, "list the anchors of a corpus", output="the anchors", inputs="corpus")
    p.add_argument("--doc", default=None, help="only this document")
    p = command(sub, "chunk", cmd_chunk, "chunk a corpus and show what came out", inputs="corpus",
                output="one record per chunk (JSON Lines)")
    add_chunker_flags(p)
    p.add_argument("--samples", type=int_in(0, 10_000), default=3, help="sample chunks to print (default 3)")
