"""Reciprocal rank fusion, HybridRetriever and HybridConfig: the details mutation testing found untested
(defaults, what is passed to each retriever, the config record, validation messages, the registry builder)."""

import pytest

from ragtune import Chunk, ConfigError, Hit, Ranking
from ragtune.registry import RETRIEVERS
from ragtune.retrieve.bm25 import BM25Config
from ragtune.retrieve.fusion import HybridConfig, HybridRetriever, rrf


def chunk(cid):
    return Chunk(id=cid, doc_id=cid, text=cid, start=0, end=len(cid), embed_text=cid)


def ranking(ids, query="q", timings=None):
    return Ranking(query, tuple(Hit(chunk(c), 1.0 / (i + 1)) for i, c in enumerate(ids)), timings or {})


class Listed:
    """A retriever over a fixed list of ids that records how it was called. ``ignore_k`` returns the whole
    list whatever k (a retriever that does not honour k)."""

    def __init__(self, ids, name="listed", config=None, ignore_k=False):
        self.ids, self.name, self.calls, self.ignore_k = list(ids), name, [], ignore_k
        if config is not None:
            self.config = config

    def search(self, query, k=10, filters=None):
        self.calls.append({"k": k, "filters": filters})
        ids = self.ids if self.ignore_k else self.ids[:k]
        return ranking(ids, query, {self.name: 0.001})


class Nameless:
    def search(self, query, k=10, filters=None):
        return ranking([], query)


def test_rrf_default_constant_is_60_and_the_query_is_kept():
    fused = rrf([ranking(["a", "b"], query="my question")])
    assert fused.query == "my question"
    assert [h.score for h in fused.hits] == [pytest.approx(1 / 61), pytest.approx(1 / 62)]


def test_rrf_of_nothing_is_an_empty_ranking():
    fused = rrf([])
    assert fused.query == "" and fused.hits == () and fused.timings == {}


def test_rrf_errors_say_what_was_wrong():
    with pytest.raises(ConfigError, match=r"^rrf k must be >= 0, got -1$"):
        rrf([ranking(["a"])], k=-1)
    with pytest.raises(ConfigError, match=r"^1 weights for 2 rankings$"):
        rrf([ranking(["a"]), ranking(["b"])], weights=[1.0])
    assert rrf([ranking(["a"])], k=0).hits[0].score == 1.0  # k = 0 is allowed


def test_hybrid_needs_a_retriever():
    with pytest.raises(ConfigError, match=r"^a hybrid retriever needs at least one retriever$"):
        HybridRetriever([])


def test_hybrid_defaults_and_config_record():
    a = Listed(["x"], name="one", config=BM25Config(k1=1.2))
    b = Listed(["y"], name="two", config={"model": "bag"})
    h = HybridRetriever([a, b])
    assert h.config == {"fuse": "rrf", "rrf_k": 60, "weights": None, "depth": 50, "retrievers": [
        {"name": "one", **BM25Config(k1=1.2).to_dict()}, {"name": "two", "model": "bag"}]}
    weighted = HybridRetriever([a, Nameless()], k=5, weights=(2, 1), depth=7)
    assert weighted.weights == [2, 1]
    assert weighted.config == {"fuse": "rrf", "rrf_k": 5, "weights": [2, 1], "depth": 7, "retrievers": [
        {"name": "one", **BM25Config(k1=1.2).to_dict()}, {"name": "?"}]}


def test_hybrid_asks_each_retriever_for_depth_or_k_and_passes_filters():
    a, b = Listed([f"a{i}" for i in range(30)]), Listed([f"b{i}" for i in range(30)])
    h = HybridRetriever([a, b], depth=20)
    res = h.search("q", filters="doc_id=x")
    assert len(res.hits) == 10  # the default k
    assert a.calls == b.calls == [{"k": 20, "filters": "doc_id=x"}]
    h.search("q", k=25)
    assert a.calls[-1] == {"k": 25, "filters": None}  # at least k


def test_hybrid_fuses_with_its_constant_and_weights():
    a, b = Listed(["x", "y"]), Listed(["y", "x"])
    res = HybridRetriever([a, b], k=0, weights=[3.0, 1.0]).search("question", k=2)
    assert res.query == "question"
    assert [(h.chunk.id, h.score) for h in res.hits] == [("x", 3.0 + 1 / 2), ("y", 3 / 2 + 1.0)]
    default = HybridRetriever([a, b]).search("q", k=2)
    assert [h.score for h in default.hits] == [pytest.approx(1 / 61 + 1 / 62)] * 2
    assert 0.0 <= res.timings["fusion"] < 5.0 and res.timings["listed"] == pytest.approx(0.002)


