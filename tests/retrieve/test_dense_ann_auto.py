"""ann="auto": exact dense search below ANN_AUTO_CHUNKS chunks, the HNSW graph from there on (the knee measured by
bench/scale.py); the choice is recorded in the retriever's config, flows through PipelineConfig and stores, and a
missing usearch makes auto search exactly with one note, never an error (an explicit ann=True still is one)."""

from __future__ import annotations

import importlib.util
import json
import sys

import numpy as np
import pytest

from ragtune import Chunk, load_corpus
from ragtune.errors import ConfigError, MissingDependencyError
from ragtune.pipeline import PipelineConfig
from ragtune.retrieve import dense
from ragtune.retrieve.dense import DenseConfig, DenseRetriever, resolve_ann
from ragtune.retrieve.fusion import HybridConfig
from ragtune.store import IndexStore, build_version, load_pipeline
from tests.helpers import DOCS, write_files

HAS_USEARCH = importlib.util.find_spec("usearch") is not None  # looked up, not imported (onnxruntime first)


def _index(n: int, dim: int = 8, seed: int = 0):
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    chunks = [Chunk(id=f"c{i}", doc_id="d", text="t", start=0, end=1, embed_text=f"q{i}") for i in range(n)]

    class Lookup:
        model_id, max_tokens, cache_key = "lookup", 8, "lookup"

        def embed(self, texts):
            return vecs[[int(t[1:]) for t in texts]]

        embed_queries = embed

    Lookup.dim = dim
    return chunks, vecs, Lookup()


def test_the_rule_forced_values_and_bad_values():
    assert resolve_ann(True, 1) is True and resolve_ann(False, 10**9) is False
    assert resolve_ann("auto", 99, threshold=100) is False
    assert resolve_ann("auto", 100, threshold=100) is HAS_USEARCH  # from the threshold on, inclusive
    assert resolve_ann("auto", dense.ANN_AUTO_CHUNKS - 1) is False
    for bad in (1, "yes", None):
        with pytest.raises(ConfigError, match=r"ann must be true, false or 'auto', got"):
            resolve_ann(bad, 10)
    assert DenseConfig().ann == "auto" == HybridConfig().ann
    with pytest.raises(ConfigError, match=r"^DenseConfig: ann must be true, false or 'auto', got 'yes'$"):
        DenseConfig(ann="yes")
    # "auto" is the default, so it is dropped from a configuration; a forced value is kept (and keyed)
    auto = PipelineConfig.from_flags({"retriever": "dense"})
    assert "ann" not in auto.to_dict() and PipelineConfig.from_flags({"retriever": "dense", "ann": "auto"}).key == auto.key
    assert PipelineConfig.from_flags({"retriever": "dense", "ann": False}).to_dict()["ann"] is False
    assert len({auto.key, *(PipelineConfig.from_flags({"retriever": "hybrid", "ann": a}).key for a in (True, False))}) == 3


@pytest.mark.skipif(not HAS_USEARCH, reason="usearch not installed")
def test_below_the_threshold_exact_from_it_the_graph():
    chunks, vecs, emb = _index(300)
    small = DenseRetriever(chunks[:299], vecs[:299], emb, ann_threshold=300)
    big = DenseRetriever(chunks, vecs.copy(), emb, ann_threshold=300)
    assert small.config == {"embedder": "lookup", "ann": False, "ann_setting": "auto", "ann_threshold": 300}
    assert big.config == {"embedder": "lookup", "ann": True, "ann_setting": "auto", "ann_threshold": 300}
    assert small._ann is None and big._ann is not None
    # the big one answers from the graph: overwriting the matrix changes exact search, not its answer
    big.vectors = small.vectors = -big.vectors
    assert big.search("q7", k=1).hits[0].chunk.id == "c7"
    assert small.search("q7", k=1).hits[0].chunk.id != "c7"
    with pytest.raises(ConfigError, match="searches exactly .*'auto' below 300 chunks"):
        small.ann_top(vecs[0], 3)
    forced = DenseRetriever(chunks[:10], vecs[:10], emb, ann=True, ann_threshold=300)
    assert forced.config == {"embedder": "lookup", "ann": True, "ann_setting": True} and forced._ann is not None


def test_auto_without_usearch_searches_exactly_with_one_note(monkeypatch, capsys):
    for name in ("usearch", "usearch.index"):  # None in sys.modules: the standard way to block an import
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(dense, "_noted", set())
    monkeypatch.setenv("RAGTUNE_PROGRESS", "auto")
    chunks, vecs, emb = _index(50)
    for _ in range(2):
        r = DenseRetriever(chunks, vecs, emb, ann_threshold=10)
        assert r.config["ann"] is False and r.search("q3", k=1).hits[0].chunk.id == "c3"
    err = capsys.readouterr().err
    assert err.count("usearch is not installed: searching exactly") == 1 and "pip install 'ragtune[ann]'" in err
    with pytest.raises(MissingDependencyError, match=r"pip install 'ragtune\[ann\]'"):
        DenseRetriever(chunks, vecs, emb, ann=True)


@pytest.mark.skipif(not HAS_USEARCH, reason="usearch not installed")
def test_pipelines_and_stores_pick_by_size_and_record_it(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    store = IndexStore(tmp_path / "s")
    auto = PipelineConfig.from_flags({"chunker": "section", "retriever": "hybrid"})
    v_exact = build_version(store, corpus, auto)
    assert load_pipeline(store, v_exact.id).retriever.config["retrievers"][1]["ann"] is False
    monkeypatch.setattr(dense, "ANN_AUTO_CHUNKS", 2)  # a corpus of a few chunks is now "large"
    v_auto = build_version(store, corpus, auto)
    manifest = json.loads((v_auto.path / "manifest.json").read_text())
    assert "ann" not in json.dumps(manifest["config"])  # the store keeps the setting ("auto": no key), not the result
    half = load_pipeline(store, v_auto.id).retriever.config["retrievers"][1]
    assert half == {"name": "dense", "embedder": half["embedder"], "ann": True, "ann_setting": "auto", "ann_threshold": 2}
    forced = build_version(store, corpus, PipelineConfig.from_flags({"chunker": "section", "retriever": "hybrid",
                                                                     "ann": False}))
    assert json.loads((forced.path / "manifest.json").read_text())["config"]["ann"] is False
    assert load_pipeline(store, forced.id).retriever.config["retrievers"][1]["ann"] is False
