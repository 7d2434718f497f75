"""Haystack 2, both ways (``pip install 'ragtune[haystack]'``; haystack-ai is imported on first use).

In: :func:`evaluate_haystack` scores a Haystack ``Pipeline`` (or a single retriever component) on a golden
set, from the ``documents`` output of its retriever. The question goes to every input of the pipeline named
``query`` or ``text`` (a text embedder's input), the cutoff to every ``top_k``; ``inputs=`` builds the run
data instead. Each ``Document`` becomes a hit by :func:`document_to_hit`: its document from
``meta["file_path"]`` (as Haystack's converters set it), ``source``, ``doc_id`` ...; its span from
``meta["split_idx_start"]`` (as ``DocumentSplitter`` sets it) and the length of its content; else its
content, located in that document.

Out: :class:`RagtuneRetriever` is a Haystack component (``run(query, top_k) -> {"documents": [...]}``) over
a ragtune pipeline, retriever or index store. :class:`RagtuneTextEmbedder` and
:class:`RagtuneDocumentEmbedder` are a ragtune embedder (the bundled MiniLM by default) as Haystack
embedder components: local, no network.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ConfigError
from ..embed import DEFAULT_EMBEDDER
from ._framework import (chunk_metadata, evaluate_hits, lazy_classes, named_embedder, ragtune_search, ranked,
                         require, source_of, span_hit)

__all__ = ["document_to_hit", "HaystackHits", "evaluate_haystack", "RagtuneRetriever", "RagtuneTextEmbedder",
           "RagtuneDocumentEmbedder"]

_LAZY = ("RagtuneRetriever", "RagtuneTextEmbedder", "RagtuneDocumentEmbedder")
_QUERY_INPUTS = ("query", "text")


def document_to_hit(doc: Any, *, source_key: str | None = None, offsets: bool = True) -> dict[str, Any]:
    """A Haystack ``Document`` as a hit dict (see the module docstring)."""
    meta = getattr(doc, "meta", None) or {}
    start = meta.get("split_idx_start", meta.get("start_index"))
    return span_hit(source_of(meta, source_key), getattr(doc, "content", None), getattr(doc, "score", None),
                    start, meta.get("end_index"), offsets=offsets)


class HaystackHits:
    """A Haystack pipeline or retriever component as ``search(query, k) -> hits`` for :func:`evaluate_retriever`.

    ``component`` names the retriever whose ``documents`` are scored (default: the only component whose
    output has ``documents``); its output is asked for even when it is not the pipeline's last component.
    """

    def __init__(self, target: Any, *, component: str | None = None,
                 inputs: Callable[[str, int], Mapping[str, Any]] | None = None, source_key: str | None = None,
                 offsets: bool = True, name: str | None = None):
        self.is_pipeline = callable(getattr(target, "inputs", None)) and callable(getattr(target, "run", None)) \
            and hasattr(target, "graph")
        if not self.is_pipeline and not callable(getattr(target, "run", None)):
            raise ConfigError(f"a {type(target).__name__} is neither a Haystack Pipeline nor a component with run(); "
                              "pass the pipeline that ends in (or contains) a retriever")
        self.target, self.component, self.build = target, component, inputs
        self.source_key, self.offsets = source_key, offsets
        self.name = name or f"haystack:{component or type(target).__name__}"
        if self.is_pipeline and inputs is None:
            self._slots = [(c, n) for c, spec in target.inputs().items() for n in spec if n in _QUERY_INPUTS]
            if not self._slots:
                raise ConfigError(f"the pipeline has no input named query or text (inputs: {_describe(target)}); "
                                  "pass inputs=lambda query, k: {component: {input: query}}")

    def _run(self, query: str, k: int) -> Any:
        if not self.is_pipeline:
            return self.target.run(query=query)
        if self.build is not None:
            data = dict(self.build(query, k))
        else:
            data: dict[str, dict[str, Any]] = {}
            for comp, slot in self._slots:
                data.setdefault(comp, {})[slot] = query
        return self.target.run(data, include_outputs_from={self.component} if self.component else None)

    def search(self, query: str, k: int) -> list[dict[str, Any]]:
        out = self._run(query, k)
        if not self.is_pipeline:
            docs = out.get("documents") if isinstance(out, Mapping) else None
        elif self.component:
            if self.component not in out:
                raise ConfigError(f"the pipeline has no output of component {self.component!r} (outputs: "
                                  f"{', '.join(out) or 'none'})")
            docs = out[self.component].get("documents")
        else:
            have = [c for c, v in out.items() if isinstance(v, Mapping) and "documents" in v]
            if len(have) != 1:
                raise ConfigError(f"{'several components' if have else 'no component'} of the pipeline output "
                                  f"documents ({', '.join(have) or 'outputs: ' + ', '.join(out)}); name the "
                                  "retriever with component=")
            docs = out[have[0]]["documents"]
        if docs is None:
            raise ConfigError(f"{self.name}: the output has no 'documents' list; name the retriever with component=")
        return [document_to_hit(d, source_key=self.source_key, offsets=self.offsets) for d in list(docs)[:k]]


def _describe(pipeline: Any) -> str:
    return ", ".join(f"{c}.{n}" for c, spec in pipeline.inputs().items() for n in spec) or "none"


def evaluate_haystack(target: Any, golden: Any, *, corpus: Any = None, component: str | None = None,
                      inputs: Callable[[str, int], Mapping[str, Any]] | None = None, source_key: str | None = None,
                      offsets: bool = True, name: str | None = None, **options: Any):
    """Score a Haystack pipeline or retriever component with ragtune's metrics; ``options`` go to
    :func:`~ragtune.external.evaluate_retriever` (``ks``, ``concurrency``, ``base_url`` ...)."""
    hits = HaystackHits(target, component=component, inputs=inputs, source_key=source_key, offsets=offsets,
                        name=name)
    return evaluate_hits(hits, golden, corpus, options)


def _make_classes() -> dict[str, type]:
    require("haystack", "haystack", "haystack-ai")
    from haystack import Document, component

    def _model(obj: Any) -> Any:
        obj._embedder = named_embedder(obj._embedder, obj.embedder)
        return obj._embedder

    @component
    class RagtuneRetriever:
        """A ragtune pipeline, retriever or index-store path as a Haystack retriever component.

        Each ``Document`` is a ragtune chunk: ``id`` the chunk id, ``meta`` its ``doc_id``/``source``,
        ``start_index``/``end_index`` span, ``sections`` (anchors) and ``heading_path``; ``score`` ragtune's.
        """

        def __init__(self, target: Any, top_k: int = 5):
            self.target, self.top_k = target, int(top_k)
            self._retriever = None

        def warm_up(self) -> None:
            if self._retriever is None:
                self._retriever = ragtune_search(self.target)

        @component.output_types(documents=list[Document])
        def run(self, query: str, top_k: int | None = None) -> dict[str, Any]:
            self.warm_up()
            hits = ranked(self._retriever, query, top_k or self.top_k)
            return {"documents": [Document(id=c.id, content=c.text, meta=chunk_metadata(c), score=s) for c, s in hits]}

    @component
    class RagtuneTextEmbedder:
        """Embeds a query with a ragtune embedder (a name, default ``minilm``, or an embedder object)."""

        def __init__(self, embedder: Any = DEFAULT_EMBEDDER):
            self.embedder = embedder
            self._embedder = None if isinstance(embedder, str) else embedder

        def warm_up(self) -> None:
            _model(self)

        @component.output_types(embedding=list[float])
        def run(self, text: str) -> dict[str, Any]:
            return {"embedding": _model(self).embed_queries([text])[0].tolist()}

    @component
    class RagtuneDocumentEmbedder:
        """Embeds documents' content with a ragtune embedder (a name, default ``minilm``, or an embedder object)."""

        def __init__(self, embedder: Any = DEFAULT_EMBEDDER):
            self.embedder = embedder
            self._embedder = None if isinstance(embedder, str) else embedder

        def warm_up(self) -> None:
            _model(self)

        @component.output_types(documents=list[Document])
        def run(self, documents: list[Document]) -> dict[str, Any]:
            if not documents:
                return {"documents": []}
            vectors = _model(self).embed([d.content or "" for d in documents])
            out = []
            for d, v in zip(documents, vectors):
                out.append(Document(id=d.id, content=d.content, meta=dict(d.meta), score=d.score,
                                    embedding=v.tolist()))
            return {"documents": out}

    return {"RagtuneRetriever": RagtuneRetriever, "RagtuneTextEmbedder": RagtuneTextEmbedder,
            "RagtuneDocumentEmbedder": RagtuneDocumentEmbedder}


__getattr__ = lazy_classes(globals(), _make_classes)
