"""The ``ragtune`` command line: a thin shell over the public API.

Exit codes: 0 success, 1 a check failed (``golden check``), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__
from .corpus import load_corpus
from .errors import ConfigError, RagtuneError
from .evaluate.render import render_eval
from .golden import check_golden, load_golden
from .pipeline import RETRIEVERS, Pipeline, run_eval
from .chunking import CHUNKERS


def _int_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers like 5,10,20, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"k values must be positive integers, got {text!r}")
    return values


def _add_pipeline_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--corpus", required=True, help="markdown/text folder, BEIR folder or corpus.jsonl")
    p.add_argument("--chunker", default="auto", choices=["auto", *CHUNKERS],
                   help="auto = section for markdown, document for BEIR and text (default: auto)")
    p.add_argument("--prefix", action=argparse.BooleanOptionalAction, default=None,
                   help="index 'Title > Heading path' before each chunk (default: on for BEIR, off otherwise)")
    p.add_argument("--retriever", default="bm25", choices=RETRIEVERS)
    p.add_argument("--k1", type=float, default=None, help="BM25 k1 (default 1.5)")
    p.add_argument("--b", type=float, default=None, help="BM25 b (default 0.75)")


def _pipeline(args: argparse.Namespace) -> Pipeline:
    corpus = load_corpus(args.corpus)
    options = {k: v for k, v in (("k1", args.k1), ("b", args.b)) if v is not None}
    return Pipeline.build(corpus, chunker=args.chunker, prefix=args.prefix, retriever=args.retriever,
                          retriever_options=options)


def _write_json(path: str, data: Any) -> None:
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False)
            f.write("\n")
    except OSError as e:
        raise ConfigError(f"cannot write {path}: {e.strerror or e}") from None


def cmd_eval(args: argparse.Namespace) -> int:
    pipeline = _pipeline(args)
    golden = load_golden(args.golden, split=args.split)
    result = run_eval(pipeline, golden, ks=args.k, depth=args.depth, show_progress=True)
    print(render_eval(result, failures=args.failures))
    if args.json:
        try:
            result.to_json(args.json)
        except OSError as e:
            raise ConfigError(f"cannot write {args.json}: {e.strerror or e}") from None
        print(f"\nwrote {args.json}")
    return 0


def cmd_golden_check(args: argparse.Namespace) -> int:
    corpus = load_corpus(args.corpus)
    golden = load_golden(args.golden, split=args.split)
    report = check_golden(golden, corpus)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        return 0 if report.ok else 1
    s = report.summary
    if not report.ok:
        print(f"{len(report.problems)} problem(s) in {golden.source}:")
        for p in report.problems:
            print(f"- {p.message}")
        return 1
    tags = ", ".join(f"{t} {n}" for t, n in s["tags"].items()) or "none"
    print(f"ok: {s['questions']} questions ({s['answerable']} answerable, {s['unanswerable']} unanswerable), "
          f"{s['relevant_anchors']} relevant anchors, all found in {len(corpus)} documents")
    print(f"tags: {tags}")
    return 0


def cmd_anchors(args: argparse.Namespace) -> int:
    corpus = load_corpus(args.corpus)
    docs = [corpus[args.doc]] if args.doc else list(corpus)
    rows = []
    for d in docs:
        rows.append({"anchor": d.id, "title": d.title, "heading_path": []})
        rows.extend({"anchor": s.anchor, "title": s.title, "heading_path": list(s.heading_path)} for s in d.sections)
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        for r in rows:
            indent = "  " * len(r["heading_path"])
            print(f"{indent}{r['anchor']}  ({r['title']})")
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    pipeline = _pipeline(args)
    ranking = pipeline.retriever.search(args.query, k=args.k)
    if args.json:
        print(json.dumps(ranking.to_dict(), indent=2, ensure_ascii=False))
        return 0
    if not ranking.hits:
        print("no results (no query term occurs in the corpus)")
    for i, h in enumerate(ranking.hits, start=1):
        snippet = " ".join(h.chunk.text.split())[:100]
        print(f"{i:>3}. {h.score:7.3f}  {h.chunk.anchor}\n       {snippet}")
    print(f"({sum(ranking.timings.values()) * 1000:.1f} ms)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragtune", description="Measure and tune RAG retrieval.")
    parser.add_argument("--version", action="version", version=f"ragtune {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("eval", help="evaluate retrieval on a golden set")
    _add_pipeline_args(p)
    p.add_argument("--golden", required=True, help="golden set (.jsonl, .yaml) or a BEIR folder with --split")
    p.add_argument("--split", default=None, help="BEIR qrels split (e.g. test)")
    p.add_argument("--k", type=_int_list, default=[5, 10, 20], help="cutoffs, comma-separated (default 5,10,20)")
    p.add_argument("--depth", type=int, default=100, help="chunks retrieved per question (default 100)")
    p.add_argument("--failures", type=int, default=5, help="worst failures to print (default 5)")
    p.add_argument("--json", metavar="FILE", help="write the full result as JSON")
    p.set_defaults(func=cmd_eval)

    g = sub.add_parser("golden", help="golden set tools")
    gsub = g.add_subparsers(dest="golden_command", required=True)
    p = gsub.add_parser("check", help="validate a golden set against a corpus")
    p.add_argument("--corpus", required=True)
    p.add_argument("--golden", required=True)
    p.add_argument("--split", default=None)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_golden_check)

    p = sub.add_parser("anchors", help="list the anchors of a corpus")
    p.add_argument("--corpus", required=True)
    p.add_argument("--doc", default=None, help="only this document")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_anchors)

    p = sub.add_parser("search", help="search a corpus")
    _add_pipeline_args(p)
    p.add_argument("query")
    p.add_argument("-k", type=int, default=10)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_search)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except RagtuneError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
