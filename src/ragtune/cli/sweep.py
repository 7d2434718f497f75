"""ragtune sweep."""

from __future__ import annotations

import json
import sys

from ._common import int_in


def cmd_sweep(args) -> int:
    from ..corpus import load_corpus
    from ..golden import load_golden
    from ..sweep import load_grid, sweep

    grid = load_grid(args.grid, metric=args.metric)
    golden = load_golden(args.golden, split=args.split)
    corpus = load_corpus(args.corpus)
    grid = grid.resolved(corpus.kind)
    specs = grid.all_specs
    print(f"sweep: {len(specs)} configurations ({len(grid.specs)} in the grid"
          f"{'' if len(specs) == len(grid.specs) else ' + the baseline'}), metric {grid.metric}, "
          f"{len(golden)} questions; results in {args.out}", file=sys.stderr)
    if args.dry_run:  # (--out is the sweep's folder here, so output goes to stdout only)
        print(json.dumps([{"key": s.key, "label": s.label, "config": s.to_dict()} for s in specs], indent=2)
              if args.json else "\n".join(f"{s.key}  {s.label}" for s in specs))
        return 0
    result = sweep(corpus, golden, grid, args.out, show_progress=True)
    print(json.dumps(result.to_dict(), indent=2, default=str) if args.json else result.table(limit=args.top)
          + f"\n\nwrote {args.out}/results.json and {args.out}/report.html")
    return 0


def add(sub) -> None:
    p = sub.add_parser("sweep", help="run a grid of chunking x retrieval configurations")
    p.add_argument("--corpus", required=True)
    p.add_argument("--golden", required=True)
    p.add_argument("--split", default=None)
    p.add_argument("--grid", required=True, help="grid file (.toml or .yaml)")
    p.add_argument("--out", required=True, help="output folder: runs/, results.json, report.html (rerun to resume)")
    p.add_argument("--metric", help="rank and test on this metric (overrides the grid file), e.g. recall@10, mrr, ndcg@10")
    p.add_argument("--top", type=int_in(1), default=None, help="rows of the ranked table to print (default all)")
    p.add_argument("--dry-run", action="store_true", help="validate and list the configurations, run nothing")
    p.add_argument("--json", action="store_true", help="print results.json on standard output")
    p.set_defaults(func=cmd_sweep)
