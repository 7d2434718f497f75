"""Prediction-powered intervals under a biased LLM judge, by simulation over real judgments (issue 40 item 4).

    python bench/ppi.py --data ../shared/datasets/scifact --split test --draws 1000

The truth: a BEIR set's qrels (SciFact test: 300 claims, every one with a relevant abstract), every document of
BM25's top 10 (one chunk per document, the BEIR convention) judged by them (a pooled document missing from the
qrels counts as not relevant, as BEIR scores it). The pool's documents are the holes a judge fills; the qrels'
relevant documents outside the pool stay labelled (they count in recall's denominator on both sides).

Each draw simulates a judge biased toward "relevant": it calls a non-relevant pooled document relevant with
probability ``--false-positive`` (0.25) and misses a relevant one with probability ``--false-negative`` (0.10),
independently per (question, document); and people judge the pool of ``n`` questions drawn at random (their
labels are the truth). Per metric (recall@5, precision@5, nDCG@10 of the BM25 ranking), it compares the truth
(the metric's mean over all questions under the qrels) with

- the judge-only (naive) figure and its 95% interval,
- the people-only (classical) figure over the ``n`` questions,
- PPI (lambda 1) and PPI++ (lambda tuned) from :mod:`ragtune.judgments.ppi`,

and prints each one's coverage of the truth, mean width and mean error over the draws, for n = 20, 40, 80, and
the same for a better judge (``--better``: false positive 0.05, false negative 0.02) to show the interval
narrowing with the judge's quality. A question whose judge labels leave it no relevant document scores 0 on
recall and nDCG under the judge.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys

import numpy as np

import ragtune as rt
from ragtune.chunking import chunk_corpus
from ragtune.judgments.ppi import ppi_mean
from ragtune.retrieve.bm25 import BM25Config, BM25Retriever

DEPTH = 10


def pool(data: str, split: str) -> tuple[np.ndarray, np.ndarray, int]:
    """BM25's top ``DEPTH`` documents per question, judged by the qrels: (relevant or not, shape (N, DEPTH)),
    the relevant documents outside the pool per question, and the number of questions."""
    corpus = rt.load_corpus(data)
    golden = rt.load_golden(data, split=split)
    chunks = chunk_corpus(corpus, rt.default_chunker(corpus))
    bm25 = BM25Retriever.build(chunks, BM25Config())
    rel = np.zeros((len(golden), DEPTH), dtype=bool)
    outside = np.zeros(len(golden), dtype=np.int64)
    for i, item in enumerate(golden):
        docs: list[str] = []
        for hit in bm25.search(item.q, k=DEPTH * 4).hits:
            if hit.chunk.doc_id not in docs:
                docs.append(hit.chunk.doc_id)
            if len(docs) == DEPTH:
                break
        relevant = {a for a, g in item.relevant.items() if g > 0}
        rel[i, :len(docs)] = [d in relevant for d in docs]
        outside[i] = len(relevant - set(docs))
    return rel, outside, len(golden)


def metrics(labels: np.ndarray, outside: np.ndarray) -> dict[str, np.ndarray]:
    """Per question, recall@5, precision@5 and nDCG@10 (binary) of the ranking whose top ``DEPTH`` carry
    ``labels``."""
    total = labels.sum(axis=1) + outside
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.where(total > 0, labels[:, :5].sum(axis=1) / total, 0.0)
        discounts = 1.0 / np.log2(np.arange(2, DEPTH + 2))
        dcg = (labels * discounts).sum(axis=1)
        ideal = np.array([discounts[:min(int(t), DEPTH)].sum() for t in total])
        ndcg = np.where(ideal > 0, dcg / ideal, 0.0)
    return {"recall@5": recall, "precision@5": labels[:, :5].mean(axis=1), "ndcg@10": ndcg}


def simulate(truth: np.ndarray, outside: np.ndarray, fp: float, fn: float, n: int, draws: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    target = {m: float(v.mean()) for m, v in metrics(truth, outside).items()}
    per_truth = metrics(truth, outside)
    kinds = ("naive", "classical", "ppi", "ppi++")
    tally = {m: {k: {"cover": 0, "width": 0.0, "error": 0.0} for k in kinds} for m in target}
    lams = {m: 0.0 for m in target}
    for _ in range(draws):
        flip = np.where(truth, rng.random(truth.shape) < fn, rng.random(truth.shape) < fp)
        judged = metrics(truth ^ flip, outside)
        subset = rng.choice(truth.shape[0], n, replace=False)
        for m, f in judged.items():
            people = np.full(f.size, np.nan)
            people[subset] = per_truth[m][subset]
            plain, tuned = ppi_mean(f, people, metric=m, lam=1.0), ppi_mean(f, people, metric=m)
            lams[m] += tuned.lam / draws
            for kind, (est, lo, hi) in {
                    "naive": (plain.naive, plain.naive_low, plain.naive_high),
                    "classical": (plain.classical, plain.classical_low, plain.classical_high),
                    "ppi": (plain.estimate, plain.low, plain.high),
                    "ppi++": (tuned.estimate, tuned.low, tuned.high)}.items():
                t = tally[m][kind]
                t["cover"] += lo <= target[m] <= hi
                t["width"] += (hi - lo) / draws
                t["error"] += (est - target[m]) / draws
    return {m: {"truth": target[m], "lambda": lams[m],
                **{k: {"coverage": v["cover"] / draws, "width": v["width"], "bias": v["error"]}
                   for k, v in tally[m].items()}} for m in target}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/)")
    ap.add_argument("--split", default="test")
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--people", default="20,40,80", help="people-judged questions per draw, comma-separated")
    ap.add_argument("--false-positive", type=float, default=0.25, dest="fp")
    ap.add_argument("--false-negative", type=float, default=0.10, dest="fn")
    ap.add_argument("--better", default="0.05,0.02", help="a better judge's false-positive,false-negative rates")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the figures as JSON")
    args = ap.parse_args(argv)
    truth, outside, questions = pool(args.data, args.split)
    holes = truth.size
    print(f"{args.data} ({args.split}): {questions} questions, BM25 top {DEPTH} judged by the qrels: "
          f"{int(truth.sum())} of {holes} pooled documents relevant, {int(outside.sum())} relevant outside the "
          f"pool; {args.draws} draws, seed {args.seed}; python {platform.python_version()}, ragtune {rt.__version__}")
    better = tuple(float(x) for x in args.better.split(","))
    judges = [(args.fp, args.fn), better]
    out = []
    for fp, fn in judges:
        for n in (int(x) for x in args.people.split(",")):
            res = simulate(truth, outside, fp, fn, n, args.draws, args.seed)
            out.append({"false_positive": fp, "false_negative": fn, "people": n, "metrics": res})
    print("\n| judge (FP, FN) | people n | metric | truth | judge only: cov / width / bias | people only: cov / width "
          "| PPI: cov / width | PPI++: cov / width (mean lambda) |")
    print("|---|---|---|---|---|---|---|---|")
    for row in out:
        for m, r in row["metrics"].items():
            nv, cl, p, pp = r["naive"], r["classical"], r["ppi"], r["ppi++"]
            print(f"| {row['false_positive']:.2f}, {row['false_negative']:.2f} | {row['people']} | {m} | "
                  f"{r['truth']:.3f} | {nv['coverage']:.3f} / {nv['width']:.3f} / {nv['bias']:+.3f} | "
                  f"{cl['coverage']:.3f} / {cl['width']:.3f} | {p['coverage']:.3f} / {p['width']:.3f} | "
                  f"{pp['coverage']:.3f} / {pp['width']:.3f} ({r['lambda']:.2f}) |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"data": args.data, "split": args.split, "draws": args.draws, "seed": args.seed,
                       "rows": out}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
