"""Rerankers: the details mutation testing found untested. The cross-encoder's plumbing runs against a recording
stand-in for ``sentence_transformers.CrossEncoder`` (the real library with a tiny random model is in
tests/embed/test_sentence_transformers.py)."""

import contextlib
import importlib.machinery
import sys
import types

import numpy as np
import pytest

from ragtune import Chunk, ConfigError, Hit, Ranking
from ragtune.errors import MissingDependencyError
from ragtune.registry import RERANKERS
from ragtune.rerank.base import RerankedRetriever
from ragtune.rerank.cross_encoder import CrossEncoderConfig, CrossEncoderReranker
from ragtune.rerank.embedding import EmbeddingReranker, EmbeddingRerankerConfig


def chunk(cid, embed_text=None):
    return Chunk(id=cid, doc_id=cid, text=f"text of {cid}", start=0, end=1, embed_text=embed_text or f"embed {cid}")


def ranking(ids, query="q"):
    return Ranking(query, tuple(Hit(chunk(c), 1.0 / (i + 1)) for i, c in enumerate(ids)), {"base": 0.001})


class ByTable:
    """A reranker that scores chunks from a table (missing: 0) and records the rankings it was given."""

    name = "table"
    config = {"table": True}

    def __init__(self, scores):
        self.scores, self.seen = scores, []

    def rerank(self, query, ranking):
        self.seen.append(ranking)
        order = sorted(ranking.hits, key=lambda h: -self.scores.get(h.chunk.id, 0.0))
        return Ranking(query, tuple(Hit(h.chunk, self.scores.get(h.chunk.id, 0.0)) for h in order),
                       {**ranking.timings, "rerank": 0.5})


class Listed:
    name = "listed"
    config = {"ids": "fixed"}

    def __init__(self, ids):
        self.ids, self.calls = list(ids), []

    def search(self, query, k=10, filters=None):
        self.calls.append({"k": k, "filters": filters})
        return ranking(self.ids[:k], query)


def test_reranked_retriever_asks_for_the_shortlist_and_keeps_the_tail():
    base = Listed([f"c{i}" for i in range(8)])
    rr = RerankedRetriever(base, ByTable({"c2": 3.0, "c1": 2.0}), candidates=3)
    assert rr.name == "listed+table"
    assert rr.config == {"base": {"ids": "fixed"}, "reranker": {"table": True}, "candidates": 3}
    res = rr.search("question", k=5, filters="doc_id=x")
    assert base.calls == [{"k": 5, "filters": "doc_id=x"}]  # max(k, candidates)
    assert res.query == "question"
    assert [h.chunk.id for h in rr.reranker.seen[0].hits] == ["c0", "c1", "c2"]
    assert rr.reranker.seen[0].query == "question"
    assert [h.chunk.id for h in res.hits] == ["c2", "c1", "c0", "c3", "c4"]
    assert res.timings == {"base": 0.001, "rerank": 0.5}
    rr.search("q")  # default k = 10, larger than the shortlist
    assert base.calls[-1] == {"k": 10, "filters": None}


def test_reranked_retriever_defaults_and_limits():
    base = Listed([f"c{i}" for i in range(60)])
    rr = RerankedRetriever(base, ByTable({}))
    assert rr.candidates == 50 and rr.config["candidates"] == 50
    res = rr.search("q", k=3)
    assert base.calls == [{"k": 50, "filters": None}] and len(res.hits) == 3
    assert len(rr.reranker.seen[0].hits) == 50
    RerankedRetriever(base, ByTable({}), candidates=1)  # one is enough

    class Plain:  # neither side has a config: recorded as None
        name = "plain"

        def search(self, query, k=10, filters=None):
            return ranking(["a"], query)

        def rerank(self, query, ranking):
            return ranking

    assert RerankedRetriever(Plain(), Plain()).config == {"base": None, "reranker": None, "candidates": 50}
    with pytest.raises(ConfigError, match=r"^candidates must be >= 1, got 0$"):
        RerankedRetriever(base, ByTable({}), candidates=0)


class Vectors:
    """An embedder whose query and chunk vectors come from tables, recording what it was asked."""

    model_id = "vectors"

    def __init__(self, chunks, queries):
        self.chunks, self.queries, self.asked = chunks, queries, []

    def embed(self, texts):
        self.asked.append(("embed", list(texts)))
        return np.array([self.chunks[t] for t in texts], dtype=np.float32)

    def embed_queries(self, texts):
        self.asked.append(("query", list(texts)))
        return np.array([self.queries[t] for t in texts], dtype=np.float32)


