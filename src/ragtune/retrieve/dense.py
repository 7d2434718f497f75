"""Dense retrieval: inner products over L2-normalised float32 vectors, exact or through an HNSW graph.

``ann="auto"`` (the default) searches exactly below :data:`ANN_AUTO_CHUNKS` chunks and through the graph
(usearch, extra ``ann``) from there on, where exact search's latency grows past the graph's; the knee is
measured by ``bench/scale.py`` (docs/scale.md). ``ann=True`` / ``ann=False`` force either.

A store version keeps the graph it was built with (:meth:`DenseRetriever.save_graph`); opening the version loads
it (:class:`SavedGraph`) instead of building it again, once the file matches what the manifest recorded (its size
and hash, the vectors it indexes, the usearch release and the graph parameters). A graph that does not match is
built again, with a one-line note: a saved graph is a cache of the vectors, never a source of other answers.
"""

from __future__ import annotations

import errno
import hashlib
import importlib.util
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np

from ..config import Config, Opt
from ..errors import ConfigError, MissingDependencyError
from ..progress import note
from ..types import Chunk, Hit, Ranking
from .base import top_k, warm_up
from .filters import ChunkFilter

__all__ = ["ANN_AUTO_CHUNKS", "AnnSetting", "DenseConfig", "DenseRetriever", "SavedGraph", "resolve_ann"]

AnnSetting = bool | Literal["auto"]
# From this many chunks on, ann="auto" searches the HNSW graph. The rule: the graph once exact search's p95 passes
# 10 ms, about what embedding the query costs on a CPU, so exact search would add half again to a dense query.
# bench/scale.py (BENCHMARKS.md, "Scale"): exact p95 9.8 ms at 50,000 chunks (one BLAS thread), 27-31 ms at
# 100,000, against the graph's 1.4-1.5 ms with recall@10 >= 0.999. Read at call time, so it may be changed.
ANN_AUTO_CHUNKS = 50_000
_noted: set[str] = set()
# how the graph is built; a saved graph records them, and one built otherwise is built again
_GRAPH_PARAMS = {"metric": "ip", "dtype": "f32", "connectivity": 16, "expansion_add": 128, "expansion_search": 128}


@dataclass(frozen=True)
class SavedGraph:
    """A graph saved with a store version: the file, the manifest's record of it (what :meth:`DenseRetriever.
    save_graph` returned, plus the file's ``size`` and ``blake2b``) and the manifest's BLAKE2b of the vectors file
    the retriever is opened with (None: not recorded)."""

    path: Path
    record: Mapping[str, Any]
    vectors_blake2b: str | None


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


