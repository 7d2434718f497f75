"""Everything a pipeline is built from that is worth loading once or caching: :class:`Resources`.

The builder (:func:`ragtune.pipeline.build_pipeline`) asks its resources for each part and never takes parts
ready-made, so every cache lives here, behind one object:

- **embedders**, loaded once per name and shared (wrapped in the on-disk embedding cache); ``make_embedder``
  replaces how one is made (``ragtune.scale.ray_embedders`` embeds on a Ray cluster);
- **chunkings**, by chunker config: in memory (a small LRU), then on disk under ``cache_dir/chunks`` keyed by
  the corpus fingerprint, the chunker config and the ragtune release;
- **first-stage retrievers**, by :attr:`PipelineConfig.index_key`: in memory (LRU);
- **indexes**, the one generic cache any retriever factory builds through (:meth:`Resources.index`): in memory
  (LRU), keyed by the index's kind, its typed config, the indexed chunks (and the embedder, for vectors), so two
  configurations that differ elsewhere (another embedder for a BM25 index, a hybrid beside a BM25 over the same
  chunks) share one build, and a new retriever is cached by writing its factory alone. BM25 is also kept on disk
  under ``cache_dir/bm25``, keyed by the indexed texts, the BM25 config and the bm25s release;
- **a stored version** (:class:`StoredIndex`): its chunks, BM25 folder, vectors and their HNSW graph, the folder a plugin retriever
  saved its own index in, and the engine record of a Milvus version. A stored version is used as it is: nothing
  is rechunked or re-embedded.

One ``Resources`` may serve many configurations (a sweep passes one to every build): :meth:`for_embedder` gives
the view a configuration's retriever factories see, sharing every cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..embed import DEFAULT_EMBEDDER
from ..errors import ConfigError
from ..io import write_atomic
from ..registry import CHUNKERS, RETRIEVERS
from ..types import Chunk

__all__ = ["Resources", "StoredIndex", "Chunking", "FirstStage", "chunks_fingerprint", "config_identity"]

T = TypeVar("T")


@dataclass
class StoredIndex:
    """What a store version already holds. ``chunking`` = (chunks, parents); ``bm25_dir`` a saved BM25 folder;
    ``vectors`` the chunk vectors; ``graph`` their saved HNSW graph (a :class:`~ragtune.retrieve.dense.SavedGraph`,
    checked before use); ``index_dir`` the folder a retriever that saves its own index wrote; ``engine`` the
    manifest's record of an outside engine's collection (Milvus)."""

    chunking: tuple[Sequence[Chunk], Sequence[Chunk]] | None = None
    bm25_dir: Path | None = None
    vectors: Any = None
    graph: Any = None
    index_dir: Path | None = None
    engine: dict[str, Any] | None = None


@dataclass(frozen=True)
class Chunking:
    """A corpus chunked: the chunker, the indexed chunks and (small-to-big) their parents."""

    chunker: Any
    chunks: tuple[Chunk, ...]
    parents: tuple[Chunk, ...]


@dataclass(frozen=True)
class FirstStage:
    """A first-stage retriever, how long it took to build and whether it came from the in-memory cache."""

    retriever: Any
    build_s: float
    reused: bool


class _Shared:
    """The state every view of one :class:`Resources` shares."""

    def __init__(self, show_progress: bool, cache_dir: Path | None, make_embedder: Callable[[str], Any] | None,
                 keep_chunkings: int, keep_indexes: int, credentials: Mapping[str, str] | None = None):
        self.show_progress = show_progress
        self.credentials = dict(credentials or {})
        self.cache_dir = cache_dir
        self.make_embedder = make_embedder
        self.embedders: dict[str, Any] = {}
        self.chunkings: OrderedDict[Any, Chunking] = OrderedDict()
        self.indexes: OrderedDict[Any, tuple[Any, float]] = OrderedDict()
        self.built: OrderedDict[tuple, Any] = OrderedDict()  # Resources.index: (kind, config, chunks, embedder)
        self.fingerprints: OrderedDict[int, tuple[Sequence[Chunk], str]] = OrderedDict()  # by id, chunks held
        self.keep_chunkings = keep_chunkings
        self.keep_indexes = keep_indexes
        self.memo: dict[str, Any] = {}  # what callers keep per resources (a sweep's query-embedding timings)


class Resources:
    """What pipelines are built from (see the module docstring).

    ``embedder`` is the name (or an embedder object) that :meth:`embedder` returns. ``cache_dir`` turns on the
    on-disk chunking and BM25 caches (None: in memory only). ``stored`` is a store version's artifacts.
    ``make_embedder(name)`` makes the raw embedder for a name (default :func:`ragtune.embed.get_embedder`); it
    is wrapped in the embedding cache either way. ``credentials``: a secret per outside engine (``{"milvus": token}``),
    handed to its client as a value (:meth:`credential`), never recorded in a configuration or a manifest."""

    def __init__(self, embedder: Any = DEFAULT_EMBEDDER, *, show_progress: bool = False,
                 cache_dir: str | os.PathLike[str] | None = None, stored: StoredIndex | None = None,
                 make_embedder: Callable[[str], Any] | None = None, keep_chunkings: int = 8, keep_indexes: int = 4,
                 credentials: Mapping[str, str] | None = None, _shared: _Shared | None = None):
        self._embedder = embedder
        self.stored = stored
        self._shared = _shared or _Shared(show_progress, Path(cache_dir) if cache_dir is not None else None,
                                          make_embedder, keep_chunkings, keep_indexes, credentials)

    # -- views --------------------------------------------------------------------------------------------------
    def for_embedder(self, embedder: Any) -> "Resources":
        """The same caches, with ``embedder`` as the one :meth:`embedder` returns. Resources made with an
        embedder object (not a name) keep it: that object is the caller's explicit choice."""
        if embedder == self._embedder or not isinstance(self._embedder, str):
            return self
        return Resources(embedder, stored=self.stored, _shared=self._shared)

    def credential(self, engine: str) -> str | None:
        """The secret given for ``engine`` (``"milvus"``: a server's token), None when none was given."""
        return self._shared.credentials.get(engine)

    @property
    def show_progress(self) -> bool:
        return self._shared.show_progress

    @property
    def cache_dir(self) -> Path | None:
        return self._shared.cache_dir

    @property
    def memo(self) -> dict[str, Any]:
        return self._shared.memo

    # -- embedders ----------------------------------------------------------------------------------------------
    def embedder(self):
        """A cached embedder from the name (memoised per name); an embedder object is used as given."""
        if not isinstance(self._embedder, str):
            return self._embedder
        shared = self._shared
        emb = shared.embedders.get(self._embedder)
        if emb is None:
            from ..embed import CachedEmbedder, get_embedder

            inner = (shared.make_embedder or get_embedder)(self._embedder)
            emb = shared.embedders[self._embedder] = CachedEmbedder(inner, show_progress=shared.show_progress)
        return emb

    # -- chunkings ----------------------------------------------------------------------------------------------
    def chunking(self, corpus: Any, config: Any) -> Chunking:
        """``corpus`` chunked as the resolved ``config`` says: the stored chunks of a version, else the
        in-memory cache, the on-disk cache, or chunked now."""
        options = config.chunker_config()
        chunker = CHUNKERS.build(config.chunker, options=options)
        if self.stored is not None and self.stored.chunking is not None:
            chunks, parents = self.stored.chunking
            return Chunking(chunker, tuple(chunks), tuple(parents))
        shared = self._shared
        key = (corpus.fingerprint, config.chunker, repr(options))
        if key in shared.chunkings:
            shared.chunkings.move_to_end(key)
            return shared.chunkings[key]
        chunks, parents = self._chunk(corpus, chunker)
        made = shared.chunkings[key] = Chunking(chunker, tuple(chunks), tuple(parents))
        while len(shared.chunkings) > shared.keep_chunkings:
            shared.chunkings.popitem(last=False)
        return made

    def _chunk(self, corpus: Any, chunker: Any) -> tuple[list[Chunk], list[Chunk]]:
        from ..chunking import chunk_documents

        if self.cache_dir is None:
            return chunk_documents(corpus, chunker)
        return _cached_chunking(corpus, chunker, self.cache_dir / "chunks")

    # -- first stages -------------------------------------------------------------------------------------------
    def first_stage(self, config: Any, chunks: Sequence[Chunk]) -> FirstStage:
        """The first-stage retriever of the resolved ``config`` over ``chunks``: a stored version's (loaded by the
        entry's ``load`` when it saves its own index), else the in-memory cache by ``index_key``, else built
        through the retriever registry."""
        entry = RETRIEVERS.get(config.retriever)
        t0 = time.perf_counter()
        if self.stored is not None:
            if entry.load is not None and (self.stored.index_dir is not None or self.stored.engine is not None):
                base = RETRIEVERS.check(entry.name, entry.load(config.retriever_config(), chunks, self,
                                                               self.stored.index_dir))
            else:
                base = RETRIEVERS.build(config.retriever, chunks, self, options=config.retriever_config())
            return FirstStage(base, time.perf_counter() - t0, False)
        shared = self._shared
        key = config.index_key
        if key in shared.indexes:
            shared.indexes.move_to_end(key)
            base, build_s = shared.indexes[key]
            return FirstStage(base, build_s, True)
        base = RETRIEVERS.build(config.retriever, chunks, self, options=config.retriever_config())
        build_s = time.perf_counter() - t0
        shared.indexes[key] = (base, build_s)
        while len(shared.indexes) > shared.keep_indexes:
            shared.indexes.popitem(last=False)
        return FirstStage(base, build_s, False)

    # -- what retriever factories ask for -----------------------------------------------------------------------
    def index(self, kind: str, config: Any, chunks: Sequence[Chunk], build: Callable[[], T], *,
              uses_embedder: bool = False) -> T:
        """The index ``build()`` makes, built once per (``kind``, ``config``, ``chunks``) and then reused from memory
        (an LRU of ``keep_indexes``) by every configuration these resources serve. The generic cache any
        retriever factory uses: ``resources.index("my-index", config, chunks, lambda: MyIndex(chunks, config))``.

        ``kind`` names what is built (a retriever's entry name, or the part it shares: ``"bm25"``); ``config`` is
        its typed config (a :class:`~ragtune.registry.Config`, or None), identified by its ``to_dict()``; the
        chunks by their ids and embedded texts (:func:`chunks_fingerprint`). ``uses_embedder``: the index holds
        vectors of :meth:`embedder`, whose identity joins the key."""
        shared = self._shared
        key = (kind, config_identity(config), self._fingerprint(chunks),
               self._embedder_identity() if uses_embedder else None)
        if key in shared.built:
            shared.built.move_to_end(key)
            return shared.built[key]
        made = shared.built[key] = build()
        while len(shared.built) > shared.keep_indexes:
            shared.built.popitem(last=False)
        return made

    def _fingerprint(self, chunks: Sequence[Chunk]) -> str:
        """:func:`chunks_fingerprint`, remembered for the last few sequences (hybrid asks twice for the same)."""
        memo = self._shared.fingerprints
        held = memo.get(id(chunks))
        if held is not None and held[0] is chunks:
            return held[1]
        fp = chunks_fingerprint(chunks)
        memo[id(chunks)] = (chunks, fp)  # the sequence is held, so its id is not reused while remembered
        while len(memo) > 2:
            memo.popitem(last=False)
        return fp

    def _embedder_identity(self) -> Any:
        # an embedder object by identity: the dense index cached under it holds it, so its id is not reused
        return self._embedder if isinstance(self._embedder, str) else ("object", id(self._embedder))

    def bm25(self, chunks: Sequence[Chunk], config):
        """A BM25 index over ``chunks``: the stored version's, else :meth:`index` (in memory), else the on-disk
        cache under ``cache_dir/bm25`` when there is one, else built now."""
        from ..retrieve.bm25 import BM25Retriever

        if self.stored is not None and self.stored.bm25_dir is not None and self.stored.bm25_dir.is_dir():
            return BM25Retriever.load(self.stored.bm25_dir, chunks, config)
        cache_dir = self.cache_dir
        if cache_dir is None:
            return self.index("bm25", config, chunks, lambda: BM25Retriever.build(chunks, config))
        return self.index("bm25", config, chunks, lambda: _cached_bm25(chunks, config, cache_dir / "bm25"))

    def dense(self, chunks: Sequence[Chunk], *, ann: bool | str = "auto"):
        """A dense index of ``chunks`` embedded by :meth:`embedder`: the stored version's vectors, else
        :meth:`index` (in memory), else embedded now (through the on-disk embedding cache)."""
        from ..retrieve.dense import DenseRetriever

        if self.stored is not None and self.stored.vectors is not None:
            import numpy as np

            return DenseRetriever(chunks, np.asarray(self.stored.vectors), self.embedder(), ann=ann,
                                  saved_graph=self.stored.graph)
        return self.index("dense", {"ann": ann}, chunks, lambda: DenseRetriever.build(chunks, self.embedder(), ann=ann),
                          uses_embedder=True)


