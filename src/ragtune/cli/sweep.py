"""ragtune sweep, ragtune compare."""

from __future__ import annotations

import json
import sys

from ..corpus import load_corpus
from ..evaluate.compare import compare
from ..evaluate.match import MatchOptions
from ..external.files import load_golden_or_qrels
from ..golden import load_golden
from .options import add_flags, add_ray_flags, kwargs, sweep_executor
from ..sweep import load_plan, log_to_mlflow, mlflow_uri, sweep
from .render import render_compare, render_plan
from ._common import command, int_in, redact_url


def cmd_sweep(args) -> int:
    plan = load_plan(args.grid, **kwargs(load_plan, args))  # a grid, or a search of a space: validated first
    uri = None if args.mlflow is None else mlflow_uri(args.out, args.mlflow)  # no mlflow: fail before the sweep
    golden, corpus = load_golden(args.golden, split=args.split), load_corpus(args.corpus)
    plan = plan.resolved(corpus.kind)
    print(render_plan(plan, len(golden), args.out), file=sys.stderr)
    if args.dry_run:  # (--out is the sweep's folder here: output goes to stdout only)
        print(plan.listing(as_json=args.json))
        return 0
    result = sweep(corpus, golden, plan, args.out, show_progress=True, executor=sweep_executor(args), **kwargs(sweep, args))
    print(json.dumps(result.to_dict(), indent=2, default=str) if args.json else result.table(limit=args.top)
          + f"\n\nwrote {args.out}/results.json, {args.out}/recommended.toml and {args.out}/report.html")
    # a tracker that fails raises TrackingError: exit status 3, the sweep's results kept
    if uri: print(f"mlflow: parent run {log_to_mlflow(args.out, result=result, uri=uri)} at {redact_url(uri)}", file=sys.stderr)
    return 0


def cmd_compare(args) -> int:
    metrics = [m.strip() for ms in args.metric or ["recall@10"] for m in ms.split(",") if m.strip()]
    report = compare(args.runs, load_golden_or_qrels(args.golden, split=args.split) if args.golden else None,
                     metrics=metrics, corpus=load_corpus(args.corpus) if args.corpus else None,
                     options=MatchOptions(**kwargs(MatchOptions, args)), **kwargs(compare, args))
    if args.out:
        report.write(args.out)
    print(report.to_json() if args.json else render_compare(report, full=args.all, out=args.out))
    return 0


def add(sub) -> None:
    p = command(sub, "sweep", cmd_sweep, "run a grid of chunking x retrieval configurations, or search a space",
                inputs="corpus golden split")
    p.add_argument("--grid", required=True, help="grid file, or a space file to --search (.toml or .yaml)")
    p.add_argument("--out", required=True, help="output folder: runs/, results.json, report.html (rerun to resume)")
    for target in (load_plan, sweep): add_flags(p, target)  # --metric, --holdout, --folds, --search, ...; --pool-sample
    p.add_argument("--mlflow", nargs="?", const="", metavar="URI", help="log runs to MLflow (default: OUT/mlruns)")
    p.add_argument("--top", type=int_in(1), default=None, help="rows of the ranked table to print (default all)")
    p.add_argument("--dry-run", action="store_true", help="validate and list the configurations, run nothing")
    p.add_argument("--json", action="store_true", help="print results.json on standard output")
    add_ray_flags(p)

    p = command(sub, "compare", cmd_compare, "compare systems with a baseline question by question (paired tests)",
                inputs="golden? split corpus?")
    p.add_argument("runs", nargs="+", help="eval --out JSON files, sweep folders/results.json, or run files "
                                           "eval --run reads (TREC, ranx JSON, JSONL; with --golden); the first "
                                           "is the baseline unless --baseline says")
    p.add_argument("--metric", action="append", help="metric(s), repeat or comma-separate (default recall@10)")
    add_flags(p, compare)
    add_flags(p.add_argument_group("run files: how hits match the corpus (as eval --run)"), MatchOptions)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--all", action="store_true", help="print every table after the digest (best, what is "
                                                      "significant, what it takes to tell), not the digest alone")
    p.add_argument("--out", metavar="FILE", help="write the report: .md, .html or .json by the suffix")
