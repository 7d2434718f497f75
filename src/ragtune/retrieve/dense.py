"""Dense retrieval: exact inner product over L2-normalised float32 vectors."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from ..errors import ConfigError
from ..types import Chunk, Hit, Ranking
from .base import top_k
from .filters import ChunkFilter

__all__ = ["DenseRetriever"]


class DenseRetriever:
    """Cosine similarity between the query vector and every chunk vector.

    Chunk vectors are embedded once (through the embedding cache when the
    embedder is a :class:`~ragtune.embed.CachedEmbedder`); the query is
    embedded at search time, so latency includes it (stage ``embed_query``).
    """

    name = "dense"

    def __init__(self, chunks: Sequence[Chunk], vectors: np.ndarray, embedder):
        if vectors.shape[0] != len(chunks):
            raise ConfigError(f"{vectors.shape[0]} vectors for {len(chunks)} chunks")
        if vectors.shape[1] != embedder.dim:
            raise ConfigError(f"vectors have dimension {vectors.shape[1]} but embedder {embedder.model_id} "
                              f"produces {embedder.dim}: embeddings from different models never mix")
        self.chunks = tuple(chunks)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.embedder = embedder
        self.filter = ChunkFilter(self.chunks)
        self.config = {"embedder": embedder.model_id}

    @classmethod
    def build(cls, chunks: Sequence[Chunk], embedder) -> "DenseRetriever":
        if not chunks:
            raise ConfigError("cannot build a dense index over zero chunks; is the corpus empty?")
        vectors = embedder.embed([c.embed_text for c in chunks])
        return cls(chunks, vectors, embedder)

    def query_vector(self, query: str) -> np.ndarray:
        return self.embedder.embed_queries([query])[0]

    def search(self, query: str, k: int = 10, filters=None) -> Ranking:
        mask = self.filter.mask(filters)
        t0 = time.perf_counter()
        q = self.query_vector(query)
        t1 = time.perf_counter()
        scores = self.vectors @ q
        idx = top_k(scores, k, mask=mask)
        hits = tuple(Hit(self.chunks[i], float(scores[i])) for i in idx)
        return Ranking(query, hits, {"embed_query": t1 - t0, "dense": time.perf_counter() - t1})