def _graph_problem(saved: SavedGraph, want: Mapping[str, Any]) -> str | None:
    """Why a saved graph's file or record does not fit (``want``: the record of a graph built now), or None."""
    rec = saved.record
    for key, value in want.items():
        if rec.get(key) != value:
            return f"it was saved with {key}={rec.get(key)!r}, this one needs {value!r}"
    if not saved.vectors_blake2b or rec.get("vectors_blake2b") != saved.vectors_blake2b:
        return "it was built from other vectors"
    h, size = hashlib.blake2b(digest_size=16), 0
    try:
        with open(saved.path, "rb") as f:
            while block := f.read(1 << 20):
                h.update(block)
                size += len(block)
    except OSError as e:
        return f"it cannot be read ({e.strerror or e})"
    if size != rec.get("size"):
        return f"it has {size:,} bytes, the manifest recorded {rec.get('size')!r} (truncated or overwritten)"
    if h.hexdigest() != rec.get("blake2b"):
        return "it does not match its checksum in the manifest"
    return None


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
                 ann_threshold: int | None = None, saved_graph: SavedGraph | None = None):
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
        self.ann_loaded = False  # True: the graph came from a store version's file, not built here
        self._ann = None
        if use and saved_graph is not None:
            self._ann = self._load_ann(saved_graph)
            self.ann_loaded = self._ann is not None
        if use and self._ann is None:
            self._ann = self._build_ann()

    def warm_up(self) -> None:
        """Load the query embedder's model now (see :func:`ragtune.retrieve.base.warm_up`)."""
        warm_up(self.embedder)

    @classmethod
    def build(cls, chunks: Sequence[Chunk], embedder, *, ann: AnnSetting = "auto",
              ann_threshold: int | None = None) -> "DenseRetriever":
        if not chunks:
            raise ConfigError("cannot build a dense index over zero chunks; is the corpus empty?")
        check_ann("DenseRetriever", ann)
        vectors = embedder.embed([c.embed_text for c in chunks])
        return cls(chunks, vectors, embedder, ann=ann, ann_threshold=ann_threshold)

    def _new_index(self):
        try:  # onnxruntime crashes when it is first loaded after usearch: load it first
            import onnxruntime  # noqa: F401
        except ImportError:
            pass
        try:
            from usearch.index import Index
        except ImportError:
            raise MissingDependencyError("approximate search needs usearch: pip install 'ragtune[ann]'") from None
        return Index(ndim=self.vectors.shape[1], **_GRAPH_PARAMS)

    def _build_ann(self):
        """An HNSW graph (usearch) over the vectors, for corpora where exact search is too slow."""
        index = self._new_index()
        index.add(np.arange(len(self.chunks), dtype=np.uint64), self.vectors, threads=0)
        return index

    def _graph_record(self) -> dict[str, Any]:
        import usearch  # imported after onnxruntime by _new_index, which made the graph

        return {"usearch": usearch.__version__, "vectors": len(self.chunks), "ndim": int(self.vectors.shape[1]),
                **_GRAPH_PARAMS}

    def save_graph(self, path: str | Path) -> dict[str, Any] | None:
        """Write the HNSW graph to ``path`` (usearch's own format) and return what it was built from (usearch
        release, number of vectors, dimension, metric and build parameters); None, writing nothing, when this
        retriever searches exactly."""
        if self._ann is None:
            return None
        try:
            self._ann.save(str(path))
        except RuntimeError as e:  # usearch reports a failed write this way
            raise OSError(errno.EIO, f"usearch could not write the graph ({e})", str(path)) from None
        size, want = os.path.getsize(path), self._ann.serialized_length
        if size != want:  # usearch does not report every failed write (a full disk): the file says it
            raise OSError(errno.ENOSPC, f"the graph file has {size:,} of its {want:,} bytes (disk full?)", str(path))
        return self._graph_record()

    def _load_ann(self, saved: SavedGraph):
        """The saved graph when it matches these vectors and this usearch, else None after a one-line note."""
        index = self._new_index()  # first: it imports onnxruntime before usearch
        problem = _graph_problem(saved, self._graph_record())
        if problem is None:
            try:
                index.load(str(saved.path))
            except (RuntimeError, ValueError, OSError) as e:
                problem = f"usearch could not read it ({e})"
            else:
                problem = self._graph_mismatch(index)
        if problem is None:
            return index
        note(f"note: the saved HNSW graph {saved.path.name} does not fit this version ({problem}): building it again "
             f"over {len(self.chunks):,} vectors")
        return None

    def _graph_mismatch(self, index) -> str | None:
        """What shows a loaded graph is not over these vectors: its size, or a sample of the vectors it holds."""
        n = len(self.chunks)
        if len(index) != n:
            return f"it holds {len(index):,} vectors, the version {n:,}"
        rows = np.unique(np.r_[0, n // 2, n - 1, np.random.default_rng(0).integers(0, n, 13)]).astype(np.uint64)
        got = np.asarray(index.get(rows), dtype=np.float32).reshape(len(rows), -1)
        if not np.array_equal(got, self.vectors[rows.astype(np.int64)]):
            return "the vectors it holds are not the version's"
        return None

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
