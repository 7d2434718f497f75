import numpy as np
import pytest

from ragtune import Chunk, Hit, Ranking, chunk_corpus, load_corpus, make_chunker
from ragtune.embed import CachedEmbedder, EmbeddingCache
from ragtune.retrieve import BM25Config, BM25Retriever
from ragtune.retrieve.dense import DenseRetriever
from ragtune.retrieve.fusion import HybridRetriever, rrf
from ragtune.rerank.base import RerankedRetriever
from ragtune.rerank.embedding import EmbeddingReranker
from tests.helpers import write_files

TOPICS = ["refund", "invoice", "password", "shipping"]


class BagOfTopics:
    """A fake embedder: one dimension per topic word, plus a constant."""

    model_id = "bag"
    dim = len(TOPICS) + 1
    max_tokens = 64
    cache_key = "bag:1"

    def __init__(self, flip=False):
        self.calls = 0
        self.flip = flip

    def embed(self, texts):
        self.calls += len(texts)
        v = np.array([[t.lower().count(w) for w in TOPICS] + [0.1] for t in texts], dtype=np.float32)
        if self.flip:
            v[:, :-1] = v[:, :-1][:, ::-1]
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    embed_queries = embed


class QueryMirror(BagOfTopics):
    """A reranker's embedder that reads a query's topics mirrored ("refund" as "shipping", "invoice" as
    "password") but chunks as they are, so it disagrees with :class:`BagOfTopics` on the order. (Mirroring both
    sides would change no cosine.)"""

    model_id = "mirror"
    cache_key = "mirror:1"

    def embed_queries(self, texts):
        v = BagOfTopics.embed(self, texts)
        v[:, :-1] = v[:, :-1][:, ::-1]
        return v


def chunk(cid):
    return Chunk(id=cid, doc_id=cid, text=cid, start=0, end=len(cid), embed_text=cid)


def ranking(ids):
    return Ranking("q", tuple(Hit(chunk(c), 1.0 / (i + 1)) for i, c in enumerate(ids)), {"x": 0.001})


def test_rrf_matches_hand_computation_and_leaves_inputs_alone():
    a = ranking(["d1", "d2", "d3"])
    b = ranking(["d3", "d1", "d4"])
    before = (a.hits, b.hits)
    fused = rrf([a, b], k=60)
    expected = {"d1": 1 / 61 + 1 / 62, "d2": 1 / 62, "d3": 1 / 63 + 1 / 61, "d4": 1 / 63}
    assert [h.chunk.id for h in fused.hits] == ["d1", "d3", "d2", "d4"]
    for h in fused.hits:
        assert h.score == pytest.approx(expected[h.chunk.id])
    assert (a.hits, b.hits) == before and a.hits[0].score == 1.0
    assert fused.timings == {"x": pytest.approx(0.002)}
    weighted = rrf([a, b], k=0, weights=[1.0, 3.0])
    assert weighted.hits[0].chunk.id == "d3"  # 1/3 + 3/1
    assert [h.chunk.id for h in rrf([a, b], k=60, depth=1).hits] == ["d1", "d3"]


def test_rrf_keys_by_id_not_text():
    same_text = [Chunk(id=f"c{i}", doc_id="d", text="same", start=0, end=4, embed_text="same") for i in range(2)]
    r = Ranking("q", tuple(Hit(c, 1.0) for c in same_text))
    assert len(rrf([r]).hits) == 2


def docs(tmp_path):
    files = {"a.md": "# A\n\nHow to get a refund for an order.", "b.md": "# B\n\nInvoice copies and invoice dates.",
             "c.md": "# C\n\nReset your password.", "d.md": "# D\n\nShipping times and shipping costs."}
    return chunk_corpus(load_corpus(write_files(tmp_path / "c", files)), make_chunker("document"))


def test_dense_search_filters_and_cache(tmp_path):
    chunks = docs(tmp_path)
    inner = BagOfTopics()
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    r = DenseRetriever.build(chunks, CachedEmbedder(inner, cache))
    res = r.search("my refund please", k=2)
    assert res.hits[0].chunk.doc_id == "a.md" and set(res.timings) == {"embed_query", "dense"}
    assert [h.chunk.doc_id for h in r.search("refund", k=1, filters="doc_id=b.md").hits] == ["b.md"]
    # a second build embeds nothing: every chunk vector comes from the cache
    second = CachedEmbedder(inner, EmbeddingCache(tmp_path / "e.sqlite"))
    DenseRetriever.build(chunks, second)
    assert second.stats == {"hits": 4, "misses": 0}


def test_dense_rejects_mixed_dimensions(tmp_path):
    chunks = docs(tmp_path)
    with pytest.raises(ValueError, match="never mix"):
        DenseRetriever(chunks, np.zeros((4, 3), dtype=np.float32), BagOfTopics())


def test_hybrid_fuses_bm25_and_dense(tmp_path):
    chunks = docs(tmp_path)
    bm25 = BM25Retriever.build(chunks, BM25Config())
    dense = DenseRetriever.build(chunks, BagOfTopics())
    h = HybridRetriever([bm25, dense], k=60, depth=4)
    res = h.search("shipping costs", k=3)
    assert res.hits[0].chunk.doc_id == "d.md"
    assert {"bm25", "embed_query", "dense", "fusion"} <= set(res.timings)
    assert len(h.search("shipping", k=3, filters="doc_id!=d.md").hits) == 3


