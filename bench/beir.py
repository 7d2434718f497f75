"""Retrieval quality and speed on a BEIR folder.

    python bench/beir.py --data ../shared/datasets/scifact --split test --retriever bm25,dense,hybrid

One chunk per document with the title prefixed (the BEIR convention). For
each retriever: recall@k, MRR, nDCG@10, build time, and query latency p50/p95
per stage (``excl. query embedding`` leaves the ``embed_query`` stage out).
With a dense retriever, embedding throughput is measured cold (fresh cache)
and warm (every text cached).
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

import ragtune as rt
from ragtune.chunking import chunk_corpus
from ragtune.embed import CachedEmbedder, EmbeddingCache, get_embedder
from ragtune.retrieve.bm25 import BM25Config, BM25Retriever
from ragtune.retrieve.dense import DenseRetriever
from ragtune.retrieve.fusion import HybridRetriever


def latency(result, exclude=()) -> dict[str, float]:
    per_q = [sum(t for s, t in q_timings.items() if s not in exclude) for q_timings in result]
    a = np.asarray(per_q) * 1000
    return {"p50": float(np.percentile(a, 50)), "p95": float(np.percentile(a, 95))}


def run(retriever, golden, corpus):
    timings = []

    class Recording:
        name = retriever.name

        def search(self, q, k=10, filters=None):
            r = retriever.search(q, k=k, filters=filters)
            timings.append(dict(r.timings))
            return r

    res = rt.evaluate(Recording(), golden, corpus, ks=(5, 10, 20, 100), depth=100)
    return res, timings


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/)")
    ap.add_argument("--split", default="test")
    ap.add_argument("--retriever", default="bm25", help="comma-separated: bm25,dense,hybrid")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--cache", help="embedding cache file (default: a fresh temporary one, so the cold run is cold)")
    ap.add_argument("--json", help="write the figures as JSON")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.retriever.split(",") if n.strip()]

    corpus = rt.load_corpus(args.data)
    golden = rt.load_golden(args.data, split=args.split)
    chunks = chunk_corpus(corpus, rt.default_chunker(corpus))
    print(f"{args.data} ({args.split}): {len(corpus)} documents, {len(chunks)} chunks, {len(golden)} questions; "
          f"python {platform.python_version()}, ragtune {rt.__version__}\n")
    figures: dict = {"data": args.data, "split": args.split, "documents": len(corpus), "questions": len(golden)}

    t0 = time.perf_counter()
    bm25 = BM25Retriever.build(chunks, BM25Config())
    figures["bm25_build_s"] = time.perf_counter() - t0
    dense = None
    if {"dense", "hybrid"} & set(names):
        tmp = tempfile.mkdtemp(prefix="ragtune-bench-")
        cache = EmbeddingCache(args.cache or f"{tmp}/emb.sqlite")
        inner = get_embedder(args.embedder)
        inner.warm_up() if hasattr(inner, "warm_up") else None
        emb = CachedEmbedder(inner, cache, show_progress=True)
        t0 = time.perf_counter()
        dense = DenseRetriever.build(chunks, emb)
        cold = time.perf_counter() - t0
        warm_emb = CachedEmbedder(inner, cache)
        t0 = time.perf_counter()
        DenseRetriever.build(chunks, warm_emb)
        warm = time.perf_counter() - t0
        figures["embed"] = {"model": inner.model_id, "texts": len(chunks), "cold_s": cold,
                            "cold_texts_per_s": emb.stats["misses"] / cold if emb.stats["misses"] else None,
                            "cold_misses": emb.stats["misses"], "warm_s": warm,
                            "warm_texts_per_s": len(chunks) / warm, "warm_hits": warm_emb.stats["hits"]}
        e = figures["embed"]
        print(f"embedding {e['texts']} texts with {e['model']}: cold {e['cold_s']:.1f} s "
              f"({e['cold_texts_per_s'] or 0:.1f} texts/s, {e['cold_misses']} embedded); warm {e['warm_s']:.2f} s "
              f"({e['warm_texts_per_s']:.0f} texts/s, {e['warm_hits']} cache hits)\n")
        if not args.cache:
            shutil.rmtree(tmp, ignore_errors=True)

    retrievers = {"bm25": bm25, "dense": dense, "hybrid": HybridRetriever([bm25, dense], k=60) if dense else None}
    header = f"{'retriever':<9}{'nDCG@10':>8}{'R@5':>7}{'R@10':>7}{'R@20':>7}{'R@100':>7}{'MRR':>7}  latency ms p50/p95 (excl. query embedding)"
    print(header)
    for name in names:
        res, timings = run(retrievers[name], golden, corpus)
        m = res.metrics
        lat_all = latency(timings)
        lat_ex = latency(timings, exclude=("embed_query",))
        figures[name] = {k: m[k] for k in ("ndcg@10", "recall@5", "recall@10", "recall@20", "recall@100", "mrr")}
        figures[name].update({"latency_ms": lat_all, "latency_ms_excl_query_embedding": lat_ex,
                              "stages_ms": res.latency_ms["stages"]})
        print(f"{name:<9}{m['ndcg@10']:>8.4f}{m['recall@5']:>7.4f}{m['recall@10']:>7.4f}{m['recall@20']:>7.4f}"
              f"{m['recall@100']:>7.4f}{m['mrr']:>7.4f}  {lat_all['p50']:.2f}/{lat_all['p95']:.2f} "
              f"({lat_ex['p50']:.2f}/{lat_ex['p95']:.2f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
