"""ragtune search, ragtune answer."""

from __future__ import annotations

import os
import sys

from ._common import K, add_pipeline_flags, emit, filters, finite_float, int_list, load_pipeline
from ..errors import ConfigError


def _query(text: str) -> str:
    if not text.strip():
        raise ConfigError("the query is empty; pass the question to search for, e.g. ragtune search --corpus docs/ "
                          "\"refund window\"")
    return text


def cmd_search(args) -> int:
    from ..render import render_search

    query, flt = _query(args.query), filters(args)
    ranking = load_pipeline(args).retriever.search(query, k=args.k, filters=flt)
    emit(args, ranking.to_dict(), render_search(ranking))
    return 0


def cmd_answer(args) -> int:
    from ..answer import ConfidenceGate, answer_question, make_generator
    from ..render import render_answer

    query, flt = _query(args.query), filters(args)
    generator = make_generator(args.generator)
    pipeline = load_pipeline(args)
    ans, ranking = answer_question(pipeline.retriever, query, generator, k=args.k, filters=flt,
                                   gate=ConfidenceGate(args.gate) if args.gate is not None else None)
    emit(args, ans.to_dict(), render_answer(ans))  # the answer first: the log can never cost it
    log_path = None if args.no_log else (args.log or (os.path.join(args.store, "telemetry.sqlite") if args.store else None))
    if log_path:
        from ..serve.telemetry import log_answer

        log_answer(log_path, stderr=sys.stderr, query=query, outcome=ans.outcome, reason=ans.reason, filters=flt,
                   version=pipeline.version, latency_ms=ans.latency_s * 1000,
                   retrieved=[{"anchor": h.chunk.anchor, "score": h.score} for h in ranking.hits])
    return 0


def add(sub) -> None:
    for name, helptext in (("search", "search a corpus or store"), ("answer", "answer a question, with citations")):
        p = sub.add_parser(name, help=helptext)
        add_pipeline_flags(p)
        p.add_argument("query")
        p.add_argument("-k", "--k", type=K, default=10 if name == "search" else 5,
                       help="results to return" if name == "search" else "contexts given to the generator (default 5)")
        p.add_argument("--candidates", type=int_list, help="with --rerank: shortlist size (default 50)")
        p.add_argument("--json", action="store_true", help="print the result as JSON")
        p.add_argument("--out", metavar="FILE", help="write the result as JSON to FILE")
        p.set_defaults(func=cmd_search if name == "search" else cmd_answer)
    p.add_argument("--generator", default="extractive", help="extractive (offline), anthropic[:model], openai:<model>")
    p.add_argument("--gate", type=finite_float, help="answer not_found below this top retrieval score (see calibrate)")
    p.add_argument("--log", help="append the answer to this telemetry log (default with --store: STORE/telemetry.sqlite)")
    p.add_argument("--no-log", action="store_true", dest="no_log", help="do not log the answer")
