"""ragtune eval, ragtune calibrate."""

from __future__ import annotations

import sys

from ..answer.evaluate import answer_golden, render_estimate
from ..answer.abstain import calibrate_learned, gate_value
from ..answer.gate import calibrate_retriever
from ..answer.gate_report import write_gate_report
from ..io import json_finite
from ..evaluate.added import added_note
from ..evaluate.gate import check_gate, ci_gate
from ..errors import ConfigError
from ..evaluate.match import MatchOptions
from ..external.outside import EndpointOptions, evaluate_outside, parse_header
from ..golden import load_golden
from ..registry import RERANKERS
from ..serve.telemetry import not_found_share
from .options import add_flags, kwargs, typed
from ..pipeline.evaluation import evaluate_reranking
from .render import (render_answer_metrics, render_calibration, render_candidates, render_eval, render_outside,
                     render_rerank_usage)
from ._common import K, add_pipeline_flags, command, emit, filters, float_in, int_in, int_list, load_pipeline

def cmd_eval(args) -> int:
    check_gate(args.baseline, args.update_baseline, args.metric)
    if args.endpoint or args.run:
        return cmd_eval_external(args)
    golden, flt = load_golden(args.golden, split=args.split, labels=args.labels), filters(args)
    gate = gate_value(args.gate)  # a threshold or a learned gate's file, read before the pipeline is built
    pipeline = load_pipeline(args)
    args.gate = gate_value(gate, getattr(pipeline.config, "label", None))  # fitted on this pipeline
    if args.dry_run and args.rerank and RERANKERS.get(args.rerank).calls_llm:  # its cost estimate; nothing is sent
        from ..rerank.llm import estimate_llm_rerank

        est = estimate_llm_rerank(pipeline, golden, filters=flt)
        return emit(args, est.to_dict(), est.summary())
    answers = answer_golden(pipeline.retriever, golden, pipeline.corpus, filters=flt, show_progress=True,
                            **kwargs(answer_golden, args)) if args.answers or args.dry_run else None
    if answers and "estimate" in answers:
        return emit(args, answers["estimate"], render_estimate(answers["estimate"], args.price_in or 0.0,
                                                               args.price_out or 0.0))
    result, extras = evaluate_reranking(pipeline, golden, candidates=args.candidates if args.rerank else None,
                                        budget_ms=args.budget_ms, ks=args.k, depth=args.depth, filters=flt,
                                        show_progress=True, k_unit=args.k_unit)
    added, note = added_note(result, golden)
    data = {**result.to_dict(), **({"answers": answers} if answers else {}), **extras, **added}
    text = render_eval(result, failures=args.failures) + note + (render_answer_metrics(answers) if answers else "")
    table, usage = extras.get("candidates_table"), extras.get("rerank_usage")
    extra = [render_candidates(table, args.rerank, args.budget_ms) if table else extras.get("rerank_warning"),
             render_rerank_usage(usage) if usage else None]
    return _emit_gated(args, json_finite(data), "\n".join([text, *[e.strip("\n") for e in extra if e]]))


def _estimated(args, data, text) -> tuple[dict, str]:
    """--pool-sample FILE: recall and precision estimated from the judged draws of a pool sample, 95% intervals."""
    from ..corpus import load_corpus
    from ..judgments.estimate import estimate_metrics
    from ..judgments.sample import read_pool_sample

    corpus = load_corpus(args.corpus) if getattr(args, "corpus", None) else None  # chunks cover holes by span
    est = estimate_metrics(data, load_golden(args.golden, split=args.split, labels=args.labels),
                           read_pool_sample(args.pool_sample), corpus=corpus)
    return {**data, "estimate": est.to_dict()}, f"{text}\n{est.summary()}"


def _emit_gated(args, data, text) -> int:
    """Print the result; with --baseline, judge it with the regression gate (exit 1 on a real drop). A baseline
    that is a run file is scored as eval --run would: golden set, corpus and matching options."""
    if getattr(args, "pool_sample", None):
        data, text = _estimated(args, data, text)
    from ..external.files import gate_inputs

    inputs = gate_inputs(None if args.update_baseline else args.baseline, args.golden, split=args.split,
                         corpus=getattr(args, "corpus", None), options=MatchOptions(**kwargs(MatchOptions, args)))
    gate = ci_gate(data, **inputs, **kwargs(ci_gate, args))
    if gate is None:
        emit(args, data, text)
        if args.update_baseline:
            print(f"baseline written: {args.baseline}", file=sys.stderr)
        return 0
    emit(args, {**data, "gate": gate.to_dict()}, text + "\n\n" + gate.to_text())
    if args.json:
        print(gate.to_text(), file=sys.stderr)
    return gate.exit_code