def chunks_fingerprint(chunks: Sequence[Chunk]) -> str:
    """A hash of what an index is built from and hands back: each whole chunk (id, text, prefix, span, heading
    path, parent, metadata), since the index returns its chunks in its hits. Two chunkings with the same ids and
    texts but other parents (section pieces and small-to-big children) are different indexes."""
    h = hashlib.sha256()
    for c in chunks:
        h.update(hashlib.sha256(json.dumps(c.to_dict(), sort_keys=True, ensure_ascii=False,
                                           default=str).encode("utf-8")).digest())
    return h.hexdigest()


def config_identity(config: Any) -> str:
    """What identifies a stage's typed config in a cache key: its ``to_dict()`` (a mapping as it is), as sorted
    JSON; None for none."""
    if config is None:
        return "null"
    data = config.to_dict() if hasattr(config, "to_dict") else config
    return json.dumps(data, sort_keys=True, default=repr)


def _cached_bm25(chunks: Sequence[Chunk], config, cache_dir: Path):
    """BM25 loaded from ``cache_dir`` (keyed by the indexed texts and config), else built and saved there."""
    import bm25s

    from ..retrieve.bm25 import BM25Retriever, indexed_texts_key

    # bm25s's version is part of the key: its saved format and scoring may change between releases
    key = hashlib.sha256(json.dumps([bm25s.__version__, indexed_texts_key(chunks), config.to_dict()]).encode())
    folder = cache_dir / key.hexdigest()[:24]
    if (folder / "ragtune-bm25.json").exists():
        try:
            return BM25Retriever.load(folder, chunks, config)
        except (ConfigError, OSError, ValueError, KeyError):
            pass  # damaged or foreign: rebuild
    retriever = BM25Retriever.build(chunks, config)
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    try:
        retriever.save(tmp)
        tmp.rename(folder)
    except OSError:  # another process saved it first, or the cache is not writable: the index is still good
        shutil.rmtree(tmp, ignore_errors=True)
    return retriever


