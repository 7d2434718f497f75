"""Issue 39 item 15: the first query's model load is not counted as search latency. ``run_eval`` and ``ragtune
search`` warm the pipeline's models (``Pipeline.warm_up``: every component's ``warm_up()``, passed down through
the hybrid, reranked, parent and cached-embedder wrappers) before the first timed search, and report the
warm-up apart. Checked by the order of events a lazily loading model records, never by elapsed time."""

from __future__ import annotations

import json

import numpy as np

from ragtune import load_corpus, load_golden
from ragtune.cli import main
from ragtune.cli.render import render_search
from ragtune.evaluate.render import render_eval
from ragtune.pipeline import PipelineConfig, Resources, build_pipeline, run_eval
from ragtune.types import Ranking
from tests.helpers import DOCS, QUESTIONS, write_files, write_jsonl


class LazyModel:
    """An embedder whose model loads on first use (``warm_up``, the convention every ragtune embedder keeps).
    Passage vectors come as if from the embedding cache (no load needed), so the first thing that needs the
    model is a query, as in a run over a cached corpus. Every query records whether the model was loaded
    before it was asked."""

    model_id = "lazy"
    dim = 4
    max_tokens = 512
    cache_key = "lazy:v1"

    def __init__(self, events: list[str]):
        self.events = events
        self.loaded = False

    def warm_up(self) -> None:
        if not self.loaded:
            self.events.append("load embedder")
            self.loaded = True

    @staticmethod
    def _vectors(texts):
        v = np.array([[len(t) + 1, t.count("e") + 1, t.count("a") + 1, 1.0] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def embed(self, texts):
        return self._vectors(texts)

    def embed_queries(self, texts):
        self.events.append("timed query" if self.loaded else "query loading the model")
        self.warm_up()
        return self._vectors(texts)


class LazyReranker:
    """A reranker whose model loads on first use; records whether each rerank found it loaded."""

    name = "lazy-rerank"
    mode = "replace"
    fuse_k = 60
    config: dict = {}

    def __init__(self, events: list[str]):
        self.events = events
        self.loaded = False

    def warm_up(self) -> None:
        if not self.loaded:
            self.events.append("load reranker")
            self.loaded = True

    def rerank(self, query, ranking):
        self.events.append("timed rerank" if self.loaded else "rerank loading the model")
        self.warm_up()
        return Ranking(query, ranking.hits, {**ranking.timings, "rerank": 0.0})


def test_eval_warms_every_model_before_the_first_timed_search_and_reports_it_apart(tmp_path):
    events: list[str] = []
    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [{"id": i, "q": q, "relevant": r} for i, q, r in QUESTIONS]))
    model = LazyModel(events)
    config = PipelineConfig.from_flags({"chunker": "small_to_big", "retriever": "hybrid"})
    pipeline = build_pipeline(corpus, config, resources=Resources(make_embedder=lambda name: model,
                                                                  cache_dir=tmp_path / "cache"))
    assert not model.loaded  # building loaded nothing: every passage vector was there already
    pipeline = pipeline.with_reranker(LazyReranker(events), candidates=5)

    result = run_eval(pipeline, golden)
    # both models were loaded before any search was timed; every timed search found them loaded
    assert events[:2] == ["load embedder", "load reranker"]
    assert events[2:] == ["timed query", "timed rerank"] * len(QUESTIONS)
    # the warm-up is reported apart from the per-question latency
    assert isinstance(result.latency_ms["warm_up_ms"], float) and result.latency_ms["warm_up_ms"] >= 0
    assert set(result.latency_ms) == {"p50", "p95", "stages", "warm_up_ms"}
    assert "model warm-up before the first timed search:" in render_eval(result)
    assert json.loads(result.to_json())["latency_ms"]["warm_up_ms"] == result.latency_ms["warm_up_ms"]
    # once loaded, warming again loads nothing
    assert pipeline.warm_up() >= 0 and events.count("load embedder") == events.count("load reranker") == 1


def test_search_warms_up_first_and_says_what_the_load_took(tmp_path, capsys):
    ranking = Ranking("q", (), {"bm25": 0.0004, "embed_query": 0.012})
    assert render_search(ranking, 1.25).endswith("(12.4 ms: bm25 0.4, embed_query 12.0; models loaded before it "
                                                 "in 1250 ms)")
    assert render_search(ranking).endswith("(12.4 ms: bm25 0.4, embed_query 12.0)")  # nothing to load: no clause
    corpus = write_files(tmp_path / "c", DOCS)
    assert main(["search", "--corpus", str(corpus), "--retriever", "bm25", "refunds", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["warm_up_ms"] >= 0 and "bm25" in data["timings_ms"]
