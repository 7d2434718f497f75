"""ragtune search, ragtune answer."""

from __future__ import annotations

import os
import sys

from .render import render_answer, render_search
from ._common import K, add_output, add_pipeline_flags, emit, filters, load_pipeline


def cmd_search(args) -> int:
    from ..retrieve.base import check_query

    query, flt = check_query(args.query), filters(args)
    pipeline = load_pipeline(args)
    warm_s = pipeline.warm_up()  # a model load is reported apart, not as the search's time
    ranking = pipeline.retriever.search(query, k=args.k, filters=flt)
    return emit(args, {**ranking.to_dict(), "warm_up_ms": warm_s * 1000.0}, render_search(ranking, warm_s))


def cmd_answer(args) -> int:
    from ..answer import answer_question, make_generator
    from ..answer.abstain import answer_gate
    from ..serve.telemetry import answer_log_fields, log_answer

    generator, flt = make_generator(args.generator), filters(args)
    pipeline = load_pipeline(args)
    gate = answer_gate(args.gate, pipeline.retriever, pipeline.corpus, k=args.k, filters=flt,
                       pipeline=getattr(pipeline.config, "label", None))  # a threshold, or a learned gate's file
    ans, ranking = answer_question(pipeline.retriever, args.query, generator, k=args.k, filters=flt, gate=gate,
                                   documents=pipeline.corpus)
    emit(args, ans.to_dict(), render_answer(ans))  # the answer first: the log can never cost it
    log_path = None if args.no_log else (args.log or (os.path.join(args.store, "telemetry.sqlite") if args.store else None))
    if log_path:
        log_answer(log_path, stderr=sys.stderr, **answer_log_fields(ans, ranking, flt, pipeline.version))
    return 0


def add(sub) -> None:
    for name, func, k, what in (("search", cmd_search, 10, "results"), ("answer", cmd_answer, 5, "contexts")):
        p = sub.add_parser(name, help=f"{name} a question over a corpus or store" + (", with citations" * (k == 5)))
        add_pipeline_flags(p)
        p.add_argument("query")
        p.add_argument("-k", "--k", type=K, default=k, help=f"{what} to retrieve (default {k})")
        add_output(p)
        p.set_defaults(func=func)
    p.add_argument("--generator", default="extractive", help="extractive (offline), anthropic[:model], openai:<model>")
    p.add_argument("--gate", metavar="T|FILE", help="answer not_found below this top retrieval score (see calibrate), "
                   "or by a learned gate: the JSON file calibrate --learned FILE wrote")
    p.add_argument("--log", help="telemetry log to append to (default with --store: STORE/telemetry.sqlite)")
    p.add_argument("--no-log", action="store_true", dest="no_log", help="do not log the answer")
