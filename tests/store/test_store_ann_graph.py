"""A version searched through an HNSW graph keeps the graph (ann.usearch, recorded under ``ann_graph`` in the
manifest) and opening it loads the graph instead of building it; a graph that does not match (truncated,
overwritten, another version's, missing) is built again with one note and the same answers; versions written
without a graph still open; a failed graph write publishes nothing."""

from __future__ import annotations

import errno
import importlib.util
import json
import shutil

import pytest

from ragtune import load_corpus
from ragtune.pipeline import PipelineConfig
from ragtune.retrieve.dense import DenseRetriever
from ragtune.store import IndexStore, StoreError, build_version, load_pipeline, refresh_version
from tests.helpers import DOCS, write_files

pytestmark = [pytest.mark.skipif(importlib.util.find_spec("usearch") is None, reason="usearch not installed"),
              pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None, reason="onnxruntime not installed")]

QUERIES = ["how long does shipping take", "refund policy", "delete my account", "gift cards"]


def _dense(pipeline):
    base = pipeline.base
    return base if isinstance(base, DenseRetriever) else next(r for r in base.retrievers if isinstance(r, DenseRetriever))


def _answers(pipeline):
    return [[(h.chunk.id, round(h.score, 6)) for h in _dense(pipeline).search(q, k=5).hits] for q in QUERIES]


def _manifest(v):
    return json.loads((v.path / "manifest.json").read_text())


