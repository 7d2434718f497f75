"""Sweep speed on a BEIR folder: the seed experiment, cold caches then warm.

    python bench/sweep.py --data ../shared/datasets/scifact --split test --out out/bench-sweep

fixed, recursive and small_to_big x sizes 256/512/1024 x overlaps 0/64/128 (27 configurations), hybrid retrieval
(BM25 + MiniLM, RRF). The cold run uses a fresh embedding cache and a fresh output folder; the warm run reruns the
whole sweep in another fresh output folder with the embedding cache kept, so every configuration is recomputed
but no text is embedded again. Reports wall time, chunk texts produced vs texts embedded (the cache's saving).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

GRID = {
    "metric": "ndcg@10", "k": [5, 10, 20],
    "baseline": {"chunker": "fixed", "size": 512, "overlap": 64, "retriever": "hybrid"},
    "grid": {"chunker": ["fixed", "recursive", "small_to_big"], "size": [256, 512, 1024], "overlap": [0, 64, 128],
             "retriever": ["hybrid"]},
}


def run(data: str, split: str, out: Path, cache_dir: Path) -> dict:
    os.environ["RAGTUNE_CACHE_DIR"] = str(cache_dir)
    import ragtune as rt
    from ragtune.sweep import parse_grid, sweep

    corpus = rt.load_corpus(data)
    golden = rt.load_golden(data, split=split)
    grid = parse_grid(GRID)
    t0 = time.perf_counter()
    result = sweep(corpus, golden, grid, out, show_progress=True)
    wall = time.perf_counter() - t0
    produced = sum(r["stats"]["chunks"] for r in result.records)
    embedded = sum(r["stats"]["texts_embedded"] for r in result.records)
    return {"wall_s": wall, "configs": len(result.records), "chunk_texts": produced, "texts_embedded": embedded,
            "best": result.ranked()[0]["label"], "best_ndcg@10": result.value(result.ranked()[0], "ndcg@10"),
            "table": result.table(limit=10)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--split", default="test")
    ap.add_argument("--out", default="out/bench-sweep")
    ap.add_argument("--json", help="write the figures as JSON")
    args = ap.parse_args(argv)
    base = Path(args.out)
    shutil.rmtree(base, ignore_errors=True)
    cache = base / "cache"
    cold = run(args.data, args.split, base / "cold", cache)
    print(cold.pop("table"))
    warm = run(args.data, args.split, base / "warm", cache)
    warm.pop("table")
    figures = {"cold": cold, "warm": warm}
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
