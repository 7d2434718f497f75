"""Building, refreshing, loading and migrating store versions."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from ..corpus.corpus import Corpus
from ..embed import DEFAULT_EMBEDDER
from ..errors import ConfigError, EmptyIndexError
from ..golden import GoldenSet
from ..pipeline import Pipeline, PipelineConfig, Resources, StoredIndex, build_pipeline, warn_window
from ..registry import CHUNKERS, RETRIEVERS
from ..retrieve.bm25 import BM25Retriever
from ..types import Chunk
from .milvus import build_collection, is_milvus
from .store import IndexStore, StoreError, VersionInfo, doc_hash

__all__ = ["build_version", "refresh_version", "load_pipeline", "migrate"]


def _parts(retriever) -> list:
    """A retriever and the retrievers it fuses (hybrid), depth first."""
    return [retriever, *(p for r in getattr(retriever, "retrievers", ()) for p in _parts(r))]


def _embedding_info(emb) -> dict[str, Any]:
    return {"model": emb.model_id, "key": emb.cache_key, "dim": int(emb.dim)}


def build_version(store: IndexStore, corpus: Corpus, config: PipelineConfig, *, promote: bool | None = None,
                  show_progress: bool = False, make_embedder: Callable[[str], Any] | None = None,
                  credentials: Mapping[str, str] | None = None) -> VersionInfo:
    """Chunk and embed ``corpus`` into a new version (through :func:`~ragtune.pipeline.build_pipeline`). With
    ``promote=None`` the first version of a store becomes current; later ones wait for ``promote``.
    ``make_embedder(name)`` makes the embedder (``ragtune.scale.ray_embedders(options)`` embeds the texts missing
    from the embedding cache as Ray tasks). ``credentials``: an outside engine's secret (``{"milvus": token}``),
    used to reach it and never written to the version."""
    if config.rerank or config.filter:
        raise ConfigError("an index holds chunking and retrieval only; rerank and filter apply at query time")
    t0 = time.perf_counter()
    before = store.current_id() if promote else None  # promote compares-and-swaps against what was current
    config = config.resolved(corpus.kind)
    resources = Resources(config.embedder_id, show_progress=show_progress, make_embedder=make_embedder,
                          credentials=credentials)
    if is_milvus(config):
        return _build_milvus(store, corpus, config, resources, promote, t0, before)
    try:
        pipeline = build_pipeline(corpus, config, resources=resources)
    except EmptyIndexError:
        raise StoreError("the corpus produced no chunks: nothing to index") from None
    chunks, parents = list(pipeline.chunks), list(pipeline.parents)
    stats: dict[str, Any] = {"documents_chunked": len(corpus), "chunks_new": len(chunks)}
    vectors, embedding, bm25, index = _artifacts(pipeline, resources, stats)
    v = store.write_version(config=config, corpus=corpus, chunks=chunks, parents=parents, vectors=vectors,
                            embedding=embedding, build_s=time.perf_counter() - t0, stats=stats, bm25=bm25, index=index,
                            graph=_dense(pipeline))
    store.promote_built(v.id, promote, before)
    return v


def _dense(pipeline: Pipeline) -> Any:
    """The built first stage's dense retriever (hybrid's part too), whose HNSW graph a version saves; None without."""
    return next((r for r in _parts(pipeline.base) if hasattr(r, "save_graph")), None)


def _artifacts(pipeline: Pipeline, resources: Resources, stats: dict[str, Any]) -> tuple[Any, Any, Any, Any]:
    """What a version saves of a built first stage: (vectors, embedding record, BM25 index, own index): the
    vectors and BM25 index of the built-in retrievers (hybrid's parts too), and the whole first stage when its
    registry entry keeps an index of its own (``stores_index``)."""
    parts = _parts(pipeline.base)
    bm25 = next((r for r in parts if isinstance(r, BM25Retriever)), None)
    dense = next((r for r in parts if hasattr(r, "vectors")), None)
    index = pipeline.base if RETRIEVERS.get(pipeline.config.retriever).stores_index else None
    vectors = embedding = None
    if dense is not None:
        emb = resources.embedder()
        vectors = dense.vectors
        embedding = _embedding_info(emb)
        stats.update(texts_embedded=emb.stats["misses"], embedding_cache_hits=emb.stats["hits"])
    return vectors, embedding, bm25, index


def refresh_version(store: IndexStore, corpus: Corpus, *, promote: bool = True, allow_mass_removal: bool = False,
                    max_removed_share: float = 0.5, show_progress: bool = False,
                    make_embedder: Callable[[str], Any] | None = None) -> tuple[VersionInfo, dict[str, Any]]:
    """A new version from the current one: only added and changed documents are chunked and embedded.

    Refuses, writing nothing, when more than ``max_removed_share`` of the current version's documents would
    be removed (a refresh from the wrong folder) unless ``allow_mass_removal``, and, with ``promote``, when
    ``CURRENT`` moved while the refresh ran (another refresh, promote or rollback): its update would be lost.
    """
    if not 0 <= max_removed_share <= 1:
        raise ConfigError(f"max_removed_share must be between 0 and 1, got {max_removed_share}")
    t0 = time.perf_counter()
    old = store.verify()
    config = PipelineConfig.from_dict(old.manifest["config"])
    config = replace(config, embedder=config.embedder or DEFAULT_EMBEDDER)
    old_hashes: Mapping[str, str] = old.manifest["documents"]
    new_hashes = {d.id: doc_hash(d) for d in corpus}
    added = [d for d in corpus if d.id not in old_hashes]
    changed = [d for d in corpus if d.id in old_hashes and old_hashes[d.id] != new_hashes[d.id]]
    removed = sorted(set(old_hashes) - set(new_hashes))
    if removed and not allow_mass_removal and len(removed) > max_removed_share * len(old_hashes):
        raise StoreError(
            f"this refresh would remove {len(removed)} of the {len(old_hashes)} documents of {old.id} "
            f"({len(removed) / len(old_hashes):.0%}, more than the {max_removed_share:.0%} allowed) and keep "
            f"{len(old_hashes) - len(removed)}: is the corpus folder right? Nothing was written. If the removal is "
            "intended, run again with --allow-mass-removal (allow_mass_removal=True)")
    redo = {d.id for d in added + changed}

    old_chunks, old_parents = store.chunks(old.id)
    old_vectors = store.vectors(old.id)
    row_of = {c.id: i for i, c in enumerate(old_chunks)}
    by_doc: dict[str, list[Chunk]] = {}
    for c in old_chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    parents_by_doc: dict[str, list[Chunk]] = {}
    for p in old_parents:
        parents_by_doc.setdefault(p.doc_id, []).append(p)

    config = config.resolved(corpus.kind)
    resources = Resources(config.embedder_id, show_progress=show_progress, make_embedder=make_embedder)
    # only the added and changed documents are chunked: the same chunking a full build asks its resources for
    changed_part = Corpus([d for d in corpus if d.id in redo], kind=corpus.kind, root=corpus.root)
    fresh = resources.chunking(changed_part, config) if redo else None
    new_chunks, new_parents = (list(fresh.chunks), list(fresh.parents)) if fresh else ([], [])
    fresh_by_doc: dict[str, list[Chunk]] = {}
    for c in new_chunks:
        fresh_by_doc.setdefault(c.doc_id, []).append(c)
    fresh_parents: dict[str, list[Chunk]] = {}
    for p in new_parents:
        fresh_parents.setdefault(p.doc_id, []).append(p)

    chunks: list[Chunk] = []
    parents: list[Chunk] = []
    for d in corpus:  # corpus order, as a full build would produce
        chunks.extend(fresh_by_doc.get(d.id, []) if d.id in redo else by_doc.get(d.id, []))
        parents.extend(fresh_parents.get(d.id, []) if d.id in redo else parents_by_doc.get(d.id, []))
    if not chunks:
        raise StoreError("the refreshed corpus produced no chunks: nothing to index")

    vectors = embedding = None
    stats: dict[str, Any] = {"added": [d.id for d in added], "changed": [d.id for d in changed], "removed": removed,
                             "documents_chunked": len(redo), "chunks_new": len(new_chunks),
                             "chunks_reused": len(chunks) - len(new_chunks)}
    if config.uses_vectors:
        emb = resources.embedder()
        embedding = _embedding_info(emb)
        if old.manifest.get("embedding") and old.manifest["embedding"]["key"] != embedding["key"]:
            raise StoreError(f"{old.id} was embedded with {old.manifest['embedding']['model']} but the embedder now "
                             f"resolves to {embedding['model']} ({embedding['key']}); embeddings never mix: use "
                             "`ragtune index migrate` or a full build")
        dim = embedding["dim"]
        vectors = np.zeros((len(chunks), dim), dtype=np.float32)
        todo = [i for i, c in enumerate(chunks) if c.doc_id in redo or c.id not in row_of or old_vectors is None]
        todo_set = set(todo)
        for i, c in enumerate(chunks):
            if i not in todo_set:
                vectors[i] = old_vectors[row_of[c.id]]  # type: ignore[index]
        if todo:
            vectors[todo] = emb.embed([chunks[i].embed_text for i in todo])
        stats.update(texts_embedded=emb.stats["misses"], embedding_cache_hits=emb.stats["hits"])
    bm25 = index = graph = None
    if not is_milvus(config):  # the first stage over the merged chunks and vectors, through the one builder
        # no saved graph: the old version's indexes other vectors, so the graph is built over the merged ones
        resources.stored = StoredIndex(chunking=(chunks, parents), vectors=vectors)
        built = build_pipeline(corpus, config, resources=resources)
        _, _, bm25, index = _artifacts(built, resources, {})
        graph = _dense(built)
    publish, discard = build_collection(store, config, chunks, vectors) if is_milvus(config) else (None, None)
    try:
        with store.locked():  # from the check of CURRENT to the promote: no other writer in between
            again = "Run the refresh again to apply this corpus on top of {now}"
            if promote:
                store.expect_current(old.id, doing="this refresh", kept="nothing was written", again=again)
            v = store.write_version(config=config, corpus=corpus, chunks=chunks, parents=parents, vectors=vectors,
                                    embedding=embedding, build_s=time.perf_counter() - t0, parent_version=old.id,
                                    stats=stats, bm25=bm25, index=index, engine=publish, graph=graph)
            if promote:
                store.promote(v.id, expect=old.id, doing="this refresh", again=again)
    except BaseException:
        if discard is not None:
            discard()  # a no-op once published: the collection has the version's name by then
        raise
    return v, stats


def _checked_embedder(v: Any, config: Any, resources: Resources) -> Any:
    """The embedder of ``config``, refused when it is not the one the version ``v`` was embedded with."""
    emb = resources.embedder()
    recorded = v.manifest.get("embedding") or {}
    if recorded.get("key") and recorded["key"] != emb.cache_key:
        raise StoreError(f"version {v.id} was embedded with {recorded.get('model')} ({recorded['key']}); the "
                         f"embedder {config.embedder_id!r} now resolves to {emb.cache_key}: query vectors would not "
                         "match the index. Rebuild or migrate the store.")
    return emb


def load_pipeline(store: IndexStore, version: str | None = None, *, show_progress: bool = False,
                  milvus_uri: str | None = None, credentials: Mapping[str, str] | None = None) -> Pipeline:
    """A ready :class:`Pipeline` from a stored version: chunks, BM25 index, vectors, their HNSW graph and a
    retriever's own saved index are loaded, nothing is rebuilt (a saved graph that does not match is, with a note). A version in Milvus searches its collection at the URI its manifest
    records (or ``milvus_uri``: the same Milvus reached by another address), with ``credentials["milvus"]``
    as its token when given."""
    v = store.get(version)
    config = PipelineConfig.from_dict(v.manifest["config"])
    resources = Resources(config.embedder_id, show_progress=show_progress, credentials=credentials)
    stored = StoredIndex(chunking=store.chunks(v.id))
    if is_milvus(config):
        engine = v.manifest.get("engine") or {}
        if engine.get("name") != "milvus":
            raise StoreError(f"version {v.id} names a milvus retriever but its manifest records no Milvus "
                             "collection; rebuild it with `ragtune index build --engine milvus --milvus-uri URI`")
        stored.engine = {**engine, "uri": milvus_uri or engine["uri"]}
    if config.uses_vectors:
        _checked_embedder(v, config, resources)
        if not is_milvus(config):
            stored.vectors = store.vectors(v.id)
            stored.graph = _saved_graph(v)
    # versions written before BM25 was stored have no bm25/ folder: it is rebuilt from the chunks
    stored.bm25_dir = v.path / "bm25"
    if (v.path / "index").is_dir():
        stored.index_dir = v.path / "index"
    resources.stored = stored
    return build_pipeline(store.corpus(v.id), config, resources=resources, version=v.id)


def _saved_graph(v: VersionInfo) -> Any:
    """The version's saved HNSW graph (checked by the dense retriever before use); None for a version written
    without one (exact search, or written before graphs were saved): the graph is then built on load."""
    from ..retrieve.dense import SavedGraph

    rec = v.manifest.get("ann_graph")
    if not isinstance(rec, dict) or not isinstance(rec.get("file"), str) or "/" in rec["file"]:
        return None
    vectors = (v.manifest.get("files") or {}).get("vectors.npy") or {}
    return SavedGraph(v.path / rec["file"], rec, vectors.get("blake2b"))


def _build_milvus(store: IndexStore, corpus: Corpus, config: PipelineConfig, resources: Resources,
                  promote: bool | None, t0: float, before: str | None = None) -> VersionInfo:
    """build_version for the milvus engine: the chunks (and vectors) go to the store's files as always and to a
    collection of their own, published under the version's name when the version is."""
    chunking = resources.chunking(corpus, config)
    chunks, parents = list(chunking.chunks), list(chunking.parents)
    if not chunks:
        raise StoreError("the corpus produced no chunks: nothing to index")
    vectors = embedding = None
    stats: dict[str, Any] = {"documents_chunked": len(corpus), "chunks_new": len(chunks)}
    if config.uses_vectors:
        emb = resources.embedder()
        warn_window(config, chunks, emb)
        vectors = resources.dense(chunks).vectors
        embedding = _embedding_info(emb)
        stats.update(texts_embedded=emb.stats["misses"], embedding_cache_hits=emb.stats["hits"])
    publish, discard = build_collection(store, config, chunks, vectors, token=resources.credential("milvus"))
    try:
        v = store.write_version(config=config, corpus=corpus, chunks=chunks, parents=parents, vectors=vectors,
                                embedding=embedding, build_s=time.perf_counter() - t0, stats=stats, engine=publish)
    except BaseException:
        discard()  # the previous version keeps serving; no collection is left behind
        raise
    store.promote_built(v.id, promote, before)
    return v


def _no_embedder_to_migrate(version: str, config: PipelineConfig, embedder: str) -> str:
    """Why a store whose retriever uses no embedder is not migrated, in one line."""
    chunker = CHUNKERS.get(config.chunker) if config.chunker != "auto" else None
    if chunker is not None and chunker.uses_embedder:
        then = (f"its {config.chunker} chunker's cuts do depend on the model: to recut them build a new version "
                f"(ragtune index build --chunker {config.chunker} --retriever {config.retriever} "
                f"--embedder {embedder})")
    else:
        then = (f"to search with {embedder}, build a dense or hybrid version "
                f"(ragtune index build --retriever hybrid --embedder {embedder})")
    return (f"{version}'s retriever {config.retriever} uses no embedder: nothing to migrate to {embedder}, and "
            f"nothing was built; {then}")


def migrate(store: IndexStore, embedder: str, golden: GoldenSet, *, max_drop: float = 0.01, metric: str = "recall@10",
            samples: int = 10000, seed: int = 0, show_progress: bool = False) -> dict[str, Any]:
    """Blue/green: build a green version with ``embedder`` beside the current (blue) one, evaluate both on
    ``golden``, promote green only if its ``metric`` is not worse than blue's by more than ``max_drop``.

    Refused before anything is built (:class:`StoreError`) when blue's retriever uses no embedder (its registry
    entry's ``uses_embedder``: BM25 ranks the same under any model) or already uses ``embedder``."""
    from ..evaluate.compare import compare_runs
    from ..pipeline import run_eval

    blue = store.get()
    config = PipelineConfig.from_dict(blue.manifest["config"])
    if not config.uses_vectors:  # the retriever's registry entry declares whether it searches by embedding
        raise StoreError(_no_embedder_to_migrate(blue.id, config, embedder))
    # an unknown embedder name fails here, before anything is built; the new embedder brings its own prefixes
    target = replace(config, embedder=embedder, embedder_options=())
    if target.key == config.key:
        raise StoreError(f"{blue.id} already uses the embedder {config.embedder_id}: nothing to migrate; name another "
                         "embedder")
    corpus = store.corpus(blue.id)
    green = build_version(store, corpus, target, promote=False, show_progress=show_progress)
    results = {}
    for name, v in (("blue", blue), ("green", green)):
        results[name] = run_eval(load_pipeline(store, v.id), golden).to_dict()
    cmp = compare_runs(results["blue"], results["green"], metric=metric, samples=samples, seed=seed,
                       names=(f"blue {blue.id}", f"green {green.id}"))
    ok = cmp.delta >= -max_drop
    if ok:  # only over the blue it measured: a refresh, promote or rollback made meanwhile is never undone
        store.promote(green.id, expect=blue.id, doing="this migrate",
                      kept=f"green {green.id} was built and evaluated but not promoted",
                      again="Run the migrate again to migrate {now}")
    return {"blue": blue.id, "green": green.id, "metric": metric, "max_drop": max_drop, "promoted": ok,
            "comparison": cmp.to_dict(), "text": cmp.to_text()}