def test_embedding_reranker_reorders_only_the_shortlist(tmp_path):
    chunks = docs(tmp_path)
    base = DenseRetriever.build(chunks, BagOfTopics())
    # the reranker's embedder reads the query mirrored: "refund" looks like "shipping"
    rr = RerankedRetriever(base, EmbeddingReranker(QueryMirror()), candidates=2)
    plain = base.search("refund", k=4)
    reranked = rr.search("refund", k=4)
    assert [h.chunk.id for h in reranked.hits[2:]] == [h.chunk.id for h in plain.hits[2:]]
    assert {h.chunk.id for h in reranked.hits[:2]} == {h.chunk.id for h in plain.hits[:2]}
    assert "rerank" in reranked.timings
    assert rr.name == "dense+embedding"


def _has(module):
    import importlib.util

    return importlib.util.find_spec(module) is not None


def test_ann_agrees_with_exact_search(tmp_path):
    # only look the package up: importing usearch before onnxruntime is the very crash ragtune guards against
    if not _has("usearch"):
        pytest.skip("usearch not installed")
    rng = np.random.default_rng(0)
    n = 2000
    vecs = rng.normal(size=(n, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    chunks = [Chunk(id=f"c{i}", doc_id=f"d{i % 7}", text="t", start=0, end=1, embed_text=f"q{i}") for i in range(n)]

    class Lookup:
        model_id, dim, max_tokens, cache_key = "lookup", 16, 8, "lookup"

        def embed(self, texts):
            return vecs[[int(t[1:]) for t in texts]]

        embed_queries = embed

    exact = DenseRetriever(chunks, vecs, Lookup())
    ann = DenseRetriever(chunks, vecs, Lookup(), ann=True)
    assert ann.ann_recall([f"q{i}" for i in range(0, n, 40)], k=10) >= 0.95
    top_exact = [h.chunk.id for h in exact.search("q5", k=10).hits]
    top_ann = [h.chunk.id for h in ann.search("q5", k=10).hits]
    assert top_ann[0] == "c5" and len(set(top_ann) & set(top_exact)) >= 9
    # a filtered query falls back to exact search over the allowed vectors
    filtered = ann.search("q5", k=10, filters="doc_id=d3")
    assert [h.chunk.id for h in filtered.hits] == [h.chunk.id for h in exact.search("q5", k=10, filters="doc_id=d3").hits]


def test_ann_then_onnx_does_not_crash():
    """onnxruntime segfaults when first loaded after usearch; building an ANN index must guard against it."""
    if not (_has("usearch") and _has("onnxruntime")):
        pytest.skip("needs usearch and onnxruntime")
    import subprocess
    import sys

    code = ("import numpy as np\nfrom ragtune import Chunk\nfrom ragtune.retrieve.dense import DenseRetriever\n"
            "class E:\n    model_id='x'; dim=4; max_tokens=8; cache_key='x'\n"
            "    def embed(self, t): return np.eye(4, dtype=np.float32)[:len(t)]\n    embed_queries = embed\n"
            "ch = [Chunk(id=str(i), doc_id='d', text='t', start=0, end=1, embed_text='t') for i in range(4)]\n"
            "DenseRetriever(ch, np.eye(4, dtype=np.float32), E(), ann=True)\n"
            "from ragtune.embed import get_embedder\nprint(get_embedder('minilm').embed(['hello']).shape)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-500:]
    assert "(1, 384)" in out.stdout


def test_reranked_order_is_the_rerankers_order(tmp_path):
    chunks = docs(tmp_path)
    base = DenseRetriever.build(chunks, BagOfTopics())
    flipped = QueryMirror()
    query = "refund invoice"
    rr = RerankedRetriever(base, EmbeddingReranker(flipped), candidates=4)
    plain = [h.chunk.id for h in base.search(query, k=4).hits]
    # the order the reranker's embedder implies, computed here: cosine of the flipped vectors, best first
    vectors = flipped.embed([c.embed_text for c in chunks])
    scores = vectors @ flipped.embed_queries([query])[0]
    expected = [chunks[i].id for i in sorted(range(len(chunks)), key=lambda i: -scores[i])]
    reranked = rr.search(query, k=4)
    assert [h.chunk.id for h in reranked.hits] == expected != plain
    assert [h.score for h in reranked.hits] == pytest.approx(sorted(scores.tolist(), reverse=True))
    # with a shortlist of 2, only those two are reordered, by the reranker's scores
    head = RerankedRetriever(base, EmbeddingReranker(flipped), candidates=2).search(query, k=4)
    top2 = sorted(plain[:2], key=lambda cid: -scores[[c.id for c in chunks].index(cid)])
    assert [h.chunk.id for h in head.hits] == top2 + plain[2:]


def test_ann_search_reads_the_graph_not_the_matrix():
    """With ann=True a query is answered by the usearch graph built at construction: overwriting the exact
    vectors afterwards changes exact search but not the ANN answer (the graph keeps the original vectors)."""
    if not _has("usearch"):
        pytest.skip("usearch not installed")
    rng = np.random.default_rng(1)
    n = 300
    vecs = rng.normal(size=(n, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    chunks = [Chunk(id=f"c{i}", doc_id="d", text="t", start=0, end=1, embed_text=f"q{i}") for i in range(n)]

    class Lookup:
        model_id, dim, max_tokens, cache_key = "lookup", 8, 8, "lookup"

        def embed(self, texts):
            return vecs[[int(t[1:]) for t in texts]]

        embed_queries = embed

    ann = DenseRetriever(chunks, vecs.copy(), Lookup(), ann=True)
    exact = DenseRetriever(chunks, vecs.copy(), Lookup())
    ann.vectors = exact.vectors = -vecs  # the matrix now ranks c7 last for its own query
    assert [h.chunk.id for h in exact.search("q7", k=1).hits] != ["c7"]
    top = ann.search("q7", k=3).hits
    assert top[0].chunk.id == "c7" and top[0].score == pytest.approx(1.0, abs=1e-4)