def test_hybrid_counts_only_the_top_depth_of_a_retriever_that_ignores_k():
    long = Listed([f"c{i}" for i in range(10)], ignore_k=True)
    res = HybridRetriever([long], depth=3).search("q", k=3)
    assert [h.chunk.id for h in res.hits] == ["c0", "c1", "c2"]
    res = HybridRetriever([long], depth=2).search("q", k=1)
    assert len(rrf([long.search("q")], depth=2).hits) == 2 and len(res.hits) == 1
    # c5 counts only from the retriever that ranks it first: were all ten counted, c5 would lead
    res = HybridRetriever([long, Listed(["c5"])], depth=2).search("q", k=3)
    assert [h.chunk.id for h in res.hits] == ["c0", "c5", "c1"]


def test_hybrid_config_defaults_and_bm25_part():
    c = HybridConfig()
    assert (c.rrf_k, c.weights, c.fusion_depth, c.ann) == (60, None, 50, "auto")
    c = HybridConfig(k1=1.1, b=0.3, method="bm25+", stemmer=None, stopwords=None, weights=[1, 2])
    assert c.bm25 == BM25Config(k1=1.1, b=0.3, method="bm25+", stemmer=None, stopwords=None)
    assert c.weights == (1.0, 2.0) and all(type(x) is float for x in c.weights)
    assert HybridConfig(weights=(0, 1)).weights == (0.0, 1.0)  # one zero weight is fine
    assert HybridConfig(rrf_k=0, fusion_depth=1).fusion_depth == 1


@pytest.mark.parametrize("options,message", [
    ({"rrf_k": -1}, "HybridConfig: rrf_k=-1 must be >= 0"),
    ({"rrf_k": 1.5}, "HybridConfig: rrf_k must be an integer, got 1.5"),
    ({"fusion_depth": 0}, "HybridConfig: fusion_depth=0 must be >= 1"),
    ({"fusion_depth": 2.0}, "HybridConfig: fusion_depth must be an integer, got 2.0"),
    ({"ann": 1}, "HybridConfig: ann must be true, false or 'auto', got 1"),
    ({"ann": "yes"}, "HybridConfig: ann must be true, false or 'auto', got 'yes'"),
    ({"weights": (1.0,)}, "HybridConfig: weights are two numbers (bm25, dense), got [1.0]"),
    ({"weights": (1.0, 2.0, 3.0)}, "HybridConfig: weights are two numbers (bm25, dense), got [1.0, 2.0, 3.0]"),
    ({"weights": (1.0, -0.5)}, "HybridConfig: weights=-0.5 must be >= 0"),
    ({"weights": (float("inf"), 1.0)}, "HybridConfig: weights must be finite, got [inf, 1.0]"),
    ({"weights": (1.0, float("nan"))}, "HybridConfig: weights must be finite, got [1.0, nan]"),
    ({"weights": (0.0, 0.0)}, "HybridConfig: at least one weight must be > 0, got [0.0, 0.0]"),
    ({"k1": -1}, "BM25Config: k1=-1 must be >= 0"),
])
def test_hybrid_config_rejects(options, message):
    with pytest.raises(ConfigError) as e:
        HybridConfig(**options)
    assert str(e.value) == message


class Resources:
    def __init__(self):
        self.asked = []

    def bm25(self, chunks, config):
        self.asked.append(("bm25", len(chunks), config))
        return Listed(["x", "y"], name="bm25")

    def dense(self, chunks, ann):
        self.asked.append(("dense", len(chunks), ann))
        return Listed(["y", "x"], name="dense")


def test_registry_builds_bm25_plus_dense_from_the_config():
    entry = RETRIEVERS.get("hybrid")
    assert entry.uses_embedder and entry.summary == "BM25 + dense by reciprocal rank fusion"
    cfg = HybridConfig(k1=1.0, rrf_k=3, weights=(2.0, 1.0), fusion_depth=9, ann=True)
    res = Resources()
    h = entry.factory(cfg, [chunk("x"), chunk("y")], res)
    assert res.asked == [("bm25", 2, cfg.bm25), ("dense", 2, True)]
    assert isinstance(h, HybridRetriever) and [r.name for r in h.retrievers] == ["bm25", "dense"]
    assert (h.k, h.weights, h.depth) == (3, [2.0, 1.0], 9)
