"""One embedder serves concurrent requests (``serve`` runs searches on a thread pool, as does a store's reader
under load): the first calls racing the lazy model load, and passage keys computed while queries are embedded,
give the vectors a single thread gives and raise nothing."""

from __future__ import annotations

import threading

import numpy as np

from ragtune.embed import CachedEmbedder, EmbeddingCache
from ragtune.embed.onnx import OnnxEmbedder

QUERIES = ["how do refunds work", "rivers and mountains of the north", "a",
           "what does the configuration file hold when nothing is set at all"]


def _hammer(calls, rounds: int = 12, threads: int = 6) -> list[str]:
    """Each thread starts a little after the one before and runs every call ``rounds`` times; the errors seen."""
    errors: list[str] = []

    def work(k: int) -> None:
        for r in range(rounds):
            try:
                calls[(k + r) % len(calls)]()
            except Exception as e:  # noqa: BLE001 - collected: the test asserts there are none
                errors.append(repr(e))

    pool = []
    for k in range(threads):
        t = threading.Thread(target=work, args=(k,))
        t.start()
        pool.append(t)
        threading.Event().wait(0.02 * k)  # staggered: some threads arrive while the model is half loaded
    for t in pool:
        t.join()
    return errors


def test_a_fresh_embedder_serves_concurrent_first_calls():
    want = OnnxEmbedder.minilm().embed_queries(QUERIES)
    emb = OnnxEmbedder.minilm()  # fresh: nothing loaded yet
    results: list[np.ndarray] = []

    def query() -> None:
        results.append(emb.embed_queries(QUERIES))

    def keys() -> None:  # passage keys read the text unpadded; queries read it padded, at the same time
        assert len(set(emb.input_keys(QUERIES))) == len(QUERIES)

    def count() -> None:
        assert emb.count_tokens(["one two three"])[0] == 5

    assert _hammer([query, keys, query, count]) == []
    assert results and all(np.allclose(r, want, atol=1e-5) for r in results)


def test_a_cached_embedder_shares_one_cache_across_threads(tmp_path):
    cached = CachedEmbedder(OnnxEmbedder.minilm(), EmbeddingCache(tmp_path / "cache.sqlite"))
    texts = [f"passage number {i} about topic {i % 7}" for i in range(40)]
    want = OnnxEmbedder.minilm().embed(texts)
    results: list[np.ndarray] = []

    def passages() -> None:
        results.append(cached.embed(texts))

    def queries() -> None:
        cached.embed_queries(QUERIES)

    assert _hammer([passages, queries], rounds=4, threads=4) == []
    assert results and all(np.allclose(r, want, atol=1e-5) for r in results)
    assert cached.cache.count() >= len(texts)


def test_an_embedder_pickles_cold_after_use():
    import pickle

    emb = OnnxEmbedder.minilm()
    first = emb.embed_queries(QUERIES[:2])
    copy = pickle.loads(pickle.dumps(emb))  # a loaded session and a lock do not pickle: the copy loads its own
    assert copy._session is None and np.allclose(copy.embed_queries(QUERIES[:2]), first, atol=1e-6)