def test_embedding_reranker_scores_by_dot_product_of_query_and_embed_text():
    e = Vectors({"embed a": [1.0, 0.0], "embed b": [0.0, 1.0], "embed c": [0.5, 0.5]}, {"q": [0.2, 0.9]})
    rr = EmbeddingReranker(e)
    assert rr.config == {"embedder": "vectors", "mode": "replace", "fuse_k": 60}
    out = rr.rerank("q", ranking(["a", "b", "c"]))
    assert e.asked == [("query", ["q"]), ("embed", ["embed a", "embed b", "embed c"])]
    assert [h.chunk.id for h in out.hits] == ["b", "c", "a"]
    assert [h.score for h in out.hits] == pytest.approx([0.9, 0.55, 0.2])
    assert all(type(h.score) is float for h in out.hits)
    assert out.query == "q" and out.timings["base"] == 0.001 and 0.0 <= out.timings["rerank"] < 5.0


def test_embedding_reranker_keeps_the_order_of_ties():
    e = Vectors({"embed a": [1.0], "embed b": [1.0], "embed c": [2.0]}, {"q": [1.0]})
    out = EmbeddingReranker(e).rerank("q", ranking(["a", "b", "c"]))
    assert [h.chunk.id for h in out.hits] == ["c", "a", "b"]


@pytest.mark.parametrize("make", [lambda: EmbeddingReranker(Vectors({}, {})), lambda: CrossEncoderReranker("m")])
def test_an_empty_shortlist_is_not_scored(make, monkeypatch):
    rr = make()
    if isinstance(rr, CrossEncoderReranker):
        rr._model = object()  # loaded: nothing to load, and nothing may be predicted
    out = rr.rerank("q", Ranking("q", (), {"base": 0.25}))
    assert out.hits == () and out.timings == {"base": 0.25, "rerank": 0.0} and out.query == "q"


class FakeCrossEncoder:
    made = []

    def __init__(self, name, **kwargs):
        self.name, self.kwargs, self.calls = name, kwargs, []
        FakeCrossEncoder.made.append(self)

    def predict(self, pairs, **kwargs):
        self.calls.append((list(pairs), kwargs))
        return self.scores(pairs)

    @staticmethod
    def scores(pairs):
        return [float(len(text)) for _, text in pairs]


@pytest.fixture
def fake_st(monkeypatch):
    """``sentence_transformers`` replaced by a module whose CrossEncoder records how it is built and called;
    ``require_model`` and the spinner record their arguments."""
    module = types.ModuleType("sentence_transformers")
    module.__spec__ = importlib.machinery.ModuleSpec("sentence_transformers", None)
    module.CrossEncoder = FakeCrossEncoder
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    FakeCrossEncoder.made = []
    seen = {"require": [], "status": []}

    def require_model(model, *, what, flag):
        seen["require"].append((model, what, flag))
        return True

    @contextlib.contextmanager
    def status(description, **_):
        seen["status"].append(description)
        yield

    monkeypatch.setattr("ragtune.embed.hub.require_model", require_model)
    monkeypatch.setattr("ragtune.progress.status", status)
    return seen


def test_cross_encoder_loads_once_with_its_options(fake_st):
    rr = CrossEncoderReranker("org/model")
    assert (rr.batch_size, rr.max_length, rr.device, rr.backend) == (16, 256, "cpu", "st")
    assert rr.config == {"model": "org/model", "backend": "st", "max_length": 256, "mode": "replace", "fuse_k": 60}
    assert FakeCrossEncoder.made == []  # the constructor loads nothing
    rr.warm_up()
    rr.warm_up()
    assert len(FakeCrossEncoder.made) == 1
    model = FakeCrossEncoder.made[0]
    assert model.name == "org/model"
    assert model.kwargs == {"max_length": 256, "device": "cpu", "local_files_only": True}
    assert fake_st["require"] == [("org/model", "cross-encoder", "--rerank-model ")]
    assert fake_st["status"] == ["loading org/model"]
    custom = CrossEncoderReranker("m", batch_size=4, max_length=64, device="cuda")
    custom.warm_up()
    assert FakeCrossEncoder.made[1].kwargs == {"max_length": 64, "device": "cuda", "local_files_only": True}


def test_cross_encoder_scores_query_and_embed_text_pairs(fake_st):
    rr = CrossEncoderReranker("m", batch_size=7)
    out = rr.rerank("question", Ranking("question", (Hit(chunk("a", "short"), 1.0), Hit(chunk("b", "a longer text"), 0.5),
                                                     Hit(chunk("c", "mid text"), 0.2)), {"base": 0.001}))
    pairs, kwargs = FakeCrossEncoder.made[0].calls[0]
    assert pairs == [("question", "short"), ("question", "a longer text"), ("question", "mid text")]
    assert kwargs == {"batch_size": 7, "show_progress_bar": False}
    assert [(h.chunk.id, h.score) for h in out.hits] == [("b", 13.0), ("c", 8.0), ("a", 5.0)]
    assert out.query == "question" and out.timings["base"] == 0.001 and 0.0 <= out.timings["rerank"] < 5.0


