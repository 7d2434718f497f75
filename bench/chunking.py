"""Chunking speed, and retrieval quality per strategy when a golden set is given.

    python bench/chunking.py --corpus ../shared/datasets/fastapi_docs/md/docs/en/docs \
        --golden bench/golden/fastapi.jsonl --size 512 --overlap 64

Timing: every strategy except semantic (which embeds every sentence) chunks the
whole corpus ``--repeat`` times; the median is reported. Quality: BM25 over
each strategy's chunks, with and without the ``Title > Heading`` prefix.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import ragtune as rt
from ragtune.chunking import chunk_corpus

TIMED = ("fixed", "recursive", "markdown", "small_to_big", "section", "document")
SIZED = ("fixed", "recursive", "markdown")


def options(name: str, size: int, overlap: int) -> dict:
    if name in SIZED:
        return {"size": size, "overlap": overlap}
    if name == "small_to_big":
        return {"size": max(16, size // 4), "parent_size": size * 2}
    return {}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--golden", help="golden set: also evaluate BM25 per strategy")
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--overlap", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)

    corpus = rt.load_corpus(args.corpus)
    chars = sum(len(d.text) for d in corpus)
    print(f"corpus: {len(corpus)} documents, {chars:,} characters; size {args.size}, overlap {args.overlap}")
    print(f"\n{'strategy':<13}{'chunks':>8}{'median s':>10}{'min s':>8}")
    for name in TIMED:
        times = []
        for _ in range(args.repeat):
            chunker = rt.make_chunker(name, **options(name, args.size, args.overlap))
            t0 = time.perf_counter()
            chunks = chunk_corpus(corpus, chunker)
            times.append(time.perf_counter() - t0)
        print(f"{name:<13}{len(chunks):>8}{statistics.median(times):>10.3f}{min(times):>8.3f}")

    if args.golden:
        golden = rt.load_golden(args.golden)
        print(f"\nBM25, {len(golden.answerable)} answerable questions of {len(golden)} ({args.golden})")
        print(f"{'strategy':<13}{'prefix':<7}{'chunks':>7}{'R@5':>7}{'R@10':>7}{'R@20':>7}{'MRR':>7}"
              f"{'nDCG@10':>8}{'tok@5':>7}")
        for name in (*SIZED, "small_to_big", "section"):
            for prefix in (False, True):
                p = rt.Pipeline.build(corpus, chunker=name, prefix=prefix, retriever="bm25",
                                      chunker_options=options(name, args.size, args.overlap))
                m = rt.run_eval(p, golden).metrics
                print(f"{name:<13}{'yes' if prefix else 'no':<7}{len(p.chunks):>7}{m['recall@5']:>7.3f}"
                      f"{m['recall@10']:>7.3f}{m['recall@20']:>7.3f}{m['mrr']:>7.3f}{m['ndcg@10']:>8.3f}"
                      f"{m['context_tokens@5']:>7.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
