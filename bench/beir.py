"""Retrieval quality and speed on a BEIR folder.

    python bench/beir.py --data ../shared/datasets/scifact --split test

Prints recall@k, MRR, nDCG@10, index build time and query latency; one chunk
per document with the title prefixed (the BEIR convention).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time

import ragtune as rt
from ragtune.chunking import chunk_corpus


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/)")
    ap.add_argument("--split", default="test")
    ap.add_argument("--retriever", default="bm25", choices=["bm25"])
    ap.add_argument("--repeat", type=int, default=3, help="index builds to time (median reported)")
    ap.add_argument("--json", help="write the figures as JSON")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    corpus = rt.load_corpus(args.data)
    golden = rt.load_golden(args.data, split=args.split)
    load_s = time.perf_counter() - t0

    chunker = rt.default_chunker(corpus)
    t0 = time.perf_counter()
    chunks = chunk_corpus(corpus, chunker)
    chunk_s = time.perf_counter() - t0

    builds = []
    for _ in range(max(1, args.repeat)):
        t0 = time.perf_counter()
        retriever = rt.build_retriever(chunks, args.retriever)
        builds.append(time.perf_counter() - t0)

    result = rt.evaluate(retriever, golden, corpus, ks=(5, 10, 20, 100), depth=100)
    m = result.metrics
    lat = result.latency_ms
    figures = {
        "data": args.data, "split": args.split, "retriever": args.retriever,
        "documents": len(corpus), "chunks": len(chunks), "questions": result.n_answerable,
        "recall@5": m["recall@5"], "recall@10": m["recall@10"], "recall@20": m["recall@20"],
        "recall@100": m["recall@100"], "mrr": m["mrr"], "ndcg@10": m["ndcg@10"],
        "load_s": load_s, "chunk_s": chunk_s, "index_build_s_median": statistics.median(builds),
        "query_ms_p50": lat["p50"], "query_ms_p95": lat["p95"],
        "python": platform.python_version(), "ragtune": rt.__version__,
    }
    width = max(map(len, figures))
    for k, v in figures.items():
        print(f"{k:<{width}}  {v:.4f}" if isinstance(v, float) else f"{k:<{width}}  {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