def test_cross_encoder_with_two_outputs_uses_the_last_column(fake_st, monkeypatch):
    monkeypatch.setattr(FakeCrossEncoder, "scores", staticmethod(lambda pairs: [[9.0, 1.0], [0.0, 2.0]]))
    out = CrossEncoderReranker("m").rerank("q", ranking(["a", "b"]))
    assert [(h.chunk.id, h.score) for h in out.hits] == [("b", 2.0), ("a", 1.0)]


def test_cross_encoder_with_more_outputs_uses_the_last_column(fake_st, monkeypatch):
    monkeypatch.setattr(FakeCrossEncoder, "scores", staticmethod(lambda pairs: [[0.0, 5.0, 1.0], [0.0, 0.0, 2.0]]))
    out = CrossEncoderReranker("m").rerank("q", ranking(["a", "b"]))
    assert [(h.chunk.id, h.score) for h in out.hits] == [("b", 2.0), ("a", 1.0)]


def test_cross_encoder_without_sentence_transformers_says_what_to_install(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sentence_transformers" else real(name, *a))
    with pytest.raises(MissingDependencyError) as e:
        CrossEncoderReranker("m").warm_up()
    assert str(e.value) == ("the cross-encoder reranker needs: pip install 'ragtune[st]' "
                            "(an exported ONNX folder needs no extra)")


def test_cross_encoder_that_cannot_load_is_a_config_error(fake_st, monkeypatch):
    def broken(name, **kwargs):
        raise OSError("no config.json")

    monkeypatch.setattr(sys.modules["sentence_transformers"], "CrossEncoder", broken)
    with pytest.raises(ConfigError) as e:
        CrossEncoderReranker("org/model").warm_up()
    assert str(e.value) == "cannot load cross-encoder 'org/model': no config.json"


def test_configs_validate_and_build():
    assert EmbeddingRerankerConfig().model == "e5-small"
    with pytest.raises(ConfigError, match="nope"):
        EmbeddingRerankerConfig(model="nope")
    c = CrossEncoderConfig()
    assert (c.model, c.max_length, c.batch_size, c.backend, c.precision, c.threads, c.mode, c.fuse_k) == (
        "cross-encoder/ms-marco-MiniLM-L-6-v2", None, 16, "auto", "auto", 0, "fuse", 60)  # None: the model's own
    for bad, message in (({"model": " "}, "CrossEncoderConfig: model must be a model id or folder, got ' '"),
                         ({"model": 3}, "CrossEncoderConfig: model must be a model id or folder, got 3"),
                         ({"max_length": 0}, "CrossEncoderConfig: max_length=0 must be >= 1"),
                         ({"max_length": 2.5}, "CrossEncoderConfig: max_length must be an integer, got 2.5"),
                         ({"batch_size": 0}, "CrossEncoderConfig: batch_size=0 must be >= 1"),
                         ({"batch_size": 2.5}, "CrossEncoderConfig: batch_size must be an integer, got 2.5"),
                         ({"backend": "tf"}, "CrossEncoderConfig: backend='tf' is not valid; choose one of: 'auto', 'onnx', 'st'"),
                         ({"precision": "fp16"}, "CrossEncoderConfig: precision='fp16' is not valid; choose one of: 'auto', 'fp32', 'int8'"),
                         ({"threads": -1}, "CrossEncoderConfig: threads=-1 must be >= 0"),
                         ({"mode": "average"}, "CrossEncoderConfig: mode='average' is not valid; choose one of: 'replace', 'fuse'"),
                         ({"fuse_k": -1}, "CrossEncoderConfig: fuse_k=-1 must be >= 0")):
        with pytest.raises(ConfigError) as e:
            CrossEncoderConfig(**bad)
        assert str(e.value) == message
    assert CrossEncoderConfig(max_length=1, batch_size=1).batch_size == 1
    ce = RERANKERS.get("cross-encoder")
    assert ce.summary == "a cross-encoder scores (query, chunk) pairs jointly (ONNX folder or sentence-transformers)"
    built = ce.factory(CrossEncoderConfig(model="/models/ce", max_length=128, batch_size=8, mode="replace", fuse_k=5))
    assert isinstance(built, CrossEncoderReranker) and built._model is None
    assert (built.model_name, built.max_length, built.batch_size, built.mode, built.fuse_k) == ("/models/ce", 128, 8,
                                                                                                "replace", 5)
    emb = RERANKERS.get("embedding")
    assert emb.summary == "a second embedder rescores the shortlist (weak offline fallback)"
    built = emb.factory(EmbeddingRerankerConfig(model="minilm"))
    assert isinstance(built, EmbeddingReranker)
    assert built.config == {"embedder": "sentence-transformers/all-MiniLM-L6-v2@onnx-int8", "mode": "fuse", "fuse_k": 60}
