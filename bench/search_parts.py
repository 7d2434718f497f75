"""Where a search trial's time goes, next to a grid configuration's: bench/search.py's FastAPI ``--bm25-only`` grid
and search, with wall-clock wrappers around the functions a trial and a configuration spend their time in (no
profiler: cProfile more than doubles this pure-Python work). Prints, for the grid and then the search, each part's
total seconds, calls and milliseconds a call.

    python bench/search_parts.py --metric mrr --out out/sp-new
    # an older ragtune, for a before/after: mkdir -p out/old-src && git archive REV src bench | tar -x -C out/old-src
    python bench/search_parts.py --metric mrr --out out/sp-old --src out/old-src

The run records' folder is deleted first; the on-disk chunk and BM25 caches are kept (both runs read them).
"""

from __future__ import annotations

import argparse
import collections
import functools
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared/datasets/fastapi_docs/md/docs/en/docs"))
    ap.add_argument("--golden", default=str(ROOT / "bench/golden/fastapi.jsonl"))
    ap.add_argument("--metric", default="mrr")
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--out", required=True)
    ap.add_argument("--src", default=str(ROOT), help="a ragtune tree (its src/ and bench/) to time instead")
    args = ap.parse_args()
    sys.path[:0] = [str(Path(args.src) / "src"), str(Path(args.src) / "bench")]
    import optuna.storages.journal._file as journal_file
    import search as bench  # bench/search.py: its grid and space
    from ragtune import load_corpus, load_golden
    from ragtune.pipeline import resources as res_mod
    from ragtune.sweep import Search, parse_grid, parse_space, run_grid, run_search
    from ragtune.sweep import runner, search as search_mod, space as space_mod

    spent: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()

    def wrap(owner, name):
        f = getattr(owner, name)
        label = f"{getattr(owner, '__name__', owner)}.{name}"

        @functools.wraps(f)
        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                spent[label] += time.perf_counter() - t0
                calls[label] += 1
        setattr(owner, name, timed)

    for owner, name in [(runner, "run_config"), (runner, "run_eval"), (runner, "build_pipeline"),
                        (runner, "time_searches"), (runner, "_write_atomic"), (search_mod, "run_sweep"),
                        (search_mod._Trials, "__call__"), (search_mod._Trials, "_partial"),
                        (search_mod, "run_eval"), (search_mod, "build_pipeline"), (space_mod.Space, "suggest"),
                        (journal_file.JournalFileBackend, "append_logs"), (res_mod.Resources, "_chunk"),
                        (res_mod, "_cached_bm25"), (search_mod, "summarize")]:
        wrap(owner, name)

    def show(what: str, wall: float) -> None:
        print(f"== {what}: {wall:.1f} s")
        for label, s in spent.most_common():
            print(f"  {label:50s} {s:7.2f} s {calls[label]:5d} calls {s / calls[label] * 1000:8.1f} ms")
        spent.clear()
        calls.clear()

    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    corpus, golden = load_corpus(args.corpus), load_golden(args.golden)
    settings = {"metric": args.metric, "k": [5, 10, 20], "holdout": 0.3, "seed": 0, "samples": 2000}
    lists = bench.GRIDS["bm25"]
    baseline = {k: v[0] for k, v in lists.items()}
    t0 = time.perf_counter()
    run_grid(corpus, golden, parse_grid({**settings, "baseline": baseline, "grid": lists}), out / "grid",
             show_progress=False)
    show("grid, 27 configurations", time.perf_counter() - t0)
    sgrid, space = parse_space({**settings, "baseline": baseline, "space": bench.SPACES["bm25"]})
    t0 = time.perf_counter()
    s = run_search(corpus, golden, Search(sgrid, space, sampler="tpe", trials=args.trials), out / "search",
                   show_progress=False)
    show(f"search, {args.trials} trials ({s.search['evaluated']} evaluated in full)", time.perf_counter() - t0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
