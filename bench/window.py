"""A default that fits the embedder: whole sections (cut by MiniLM's 256-token window when embedded) against
sections cut to the window, searched as pieces, returned as pieces or as whole sections.

    python bench/window.py docs=docs:docs/golden.jsonl \\
        fastapi=../shared/datasets/fastapi_docs/md/docs/en/docs:bench/golden/fastapi.jsonl \\
        tutorial=../shared/datasets/formats/rst/tutorial:bench/golden/python-tutorial.jsonl

Each NAME=CORPUS:GOLDEN (GOLDEN@SPLIT for a BEIR folder: scifact=DIR:DIR@test) is scored with hybrid retrieval (BM25 + MiniLM, RRF) and the heading prefix, three ways:

- ``whole``: one chunk per section (``section``, ``max_tokens=0``): the embedder reads its first 256 tokens;
- ``pieces``: sections cut at block boundaries so each embedded chunk fits the window (``section``, the window
  as ``max_tokens``), the pieces returned;
- ``parents``: the same pieces searched, their whole sections returned (``small_to_big``, ``parent=section``).

It prints the share of chunks the window cuts, recall@5/10/20, MRR and nDCG@10, and the paired randomisation
test of each against ``whole`` on recall@10 (one run); then, per way, its difference from ``whole`` on each
corpus at recall@5, MRR and nDCG@10, and the worst of those differences over the corpora (a default should be the
choice whose worst case is least bad, not the one best somewhere).
"""

from __future__ import annotations

import sys
import time

import ragtune as rt
from ragtune.chunking import chunk_documents
from ragtune.embed.window import window_overflow
from ragtune.registry import CHUNKERS

WAYS = {
    "whole": {"retriever": "hybrid", "chunker": "section", "max_tokens": 0},
    "pieces": {"retriever": "hybrid", "chunker": "section", "max_tokens": 256},
    "parents": {"retriever": "hybrid", "chunker": "small_to_big", "parent": "section", "size": 256},
}
KEYS = ("recall@5", "recall@10", "recall@20", "mrr", "ndcg@10")


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    emb = rt.get_embedder("minilm")
    print("| corpus | way | chunks | cut by the window | " + " | ".join(KEYS) + " | recall@10 vs whole (p) |")
    print("|---|---|---|---|" + "---|" * len(KEYS) + "---|")
    seen: dict[str, dict[str, dict[str, float]]] = {}
    for arg in argv:
        name, _, rest = arg.partition("=")
        corpus_path, _, golden_path = rest.rpartition(":")
        golden_path, _, split = golden_path.partition("@")  # a BEIR golden set: PATH@SPLIT
        corpus, golden = rt.load_corpus(corpus_path), rt.load_golden(golden_path, split=split or None)
        base = None
        for way, flags in WAYS.items():
            cfg = rt.PipelineConfig.from_flags(flags).resolved(corpus.kind)
            chunks, _ = chunk_documents(corpus.documents, CHUNKERS.build(cfg.chunker, options=cfg.chunker_config()))
            cut = window_overflow(emb, [c.embed_text for c in chunks], sample=None)
            t0 = time.perf_counter()
            result = rt.run_eval(rt.build_pipeline(corpus, cfg), golden)
            m = result.metrics
            seen.setdefault(name, {})[way] = {k: m[k] for k in KEYS}
            if base is None:
                base, vs = result, "baseline"
            else:
                a = [q.scores["recall@10"] for q in base.questions if q.answerable]
                b = [q.scores["recall@10"] for q in result.questions if q.answerable]
                p = rt.paired_test("randomization", a, b)
                vs = f"{m['recall@10'] - base.metrics['recall@10']:+.3f} (p={p:.3f})"
            print(f"| {name} ({len(golden.answerable)} q) | {way} | {len(chunks)} | {cut.share:.0%} | "
                  + " | ".join(f"{m[k]:.3f}" for k in KEYS) + f" | {vs} |", flush=True)
            print(f"  ({cfg.label}: {time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    print_worst_case(seen)
    return 0


def print_worst_case(seen: dict[str, dict[str, dict[str, float]]], keys=("recall@5", "mrr", "ndcg@10")) -> None:
    """Each way against ``whole``, corpus by corpus, and the worst difference over the corpora."""
    names = list(seen)
    print()
    print("| way | metric | " + " | ".join(names) + " | mean | worst |")
    print("|---|---|" + "---|" * len(names) + "---|---|")
    for way in list(WAYS)[1:]:
        for k in keys:
            d = [seen[n][way][k] - seen[n]["whole"][k] for n in names]
            print(f"| {way} | {k} | " + " | ".join(f"{x:+.3f}" for x in d)
                  + f" | {sum(d) / len(d):+.3f} | {min(d):+.3f} |")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
