"""The embedded engine next to Milvus Lite: quality on a BEIR folder, and query latency as the corpus grows.

    python bench/milvus.py --data ../shared/datasets/scifact --split test --scale 50000

Quality: one chunk per document with the title prefixed (as bench/beir.py), each mode (bm25, dense, hybrid) on
both engines; nDCG@10, recall@100 and query latency p50/p95 without the query embedding (the same for both).
Scale: the chunks are replicated until there are at least ``--scale`` of them; each copy gets a new id, its words
shuffled (so BM25 statistics change) and its vector perturbed by Gaussian noise and renormalised (so the copies
are not exact ties); then ``--queries`` golden questions time each mode on each engine. Milvus Lite runs in a
file under a temporary folder, removed at the end. The embedding cache is ragtune's usual one
(RAGTUNE_CACHE_DIR, default .ragtune-cache), so a second run embeds nothing.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import sys
import tempfile
import time
from dataclasses import replace

import numpy as np

import ragtune as rt
from ragtune.chunking import chunk_corpus
from ragtune.engines import milvus as m
from ragtune.pipeline import Resources
from ragtune.retrieve.bm25 import BM25Config, BM25Retriever
from ragtune.retrieve.dense import DenseRetriever
from ragtune.retrieve.fusion import HybridRetriever

MODES = ("bm25", "dense", "hybrid")


def latency_ms(timings: list[dict[str, float]]) -> dict[str, float]:
    a = np.asarray([sum(t for s, t in q.items() if s != "embed_query") for q in timings]) * 1000
    return {"p50": round(float(np.percentile(a, 50)), 2), "p95": round(float(np.percentile(a, 95)), 2)}


class Recording:
    def __init__(self, retriever):
        self.retriever, self.name, self.timings = retriever, retriever.name, []

    def search(self, q, k=10, filters=None):
        r = self.retriever.search(q, k=k, filters=filters)
        self.timings.append(dict(r.timings))
        return r


def engines(chunks, vectors, emb, client, tag: str) -> dict[str, object]:
    """The six retrievers (mode x engine) over ``chunks`` with their ``vectors``; Milvus collections built now."""
    bm25 = BM25Retriever.build(chunks, BM25Config())
    dense = DenseRetriever(chunks, vectors, emb)
    out: dict[str, object] = {"embedded bm25": bm25, "embedded dense": dense,
                              "embedded hybrid": HybridRetriever([bm25, dense])}
    for mode, cfg in (("bm25", m.MilvusBM25Config(milvus_uri="x.db")), ("dense", m.MilvusDenseConfig(milvus_uri="x.db")),
                      ("hybrid", m.MilvusHybridConfig(milvus_uri="x.db"))):
        name = f"bench_{tag}_{mode}"
        t0 = time.perf_counter()
        m.create_index(client, name, chunks, cfg, vectors=vectors if mode != "bm25" else None, replace=True)
        print(f"  milvus-{mode}: {len(chunks):,} chunks loaded in {time.perf_counter() - t0:.1f} s", flush=True)
        out[f"milvus {mode}"] = m.MilvusRetriever(client, name, cfg, chunks=chunks, embedder=emb)
    return out


def replicate(chunks, vectors, n: int, seed: int = 0):
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    out, vecs, r = list(chunks), [vectors], 0
    while len(out) < n:
        r += 1
        for c in chunks:
            words = c.embed_text.split()
            rng.shuffle(words)
            text = " ".join(words)
            out.append(replace(c, id=f"{c.id}~{r}", doc_id=f"{c.doc_id}~{r}", text=text, embed_text=text, end=c.start + len(text)))
        v = vectors + nrng.normal(0, 0.02, vectors.shape).astype(np.float32)
        vecs.append(v / np.linalg.norm(v, axis=1, keepdims=True))
    return out, np.vstack(vecs).astype(np.float32)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/)")
    ap.add_argument("--split", default="test")
    ap.add_argument("--scale", type=int, default=0, help="also time every mode at this many (replicated) chunks")
    ap.add_argument("--queries", type=int, default=100, help="questions timed at --scale")
    ap.add_argument("--json", help="write the figures as JSON")
    args = ap.parse_args(argv)

    corpus = rt.load_corpus(args.data)
    golden = rt.load_golden(args.data, split=args.split)
    chunks = chunk_corpus(corpus, rt.default_chunker(corpus))
    import milvus_lite
    import pymilvus

    print(f"{args.data} ({args.split}): {len(corpus)} documents, {len(chunks)} chunks, {len(golden)} questions; "
          f"python {platform.python_version()}, pymilvus {pymilvus.__version__}, milvus-lite "
          f"{getattr(milvus_lite, '__version__', '?')}\n", flush=True)
    emb = Resources("minilm").embedder()
    t0 = time.perf_counter()
    vectors = emb.embed([c.embed_text for c in chunks])
    print(f"embedded {len(chunks):,} chunks in {time.perf_counter() - t0:.1f} s (cache hits {emb.stats['hits']:,})\n")
    tmp = tempfile.mkdtemp(prefix="ragtune-milvus-bench-")
    figures: dict = {"data": args.data, "split": args.split, "chunks": len(chunks), "quality": {}, "scale": {}}
    try:
        client = m.connect(f"{tmp}/bench.db")
        print(f"{'engine / mode':<18} {'nDCG@10':>8} {'R@100':>7} {'p50 ms':>8} {'p95 ms':>8}")
        for name, r in engines(chunks, vectors, emb, client, "q").items():
            rec = Recording(r)
            res = rt.evaluate(rec, golden, corpus, ks=(10, 100), depth=100)
            row = {"ndcg@10": round(res.metrics["ndcg@10"], 4), "recall@100": round(res.metrics["recall@100"], 4),
                   **latency_ms(rec.timings)}
            figures["quality"][name] = row
            print(f"{name:<18} {row['ndcg@10']:>8.3f} {row['recall@100']:>7.3f} {row['p50']:>8.1f} {row['p95']:>8.1f}",
                  flush=True)
        if args.scale:
            big, big_vectors = replicate(chunks, vectors, args.scale)
            print(f"\nscale: {len(big):,} chunks ({len(chunks):,} replicated, words shuffled, vectors perturbed)")
            questions = [g.q for g in golden][: args.queries]
            for name, r in engines(big, big_vectors, emb, client, "s").items():
                rec = Recording(r)
                for q in questions:
                    rec.search(q, k=10)
                row = latency_ms(rec.timings)
                figures["scale"][name] = {"chunks": len(big), **row}
                print(f"{name:<18} p50 {row['p50']:>8.1f} ms  p95 {row['p95']:>8.1f} ms", flush=True)
    finally:
        m.close_all()
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
