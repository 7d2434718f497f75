"""Dense retrieval: exact inner product over L2-normalised float32 vectors."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

import numpy as np

from ..config import Config, Opt
from ..errors import ConfigError, MissingDependencyError
from ..types import Chunk, Hit, Ranking
from .base import top_k
from .filters import ChunkFilter

__all__ = ["DenseConfig", "DenseRetriever"]


class DenseRetriever:
    """Cosine similarity between the query vector and every chunk vector.

    Chunk vectors are embedded once (through the embedding cache when the
    embedder is a :class:`~ragtune.embed.CachedEmbedder`); the query is
    embedded at search time, so latency includes it (stage ``embed_query``).
    """

    name = "dense"

    def __init__(self, chunks: Sequence[Chunk], vectors: np.ndarray, embedder, *, ann: bool = False):
        if vectors.shape[0] != len(chunks):
            raise ConfigError(f"{vectors.shape[0]} vectors for {len(chunks)} chunks")
        if vectors.shape[1] != embedder.dim:
            raise ConfigError(f"vectors have dimension {vectors.shape[1]} but embedder {embedder.model_id} "
                              f"produces {embedder.dim}: embeddings from different models never mix")
        self.chunks = tuple(chunks)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.embedder = embedder
        self.filter = ChunkFilter(self.chunks)
        self.config = {"embedder": embedder.model_id, "ann": ann}
        self._ann = self._build_ann() if ann else None

    @classmethod
    def build(cls, chunks: Sequence[Chunk], embedder, *, ann: bool = False) -> "DenseRetriever":
        if not chunks:
            raise ConfigError("cannot build a dense index over zero chunks; is the corpus empty?")
        vectors = embedder.embed([c.embed_text for c in chunks])
        return cls(chunks, vectors, embedder, ann=ann)

    def _build_ann(self):
        """An HNSW graph (usearch) over the vectors, for corpora where exact search is too slow."""
        try:  # onnxruntime crashes when it is first loaded after usearch: load it first
            import onnxruntime  # noqa: F401
        except ImportError:
            pass
        try:
            from usearch.index import Index
        except ImportError:
            raise MissingDependencyError("approximate search needs usearch: pip install 'ragtune[ann]'") from None
        index = Index(ndim=self.vectors.shape[1], metric="ip", dtype="f32", connectivity=16,
                      expansion_add=128, expansion_search=128)
        index.add(np.arange(len(self.chunks), dtype=np.uint64), self.vectors, threads=0)
        return index

    def exact_top(self, q: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        scores = self.vectors @ q
        idx = top_k(scores, k, mask=mask)
        return idx, scores[idx]

    def ann_top(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if self._ann is None:
            raise ConfigError("this dense retriever was built without ann=True")
        m = self._ann.search(q, min(k, len(self.chunks)))
        return np.asarray(m.keys, dtype=np.int64), 1.0 - np.asarray(m.distances, dtype=np.float32)

    def ann_recall(self, queries: Sequence[str], k: int = 10) -> float:
        """Share of the exact top-``k`` that the ANN index also returns, averaged over ``queries``."""
        qs = self.embedder.embed_queries(list(queries))
        hits = [len(set(self.ann_top(q, k)[0].tolist()) & set(self.exact_top(q, k)[0].tolist())) / min(k, len(self.chunks))
                for q in qs]
        return float(np.mean(hits)) if hits else float("nan")

    def query_vector(self, query: str) -> np.ndarray:
        return self.embedder.embed_queries([query])[0]

    def search(self, query: str, k: int = 10, filters=None) -> Ranking:
        mask = self.filter.mask(filters)
        t0 = time.perf_counter()
        q = self.query_vector(query)
        t1 = time.perf_counter()
        if self._ann is not None and mask is None:
            idx, scores = self.ann_top(q, k)
        else:  # exact; a filtered query searches only the allowed vectors
            idx, scores = self.exact_top(q, k, mask)
        hits = tuple(Hit(self.chunks[i], float(s)) for i, s in zip(idx.tolist(), scores.tolist()))
        return Ranking(query, hits, {"embed_query": t1 - t0, "dense": time.perf_counter() - t1})


@dataclass(frozen=True)
class DenseConfig(Config):
    """Dense retrieval options (the model is the pipeline's ``embedder``)."""

    ann: Annotated[bool, Opt(
        "approximate (HNSW, usearch) dense search instead of exact")] = False

    def __post_init__(self) -> None:
        if not isinstance(self.ann, bool):
            raise ConfigError(f"DenseConfig: ann must be true or false, got {self.ann!r}")


def _build(config: DenseConfig, chunks: Sequence[Chunk], resources) -> DenseRetriever:
    return resources.dense(chunks, ann=config.ann)


from ..registry import RETRIEVERS  # noqa: E402

RETRIEVERS.register("dense", DenseConfig, _build, summary="embedding cosine similarity", uses_embedder=True)
