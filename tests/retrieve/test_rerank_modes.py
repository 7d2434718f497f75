"""Reranking modes (replace / fuse by RRF with the first stage), the shared reranker options through flags and
grids, and the embedding reranker's one-window truncation."""

import numpy as np
import pytest

from ragtune import Chunk, ConfigError, Hit, Ranking
from ragtune.pipeline import PipelineConfig
from ragtune.registry import RERANKERS
from ragtune.rerank.base import RerankedRetriever, RerankerConfig, fuse_with_first_stage
from ragtune.rerank.embedding import EmbeddingReranker, truncate_to_window


def chunk(cid):
    return Chunk(id=cid, doc_id=cid, text=f"text {cid}", start=0, end=1, embed_text=f"embed {cid}")


class Listed:
    name, config = "listed", None

    def __init__(self, ids):
        self.ids = ids

    def search(self, query, k=10, filters=None):
        return Ranking(query, tuple(Hit(chunk(c), 1.0 / (i + 1)) for i, c in enumerate(self.ids[:k])), {"base": 0.01})


class Reverse:
    """Scores the shortlist in reverse first-stage order; carries a mode like registry-built rerankers."""

    name, config = "reverse", None

    def __init__(self, mode=None, fuse_k=None):
        if mode:
            self.mode = mode
        if fuse_k is not None:
            self.fuse_k = fuse_k

    def rerank(self, query, ranking):
        n = len(ranking.hits)
        return Ranking(query, tuple(Hit(h.chunk, float(i)) for i, h in reversed(list(enumerate(ranking.hits)))),
                       {**ranking.timings, "rerank": 0.2})


def by_rrf(first, second, k):
    """RRF by hand: score = 1/(k + rank) summed over the two orders."""
    score = {c: 1 / (k + first.index(c) + 1) + 1 / (k + second.index(c) + 1) for c in first}
    return sorted(first, key=lambda c: (-score[c], second.index(c)))


def test_replace_and_fuse_on_a_reversing_reranker():
    base = Listed([f"c{i}" for i in range(6)])
    replace = RerankedRetriever(base, Reverse(), candidates=4).search("q", k=6)
    assert [h.chunk.id for h in replace.hits] == ["c3", "c2", "c1", "c0", "c4", "c5"]
    fused = RerankedRetriever(base, Reverse("fuse"), candidates=4).search("q", k=6)
    # the two ends of a reversed shortlist tie (1/61 + 1/64) and beat its middle (1/62 + 1/63): ties keep the
    # reranker's order
    assert [h.chunk.id for h in fused.hits] == ["c3", "c0", "c2", "c1", "c4", "c5"]
    assert fused.hits[0].score == pytest.approx(1 / 61 + 1 / 64) and fused.timings == {"base": 0.01, "rerank": 0.2}


class Table:
    name, config = "table", None

    def __init__(self, order, mode="fuse", fuse_k=60):
        self.order, self.mode, self.fuse_k = order, mode, fuse_k

    def rerank(self, query, ranking):
        pos = {c: i for i, c in enumerate(self.order)}
        hits = sorted(ranking.hits, key=lambda h: pos[h.chunk.id])
        return Ranking(query, tuple(Hit(h.chunk, -float(pos[h.chunk.id])) for h in hits), {**ranking.timings, "rerank": 0.1})


@pytest.mark.parametrize("k", [0, 1, 60])
def test_fuse_is_rrf_of_the_two_ranks(k):
    first = [f"c{i}" for i in range(8)]
    rng = np.random.default_rng(k)
    order = list(rng.permutation(first))
    got = RerankedRetriever(Listed(first), Table(order, fuse_k=k), candidates=8).search("q", k=8)
    assert [h.chunk.id for h in got.hits] == by_rrf(first, order, k)
    # the reranker's own order differs (the test would not see fusion otherwise)
    assert by_rrf(first, order, k) != order
    assert RerankedRetriever(Listed(first), Table(order), candidates=8, mode="replace").search("q", k=8).hits[0].chunk.id \
        == order[0]


def test_fuse_only_moves_the_shortlist():
    first = [f"c{i}" for i in range(10)]
    got = RerankedRetriever(Listed(first), Table(["c2", "c0", "c1"]), candidates=3).search("q", k=10)
    assert [h.chunk.id for h in got.hits][3:] == first[3:]
    assert [h.chunk.id for h in got.hits][:3] == by_rrf(first[:3], ["c2", "c0", "c1"], 60)


