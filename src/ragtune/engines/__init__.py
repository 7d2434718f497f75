"""Search engines past one machine, as registered first stages.

An engine is where the index lives; the retrieval mode (``bm25``, ``dense``, ``hybrid``) is what it does.
``embedded`` is ragtune's own (numpy vectors, bm25s, a folder of plain files); ``milvus`` is Milvus, either
Milvus Lite in a local file (``milvus_uri="./index.db"``) or a Milvus server or cluster
(``milvus_uri="http://host:19530"``, its token passed as ``credentials={"milvus": token}``, else read from
``MILVUS_TOKEN``). Each (engine, mode) pair is one entry of
the retriever registry: :func:`engine_retriever` names it.
"""

from __future__ import annotations

from ..errors import ConfigError

__all__ = ["ENGINES", "MODES", "engine_retriever", "engine_of"]

ENGINES = ("embedded", "milvus")
MODES = ("bm25", "dense", "hybrid")


def engine_retriever(engine: str, retriever: str) -> str:
    """The registered retriever name for ``retriever`` (bm25, dense, hybrid) run by ``engine``:
    ``engine_retriever("milvus", "hybrid") == "milvus-hybrid"``; the embedded engine keeps the plain names."""
    if engine not in ENGINES:
        raise ConfigError(f"unknown engine {engine!r}; choose one of: {', '.join(ENGINES)}")
    if engine == "embedded":
        return retriever
    base = retriever.removeprefix(f"{engine}-")
    if base not in MODES:
        raise ConfigError(f"the {engine} engine runs the retrievers {', '.join(MODES)}; got {retriever!r}")
    return f"{engine}-{base}"


def engine_of(retriever: str) -> str:
    """The engine a registered retriever name runs on (``milvus-dense`` -> ``milvus``, ``bm25`` -> ``embedded``)."""
    head, sep, tail = retriever.partition("-")
    return head if sep and head in ENGINES and tail in MODES else "embedded"
