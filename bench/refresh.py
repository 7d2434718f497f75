"""Refresh vs full build on a markdown corpus: change 1% of the documents, refresh, compare times.

    python bench/refresh.py --corpus ../shared/datasets/fastapi_docs/md/docs/en/docs --retriever hybrid

The corpus is copied to a temporary folder (the original is never touched). A full build runs with a fresh
embedding cache; then 1% of the documents (at least one) get a new paragraph, and ``refresh`` builds the next
version, re-chunking and re-embedding only those. Also checks that the refreshed version equals a full build
of the changed corpus (same chunks, same vectors).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--retriever", default="hybrid", choices=["bm25", "dense", "hybrid"])
    ap.add_argument("--chunker", default="markdown")
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--fraction", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json")
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="ragtune-refresh-"))
    os.environ["RAGTUNE_CACHE_DIR"] = str(work / "cache")
    import ragtune as rt
    from ragtune.pipeline import PipelineConfig
    from ragtune.store import IndexStore, build_version, refresh_version

    src = work / "corpus"
    shutil.copytree(args.corpus, src)
    config = PipelineConfig.from_flags({"chunker": args.chunker, "size": args.size, "retriever": args.retriever})
    store = IndexStore(work / "store")
    t0 = time.perf_counter()
    full = build_version(store, rt.load_corpus(src), config, show_progress=True)
    full_s = time.perf_counter() - t0

    docs = sorted(p for p in src.rglob("*.md"))
    changed = random.Random(args.seed).sample(docs, max(1, round(len(docs) * args.fraction)))
    for p in changed:
        with open(p, "a", encoding="utf-8") as f:
            f.write("\n\n## Refresh benchmark note\n\nThis paragraph was added to measure an incremental refresh.\n")
    corpus = rt.load_corpus(src)
    t0 = time.perf_counter()
    v, stats = refresh_version(store, corpus)
    refresh_s = time.perf_counter() - t0

    check = IndexStore(work / "check")
    ref = build_version(check, corpus, config)
    same_chunks = [c.to_dict() for c in store.chunks(v.id)[0]] == [c.to_dict() for c in check.chunks(ref.id)[0]]
    va, vb = store.vectors(v.id), check.vectors(ref.id)
    same_vectors = (va is None and vb is None) or bool(np.allclose(va, vb, atol=1e-6))
    figures = {"documents": len(corpus), "changed": len(changed), "retriever": args.retriever,
               "chunks": full.manifest["chunks"], "full_build_s": full_s, "refresh_s": refresh_s,
               "refresh_over_full": refresh_s / full_s, "texts_embedded_full": full.manifest["stats"].get("texts_embedded"),
               "texts_embedded_refresh": stats.get("texts_embedded"), "chunks_new": stats["chunks_new"],
               "chunks_reused": stats["chunks_reused"], "identical_to_full_build": same_chunks and same_vectors}
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if figures["identical_to_full_build"] else 1


if __name__ == "__main__":
    sys.exit(main())
