"""LlamaIndex, both ways (``pip install 'ragtune[llamaindex]'``; llama-index-core is imported on first use).

In: :func:`evaluate_llamaindex` scores a LlamaIndex retriever (anything with ``retrieve``) or query engine
(``query(...).source_nodes``) on a golden set. Each source node becomes a hit by :func:`node_to_hit`: its
document from metadata ``file_path`` (as ``SimpleDirectoryReader`` sets it), ``source``, ``doc_id`` ... or
else the node's ``ref_doc_id``; its span from ``start_char_idx``/``end_char_idx`` when present; else its
text, located in that document.

Out: :class:`RagtuneRetriever` is a LlamaIndex ``BaseRetriever`` over a ragtune pipeline, retriever or index
store, so an app swaps in ragtune's tuned retrieval. :class:`RagtuneEmbedding` is a ragtune embedder (the
bundled MiniLM by default) as a LlamaIndex ``BaseEmbedding``: local, no network.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..embed import DEFAULT_EMBEDDER
from ._framework import (chunk_metadata, evaluate_hits, lazy_classes, named_embedder, ragtune_search, ranked,
                         require, source_of, span_hit)

__all__ = ["node_to_hit", "LlamaIndexHits", "evaluate_llamaindex", "RagtuneRetriever", "RagtuneEmbedding"]

_LAZY = ("RagtuneRetriever", "RagtuneEmbedding")
_TECHNICAL = ["chunk_id", "start_index", "end_index", "sections", "heading_path", "doc_id", "source"]


def node_to_hit(node: Any, *, source_key: str | None = None, offsets: bool = True) -> dict[str, Any]:
    """A LlamaIndex ``NodeWithScore`` (or bare node) as a hit dict (see the module docstring)."""
    inner = getattr(node, "node", node)
    meta = getattr(inner, "metadata", None) or {}
    source = source_of(meta, source_key, getattr(inner, "ref_doc_id", None))
    text = getattr(inner, "text", None)
    if not isinstance(text, str):
        text = inner.get_content() if callable(getattr(inner, "get_content", None)) else None
    return span_hit(source, text, getattr(node, "score", None), getattr(inner, "start_char_idx", None),
                    getattr(inner, "end_char_idx", None), offsets=offsets)


class LlamaIndexHits:
    """A LlamaIndex retriever or query engine as ``search(query, k) -> hits`` for :func:`evaluate_retriever`.

    A retriever returns as many nodes as it was built for (``similarity_top_k``): build it with at least the
    largest cutoff you score. The first ``k`` are kept.
    """

    def __init__(self, target: Any, *, source_key: str | None = None, offsets: bool = True, name: str | None = None):
        if not callable(getattr(target, "retrieve", None)) and not callable(getattr(target, "query", None)):
            from ..errors import ConfigError

            raise ConfigError(f"a {type(target).__name__} is neither a LlamaIndex retriever (retrieve) nor a query "
                              "engine (query); pass index.as_retriever(...) or index.as_query_engine(...)")
        self.target, self.source_key, self.offsets = target, source_key, offsets
        self.name = name or f"llamaindex:{type(target).__name__}"

    def search(self, query: str, k: int) -> list[dict[str, Any]]:
        if callable(getattr(self.target, "retrieve", None)):
            nodes = self.target.retrieve(query)
        else:
            nodes = getattr(self.target.query(query), "source_nodes", None) or []
        return [node_to_hit(n, source_key=self.source_key, offsets=self.offsets) for n in list(nodes)[:k]]


def evaluate_llamaindex(target: Any, golden: Any, *, corpus: Any = None, source_key: str | None = None,
                        offsets: bool = True, name: str | None = None, **options: Any):
    """Score a LlamaIndex retriever or query engine with ragtune's metrics; ``options`` go to
    :func:`~ragtune.external.evaluate_retriever` (``ks``, ``concurrency``, ``base_url`` ...)."""
    hits = LlamaIndexHits(target, source_key=source_key, offsets=offsets, name=name)
    return evaluate_hits(hits, golden, corpus, options)


def _make_classes() -> dict[str, type]:
    require("llama_index.core", "llamaindex", "llama-index-core")
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeRelationship, NodeWithScore, RelatedNodeInfo, TextNode

    class RagtuneRetriever(BaseRetriever):
        """A ragtune pipeline, retriever or index-store path as a LlamaIndex retriever of ``k`` nodes.

        Each node is a ragtune chunk: ``id_`` the chunk id, ``ref_doc_id`` its document, ``start_char_idx``/
        ``end_char_idx`` its span, metadata ``doc_id``, ``sections`` (anchors), ``heading_path`` and the
        document's own metadata; the score is ragtune's.
        """

        def __init__(self, target: Any, k: int = 5, *, filters: Any = None, **kwargs: Any):
            super().__init__(**kwargs)
            self._ragtune = ragtune_search(target)
            self._k, self._filters = int(k), filters

        def _retrieve(self, query_bundle: Any) -> list[Any]:
            out = []
            for chunk, score in ranked(self._ragtune, query_bundle.query_str, self._k, self._filters):
                node = TextNode(id_=chunk.id, text=chunk.text, metadata=chunk_metadata(chunk),
                                start_char_idx=chunk.start, end_char_idx=chunk.end,
                                excluded_llm_metadata_keys=list(_TECHNICAL),
                                excluded_embed_metadata_keys=list(_TECHNICAL),
                                relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=chunk.doc_id)})
                out.append(NodeWithScore(node=node, score=score))
            return out

    class RagtuneEmbedding(BaseEmbedding):
        """A ragtune embedder (a name: ``minilm``, ``e5-small``, ``onnx:...``, or an embedder object) as a
        LlamaIndex embedding; a named one loads on first use."""

        embedder_name: str = DEFAULT_EMBEDDER
        _embedder: Any = PrivateAttr(default=None)

        def __init__(self, embedder: Any = DEFAULT_EMBEDDER, **kwargs: Any):
            name = embedder if isinstance(embedder, str) else getattr(embedder, "model_id", type(embedder).__name__)
            super().__init__(embedder_name=name, model_name=f"ragtune:{name}", **kwargs)
            if not isinstance(embedder, str):
                self._embedder = embedder

        def _model(self) -> Any:
            self._embedder = named_embedder(self._embedder, self.embedder_name)
            return self._embedder

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._model().embed_queries([query])[0].tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._model().embed([text])[0].tolist()

        def _get_text_embeddings(self, texts: Sequence[str]) -> list[list[float]]:
            return self._model().embed(list(texts)).tolist()

    return {"RagtuneRetriever": RagtuneRetriever, "RagtuneEmbedding": RagtuneEmbedding}


__getattr__ = lazy_classes(globals(), _make_classes)
