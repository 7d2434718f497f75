"""Wiring the stages together: corpus -> chunks -> retriever -> evaluation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .chunking import CHUNKERS, Chunker, chunk_corpus, make_chunker
from .corpus.corpus import Corpus
from .errors import ConfigError
from .evaluate.evaluate import DEFAULT_KS, EvalResult, evaluate
from .golden import GoldenSet
from .retrieve.base import Retriever
from .retrieve.bm25 import BM25Config, BM25Retriever
from .retrieve.parents import ParentRetriever
from .types import Chunk

__all__ = ["RETRIEVERS", "default_chunker", "build_retriever", "Pipeline", "run_eval"]

RETRIEVERS = ("bm25",)


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


def build_retriever(chunks: Sequence[Chunk], name: str = "bm25", **options: Any) -> Retriever:
    if name == "bm25":
        return BM25Retriever.build(chunks, BM25Config.from_dict(options))
    raise ConfigError(f"unknown retriever {name!r}; choose one of: {', '.join(RETRIEVERS)}")


@dataclass
class Pipeline:
    """A corpus chunked and indexed, ready to search and evaluate."""

    corpus: Corpus
    chunker: Chunker
    retriever: Retriever
    chunks: list[Chunk] = field(default_factory=list)  # what is indexed
    parents: list[Chunk] = field(default_factory=list)  # what is returned, for small-to-big

    @classmethod
    def build(cls, corpus: Corpus, *, chunker: str = "auto", prefix: bool | None = None,
              retriever: str = "bm25", retriever_options: Mapping[str, Any] | None = None,
              chunker_options: Mapping[str, Any] | None = None) -> "Pipeline":
        ch = default_chunker(corpus, chunker, prefix=prefix, **dict(chunker_options or {}))
        parents: list[Chunk] = []
        if hasattr(ch, "chunk_with_parents"):
            chunks = []
            for doc in corpus:
                ps, cs = ch.chunk_with_parents(doc)
                parents.extend(ps)
                chunks.extend(cs)
        else:
            chunks = chunk_corpus(corpus, ch)
        if not chunks:
            raise ConfigError(f"the {ch.name} chunker produced no chunks: every document is empty")
        r = build_retriever(chunks, retriever, **dict(retriever_options or {}))
        if parents:
            r = ParentRetriever(r, {p.id: p for p in parents})
        return cls(corpus, ch, r, chunks, parents)

    def describe(self) -> dict[str, Any]:
        cfg = getattr(self.chunker, "config", None)
        rcfg = getattr(self.retriever, "config", None)
        return {
            "corpus": {"root": self.corpus.root, "kind": self.corpus.kind, "documents": len(self.corpus),
                       "fingerprint": self.corpus.fingerprint},
            "chunker": {"name": self.chunker.name, **(cfg.to_dict() if cfg else {})},
            "retriever": {"name": self.retriever.name, **(rcfg.to_dict() if rcfg else {})},
            "chunks": len(self.chunks),
            **({"parents": len(self.parents)} if self.parents else {}),
        }


def run_eval(pipeline: Pipeline, golden: GoldenSet, *, ks: Sequence[int] = DEFAULT_KS, depth: int = 100,
             show_progress: bool = False) -> EvalResult:
    config = {**pipeline.describe(), "golden": golden.source}
    return evaluate(pipeline.retriever, golden, pipeline.corpus, ks=ks, depth=depth, config=config,
                    show_progress=show_progress)
