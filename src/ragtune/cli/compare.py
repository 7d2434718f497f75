"""ragtune compare: N systems against a baseline, question by question."""

from __future__ import annotations

from ._common import int_in


def cmd_compare(args) -> int:
    from ..evaluate.compare import compare

    golden = corpus = None
    if args.golden:
        from ..golden import load_golden

        golden = load_golden(args.golden, split=args.split)
    if args.corpus:
        from ..corpus import load_corpus

        corpus = load_corpus(args.corpus)
    metrics = [m.strip() for ms in args.metric or ["recall@10"] for m in ms.split(",") if m.strip()]
    report = compare(args.runs, golden, baseline=args.baseline, metrics=metrics, test=args.test,
                     correction=args.correction, samples=args.samples, seed=args.seed, corpus=corpus)
    if args.out:
        report.write(args.out)
    print(report.to_json() if args.json else report.to_text() + (f"\n\nwrote {args.out}" if args.out else ""))
    return 0


def add(sub) -> None:
    p = sub.add_parser("compare", help="compare systems with a baseline question by question (paired tests)")
    p.add_argument("runs", nargs="+", help="eval --out JSON files, sweep folders/results.json, TREC run files "
                                           "(with --golden); the first is the baseline unless --baseline says")
    p.add_argument("--baseline", help="the baseline's name (a file stem or a sweep label)")
    p.add_argument("--metric", action="append", help="metric(s), repeat or comma-separate (default recall@10)")
    p.add_argument("--golden", help="golden set to score TREC run files with")
    p.add_argument("--split", default=None)
    p.add_argument("--corpus", help="corpus to map TREC hits to anchors")
    p.add_argument("--test", default="randomization", help="randomization (default), bootstrap or t-test")
    p.add_argument("--correction", default="holm", help="holm (default), bonferroni or none")
    p.add_argument("--samples", type=int_in(1, 10_000_000), default=10000)
    p.add_argument("--seed", type=int_in(0), default=0)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--out", metavar="FILE", help="write the report: .md, .html or .json by the suffix")
    p.set_defaults(func=cmd_compare)