@pytest.fixture
def built(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGTUNE_PROGRESS", "auto")  # notes are printed
    corpus_dir = write_files(tmp_path / "c", DOCS)
    store = IndexStore(tmp_path / "s")
    v = build_version(store, load_corpus(corpus_dir), PipelineConfig.from_flags(
        {"chunker": "section", "retriever": "dense", "ann": True}))
    return store, v, corpus_dir


def _count_builds(monkeypatch) -> list[int]:
    builds: list[int] = []
    real = DenseRetriever._build_ann

    def counted(self):
        builds.append(len(self.chunks))
        return real(self)

    monkeypatch.setattr(DenseRetriever, "_build_ann", counted)
    return builds


def test_the_graph_is_stored_and_loaded_not_rebuilt(built, monkeypatch, capsys):
    store, v, _ = built
    m = _manifest(v)
    rec = m["ann_graph"]
    assert (v.path / "ann.usearch").stat().st_size == rec["size"] > 0 and rec["file"] == "ann.usearch"
    assert rec["vectors"] == m["chunks"] and rec["metric"] == "ip" and rec["usearch"]
    assert rec["vectors_blake2b"] == m["files"]["vectors.npy"]["blake2b"] and "ann.usearch" not in m["files"]
    builds = _count_builds(monkeypatch)
    p = load_pipeline(store)
    assert builds == [] and _dense(p).ann_loaded and _dense(p)._ann is not None
    fresh = DenseRetriever(p.chunks, store.vectors(v.id), _dense(p).embedder, ann=True)  # a graph built now
    assert builds == [m["chunks"]] and not fresh.ann_loaded
    assert _answers(p) == [[(h.chunk.id, round(h.score, 6)) for h in fresh.search(q, k=5).hits] for q in QUERIES]
    assert "HNSW graph" not in capsys.readouterr().err
    store.verify(hashes=True)  # the graph is no file of the checksum list: the version is complete


@pytest.mark.parametrize("damage", ["truncated", "overwritten", "missing", "other vectors"])
def test_a_graph_that_does_not_match_is_rebuilt_with_a_note(built, monkeypatch, capsys, damage):
    store, v, _ = built
    expected = _answers(load_pipeline(store))
    graph = v.path / "ann.usearch"
    if damage == "truncated":
        graph.write_bytes(graph.read_bytes()[: graph.stat().st_size // 2])
    elif damage == "overwritten":  # same size, other bytes: only the hash tells
        data = bytearray(graph.read_bytes())
        data[len(data) // 2: len(data) // 2 + 64] = bytes(64)
        graph.write_bytes(bytes(data))
    elif damage == "missing":
        graph.unlink()
    else:  # a record saying it indexes other vectors (a stale graph): never searched
        m = _manifest(v)
        m["ann_graph"]["vectors_blake2b"] = "0" * 32
        (v.path / "manifest.json").write_text(json.dumps(m))
    capsys.readouterr()
    builds = _count_builds(monkeypatch)
    p = load_pipeline(store)
    err = capsys.readouterr().err
    assert builds == [_manifest(v)["chunks"]] and not _dense(p).ann_loaded
    assert err.count("note: the saved HNSW graph ann.usearch does not fit this version") == 1
    assert {"truncated": "truncated or overwritten", "overwritten": "does not match its checksum",
            "missing": "cannot be read", "other vectors": "built from other vectors"}[damage] in err
    assert _answers(p) == expected


def test_a_version_written_without_a_graph_still_opens(built, monkeypatch, capsys):
    store, v, _ = built
    expected = _answers(load_pipeline(store))
    m = _manifest(v)
    del m["ann_graph"]
    (v.path / "manifest.json").write_text(json.dumps(m))
    (v.path / "ann.usearch").unlink()
    capsys.readouterr()
    builds = _count_builds(monkeypatch)
    p = load_pipeline(store)
    assert builds == [m["chunks"]] and not _dense(p).ann_loaded and _answers(p) == expected
    assert "HNSW graph" not in capsys.readouterr().err  # built on load as before, nothing to say


def test_refresh_saves_a_graph_of_its_own_vectors_never_the_old_one(built, monkeypatch, capsys):
    store, v1, corpus_dir = built
    (corpus_dir / "shipping.md").write_text("# Shipping\n\nParcels now ship within five days, express in two.\n")
    v2, _ = refresh_version(store, load_corpus(corpus_dir))
    m1, m2 = _manifest(v1), _manifest(v2)
    assert m2["ann_graph"]["vectors"] == m2["chunks"] == m1["chunks"]  # as many vectors; one of them changed
    assert m2["ann_graph"]["vectors_blake2b"] == m2["files"]["vectors.npy"]["blake2b"] != m1["ann_graph"]["vectors_blake2b"]
    builds = _count_builds(monkeypatch)
    p = load_pipeline(store)
    assert builds == [] and _dense(p).ann_loaded
    exact = load_pipeline(store, v2.id)
    _dense(exact)._ann = None  # the same vectors searched exactly: a tiny graph finds the same top 5
    assert _answers(p) == _answers(exact)
    # v1's graph and record copied into v2: same count and file checksum, other vectors: refused, built again
    shutil.copy(v1.path / "ann.usearch", v2.path / "ann.usearch")
    m2["ann_graph"] = m1["ann_graph"]
    (v2.path / "manifest.json").write_text(json.dumps(m2))
    capsys.readouterr()
    p = load_pipeline(store)
    assert builds == [m2["chunks"]] and not _dense(p).ann_loaded and _answers(p) == _answers(exact)
    assert "built from other vectors" in capsys.readouterr().err
    # ... even when its record is rewritten to fit v2's files: the vectors the graph holds are compared
    m2["ann_graph"] = {**m1["ann_graph"], "vectors_blake2b": m2["files"]["vectors.npy"]["blake2b"]}
    (v2.path / "manifest.json").write_text(json.dumps(m2))
    p = load_pipeline(store)
    assert len(builds) == 2 and not _dense(p).ann_loaded and _answers(p) == _answers(exact)
    assert "the vectors it holds are not the version's" in capsys.readouterr().err


def test_a_failed_graph_write_publishes_nothing(built, monkeypatch):
    store, v1, corpus_dir = built

    def full_disk(self, path):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(DenseRetriever, "save_graph", full_disk)
    with pytest.raises(StoreError, match=r"building v0002 failed while writing ann\.usearch: No space left on device "
                                         r"\(ENOSPC\)\. Nothing was published .* v0001 is still current"):
        build_version(store, load_corpus(corpus_dir), PipelineConfig.from_flags(
            {"chunker": "section", "retriever": "hybrid", "ann": True}), promote=True)
    assert store.current_id() == v1.id and [v.id for v in store.list()] == [v1.id]
    assert [p.name for p in store.building_dir.iterdir()] == [".lock"]
    assert _dense(load_pipeline(store)).ann_loaded


@pytest.mark.skipif(not __import__("os").path.exists("/dev/full"), reason="no /dev/full")
def test_a_failed_graph_write_is_an_os_error(built):
    """A write to a full disk (/dev/full) is an OSError, which write_version turns into its one-line StoreError:
    usearch's own error for a graph this size, the file's size check for one that usearch does not report."""
    store, _, _ = built
    dense = _dense(load_pipeline(store))
    with pytest.raises(OSError, match=r"usearch could not write the graph|the graph file has 0 of its") as e:
        dense.save_graph("/dev/full")
    assert e.value.errno in (errno.EIO, errno.ENOSPC)


@pytest.mark.skipif(not __import__("os").path.exists("/dev/full"), reason="no /dev/full")
def test_a_failed_write_usearch_does_not_report_is_caught_by_the_file_size():
    import numpy as np

    from ragtune import Chunk

    class Three:  # three fixed vectors: usearch writes their small graph into /dev/full without an error
        model_id, cache_key, dim = "three", "three", 4

    vecs = np.eye(3, 4, dtype=np.float32)
    chunks = [Chunk(id=f"c{i}", doc_id="d", text="t", start=0, end=1, embed_text="t") for i in range(3)]
    with pytest.raises(OSError, match=r"the graph file has 0 of its [\d,]+ bytes \(disk full\?\)") as e:
        DenseRetriever(chunks, vecs, Three(), ann=True).save_graph("/dev/full")
    assert e.value.errno == errno.ENOSPC
