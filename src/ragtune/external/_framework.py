"""Shared by the framework adapters (llamaindex.py, langchain.py, haystack.py): imports, hits, ragtune retrieval."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import ConfigError, MissingDependencyError
from ..types import Chunk, Ranking

#: metadata keys that name a document, in the order the adapters prefer them
SOURCE_KEYS = ("file_path", "source", "path", "doc_id", "document_id", "file_name", "filename")


def require(module: str, extra: str, package: str) -> Any:
    """Import ``module`` or fail with the pip command that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependencyError(f"{module} is not installed ({e}); pip install 'ragtune[{extra}]' "
                                     f"(or pip install {package})") from None


def lazy_classes(namespace: dict[str, Any], make: Callable[[], dict[str, type]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that builds the framework's classes (``make``: import the framework, define them)
    on first access and keeps them in the module ``namespace``, so importing an adapter never imports its framework."""
    names: tuple[str, ...] = tuple(namespace["_LAZY"])

    def __getattr__(name: str) -> Any:
        if name in names:
            classes = make()
            namespace.update(classes)
            return classes[name]
        raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
    return __getattr__


def evaluate_hits(hits: Any, golden: Any, corpus: Any, options: Mapping[str, Any]) -> Any:
    """Score a framework adapter (``search(query, k) -> hits`` and a ``name``) with ragtune's metrics;
    ``options`` go to :func:`~ragtune.external.evaluate_retriever` (``ks``, ``concurrency``, ``base_url`` ...)."""
    from .adapter import evaluate_retriever

    return evaluate_retriever(hits, golden, corpus=corpus, name=hits.name, **options)


def named_embedder(current: Any, name: str) -> Any:
    """The embedder an adapter holds, or the one named ``name`` loaded now (a named embedder loads on first use)."""
    if current is not None:
        return current
    from ..embed import get_embedder

    return get_embedder(name)


def source_of(meta: Mapping[str, Any], source_key: str | None, *fallbacks: Any) -> str | None:
    """The document a framework result names: ``meta[source_key]`` if given, else the first of
    :data:`SOURCE_KEYS` in ``meta``, else the first non-empty fallback (e.g. a node's ``ref_doc_id``)."""
    keys = (source_key,) if source_key else SOURCE_KEYS
    for key in keys:
        v = meta.get(key)
        if isinstance(v, (str, os.PathLike)) and str(v).strip():
            return _absolute(os.fspath(v))
    if source_key:
        raise ConfigError(f"a result has no metadata {source_key!r} (it has: {', '.join(map(str, meta)) or 'none'}); "
                          "pass the metadata key that names its document as source_key=")
    return next((str(f) for f in fallbacks if isinstance(f, str) and f.strip()), None)


def _absolute(path: str) -> str:
    """A path relative to the working directory (``docs/guide.md``, as a loader given ``docs`` keeps it) made
    absolute, so the matcher makes it relative to the corpus folder; ids, URLs and other paths as they are."""
    if "://" in path or os.path.isabs(path) or not os.path.isfile(path):
        return path
    return os.path.abspath(path)


def span_hit(source: str | None, text: str | None, score: Any, start: Any = None, end: Any = None, *,
             offsets: bool = True) -> dict[str, Any]:
    """A hit for :func:`ragtune.external.hits.to_hit`: the document, its text and, when known, its span.

    Offsets are used only with a document and only when ``offsets`` (they count characters of the text the
    framework read: turn them off when that was not the corpus file as it is, e.g. after cleaning).
    """
    hit: dict[str, Any] = {}
    if source is not None:
        hit["path"] = source
    if text:
        hit["text"] = text
    if score is not None:
        hit["score"] = float(score)
    if offsets and source is not None and isinstance(start, int) and not isinstance(start, bool) and start >= 0:
        if not isinstance(end, int) or isinstance(end, bool):
            end = start + len(text or "")
        if end > start:
            hit["start"], hit["end"] = start, end
    if not hit.get("path") and not hit.get("text"):
        raise ConfigError("a framework result has neither a document (metadata source/file_path) nor text; "
                          "give its documents metadata naming their source file")
    return hit


def ragtune_search(target: Any) -> Any:
    """``search(query, k) -> Ranking`` over a :class:`~ragtune.pipeline.Pipeline`, a ragtune retriever (anything
    with ``search(query, k, filters)``) or the path of an index store (its current version)."""
    from ..pipeline import Pipeline
    from ..store import open_pipeline

    if isinstance(target, (str, os.PathLike)):
        target = open_pipeline(store=target)
    retriever = target.retriever if isinstance(target, Pipeline) else target
    if not callable(getattr(retriever, "search", None)):
        raise ConfigError(f"cannot search a {type(target).__name__}: pass a ragtune Pipeline, a ragtune retriever "
                          "or the path of an index store")
    return retriever


def chunk_metadata(chunk: Chunk) -> dict[str, Any]:
    """What a framework document built from a ragtune chunk carries: where it lies, never a guessed id."""
    meta = {k: v for k, v in dict(chunk.metadata).items() if isinstance(k, str)}
    meta.update({"source": chunk.doc_id, "doc_id": chunk.doc_id, "chunk_id": chunk.id,
                 "start_index": chunk.start, "end_index": chunk.end,
                 "sections": list(chunk.anchors), "heading_path": list(chunk.heading_path)})
    return meta


def ranked(retriever: Any, query: str, k: int, filters: Any = None) -> Sequence[tuple[Chunk, float]]:
    ranking: Ranking = retriever.search(query, k, filters)
    return [(h.chunk, float(h.score)) for h in ranking.hits]
