"""Questions real users asked, from a telemetry log (what ``serve`` and ``answer --log`` write), ready to judge.

Grouped the way ``ragtune gaps`` clusters them (:func:`ragtune.serve.gaps.cluster_gaps`: the embedder, cosine
distance, average linkage), after merging near-duplicates: the same words up to case, spacing and closing
punctuation, or embeddings closer than ``duplicate`` (cosine distance), kept once under their most asked wording
with how often each was asked. Groups holding a "not found" answer come first, then the most asked.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np

from .golden_file import normalise_question

__all__ = ["traffic_questions"]


def traffic_questions(rows: list[dict[str, Any]], embedder, *, distance: float = 0.5, duplicate: float = 0.12,
                      known: set[str] = frozenset()) -> list[dict[str, Any]]:
    """Groups of the logged questions ``rows`` (``query``, ``outcome``): each ``{"size", "not_found",
    "questions": [{"q", "asked", "not_found", "variants", "known"}]}``. ``known`` holds the normalised texts
    already in the golden set (marked, not dropped)."""
    from ..serve.gaps import cluster_gaps

    asked: Counter[str] = Counter()
    missed: Counter[str] = Counter()
    spellings: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        q = str(r.get("query") or "").strip()
        if not q:
            continue
        key = normalise_question(q)
        asked[key] += 1
        missed[key] += r.get("outcome") == "not_found"
        spellings[key][q] += 1
    keys = sorted(asked, key=lambda k: (-asked[k], k))
    if not keys:
        return []
    text = {k: spellings[k].most_common(1)[0][0] for k in keys}
    # near-duplicates: complete linkage, so every pair in a merged set is that close
    merged: dict[str, list[str]] = {k: [k] for k in keys}
    if len(keys) > 1:
        from sklearn.cluster import AgglomerativeClustering

        vecs = np.asarray(embedder.embed_queries([text[k] for k in keys]))
        labels = AgglomerativeClustering(n_clusters=None, distance_threshold=duplicate, metric="cosine",
                                         linkage="complete").fit_predict(vecs)
        by_label: dict[int, list[str]] = defaultdict(list)
        for k, label in zip(keys, labels):
            by_label[int(label)].append(k)  # most asked first: keys are sorted so
        merged = {members[0]: members for members in by_label.values()}
    entries = {}
    for head, members in merged.items():
        entries[text[head]] = {"q": text[head], "asked": sum(asked[m] for m in members),
                               "not_found": sum(missed[m] for m in members),
                               "variants": [text[m] for m in members[1:]],
                               "known": any(m in known for m in members)}
    # topics, as gaps clusters: every ask counts towards the group's size
    clusters = cluster_gaps([q for q, e in entries.items() for _ in range(e["asked"])], embedder, distance=distance,
                            examples=1)
    groups = []
    for c in clusters:
        qs = sorted((entries[q] for q in c["queries"]), key=lambda e: (-e["not_found"], -e["asked"], e["q"]))
        groups.append({"size": sum(e["asked"] for e in qs), "not_found": sum(e["not_found"] for e in qs),
                       "questions": qs})
    groups.sort(key=lambda g: (g["not_found"] == 0, -g["size"], g["questions"][0]["q"]))
    return groups
