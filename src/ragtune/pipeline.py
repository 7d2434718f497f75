"""Wiring the stages together: corpus -> chunks -> retriever (-> reranker) -> evaluation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from .chunking import CHUNKERS, Chunker, chunk_documents, make_chunker
from .corpus.corpus import Corpus
from .errors import ConfigError
from .evaluate.evaluate import DEFAULT_KS, EvalResult, evaluate
from .golden import GoldenSet
from .retrieve.base import Retriever
from .retrieve.bm25 import BM25Config, BM25Retriever, indexed_texts_key
from .retrieve.dense import DenseRetriever
from .retrieve.fusion import HybridRetriever
from .retrieve.parents import ParentRetriever
from .retrieve.rerank import CrossEncoderReranker, EmbeddingReranker, RerankedRetriever, Reranker
from .types import Chunk

__all__ = ["RETRIEVERS", "RERANKERS", "default_chunker", "build_retriever", "build_reranker", "Pipeline", "run_eval"]

RETRIEVERS = ("bm25", "dense", "hybrid")
RERANKERS = ("embedding", "cross-encoder")


def default_chunker(corpus: Corpus, name: str = "auto", *, prefix: bool | None = None, **options: Any) -> Chunker:
    """Resolve ``"auto"``: sections for markdown, whole documents with the title
    prefixed for BEIR (the BEIR convention), whole documents for text."""
    if name == "auto":
        name = "section" if corpus.kind == "markdown" else "document"
    if prefix is None:
        prefix = corpus.kind == "beir"
    if name not in CHUNKERS:
        raise ConfigError(f"unknown chunker {name!r}; choose one of: auto, {', '.join(CHUNKERS)}")
    return make_chunker(name, prefix=prefix, **options)


def _embedder(embedder: Any, show_progress: bool):
    """A cached embedder from a name; an embedder object is used as given."""
    if not isinstance(embedder, str):
        return embedder
    from .embed import CachedEmbedder, get_embedder

    return CachedEmbedder(get_embedder(embedder), show_progress=show_progress)


def _bm25(chunks: Sequence[Chunk], config: BM25Config, cache_dir: Any) -> BM25Retriever:
    """Build BM25, or load it from ``cache_dir`` (keyed by the indexed texts and config) and save it there."""
    if cache_dir is None:
        return BM25Retriever.build(chunks, config)
    import hashlib
    import json
    from pathlib import Path

    import bm25s

    # bm25s's version is part of the key: its saved format and scoring may change between releases
    key = hashlib.sha256(json.dumps([bm25s.__version__, indexed_texts_key(chunks), config.to_dict()]).encode()).hexdigest()[:24]
    folder = Path(cache_dir) / key
    if (folder / "ragtune-bm25.json").exists():
        try:
            return BM25Retriever.load(folder, chunks, config)
        except (ConfigError, OSError, ValueError, KeyError):
            pass  # damaged or foreign: rebuild
    retriever = BM25Retriever.build(chunks, config)
    tmp = folder.with_name(folder.name + f".tmp{__import__('os').getpid()}")
    retriever.save(tmp)
    try:
        tmp.rename(folder)
    except OSError:  # another process saved it first
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return retriever


def build_retriever(chunks: Sequence[Chunk], name: str = "bm25", *, embedder: Any = "minilm",
                    show_progress: bool = False, bm25_cache: Any = None, **options: Any) -> Retriever:
    """``bm25`` (options k1, b, method...), ``dense`` (embedder) or ``hybrid``
    (BM25 + dense by RRF; options rrf_k, weights, depth, plus BM25's). With ``bm25_cache`` (a folder),
    BM25 indexes are saved there and loaded again for the same chunks and config."""
    ann = bool(options.pop("ann", False))
    if name == "bm25":
        if ann:
            raise ConfigError("ann applies to dense and hybrid retrieval only")
        return _bm25(chunks, BM25Config.from_dict(options), bm25_cache)
    if name == "dense":
        if options:
            raise ConfigError(f"dense retrieval takes no option(s) {', '.join(map(repr, options))}; "
                              "valid: ann (choose the model with embedder=)")
        return DenseRetriever.build(chunks, _embedder(embedder, show_progress), ann=ann)
    if name == "hybrid":
        fuse = {k: options.pop(k) for k in ("rrf_k", "weights", "depth") if k in options}
        bm25 = _bm25(chunks, BM25Config.from_dict(options), bm25_cache)
        dense = DenseRetriever.build(chunks, _embedder(embedder, show_progress), ann=ann)
        return HybridRetriever([bm25, dense], k=fuse.get("rrf_k", 60), weights=fuse.get("weights"),
                               depth=fuse.get("depth", 50))
    raise ConfigError(f"unknown retriever {name!r}; choose one of: {', '.join(RETRIEVERS)}")


def build_reranker(name: str, model: str | None = None) -> Reranker:
    """``embedding`` (rescore with a second embedder, default ``e5-small``, offline)
    or ``cross-encoder`` (a sentence-transformers CrossEncoder id or folder)."""
    if name == "embedding":
        from .embed import CachedEmbedder, get_embedder

        return EmbeddingReranker(CachedEmbedder(get_embedder(model or "e5-small")))
    if name == "cross-encoder":
        return CrossEncoderReranker(model or "cross-encoder/ms-marco-MiniLM-L-6-v2")
    raise ConfigError(f"unknown reranker {name!r}; choose one of: {', '.join(RERANKERS)}")


@dataclass
class Pipeline:
    """A corpus chunked and indexed, ready to search and evaluate.

    ``base`` is the first-stage retriever over ``chunks``; ``retriever`` is
    what gets searched: ``base``, reranked if a reranker is set, then mapped
    to parents for small-to-big.
    """

    corpus: Corpus
    chunker: Chunker
    base: Retriever
    chunks: list[Chunk] = field(default_factory=list)  # what is indexed
    parents: list[Chunk] = field(default_factory=list)  # what is returned, for small-to-big
    reranker: Reranker | None = None
    candidates: int = 50
    version: str | None = None  # the store version this pipeline was loaded from

    @cached_property
    def retriever(self) -> Retriever:
        r: Retriever = self.base
        if self.reranker is not None:
            r = RerankedRetriever(r, self.reranker, candidates=self.candidates)
        if self.parents:
            r = ParentRetriever(r, {p.id: p for p in self.parents})
        return r

    @classmethod
    def build(cls, corpus: Corpus, *, chunker: str = "auto", prefix: bool | None = None,
              chunker_options: Mapping[str, Any] | None = None, retriever: str = "bm25",
              retriever_options: Mapping[str, Any] | None = None, embedder: str = "minilm",
              rerank: str | Reranker | None = None, rerank_model: str | None = None, candidates: int = 50,
              show_progress: bool = False) -> "Pipeline":
        ch = default_chunker(corpus, chunker, prefix=prefix, **dict(chunker_options or {}))
        chunks, parents = chunk_documents(corpus, ch)
        if not chunks:
            raise ConfigError(f"the {ch.name} chunker produced no chunks: every document is empty")
        base = build_retriever(chunks, retriever, embedder=embedder, show_progress=show_progress,
                               **dict(retriever_options or {}))
        reranker = build_reranker(rerank, rerank_model) if isinstance(rerank, str) else rerank
        return cls(corpus, ch, base, chunks, parents, reranker, candidates)

    def with_reranker(self, reranker: Reranker | None, candidates: int = 50) -> "Pipeline":
        """The same index with another reranking stage (no re-chunking, no re-embedding)."""
        return replace(self, reranker=reranker, candidates=candidates)

    def describe(self) -> dict[str, Any]:
        cfg = getattr(self.chunker, "config", None)
        rcfg = getattr(self.base, "config", None)
        rcfg = rcfg.to_dict() if hasattr(rcfg, "to_dict") else dict(rcfg or {})
        out = {
            "corpus": {"root": self.corpus.root, "kind": self.corpus.kind, "documents": len(self.corpus),
                       "fingerprint": self.corpus.fingerprint},
            "chunker": {"name": self.chunker.name, **(cfg.to_dict() if cfg else {})},
            "retriever": {"name": self.retriever.name, **rcfg},
            "chunks": len(self.chunks),
        }
        if self.reranker is not None:
            out["rerank"] = {"name": self.reranker.name, **dict(getattr(self.reranker, "config", {}) or {}),
                             "candidates": self.candidates}
        if self.parents:
            out["parents"] = len(self.parents)
        return out


def run_eval(pipeline: Pipeline, golden: GoldenSet, *, ks: Sequence[int] = DEFAULT_KS, depth: int = 100,
             filters: Any = None, show_progress: bool = False) -> EvalResult:
    config = {**pipeline.describe(), "golden": golden.source}
    if filters is not None:
        config["filter"] = str(filters)
    return evaluate(pipeline.retriever, golden, pipeline.corpus, ks=ks, depth=depth, config=config,
                    filters=filters, show_progress=show_progress)
