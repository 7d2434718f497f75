"""A TPE search of a space of >= 500 points against the best of a 27-configuration grid, both chosen on the same
selection questions and scored on the same held-out ones (issue 24's done-means).

    python bench/search.py --corpus ../shared/datasets/fastapi_docs/md/docs/en/docs \
        --golden bench/golden/fastapi.jsonl --metric recall@5 --out out/bench-search-fastapi
    python bench/search.py --corpus ../shared/datasets/scifact --golden ../shared/datasets/scifact --split test \
        --metric ndcg@10 --out out/bench-search-scifact
    python bench/search.py --corpus ../shared/datasets/scifact --golden ../shared/datasets/scifact --split test \
        --metric ndcg@10 --design sweep --cold --out out/bench-search-scifact-cold

The grid is chunker x size x retriever (3 x 3 x 3); for a BEIR corpus, whose documents are short abstracts kept
whole, hybrid retrieval's k1 x b x rrf_k (3 x 3 x 3) instead (GRIDS). The space is mostly retrieval-side (BM25
k1 and b, rrf_k, fusion weights, the retriever) over the grid's chunkings (and whole sections), prefix on, so that
it embeds no more than the grid does (plus sections): on 2 shared cores, embedding is most of the cost.
Both runs share the embedding cache; the grid runs first, so the search finds warm embeddings for the chunkings
the grid embedded (say so when quoting wall times). ``--design sweep`` is bench/sweep.py's 27-configuration
chunking grid (hybrid retrieval, baseline fixed 512/64), searched over a space of its chunkings x the retriever x
BM25's k1 x rrf_k x fusion weights; ``--cold`` gives each run a fresh cache folder of its own (embeddings,
chunkings, BM25 indexes), so neither is helped by the other: the cost a user with a new corpus pays. Prints one
JSON object: wall times, the space's size, the grid's and the search's choice on the selection questions, their
held-out scores with intervals, the optimism of each, and the paired test of the search's choice against the
grid's on the held-out questions.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ragtune import load_corpus, load_golden  # noqa: E402
from ragtune.embed.cache import EmbeddingCache  # noqa: E402
from ragtune.evaluate.significance import paired_test  # noqa: E402
from ragtune.sweep import Search, parse_grid, parse_space, run_grid, run_search  # noqa: E402
from sweep import GRID as SWEEP_GRID  # noqa: E402  (bench/sweep.py, this script's folder)

# 27 configurations each; the baseline is the grid's first point
GRIDS = {
    "markdown": {"chunker": ["fixed", "recursive", "markdown"], "size": [256, 512, 1024],
                 "retriever": ["bm25", "dense", "hybrid"]},
    # abstracts: chunk sizes past a few hundred tokens are whole documents, so the grid varies retrieval instead
    "beir": {"chunker": ["document"], "prefix": [True], "retriever": ["hybrid"],
             "k1": [0.9, 1.2, 1.5], "b": [0.5, 0.75, 0.9], "rrf_k": [30, 60, 90]},
}
# --bm25-only: no embedding at all (what finishes on 2 busy shared cores), chunking x BM25 parameters
GRIDS["bm25"] = {"chunker": ["fixed", "recursive", "markdown"], "size": [256, 512, 1024], "retriever": ["bm25"],
                 "k1": [0.9, 1.2, 1.5]}
GRIDS["sweep"] = SWEEP_GRID["grid"]
BASELINES = {"sweep": SWEEP_GRID["baseline"]}  # else the grid's first point
SPACES = {
    "markdown": {"chunker": ["fixed", "recursive", "markdown", "section"], "size": [256, 512, 1024],
                 "prefix": [True], "retriever": ["bm25", "dense", "hybrid"],
                 "k1": {"low": 0.6, "high": 2.0, "step": 0.2}, "b": {"low": 0.3, "high": 1.0, "step": 0.1},
                 "rrf_k": [20, 40, 60, 80, 100], "weights": [[1, 1], [1, 2], [2, 1]]},
    "beir": {"chunker": ["document"], "prefix": [True], "retriever": ["bm25", "dense", "hybrid"],
             "k1": {"low": 0.4, "high": 2.0, "step": 0.1}, "b": {"low": 0.2, "high": 1.0, "step": 0.05},
             "rrf_k": {"low": 10, "high": 120, "step": 10}, "weights": [[1, 1], [1, 2], [2, 1], [1, 3]]},
}
SPACES["sweep"] = {**SWEEP_GRID["grid"], "retriever": ["bm25", "dense", "hybrid"], "k1": [0.9, 1.2, 1.5],
                   "rrf_k": [30, 60, 90], "weights": [[1, 1], [1, 2], [2, 1]]}
SPACES["bm25"] = {"chunker": ["fixed", "recursive", "markdown", "section"], "size": {"low": 128, "high": 1024, "step": 64},
                  "overlap": [0, 32, 64], "prefix": [True, False], "retriever": ["bm25"],
                  "k1": {"low": 0.6, "high": 2.0, "step": 0.2}, "b": {"low": 0.3, "high": 1.0, "step": 0.1}}


def held(sel: dict) -> dict:
    keep = ("chosen_label", "selection_score", "held_out_score", "held_out_ci", "optimism", "baseline_held_out",
            "delta_vs_baseline", "p_vs_baseline", "selection_questions", "held_out_questions")
    return {k: sel[k] for k in keep if k in sel}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--split")
    ap.add_argument("--metric", default="recall@5")
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--prune-rungs", type=int, default=1, help="the search's --prune-rungs")
    ap.add_argument("--holdout", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--bm25-only", action="store_true", help="BM25 grid and space: nothing to embed")
    ap.add_argument("--design", choices=sorted(GRIDS), help="the grid and space (default: from the corpus)")
    ap.add_argument("--cold", action="store_true", help="a fresh cache folder for each run (OUT/*/cache)")
    ap.add_argument("--only", choices=["grid", "search"],
                    help="run only this part and save its cost (OUT/PART/cost.json), so that the grid and the search "
                         "can run side by side, each pinned to its own core (taskset -c N); a later run without "
                         "--only resumes both (nothing left to do) and reports the costs saved")
    args = ap.parse_args()
    corpus, golden = load_corpus(args.corpus), load_golden(args.golden, split=args.split)
    kind = args.design or ("bm25" if args.bm25_only else "beir" if corpus.kind not in ("markdown", "documents")
                           else "markdown")
    settings = {"metric": args.metric, "k": [5, 10, 20], "holdout": args.holdout, "seed": args.seed,
                "samples": 2000}
    lists = GRIDS[kind]
    baseline = BASELINES.get(kind) or {k: v[0] for k, v in lists.items()}
    grid = parse_grid({**settings, "baseline": baseline, "grid": lists})
    assert len(grid.specs) == 27, len(grid.specs)
    out = Path(args.out)
    cost = {}

    def timed(name, run):
        saved = out / name / "cost.json"
        resumed = args.only is None and saved.exists()  # run before with --only: nothing left to evaluate
        if not resumed:
            shutil.rmtree(out / name, ignore_errors=True)  # a measured run starts from an empty folder
        if args.cold:
            os.environ["RAGTUNE_CACHE_DIR"] = str(out / name / "cache")
        if resumed:
            result = run()
            cost[name] = json.loads(saved.read_text())
            return result
        t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
        result = run()
        c1 = resource.getrusage(resource.RUSAGE_SELF)
        cost[name] = {"wall_s": round(time.perf_counter() - t0, 1),
                      "cpu_s": round(c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime, 1),
                      "cpus": len(os.sched_getaffinity(0)),
                      # cold: every text (chunks and questions) the run embedded, pruned trials' included
                      "texts_embedded": (EmbeddingCache(out / name / "cache" / "embeddings.sqlite").count()
                                         if args.cold else
                                         sum(r["stats"].get("texts_embedded", 0) for r in result.records)),
                      "load_average_after": round(os.getloadavg()[0], 2)}
        saved.write_text(json.dumps(cost[name]) + "\n")
        return result

    sgrid, space = parse_space({**settings, "baseline": baseline, "space": SPACES[kind]})
    if args.only != "search":
        g = timed("grid", lambda: run_grid(corpus, golden, grid, out / "grid", show_progress=True))
    if args.only == "grid":
        return 0
    s = timed("search", lambda: run_search(corpus, golden, Search(sgrid, space, sampler="tpe", trials=args.trials,
                                                                  prune_rungs=args.prune_rungs),
                                           out / "search", show_progress=True))
    if args.only == "search":
        return 0
    gsel, ssel = g.selection(), s.selection()
    ids = gsel["held_out_ids"]

    def per(result, label):
        rec = next(r for r in result.records if r["label"] == label)
        scores = {q["id"]: q["scores"][args.metric] for q in rec["result"]["questions"] if q["answerable"]}
        return [scores[i] for i in ids]

    x, y = per(g, gsel["chosen_label"]), per(s, ssel["chosen_label"])
    trials = [t for st in s.search["studies"] for t in st["trials"]]
    report = {
        "corpus": args.corpus, "design": kind, "metric": args.metric, "questions": len(golden), "holdout": args.holdout,
        "seed": args.seed, "cold": args.cold, "grid": {"configurations": 27, **cost["grid"], **held(gsel)},
        "search": {"sampler": "tpe", "trials": args.trials, "prune_rungs": args.prune_rungs,
                   "space_points": space.points,
                   "evaluated": s.search["evaluated"], "pruned": sum(t["state"] == "pruned" for t in trials),
                   "cached": sum(t["cached"] for t in trials), **cost["search"], **held(ssel)},
        "search_minus_grid_held_out": sum(y) / len(y) - sum(x) / len(x),
        "p_search_vs_grid_held_out": (paired_test("randomization", x, y, n=10000, seed=args.seed)
                                      if x != y else None),
    }
    print(json.dumps(report, indent=1))
    (out / "bench.json").write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
