"""Dense retrieval: inner products over L2-normalised float32 vectors, exact or through an HNSW graph.

``ann="auto"`` (the default) searches exactly below :data:`ANN_AUTO_CHUNKS` chunks and through the graph
(usearch, extra ``ann``) from there on, where exact search's latency grows past the graph's; the knee is
measured by ``bench/scale.py`` (docs/scale.md). ``ann=True`` / ``ann=False`` force either.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np

from ..config import Config, Opt
from ..errors import ConfigError, MissingDependencyError
from ..progress import note
from ..types import Chunk, Hit, Ranking
from .base import top_k
from .filters import ChunkFilter

__all__ = ["ANN_AUTO_CHUNKS", "AnnSetting", "DenseConfig", "DenseRetriever", "resolve_ann"]

AnnSetting = bool | Literal["auto"]
# From this many chunks on, ann="auto" searches the HNSW graph. The rule: the graph once exact search's p95 passes
# 10 ms, about what embedding the query costs on a CPU, so exact search would add half again to a dense query.
# bench/scale.py (BENCHMARKS.md, "Scale"): exact p95 9.8 ms at 50,000 chunks (one BLAS thread), 27-31 ms at
# 100,000, against the graph's 1.4-1.5 ms with recall@10 >= 0.999. Read at call time, so it may be changed.
ANN_AUTO_CHUNKS = 50_000
_noted: set[str] = set()


def resolve_ann(ann: AnnSetting, n_chunks: int, threshold: int | None = None) -> bool:
    """Whether a dense index over ``n_chunks`` chunks uses the HNSW graph: ``ann`` itself when it is a bool;
    for ``"auto"``, from ``threshold`` (default :data:`ANN_AUTO_CHUNKS`) chunks on, when usearch is installed
    (otherwise exact search, with a one-time note saying how to get the graph)."""
    check_ann("DenseRetriever", ann)
    if isinstance(ann, bool):
        return ann
    if n_chunks < (ANN_AUTO_CHUNKS if threshold is None else threshold):
        return False
    if not _have_usearch():
        if "usearch" not in _noted:
            _noted.add("usearch")
            note(f"note: {n_chunks:,} chunks would use approximate (HNSW) dense search, but usearch is not "
                 "installed: searching exactly (slower); pip install 'ragtune[ann]', or pass ann=false to keep it")
        return False
    return True


def _have_usearch() -> bool:
    try:  # only looked up: usearch must be imported after onnxruntime (_build_ann)
        return importlib.util.find_spec("usearch") is not None
    except ValueError:  # sys.modules["usearch"] is None: its import is blocked
        return False


def check_ann(owner: str, ann: object) -> None:
    if not (isinstance(ann, bool) or ann == "auto"):
        raise ConfigError(f"{owner}: ann must be true, false or 'auto', got {ann!r}")


class DenseRetriever:
    """Cosine similarity between the query vector and every chunk vector.

    Chunk vectors are embedded once (through the embedding cache when the
    embedder is a :class:`~ragtune.embed.CachedEmbedder`); the query is
    embedded at search time, so latency includes it (stage ``embed_query``).
    """

    name = "dense"

    def __init__(self, chunks: Sequence[Chunk], vectors: np.ndarray, embedder, *, ann: AnnSetting = "auto",
                 ann_threshold: int | None = None):
        if vectors.shape[0] != len(chunks):
            raise ConfigError(f"{vectors.shape[0]} vectors for {len(chunks)} chunks")
        if vectors.shape[1] != embedder.dim:
            raise ConfigError(f"vectors have dimension {vectors.shape[1]} but embedder {embedder.model_id} "
                              f"produces {embedder.dim}: embeddings from different models never mix")
        self.chunks = tuple(chunks)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.embedder = embedder
        self.filter = ChunkFilter(self.chunks)
        use = resolve_ann(ann, len(self.chunks), ann_threshold)
        # "ann" is what runs; "ann_setting" what was asked ("auto": chosen by the size, from "ann_threshold")
        self.config = {"embedder": embedder.model_id, "ann": use, "ann_setting": ann}
        if ann == "auto":
            self.config["ann_threshold"] = ANN_AUTO_CHUNKS if ann_threshold is None else ann_threshold
        self._ann = self._build_ann() if use else None

    @classmethod
    def build(cls, chunks: Sequence[Chunk], embedder, *, ann: AnnSetting = "auto",
              ann_threshold: int | None = None) -> "DenseRetriever":
        if not chunks:
            raise ConfigError("cannot build a dense index over zero chunks; is the corpus empty?")
        check_ann("DenseRetriever", ann)
        vectors = embedder.embed([c.embed_text for c in chunks])
        return cls(chunks, vectors, embedder, ann=ann, ann_threshold=ann_threshold)

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
            raise ConfigError("this dense retriever searches exactly (ann=False, or 'auto' below "
                              f"{self.config.get('ann_threshold', ANN_AUTO_CHUNKS):,} chunks): build it with ann=True")
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

    ann: Annotated[AnnSetting, Opt(
        "approximate (HNSW, usearch) dense search instead of exact; default auto: from "
        f"{ANN_AUTO_CHUNKS:,} chunks on, when usearch is installed")] = "auto"

    def __post_init__(self) -> None:
        check_ann("DenseConfig", self.ann)


def _build(config: DenseConfig, chunks: Sequence[Chunk], resources) -> DenseRetriever:
    return resources.dense(chunks, ann=config.ann)


from ..registry import RETRIEVERS  # noqa: E402

RETRIEVERS.register("dense", DenseConfig, _build, summary="embedding cosine similarity", uses_embedder=True)
