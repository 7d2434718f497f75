"""The contract of each pipeline stage, one Protocol per stage, checked where a component is registered.

Every registry in :mod:`ragtune.registry` names its stage's protocol. ``Registry.register`` refuses a class that
lacks one of the protocol's methods, and ``Registry.build`` refuses a built object (what a factory returned) that
lacks a member, with a :class:`~ragtune.errors.StageContractError` naming the class, the stage and what is
missing, so a contract is checked once, where the component enters ragtune, and never found by ``getattr`` at the
call site. A capability that only some components of a stage have is a protocol of its own
(:class:`ParentChunker`), tested with ``isinstance``.

=========  ==================  =====================================================================
stage      protocol            what the pipeline calls
=========  ==================  =====================================================================
loader     :class:`Loader`     ``load(data, doc_id, source) -> Document``; ``name``, ``version``, ``cache``
chunker    :class:`Chunker`    ``chunk(document) -> list[Chunk]``; ``name``
(chunker)  :class:`ParentChunker`  also ``chunk_with_parents(document) -> (parents, children)``
retriever  :class:`Retriever`  ``search(query, k, filters) -> Ranking``; ``name``
reranker   :class:`Reranker`   ``rerank(query, ranking) -> Ranking``; ``name``
embedder   :class:`Embedder`   ``embed(texts)``, ``embed_queries(texts)`` -> float32 rows; ``model_id``, ``dim``,
                               ``max_tokens``, ``cache_key``
generator  :class:`Generator`  ``generate(question, contexts) -> Answer``; ``name``
judge      :class:`Judge`      ``judge(answer) -> dict``; ``name``
strategy   :class:`Strategy`   ``run(retriever, question, k, filters, history) -> Ranking``; ``name``
=========  ==================  =====================================================================

Optional on every stage, never required: ``warm_up()`` (load models now rather than on first use) and ``config``
(the typed config the component was built with, recorded with a run).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .errors import StageContractError
from .types import Chunk, Document, Ranking

__all__ = ["Loader", "Chunker", "ParentChunker", "Retriever", "Reranker", "Embedder", "Generator", "Judge",
           "Strategy", "PROTOCOLS", "members", "missing", "check_class", "check_component"]


@runtime_checkable
class Loader(Protocol):
    """Reads the files of one format into Documents.

    ``name`` is the format (``"html"``, also ``Document.format``); ``version`` is bumped when extraction changes,
    so extractions cached by another version are made again; ``cache`` says whether extraction is worth caching by
    file content and running in worker processes. ``load`` gets the file's bytes (read by ragtune, which refuses
    special files and files over the size limit first) and returns the Document; a file it cannot read raises
    :class:`~ragtune.errors.CorpusError` with one line saying what is wrong and what to do.
    """

    name: str
    version: str
    cache: bool

    def load(self, data: bytes, doc_id: str, source: str) -> Document: ...


@runtime_checkable
class Chunker(Protocol):
    """Cuts one document into chunks, in document order, each with its character span in the source."""

    name: str

    def chunk(self, document: Document) -> list[Chunk]: ...


@runtime_checkable
class ParentChunker(Chunker, Protocol):
    """A chunker whose chunks point at larger parents (small-to-big): ``chunk_with_parents`` returns
    ``(parents, children)``; the children are indexed and carry ``parent_id``, the parents are what a search
    returns. ``chunk`` returns the children alone."""

    def chunk_with_parents(self, document: Document) -> tuple[list[Chunk], list[Chunk]]: ...


@runtime_checkable
class Retriever(Protocol):
    """``search`` returns the ``k`` best chunks, best first; ``filters`` (an expression string or a parsed
    filter) restricts the chunks *before* ranking, so a filtered query still returns ``k`` hits when there are."""

    name: str

    def search(self, query: str, k: int = 10, filters: Any = None) -> Ranking: ...


@runtime_checkable
class Reranker(Protocol):
    """``rerank`` reorders a first stage's shortlist for ``query`` by the reranker's own scores; it returns a
    Ranking of the same chunks (it never adds one) with its seconds added to ``timings``. Optional attributes:
    ``mode`` (``replace`` | ``fuse``) and ``fuse_k``."""

    name: str

    def rerank(self, query: str, ranking: Ranking) -> Ranking: ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors, one row per text.

    ``model_id`` names the model; ``cache_key`` also pins its exact weights (model id + file hash), so cached
    vectors never mix models; ``dim`` is the row length and ``max_tokens`` the window a text is cut to.
    ``embed_queries`` embeds search queries (with the query prefix of models that use one).
    """

    model_id: str
    dim: int
    max_tokens: int

    @property
    def cache_key(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class Generator(Protocol):
    """Answers ``question`` from ``contexts`` only: ``generate`` returns a :class:`ragtune.answer.Answer` (its
    text, citations into the numbered contexts, or an explicit "not found")."""

    name: str

    def generate(self, question: str, contexts: Sequence[Chunk]) -> Any: ...


@runtime_checkable
class Judge(Protocol):
    """Grades one :class:`ragtune.answer.Answer`: ``judge`` returns the verdict as a dict of scores and
    reasons."""

    name: str

    def judge(self, answer: Any) -> dict[str, Any]: ...


@runtime_checkable
class Strategy(Protocol):
    """How a question becomes searches: ``run`` searches ``retriever`` once or more for ``question`` (``history``:
    the questions of the earlier turns of its conversation, oldest first) and returns one Ranking; with several
    searches its ``searches`` hold each (query, hits, timings) in order and its ``hits`` what reached the model
    (:meth:`ragtune.types.Ranking.from_searches`), at most ``k``."""

    name: str

    def run(self, retriever: Retriever, question: str, k: int, filters: Any = None,
            history: Sequence[str] = ()) -> Ranking: ...


# The protocol of each registry's stage (registry.py reads it).
PROTOCOLS: dict[str, type] = {"loader": Loader, "chunker": Chunker, "retriever": Retriever, "reranker": Reranker,
                              "embedder": Embedder, "generator": Generator, "judge": Judge, "strategy": Strategy}

_SKIP = frozenset(dir(Protocol)) | {"__annotations__", "__dict__", "__weakref__", "__module__", "__doc__",
                                    "__parameters__", "__protocol_attrs__", "__non_callable_proto_members__"}


def members(protocol: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(methods, data members) a protocol declares, its bases' included; a property counts as data."""
    methods: dict[str, None] = {}
    data: dict[str, None] = {}
    for klass in reversed(protocol.__mro__):
        if klass in (object, Protocol) or not getattr(klass, "_is_protocol", False):
            continue
        for name in klass.__dict__.get("__annotations__", {}):
            data[name] = None
        for name, value in klass.__dict__.items():
            if name.startswith("_") or name in _SKIP:
                continue
            (data if isinstance(value, property) else methods)[name] = None
    return tuple(methods), tuple(data)


def _has(obj: Any, name: str) -> bool:
    try:
        inspect.getattr_static(obj, name)  # never runs a property (an embedder's cache_key may hash weights)
        return True
    except AttributeError:
        return hasattr(obj, name)  # a wrapper that forwards through __getattr__


def _callable(obj: Any, name: str) -> bool:
    try:
        value = inspect.getattr_static(obj, name)
    except AttributeError:
        value = getattr(obj, name)
    return callable(value) or isinstance(value, (staticmethod, classmethod))


def missing(obj: Any, protocol: type, *, methods_only: bool = False) -> list[str]:
    """The members of ``protocol`` that ``obj`` (a class or an instance) lacks, methods as ``name()``. With
    ``methods_only`` (a class: data members may be set by its constructor) only methods are asked for."""
    methods, data = members(protocol)
    out = [f"{m}()" for m in methods if not _has(obj, m) or not _callable(obj, m)]
    if not methods_only:
        out += [d for d in data if not _has(obj, d)]
    return out


def _describe(obj: Any) -> str:
    klass = obj if isinstance(obj, type) else type(obj)
    return f"{klass.__module__}.{klass.__qualname__}"


def check_class(stage: str, name: str, cls: type, protocol: type) -> None:
    """Refuse a class registered under ``name`` as a ``stage`` that lacks a method of ``protocol``."""
    lacking = missing(cls, protocol, methods_only=True)
    if lacking:
        raise StageContractError(
            f"{stage} {name!r}: class {_describe(cls)} does not satisfy the {protocol.__name__} protocol "
            f"(ragtune.stages.{protocol.__name__}): it lacks {', '.join(lacking)}")


def check_component(stage: str, name: str, obj: Any, protocol: type) -> Any:
    """``obj`` (the component built for ``name``) when it has every member of ``protocol``, else a
    StageContractError naming its class, the stage and what it lacks."""
    lacking = missing(obj, protocol)
    if lacking:
        raise StageContractError(
            f"{stage} {name!r} gave a {_describe(obj)}, which does not satisfy the "
            f"{protocol.__name__} protocol (ragtune.stages.{protocol.__name__}): it lacks {', '.join(lacking)}")
    return obj
