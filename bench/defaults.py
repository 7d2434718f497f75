"""Which defaults generalise: chunker, prefix and first stage measured on several corpora.

    python bench/defaults.py --corpus docs --golden docs/golden.jsonl --out out/defaults-docs
    python bench/defaults.py --corpus ../shared/datasets/fastapi_docs/md/docs/en/docs \\
        --golden bench/golden/fastapi.jsonl --out out/defaults-fastapi

Runs the same small grid on each (a sweep: cached, resumable): section chunks without the prefix (the old
default), section / markdown-512 / fixed-512 with the `Title > Heading` prefix, each with BM25 and with hybrid
(BM25 + MiniLM by RRF). Prints recall@5, recall@10, MRR and nDCG@10 per configuration, with the paired test
against the old default, as a markdown table for docs/concepts/defaults.md.
"""

from __future__ import annotations

import argparse
import time

GRID = {
    "metric": "recall@5", "k": [5, 10, 20], "samples": 10000,
    "baseline": {"chunker": "section", "prefix": False, "retriever": "bm25"},
    "grid": {"chunker": ["section", "markdown", "fixed"], "size": [512], "prefix": [True],
             "retriever": ["bm25", "hybrid"]},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    import ragtune as rt
    from ragtune.sweep import parse_grid, sweep

    corpus = rt.load_corpus(args.corpus)
    golden = rt.load_golden(args.golden)
    t0 = time.perf_counter()
    result = sweep(corpus, golden, parse_grid(GRID), args.out, show_progress=True)
    n = sum(1 for q in golden if q.answerable)
    print(f"\n{len(corpus)} documents, {n} answerable questions, {time.perf_counter() - t0:.0f} s\n")
    print("| configuration | recall@5 | recall@10 | MRR | nDCG@10 | delta recall@5 vs section/bm25 (p, Holm) |")
    print("|---|---|---|---|---|---|")
    for r in result.ranked():
        m, vs = r["result"]["metrics"], r.get("vs_baseline")
        cmp = f"{vs['delta']:+.3f} (p={vs['p_holm']:.3f})" if vs else "baseline"
        print(f"| {r['label']} | {m['recall@5']:.3f} | {m['recall@10']:.3f} | {m['mrr']:.3f} | {m['ndcg@10']:.3f} | {cmp} |")


if __name__ == "__main__":
    main()
