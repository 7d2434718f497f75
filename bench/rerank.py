"""Does a cross-encoder earn its latency? Candidates vs quality vs reranking latency on a BEIR test split.

    python bench/rerank.py --data ../shared/datasets/scifact --model out/reranker-scifact \\
        --candidates 10,20,50,100 --backends torch,fp32,int8

First stage: ragtune's hybrid retriever (BM25 + all-MiniLM-L6-v2 int8, RRF), one chunk per abstract, title
prefixed. ``--model`` is a cross-encoder folder (transformers / sentence-transformers, as
``ragtune.train.train_reranker`` writes). Backends: ``torch`` (sentence-transformers, the folder as is),
``fp32`` and ``int8`` (the folder exported to ONNX with ``ragtune.rerank_export.export_cross_encoder`` into
``--onnx-dir``, default ``<model>/onnx``).

Quality: each backend scores the top max(candidates) hits of every question once (a cross-encoder scores a
pair on its own, so the top-N reranking is the top-N of those scores); for each N, ``replace`` orders the top N
by the model, ``fuse`` by RRF (k=60) of the model's rank and the first stage's. Latency: reranking N candidates,
timed separately for each N over the first ``--latency-queries`` questions after a warm-up call, p50/p95 in ms,
with ``--threads`` threads. The machine's load average is printed: a shared CPU inflates the latencies.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path


def _load_avg() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)")
    ap.add_argument("--split", default="test")
    ap.add_argument("--model", required=True, help="cross-encoder folder (e.g. out/reranker-scifact)")
    ap.add_argument("--candidates", default="10,20,50,100")
    ap.add_argument("--backends", default="torch,fp32,int8", help="comma-separated: torch, fp32, int8")
    ap.add_argument("--onnx-dir", help="where the ONNX export goes (default <model>/onnx; reused when present)")
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--latency-queries", type=int, default=30)
    ap.add_argument("--limit", type=int, default=0, help="evaluate only the first N questions (0: all)")
    ap.add_argument("--json", help="write the figures as JSON")
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))

    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    import ragtune as rt
    from ragtune.evaluate.evaluate import evaluate_rankings
    from ragtune.golden import GoldenSet
    from ragtune.pipeline import PipelineConfig, Resources, build_pipeline
    from ragtune.progress import progress_iter
    from ragtune.rerank.base import fuse_with_first_stage
    from ragtune.rerank.cross_encoder import CrossEncoderReranker
    from ragtune.types import Ranking

    ns = sorted({int(x) for x in args.candidates.split(",") if x.strip()})
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    corpus = rt.load_corpus(args.data)
    golden = rt.load_golden(args.data, split=args.split)
    if args.limit:
        golden = GoldenSet(golden.items[: args.limit], source=golden.source)
    config = PipelineConfig(retriever="hybrid")
    pipeline = build_pipeline(corpus, config, resources=Resources(config.embedder, show_progress=True))
    depth = max(max(ns), 100)
    first = {item.id: pipeline.base.search(item.q, k=depth) for item in golden}
    ks = (10, 20)
    figures: dict = {"data": args.data, "split": args.split, "model": args.model, "questions": len(golden),
                     "max_length": args.max_length, "threads": args.threads, "python": platform.python_version(),
                     "ragtune": rt.__version__, "rows": []}
    base = evaluate_rankings(first, golden, corpus, ks=ks).metrics
    figures["first_stage"] = {"ndcg@10": base["ndcg@10"], "recall@10": base["recall@10"]}
    print(f"{args.data} ({args.split}): {len(golden)} questions; first stage hybrid nDCG@10 {base['ndcg@10']:.4f}, "
          f"R@10 {base['recall@10']:.4f}; model {args.model}, max length {args.max_length}, {args.threads} threads; "
          f"load average {_load_avg()}\n")

    onnx_dir = Path(args.onnx_dir or Path(args.model) / "onnx")
    if {"fp32", "int8"} & set(backends) and not (onnx_dir / "model_int8.onnx").is_file():
        from ragtune.rerank_export import export_cross_encoder

        t0 = time.perf_counter()
        export_cross_encoder(args.model, onnx_dir, int8=True, max_length=args.max_length)
        print(f"exported to {onnx_dir} (fp32 + int8) in {time.perf_counter() - t0:.0f} s\n")

    print(f"{'backend':<7}{'N':>5}  {'replace nDCG@10':>15}{'R@10':>7}  {'fuse nDCG@10':>12}{'R@10':>7}"
          f"  {'rerank ms p50':>13}{'p95':>7}")
    for backend in backends:
        if backend == "torch":
            reranker = CrossEncoderReranker(args.model, backend="st", max_length=args.max_length)
        else:
            reranker = CrossEncoderReranker(str(onnx_dir), backend="onnx", precision=backend,
                                            max_length=args.max_length, threads=args.threads)
        reranker.warm_up()
        t0 = time.perf_counter()
        scored = {qid: reranker.rerank(r.query, Ranking(r.query, r.hits[: max(ns)], r.timings))
                  for qid, r in progress_iter(list(first.items()), f"scoring with {backend}")}
        score_s = time.perf_counter() - t0
        score_of = {qid: {h.chunk.id: h.score for h in r.hits} for qid, r in scored.items()}
        items = list(golden)[: args.latency_queries]
        for n in ns:
            replace_r, fuse_r = {}, {}
            for qid, r in first.items():
                head = Ranking(r.query, r.hits[:n], r.timings)
                s = score_of[qid]
                order = sorted(head.hits, key=lambda h: -s[h.chunk.id])
                rer = Ranking(r.query, tuple(type(h)(h.chunk, s[h.chunk.id]) for h in order), r.timings)
                replace_r[qid] = Ranking(r.query, rer.hits + r.hits[n:], r.timings)
                fused = fuse_with_first_stage(head, rer, k=60)
                fuse_r[qid] = Ranking(r.query, fused.hits + r.hits[n:], r.timings)
            rep = evaluate_rankings(replace_r, golden, corpus, ks=ks).metrics
            fus = evaluate_rankings(fuse_r, golden, corpus, ks=ks).metrics
            reranker.rerank(items[0].q, Ranking(items[0].q, first[items[0].id].hits[:n]))  # warm-up at this size
            ms = []
            for item in items:
                head = Ranking(item.q, first[item.id].hits[:n])
                ms.append(reranker.rerank(item.q, head).timings["rerank"] * 1000)
            p50, p95 = float(np.percentile(ms, 50)), float(np.percentile(ms, 95))
            row = {"backend": backend, "candidates": n, "replace": {"ndcg@10": rep["ndcg@10"], "recall@10": rep["recall@10"]},
                   "fuse": {"ndcg@10": fus["ndcg@10"], "recall@10": fus["recall@10"]},
                   "rerank_ms": {"p50": p50, "p95": p95}, "load_average": _load_avg()}
            figures["rows"].append(row)
            print(f"{backend:<7}{n:>5}  {rep['ndcg@10']:>15.4f}{rep['recall@10']:>7.4f}  {fus['ndcg@10']:>12.4f}"
                  f"{fus['recall@10']:>7.4f}  {p50:>13.0f}{p95:>7.0f}", flush=True)
        figures.setdefault("scoring_s", {})[backend] = score_s
    print(f"\nload average at the end {_load_avg()}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