def test_retriever_mode_overrides_and_validation():
    assert RerankedRetriever(Listed(["a"]), Reverse()).mode == "replace"  # a reranker without a mode
    assert RerankedRetriever(Listed(["a"]), Reverse("fuse", 5)).fuse_k == 5
    with pytest.raises(ConfigError, match=r"mode='both' is not valid; choose one of: 'replace', 'fuse'"):
        RerankedRetriever(Listed(["a"]), Reverse(), mode="both")
    with pytest.raises(ConfigError, match=r"fuse_k=-2 must be >= 0"):
        RerankedRetriever(Listed(["a"]), Reverse("fuse", -2))
    assert fuse_with_first_stage(Ranking("q", ()), Ranking("q", (), {"rerank": 0.5})).timings == {"rerank": 0.5}


def test_every_registered_reranker_takes_mode_and_carries_it():
    for entry in RERANKERS:
        if entry.config is None or not issubclass(entry.config, RerankerConfig):
            continue
        assert {"mode", "fuse_k"} <= set(entry.options)
        if entry.name == "cross-encoder":
            built = RERANKERS.build(entry.name, options={"mode": "replace", "fuse_k": 7, "model": "org/model"})
        else:
            try:
                built = RERANKERS.build(entry.name, options={"mode": "replace", "fuse_k": 7})
            except ConfigError:  # an entry needing more options (a model): its own tests build it
                continue
        assert (built.mode, built.fuse_k) == ("replace", 7), entry.name
    assert RERANKERS.config("embedding").mode == "fuse"  # the default


def test_mode_through_flags_and_grids():
    c = PipelineConfig.from_flags({"retriever": "bm25", "rerank": "cross-encoder", "rerank_mode": "replace",
                                   "rerank_fuse_k": 30, "rerank_backend": "onnx", "rerank_max_length": 128})
    assert c.reranker_config().mode == "replace" and c.reranker_config().fuse_k == 30
    assert c.to_dict()["rerank_mode"] == "replace" and c.to_dict()["rerank_max_length"] == 128
    default = PipelineConfig.from_flags({"rerank": "embedding", "rerank_mode": "fuse"})
    assert "rerank_mode" not in default.to_dict()  # the default value is normalised away: one key
    assert default.key == PipelineConfig.from_flags({"rerank": "embedding"}).key
    with pytest.raises(ConfigError, match="mode='rrf' is not valid"):
        PipelineConfig.from_flags({"rerank": "embedding", "rerank_mode": "rrf"})
    from ragtune.sweep.grid import parse_grid

    grid = parse_grid({"baseline": {"retriever": "bm25"},
                       "grid": {"retriever": ["bm25"], "rerank": ["embedding"], "rerank_mode": ["replace", "fuse"]}})
    modes = sorted(spec.reranker_config().mode for spec in grid.specs)
    assert modes == ["fuse", "replace"]


class Counting:
    """An embedder with a 5-token window that counts words (+2 specials) and records what it embeds."""

    model_id, max_tokens = "count", 5

    def __init__(self):
        self.embedded = []

    def count_tokens(self, texts):
        return [len(t.split()) + 2 for t in texts]

    def embed(self, texts):
        self.embedded += list(texts)
        return np.ones((len(texts), 2), dtype=np.float32)

    def embed_queries(self, texts):
        return np.ones((len(texts), 2), dtype=np.float32)


def test_truncate_to_window_keeps_the_longest_prefix_that_fits():
    e = Counting()
    out = truncate_to_window(e, ["one two three", "a b c d e f g", "x"])
    assert out == ["one two three", "a b c ", "x"]  # 3 words + 2 specials = 5; a fourth word would not fit
    assert truncate_to_window(object(), ["a b c d e f g"]) == ["a b c d e f g"]  # cannot count: unchanged


def test_embedding_reranker_embeds_one_window_per_chunk():
    e = Counting()
    long = Chunk(id="l", doc_id="l", text="t", start=0, end=1, embed_text=" ".join(f"w{i}" for i in range(5000)))
    rr = EmbeddingReranker(e)
    rr.rerank("q", Ranking("q", (Hit(long, 1.0), Hit(chunk("s"), 0.5))))
    assert e.embedded == ["w0 w1 w2 ", "embed s"]