def _cached_chunking(corpus: Any, chunker: Any, cache_dir: Path) -> tuple[list[Chunk], list[Chunk]]:
    """Chunks (and parents) from ``cache_dir`` keyed by (corpus fingerprint, chunker config, ragtune release,
    chunking revision), else computed and stored. Plain JSON Lines; a damaged file is recomputed, an unwritable
    cache skipped."""
    from .._version import __version__
    from ..chunking import CHUNKING_REVISION, chunk_documents

    cfg = chunker.config.to_dict() if getattr(chunker, "config", None) else {}
    # the ragtune version and the chunking revision are part of the key: another release, or a change of how a
    # config cuts between releases, may chunk differently
    key = hashlib.sha256(json.dumps([__version__, CHUNKING_REVISION, corpus.fingerprint, chunker.name, cfg],
                                    sort_keys=True, default=str).encode())
    path = cache_dir / f"{key.hexdigest()[:24]}.jsonl"
    if path.exists():
        try:
            chunks, parents = [], []
            with open(path, encoding="utf-8") as f:
                for line in f:
                    d = json.loads(line)
                    (parents if d.pop("role") == "parent" else chunks).append(Chunk.from_dict(d))
            return chunks, parents
        except (OSError, ValueError, KeyError):
            pass
    chunks, parents = chunk_documents(corpus, chunker)
    def rows(f: Any) -> None:
        for role, items in (("chunk", chunks), ("parent", parents)):
            for c in items:
                f.write(json.dumps({**c.to_dict(), "role": role}, ensure_ascii=False, default=str) + "\n")

    try:
        write_atomic(path, rows, durable=False)
    except OSError:  # a cache that cannot be written costs the next run a rechunking, nothing else
        pass
    return chunks, parents
