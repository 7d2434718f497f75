"""LangChain, both ways (``pip install 'ragtune[langchain]'``; langchain-core is imported on first use).

In: :func:`evaluate_langchain` scores a LangChain retriever (anything with ``invoke(query) -> [Document]``)
or vector store (``similarity_search_with_score(query, k)``) on a golden set. Each ``Document`` becomes a
hit by :func:`document_to_hit`: its document from ``metadata["source"]`` (as LangChain loaders set it),
``file_path``, ``doc_id`` ... (never ``Document.id``, which a vector store makes up); its span from
``metadata["start_index"]`` (a text splitter's ``add_start_index=True``) and the length of its
``page_content`` (or ``metadata["end_index"]``); else its ``page_content``, located in that document.

Out: :class:`RagtuneRetriever` is a LangChain ``BaseRetriever`` over a ragtune pipeline, retriever or index
store. :class:`RagtuneEmbeddings` is a ragtune embedder (the bundled MiniLM by default) as LangChain
``Embeddings``: local, no network.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..embed import DEFAULT_EMBEDDER
from ._framework import (chunk_metadata, evaluate_hits, lazy_classes, named_embedder, ragtune_search, ranked,
                         require, source_of, span_hit)

__all__ = ["document_to_hit", "LangChainHits", "evaluate_langchain", "RagtuneRetriever", "RagtuneEmbeddings"]

_LAZY = ("RagtuneRetriever", "RagtuneEmbeddings")


def document_to_hit(doc: Any, score: Any = None, *, source_key: str | None = None,
                    offsets: bool = True) -> dict[str, Any]:
    """A LangChain ``Document`` (and its score, when the store gave one) as a hit dict."""
    meta = getattr(doc, "metadata", None) or {}
    if score is None:
        score = meta.get("score", meta.get("relevance_score"))
    return span_hit(source_of(meta, source_key), getattr(doc, "page_content", None), score,
                    meta.get("start_index"), meta.get("end_index"), offsets=offsets)


class LangChainHits:
    """A LangChain retriever or vector store as ``search(query, k) -> hits`` for :func:`evaluate_retriever`.

    A vector store is asked for ``k`` documents with their scores; a retriever returns as many as it was
    built for (``search_kwargs={"k": ...}``), of which the first ``k`` are kept.
    """

    def __init__(self, target: Any, *, source_key: str | None = None, offsets: bool = True, name: str | None = None):
        self._store = callable(getattr(target, "similarity_search_with_score", None))
        if not self._store and not callable(getattr(target, "invoke", None)):
            raise ConfigError(f"a {type(target).__name__} is neither a LangChain retriever (invoke) nor a vector store "
                              "(similarity_search_with_score); pass store.as_retriever(...) or the store")
        self.target, self.source_key, self.offsets = target, source_key, offsets
        self.name = name or f"langchain:{type(target).__name__}"

    def search(self, query: str, k: int) -> list[dict[str, Any]]:
        if self._store:
            pairs = self.target.similarity_search_with_score(query, k=k)
        else:
            pairs = [(d, None) for d in list(self.target.invoke(query))[:k]]
        return [document_to_hit(d, s, source_key=self.source_key, offsets=self.offsets) for d, s in pairs]


def evaluate_langchain(target: Any, golden: Any, *, corpus: Any = None, source_key: str | None = None,
                       offsets: bool = True, name: str | None = None, **options: Any):
    """Score a LangChain retriever or vector store with ragtune's metrics; ``options`` go to
    :func:`~ragtune.external.evaluate_retriever` (``ks``, ``concurrency``, ``base_url`` ...)."""
    hits = LangChainHits(target, source_key=source_key, offsets=offsets, name=name)
    return evaluate_hits(hits, golden, corpus, options)


def _make_classes() -> dict[str, type]:
    require("langchain_core", "langchain", "langchain-core")
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.retrievers import BaseRetriever
    from pydantic import PrivateAttr

    class RagtuneRetriever(BaseRetriever):
        """A ragtune pipeline, retriever or index-store path as a LangChain retriever of ``k`` documents.

        Each ``Document`` is a ragtune chunk: ``id`` the chunk id, metadata ``source``/``doc_id`` its document,
        ``start_index``/``end_index`` its span, ``sections`` (anchors), ``heading_path``, ``score`` and the
        document's own metadata.
        """

        target: Any
        k: int = 5
        filters: Any = None
        _retriever: Any = PrivateAttr(default=None)

        def __init__(self, target: Any = None, k: int = 5, **kwargs: Any):
            super().__init__(target=target, k=k, **kwargs)
            self._retriever = ragtune_search(target)

        def _get_relevant_documents(self, query: str, *, run_manager: Any = None) -> list[Any]:
            return [Document(page_content=chunk.text, id=chunk.id, metadata={**chunk_metadata(chunk), "score": score})
                    for chunk, score in ranked(self._retriever, query, self.k, self.filters)]

    class RagtuneEmbeddings(Embeddings):
        """A ragtune embedder (a name: ``minilm``, ``e5-small``, ``onnx:...``, or an embedder object) as
        LangChain embeddings; a named one loads on first use."""

        def __init__(self, embedder: Any = DEFAULT_EMBEDDER):
            self._name = embedder if isinstance(embedder, str) else None
            self._embedder = None if isinstance(embedder, str) else embedder

        def _model(self) -> Any:
            self._embedder = named_embedder(self._embedder, self._name)
            return self._embedder

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return self._model().embed(list(texts)).tolist() if texts else []

        def embed_query(self, text: str) -> list[float]:
            return self._model().embed_queries([text])[0].tolist()

    return {"RagtuneRetriever": RagtuneRetriever, "RagtuneEmbeddings": RagtuneEmbeddings}


__getattr__ = lazy_classes(globals(), _make_classes)
