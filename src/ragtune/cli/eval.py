"""ragtune eval, ragtune calibrate."""

from __future__ import annotations

import sys

from ..errors import ConfigError
from ._common import (K, add_output, add_pipeline_flags, emit, filters, finite_float, float_in, int_in, int_list,
                      load_pipeline)


def cmd_eval(args) -> int:
    from ..evaluate.evaluate import _finite
    from ..golden import load_golden
    from ..pipeline import compare_candidates, run_eval
    from ..render import render_answer_metrics, render_candidates, render_eval

    _check_gate_flags(args)
    if args.endpoint or args.run:
        return cmd_eval_external(args)
    golden = load_golden(args.golden, split=args.split)
    flt = filters(args)
    pipeline = load_pipeline(args)
    if args.answers and args.dry_run:
        from ..answer.evaluate import estimate_answer_cost, render_estimate

        est = estimate_answer_cost(pipeline.retriever, golden, generator=args.generator, judge=args.judge,
                                   k=args.answer_k, filters=flt, price_in=args.price_in, price_out=args.price_out)
        emit(args, est, render_estimate(est, args.price_in, args.price_out))
        return 0
    options = dict(ks=args.k, depth=args.depth, filters=flt, show_progress=True, k_unit=args.k_unit)
    result = run_eval(pipeline, golden, **options)
    table = None
    if args.rerank and args.candidates and len(args.candidates) > 1:
        table = compare_candidates(pipeline, golden, args.candidates, **options)
    answers = None
    if args.answers:
        from ..answer import ConfidenceGate, make_generator, make_judge
        from ..answer.evaluate import evaluate_answers

        judge = make_judge(args.judge, **({"price_in": args.price_in, "price_out": args.price_out}
                                          if args.judge != "heuristic" else {}))
        answers = evaluate_answers(pipeline.retriever, golden, pipeline.corpus, make_generator(args.generator),
                                   judge=judge, k=args.answer_k, gate=ConfidenceGate(args.gate) if args.gate is not None
                                   else "cv", filters=flt, show_progress=True)
    data = {**result.to_dict(), **({"candidates_table": table} if table else {}), **({"answers": answers} if answers else {})}
    text = render_eval(result, failures=args.failures)
    text += render_answer_metrics(answers) if answers else ""
    text += "\n" + render_candidates(table, args.rerank) if table else ""
    return _emit_gated(args, _finite(data), text)


def _check_gate_flags(args) -> None:
    """Before any searching: --update-baseline needs --baseline, and a baseline to compare with must exist."""
    from pathlib import Path

    if args.update_baseline and args.baseline is None:
        raise ConfigError("--update-baseline rewrites the file named by --baseline FILE; pass both")
    if args.baseline and not args.update_baseline and not Path(args.baseline).is_file():
        raise ConfigError(f"{args.baseline}: no baseline there; create it once from a run you trust with "
                          "--update-baseline, and commit it")


def _emit_gated(args, data, text) -> int:
    """Print the result; with --baseline, judge it with the regression gate (exit 1 on a real drop)."""
    from ..evaluate.gate import regression_gate, write_baseline

    if args.update_baseline or args.baseline is None:
        emit(args, data, text)
        if args.update_baseline:
            print(f"baseline written: {write_baseline(data, args.baseline)}", file=sys.stderr)
        return 0
    gate = regression_gate(data, args.baseline, max_drop=args.max_drop, significance=args.significance,
                           metrics=args.metric)
    for path, write in ((args.junit, gate.write_junit), (args.summary, gate.write_summary)):
        if path:
            write(path)
    emit(args, {**data, "gate": gate.to_dict()}, text + "\n\n" + gate.to_text())
    if args.json:
        print(gate.to_text(), file=sys.stderr)
    return gate.exit_code


def cmd_eval_external(args) -> int:
    """--endpoint URL or --run FILE: an outside retriever's rankings, scored like ragtune's own."""
    from ..evaluate.evaluate import _finite
    from ..external.cli import evaluate_outside
    from ..render import render_eval

    result, summary = evaluate_outside(args)
    return _emit_gated(args, _finite(result.to_dict()), render_eval(result, failures=args.failures) + "\n"
                       + summary)


def cmd_calibrate(args) -> int:
    from ..answer.gate import calibrate_retriever
    from ..golden import load_golden
    from ..render import render_calibration

    golden = load_golden(args.golden, split=args.split)
    flt = filters(args)
    pipeline = load_pipeline(args)
    cal = calibrate_retriever(pipeline.retriever, golden, pipeline.corpus, k=args.k, filters=flt, show_progress=True)
    emit(args, {**cal.to_dict(), "config": pipeline.describe(), "k": args.k},
         render_calibration(cal, pipeline.retriever.name))
    return 0


