"""Corpus gaps: cluster the questions the system could not answer.

The ``not_found`` queries of a telemetry log are embedded and grouped by
agglomerative clustering on cosine distance (scikit-learn); each cluster is
reported with its size, the queries closest to its centre, and, when a
retriever is given, the nearest anchors the corpus does have.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import MissingDependencyError

__all__ = ["cluster_gaps"]


def cluster_gaps(queries: Sequence[str], embedder, *, distance: float = 0.5, retriever=None, examples: int = 3,
                 min_size: int = 1) -> list[dict[str, Any]]:
    """Clusters of ``queries``, largest first: size (times asked), representative queries, nearest anchors."""
    from collections import Counter

    counts = Counter(q.strip() for q in queries if q.strip())
    queries = list(counts)
    if not queries:
        return []
    vecs = embedder.embed_queries(queries)
    if len(queries) == 1:
        labels = np.zeros(1, dtype=int)
    else:
        try:
            from sklearn.cluster import AgglomerativeClustering
        except ImportError:
            raise MissingDependencyError("gap clustering needs scikit-learn: pip install 'ragtune[serve]'") from None
        labels = AgglomerativeClustering(n_clusters=None, distance_threshold=distance, metric="cosine",
                                         linkage="average").fit_predict(vecs)
    clusters = []
    for label in np.unique(labels):
        idx = np.flatnonzero(labels == label)
        if idx.size < min_size:
            continue
        centre = vecs[idx].mean(axis=0)
        order = idx[np.argsort(-(vecs[idx] @ centre))]
        reps = [queries[i] for i in order[:examples]]
        entry: dict[str, Any] = {"size": int(sum(counts[queries[i]] for i in idx)), "distinct": int(idx.size),
                                 "examples": reps, "queries": [queries[i] for i in order]}
        if retriever is not None:
            hits = retriever.search(reps[0], k=3).hits
            entry["nearest_anchors"] = [{"anchor": h.chunk.anchor, "score": h.score} for h in hits]
        clusters.append(entry)
    clusters.sort(key=lambda c: (-c["size"], c["examples"][0]))
    return clusters
