import numpy as np
import pytest

from ragtune.embed import CachedEmbedder, EmbeddingCache, get_embedder


class CountingEmbedder:
    """A deterministic fake embedder that counts what it is asked to embed."""

    model_id = "fake"
    dim = 4
    max_tokens = 16
    cache_key = "fake:v1"

    def __init__(self):
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        v = np.array([[len(t), t.count("a"), t.count("e"), 1.0] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    embed_queries = embed


def test_cache_embeds_each_text_once_across_runs(tmp_path):
    inner = CountingEmbedder()
    cache_path = tmp_path / "c.sqlite"
    first = CachedEmbedder(inner, EmbeddingCache(cache_path))
    v1 = first.embed(["alpha", "beta", "alpha", "gamma"])
    assert first.stats == {"hits": 1, "misses": 3}  # the repeated "alpha" is embedded once
    assert sorted(inner.calls[0]) == ["alpha", "beta", "gamma"]
    assert np.allclose(v1[0], v1[2])
    second = CachedEmbedder(inner, EmbeddingCache(cache_path))  # a new process would see the same file
    v2 = second.embed(["gamma", "alpha", "delta"])
    assert second.stats == {"hits": 2, "misses": 1}
    assert inner.calls[-1] == ["delta"]
    assert np.allclose(v2[1], v1[0])


def test_cache_keys_include_the_model(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    a = CountingEmbedder()
    b = CountingEmbedder()
    b.cache_key = "fake:v2"
    CachedEmbedder(a, cache).embed(["x"])
    CachedEmbedder(b, cache).embed(["x"])
    assert len(a.calls) == 1 and len(b.calls) == 1
    assert cache.count() == 2


def test_bundled_minilm_is_offline_and_sensible():
    pytest.importorskip("onnxruntime")
    emb = get_embedder("minilm")
    assert emb._session is None  # cheap constructor: nothing loaded yet
    v = emb.embed(["The cat sits on the mat.", "A feline rests on a rug.", "Quarterly stock prices fell."])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    sims = v @ v.T
    assert sims[0, 1] > 0.4 > sims[0, 2]
    # order of the batch does not change a text's vector
    w = emb.embed(["Quarterly stock prices fell.", "The cat sits on the mat."])
    assert np.allclose(w[1], v[0], atol=1e-5)


def test_minilm_cache_keys_follow_truncation(tmp_path):
    pytest.importorskip("onnxruntime")
    emb = get_embedder("minilm")
    long_a = "alpha beta gamma " * 200
    long_b = long_a + " a different ending far past the 256-token window"
    ka, kb, kc = emb.input_keys([long_a, long_b, "short text"])
    assert ka == kb != kc
    cached = CachedEmbedder(emb, EmbeddingCache(tmp_path / "c.sqlite"))
    v = cached.embed([long_a, long_b, "short text"])
    assert cached.stats == {"hits": 1, "misses": 2}
    assert np.allclose(v[0], v[1]) and np.allclose(v[0], emb.embed([long_b])[0], atol=1e-5)