def cmd_eval_external(args) -> int:
    """--endpoint URL or --run FILE: an outside retriever's rankings, scored like ragtune's own."""
    if given := [f"--{n}" for n in ("store", "rerank", "retriever", "chunker", "embedder", "answers", "candidates")
                 if getattr(args, n, None)]:
        raise ConfigError(f"{', '.join(given)} configure a ragtune pipeline; with --endpoint or --run the retriever "
                          "is outside ragtune (drop them)")
    result = evaluate_outside(args.golden, **kwargs(evaluate_outside, args), split=args.split, corpus=args.corpus,
                              ks=args.k, depth=args.depth, filters=args.filter, labels=args.labels,
                              request=EndpointOptions(**kwargs(EndpointOptions, args), headers=dict(args.header)),
                              match=MatchOptions(**kwargs(MatchOptions, args)))
    added, note = added_note(result, load_golden(args.golden, split=args.split, labels=args.labels))
    return _emit_gated(args, json_finite({**result.to_dict(), **added}),
                       render_eval(result, failures=args.failures) + note + "\n" + render_outside(result))


def cmd_calibrate(args) -> int:
    golden, flt = load_golden(args.golden, split=args.split), filters(args)
    pipeline = load_pipeline(args)
    log = not_found_share(args.unanswerable_share_from) if args.unanswerable_share_from else None
    cal = calibrate_retriever(pipeline.retriever, golden, pipeline.corpus, k=args.k, filters=flt, show_progress=True,
                              **kwargs(calibrate_retriever, args, **({"unanswerable_share": log["share"]} if log
                                                                     else {})))
    data, text = {**cal.to_dict(), "config": pipeline.describe(), "k": args.k}, render_calibration(cal, pipeline.retriever.name, log)
    if args.learned:
        cmp = calibrate_learned(pipeline.retriever, golden, pipeline.corpus, k=args.k, filters=flt, show_progress=True,
                                pipeline=getattr(pipeline.config, "label", None))
        cmp.gate.save(args.learned)
        data["learned"] = cmp.to_dict()
        text += (f"\n\n{cmp.to_text()}\n\nlearned gate written: {args.learned}\n"
                 f"use it: ragtune eval ... --answers --gate {args.learned} --answer-k {args.k}, ragtune answer ... -k "
                 f"{args.k} --gate {args.learned}, ragtune serve ... --gate {args.learned} (the same pipeline options)")
    if args.report:
        write_gate_report(args.report, cal, retriever=pipeline.retriever.name, log=log)
    emit(args, json_finite({**data, **({"unanswerable_share_from": log} if log else {})}), text)
    return 0


def add(sub) -> None:
    p = command(sub, "eval", cmd_eval, "evaluate retrieval on a golden set", inputs="golden split",
                output="every metric and per-question detail")
    add_pipeline_flags(p)
    add_flags(p, load_golden, defaults={"labels": "human"})
    p.add_argument("-k", "--k", type=int_list, default=[5, 10, 20], help="cutoffs, comma-separated (default 5,10,20)")
    p.add_argument("--depth", type=int_in(1, 10_000), default=100, help="chunks retrieved per question (default 100)")
    p.add_argument("--k-unit", choices=("chunk", "doc"), default=None, dest="k_unit",
                   help="what top-k counts: chunk, or doc (distinct documents, as BEIR figures); default: doc for "
                        "document-level golden sets (every anchor a bare document id), chunk otherwise")
    p.add_argument("--budget-ms", type=float_in(1.0, 1e7), default=300.0, dest="budget_ms",
                   help="with several --candidates: the rerank p95 the verdict may spend (default 300)")
    p.add_argument("--failures", type=int_in(0, 10_000), default=5, help="worst failures to print (default 5)")
    p.add_argument("--pool-sample", metavar="FILE", help="a pool file with a judged sample (ragtune pool --sample N): "
                   "also estimate recall@k and precision@k from it, with 95%% intervals")
    a = p.add_argument_group("answers")
    a.add_argument("--answers", action="store_true", help="also generate and judge answers for every question")
    add_flags(a, answer_golden)
    o = p.add_argument_group("outside retrievers (docs/guide/external-retrievers.md)")
    for target in (evaluate_outside, EndpointOptions):
        add_flags(o, target)
    o.add_argument("--header", action="append", type=typed(parse_header), default=[], metavar="NAME=ENVVAR",
                   help="send header NAME with the value of environment variable ENVVAR (repeatable; never printed)")
    add_flags(o, MatchOptions)
    add_flags(p.add_argument_group("regression gate for CI (docs/guide/ci-gate.md)"), ci_gate)

    p = command(sub, "calibrate", cmd_calibrate, "pick the abstention threshold from a golden set",
                inputs="golden split", output="the calibration and its curve")
    add_pipeline_flags(p)
    p.add_argument("-k", "--k", type=K, default=5, help="contexts an answer would use (default 5)")
    add_flags(p, calibrate_retriever, skip=["unanswerable_share"])
    share = p.add_mutually_exclusive_group()
    add_flags(share, calibrate_retriever, only=["unanswerable_share"])
    share.add_argument("--unanswerable-share-from", metavar="LOG", help="the same, read from a serve telemetry log: "
                       "the share of its answers that were not_found")
    p.add_argument("--report", metavar="FILE.html", help="also write a page with the gate's precision-recall curve "
                   "and the chosen threshold")
    p.add_argument("--learned", metavar="FILE", help="also fit a learned gate (top score, margin, BM25/dense agreement, "
                   "rare-term coverage, section spread), compare it with the score threshold held out (5-fold "
                   "cross-validation) and write it to FILE, for eval --answers --gate FILE")
