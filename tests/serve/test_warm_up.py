"""serve warms the pipeline before it reports ready: the first request pays no model loading."""

from __future__ import annotations

from ragtune.corpus import load_corpus
from ragtune.pipeline import PipelineConfig
from ragtune.serve.app import PipelineHolder
from ragtune.store import IndexStore, build_version
from tests.helpers import DOCS, write_files


def test_a_loaded_version_has_searched_once_before_serving(tmp_path, monkeypatch):
    store = IndexStore(tmp_path / "s")
    build_version(store, load_corpus(write_files(tmp_path / "c", DOCS)), PipelineConfig.from_flags({"retriever": "bm25"}))
    from ragtune.retrieve import bm25

    calls = []
    real = bm25.BM25Retriever.search
    monkeypatch.setattr(bm25.BM25Retriever, "search", lambda self, *a, **k: calls.append(a) or real(self, *a, **k))
    holder = PipelineHolder(store)
    assert calls and calls[0][0] == "warm up"  # searched while loading, before any request
    assert holder.pipeline.retriever.search("refunds", k=1).hits
