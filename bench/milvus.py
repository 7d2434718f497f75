"""The embedded engine next to Milvus Lite: quality on a BEIR folder, and query latency as the corpus grows.

    python bench/milvus.py --data ../shared/datasets/scifact --split test --scale 50000
    python bench/milvus.py --data ../shared/datasets/scifact --split test --server --ef 16,64,256

``--server`` runs dense retrieval on a real Milvus standalone server instead of Lite (the ``milvus`` package,
``pip install 'ragtune[milvus-server]'``, started on loopback with its data in a temporary folder, or
``--milvus-uri URL`` for one already running): the embedded exact search, the server's FLAT index (nDCG@10,
recall@100, top-10 agreement with exact search) and its HNSW index at each ``--ef`` (recall@10 against exact
search on the golden questions), each with its build time (insert, flush, index, load) and query latency (the
searches for the top 10; quality comes from searches to depth 100, where HNSW's ef is raised to 100);
hybrid on the server (its FLAT dense hits fused with ragtune's BM25 when the server has no BM25, as Milvus 2.3
has none) against the embedded hybrid; and the one line a server without BM25 gives for ``milvus-bm25``.

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
import os
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
from ragtune.errors import EngineError
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


def _milvus_package():
    """The ``milvus`` server package, not this file (which Python would import as ``milvus`` from bench/)."""
    import importlib

    here = os.path.dirname(os.path.abspath(__file__))
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        if getattr(sys.modules.get("milvus"), "__file__", "") == os.path.abspath(__file__):
            del sys.modules["milvus"]
        return importlib.import_module("milvus")
    finally:
        sys.path[:] = saved


def _start_server(folder: str):
    MilvusServer = _milvus_package().MilvusServer

    server = MilvusServer()
    server.set_base_dir(folder)
    t0 = time.perf_counter()
    try:
        server.start()
    except (TimeoutError, RuntimeError) as e:  # a server that did not come up is stopped, its log's end shown
        server.stop()
        log = os.path.join(folder, "logs", "milvus-stderr.log")
        tail = open(log, errors="replace").read()[-1500:] if os.path.exists(log) else ""
        raise SystemExit(f"the Milvus server did not start ({e}); its stderr ends:\n{tail}") from None
    print(f"Milvus server {server.listen_port} started in {time.perf_counter() - t0:.1f} s", flush=True)
    return server, f"http://127.0.0.1:{server.listen_port}"


def server_bench(args, corpus, golden, chunks, vectors, emb, figures: dict) -> None:
    """Dense on a Milvus server: FLAT against the embedded exact search, then HNSW at each ef."""
    tmp = tempfile.mkdtemp(prefix="ragtune-milvus-server-bench-")
    server = None
    try:
        server, uri = (None, args.milvus_uri) if args.milvus_uri else _start_server(tmp)
        client = m.connect(uri)
        info = m.server_info(client)
        print(f"server: {info.label} ({info.version}) at {uri}\n", flush=True)
        figures["server"] = info.to_dict()
        try:  # what the server lacks is one line naming its version
            m.create_index(client, "bench_server_bm25", chunks, m.MilvusBM25Config(milvus_uri=uri), replace=True)
            figures["server_bm25"] = "built"
        except EngineError as e:
            figures["server_bm25"] = str(e)
        print(f"milvus-bm25: {figures['server_bm25']}\n", flush=True)
        exact = DenseRetriever(chunks, vectors, emb, ann=False)
        questions = [g.q for g in golden]
        truth = {q: [h.chunk.id for h in exact.search(q, 10).hits] for q in questions}
        runs = [("embedded exact", None, exact),
                ("embedded hybrid", None, HybridRetriever([BM25Retriever.build(chunks, BM25Config()), exact]))]
        configs = [("server FLAT", m.MilvusDenseConfig(milvus_uri=uri)),
                   ("server hybrid FLAT", m.MilvusHybridConfig(milvus_uri=uri))]
        configs += [(f"server HNSW ef={ef}", m.MilvusDenseConfig(milvus_uri=uri, milvus_index="HNSW", hnsw_ef=ef))
                    for ef in args.ef]
        built: dict[str, float] = {}
        for name, cfg in configs:
            # hybrid on a server without BM25 searches the FLAT dense collection and fuses ragtune's BM25 here
            coll = "bench_server_" + ("flat" if cfg.milvus_index == "FLAT" else "hnsw")
            if coll not in built:
                t0 = time.perf_counter()
                m.create_index(client, coll, chunks, cfg, vectors=vectors, replace=True)
                built[coll] = time.perf_counter() - t0
                print(f"  {coll}: {len(chunks):,} chunks built in {built[coll]:.1f} s", flush=True)
            r = m.MilvusRetriever(client, coll, cfg, chunks=chunks, embedder=emb, uri=uri)
            if "hybrid_bm25" in r.config:
                figures["hybrid_bm25"] = r.config["hybrid_bm25"]
                print(f"  {name}: BM25 half by {r.config['hybrid_bm25']}", flush=True)
            runs.append((name, built[coll], r))
        print(f"{'engine / index':<22} {'nDCG@10':>8} {'R@100':>7} {'recall@10 vs exact':>19} {'p50 ms@10':>9} "
              f"{'p95 ms@10':>9} {'build s':>8}")
        for name, build_s, r in runs:
            # quality from searches to depth 100 (where HNSW's ef is raised to 100); recall against exact search
            # and latency from searches for the top 10, at the ef asked for
            res = rt.evaluate(r, golden, corpus, ks=(10, 100), depth=100)
            rec = Recording(r)
            top10 = {q: [h.chunk.id for h in rec.search(q, 10).hits] for q in questions}
            agree = None if "hybrid" in name else float(np.mean(  # dense top 10 against exact search's
                [len(set(top10[q]) & set(truth[q])) / 10 for q in questions]))
            row = {"ndcg@10": round(res.metrics["ndcg@10"], 4), "recall@100": round(res.metrics["recall@100"], 4),
                   "recall@10_vs_exact": None if agree is None else round(agree, 4), **latency_ms(rec.timings),
                   "build_s": round(build_s, 1) if build_s is not None else None}
            figures.setdefault("server_dense", {})[name] = row
            shown = "-" if agree is None else f"{agree:.4f}"
            print(f"{name:<22} {row['ndcg@10']:>8.4f} {row['recall@100']:>7.3f} {shown:>19} {row['p50']:>9.1f} "
                  f"{row['p95']:>9.1f} {row['build_s'] if build_s is not None else '-':>8}", flush=True)
    finally:
        m.close_all()
        if server is not None:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/)")
    ap.add_argument("--split", default="test")
    ap.add_argument("--scale", type=int, default=0, help="also time every mode at this many (replicated) chunks")
    ap.add_argument("--queries", type=int, default=100, help="questions timed at --scale")
    ap.add_argument("--json", help="write the figures as JSON")
    ap.add_argument("--server", action="store_true", help="dense on a Milvus server (FLAT and HNSW) instead of Lite")
    ap.add_argument("--milvus-uri", help="with --server: a running server's URL instead of starting one")
    ap.add_argument("--ef", type=lambda t: [int(x) for x in t.split(",")], default=[16, 64, 256],
                    help="with --server: the HNSW ef values (comma-separated)")
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
    figures: dict = {"data": args.data, "split": args.split, "chunks": len(chunks), "quality": {}, "scale": {}}
    if args.server:
        server_bench(args, corpus, golden, chunks, vectors, emb, figures)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(figures, f, indent=1)
        return 0
    tmp = tempfile.mkdtemp(prefix="ragtune-milvus-bench-")
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