def add(sub) -> None:
    p = sub.add_parser("eval", help="evaluate retrieval on a golden set")
    add_pipeline_flags(p)
    p.add_argument("--golden", required=True, help="golden set (.jsonl, .yaml) or a BEIR folder with --split")
    p.add_argument("--split", default=None, help="BEIR qrels split (e.g. test)")
    p.add_argument("-k", "--k", type=int_list, default=[5, 10, 20], help="cutoffs, comma-separated (default 5,10,20)")
    p.add_argument("--depth", type=int_in(1, 10_000), default=100, help="chunks retrieved per question (default 100)")
    p.add_argument("--k-unit", choices=("chunk", "doc"), default=None, dest="k_unit",
                   help="what top-k counts: chunk, or doc (distinct documents, as BEIR figures); default: doc for "
                        "document-level golden sets (every anchor a bare document id), chunk otherwise")
    p.add_argument("--candidates", type=int_list, help="with --rerank: shortlist sizes to compare, e.g. 20,50,100")
    a = p.add_argument_group("answers")
    a.add_argument("--answers", action="store_true", help="also generate and judge answers for every question")
    a.add_argument("--generator", default="extractive", help="extractive (offline), anthropic[:model], openai:<model>")
    a.add_argument("--judge", default="heuristic", help="heuristic (offline), openai:<model> or anthropic:<model>")
    a.add_argument("--answer-k", type=K, default=5, dest="answer_k", help="contexts per answer (default 5)")
    a.add_argument("--gate", type=finite_float, help="abstain below this top retrieval score (see calibrate); default: "
                   "a gate cross-validated on the golden set (5 folds)")
    a.add_argument("--price-in", type=finite_float, default=0.0, dest="price_in", help="LLM: $ per million input tokens")
    a.add_argument("--price-out", type=finite_float, default=0.0, dest="price_out", help="LLM: $ per million output tokens")
    a.add_argument("--dry-run", action="store_true", dest="dry_run",
                   help="estimate the LLM calls, tokens and cost of --answers (retrieval only), then stop")
    o = p.add_argument_group("outside retrievers (docs/guide/external-retrievers.md)")
    o.add_argument("--endpoint", metavar="URL", help="evaluate a search service over HTTP instead of a ragtune pipeline")
    o.add_argument("--run", metavar="FILE", help="score a run file: TREC (qid Q0 doc rank score tag), ragtune JSON or JSONL")
    o.add_argument("--body", metavar="JSON", help='request body template, default {"query": "{query}", "k": "{k}"}')
    o.add_argument("--http-method", dest="http_method", choices=["GET", "POST"], help="default: GET when the URL holds {query}, else POST")
    o.add_argument("--hits-path", default="hits", dest="hits_path", metavar="JMESPATH",
                   help="where the hit list is in the answer (default hits)")
    o.add_argument("--hit-field", dest="hit_field", metavar="JMESPATH",
                   help="what identifies a hit (default: its anchor/id/path/url/text fields)")
    o.add_argument("--header", action="append", default=[], metavar="NAME=ENVVAR",
                   help="send header NAME with the value of environment variable ENVVAR (repeatable; never printed)")
    o.add_argument("--concurrency", type=int_in(1, 256), default=1, help="questions in flight at once (default 1)")
    o.add_argument("--timeout", type=finite_float, default=30.0, help="seconds per request (default 30)")
    o.add_argument("--retries", type=int_in(0, 20), default=3, help="retries on 429/5xx/timeouts (default 3)")
    o.add_argument("--base-url", dest="base_url", metavar="URL", help="cut off hit URLs to get corpus paths")
    o.add_argument("--path-prefix", dest="path_prefix", metavar="PREFIX", help="cut off hit paths to get corpus paths")
    o.add_argument("--no-fuzzy", action="store_false", dest="fuzzy", help="locate text hits exactly or normalised only")
    g = p.add_argument_group("regression gate for CI (docs/guide/ci-gate.md)")
    g.add_argument("--baseline", metavar="FILE", help="eval JSON to compare with: exit 1 when a metric really dropped")
    g.add_argument("--max-drop", type=float_in(0.0, 1e9), default=0.02, dest="max_drop",
                   help="tolerated drop in a metric's units (default 0.02)")
    g.add_argument("--significance", type=float_in(1e-9, 1.0), default=0.05,
                   help="a drop fails only when its corrected p is below this (default 0.05; 1: tolerance alone)")
    g.add_argument("--metric", action="append", metavar="NAME", help="metric to gate (repeatable; default recall@10, "
                   "mrr, ndcg@10)")
    g.add_argument("--junit", metavar="FILE", help="write the verdict as JUnit XML (one testcase per metric)")
    g.add_argument("--summary", metavar="FILE", help="write the verdict as markdown (for a CI job page)")
    g.add_argument("--update-baseline", action="store_true", dest="update_baseline",
                   help="write this run to --baseline FILE and exit 0")
    p.add_argument("--failures", type=int_in(0, 10_000), default=5, help="worst failures to print (default 5)")
    add_output(p, "every metric and per-question detail")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("calibrate", help="pick the abstention threshold from a golden set")
    add_pipeline_flags(p)
    p.add_argument("--golden", required=True)
    p.add_argument("--split", default=None)
    p.add_argument("-k", "--k", type=K, default=5, help="contexts an answer would use (default 5)")
    p.add_argument("--candidates", type=int_list, help="with --rerank: shortlist size (default 50)")
    add_output(p, "the calibration and its curve")
    p.set_defaults(func=cmd_calibrate)
