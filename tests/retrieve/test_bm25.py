import pytest

from ragtune import BM25Config, BM25Retriever, ConfigError, chunk_corpus, load_corpus, make_chunker
from ragtune.retrieve import top_k
from tests.helpers import write_files

import numpy as np


def build(tmp_path, files, **cfg):
    corpus = load_corpus(write_files(tmp_path, files))
    chunks = chunk_corpus(corpus, make_chunker("document"))
    return BM25Retriever.build(chunks, BM25Config(**cfg))


def test_ranks_matching_documents_with_stemming(tmp_path):
    r = build(tmp_path, {"a.txt": "the cat was running across the garden", "b.txt": "a dog barked loudly",
                         "c.txt": "stock markets fell"})
    ranking = r.search("runs cats", k=5)
    assert [h.chunk.doc_id for h in ranking.hits] == ["a.txt"]
    assert ranking.hits[0].score > 0
    assert "bm25" in ranking.timings


def test_stopword_only_or_unknown_query_returns_nothing(tmp_path):
    r = build(tmp_path, {"a.txt": "alpha beta", "b.txt": "a"})  # b has no indexable token
    assert r.search("the of and", k=5).hits == ()
    assert r.search("zebra", k=5).hits == ()


def test_without_stemming_the_word_form_matters(tmp_path):
    r = build(tmp_path, {"a.txt": "running fast", "b.txt": "nothing here"}, stemmer=None)
    assert r.search("run", k=5).hits == ()


def test_k_larger_than_corpus(tmp_path):
    r = build(tmp_path, {"a.txt": "alpha", "b.txt": "alpha beta", "c.txt": "gamma"})
    assert len(r.search("alpha", k=100).hits) == 2


def test_config_validation_lists_choices():
    with pytest.raises(ConfigError, match="method='okapi' is not valid; choose one of: 'lucene'"):
        BM25Config(method="okapi")
    with pytest.raises(ConfigError, match="b=1.5 must be <= 1"):
        BM25Config(b=1.5)
    with pytest.raises(ConfigError, match="unknown option\\(s\\) 'k2'; valid options: k1, b"):
        BM25Config.from_dict({"k2": 1})
    assert BM25Config().key == BM25Config(k1=1.5).key != BM25Config(k1=1.2).key


def test_top_k_breaks_ties_by_index_and_drops_zero():
    scores = np.array([0.5, 1.0, 0.5, 0.0, 1.0], dtype=np.float32)
    assert top_k(scores, 3).tolist() == [1, 4, 0]
    assert top_k(scores, 10, min_score=0.0).tolist() == [1, 4, 0, 2]
    assert top_k(scores, 0).tolist() == []


def test_save_and_load_give_the_same_rankings(tmp_path):
    from ragtune.pipeline import build_retriever

    r = build(tmp_path / "c", {"a.txt": "the cat was running across the garden", "b.txt": "a dog barked at cats",
                               "c.txt": "stock markets fell"})
    r.save(tmp_path / "idx")
    loaded = BM25Retriever.load(tmp_path / "idx", r.chunks, r.config)
    for q in ("running cats", "dog", "markets", "zebra"):
        assert [(h.chunk.id, round(h.score, 5)) for h in loaded.search(q, k=3).hits] == \
            [(h.chunk.id, round(h.score, 5)) for h in r.search(q, k=3).hits]
    with pytest.raises(ConfigError, match="other chunks or another configuration"):
        BM25Retriever.load(tmp_path / "idx", r.chunks[:2], r.config)
    # the cache folder path: built once, loaded the second time
    first = build_retriever(r.chunks, "bm25", cache_dir=tmp_path / "cache")
    assert len(list((tmp_path / "cache" / "bm25").iterdir())) == 1
    second = build_retriever(r.chunks, "bm25", cache_dir=tmp_path / "cache")
    assert [h.chunk.id for h in second.search("cats", k=3).hits] == [h.chunk.id for h in first.search("cats", k=3).hits]


def test_bm25_cache_tells_prefixed_from_plain_chunks(tmp_path):
    """Same spans (same chunk ids), different indexed text: the cache must not hand one the other's index."""
    from ragtune.pipeline import build_retriever

    corpus = load_corpus(write_files(tmp_path / "c", {"zebra.md": "# Zebra facts\n\nStripes help with flies.\n",
                                                       "other.md": "# Other\n\nNothing about flies here at all.\n"}))
    plain = chunk_corpus(corpus, make_chunker("section"))
    prefixed = chunk_corpus(corpus, make_chunker("section", prefix=True))
    assert [c.id for c in plain] == [c.id for c in prefixed]
    a = build_retriever(plain, "bm25", cache_dir=tmp_path / "cache")
    b = build_retriever(prefixed, "bm25", cache_dir=tmp_path / "cache")
    assert len(list((tmp_path / "cache" / "bm25").iterdir())) == 2
    # the title word reaches only the prefixed index
    assert [h.chunk.doc_id for h in b.search("zebra flies", k=1).hits] == ["zebra.md"]
    assert a.search("zebra flies", k=2).hits[0].score < b.search("zebra flies", k=2).hits[0].score


def test_queries_do_not_grow_the_vocabulary(tmp_path):
    r = build(tmp_path, {"a.txt": "the cat was running", "b.txt": "dogs bark"})
    before = (len(r._tokenizer.word_to_stem), len(r._tokenizer.get_vocab_dict()))
    for i in range(200):
        r.search(f"unseen{i} words running", k=2)
    assert (len(r._tokenizer.word_to_stem), len(r._tokenizer.get_vocab_dict())) == before
    assert [h.chunk.doc_id for h in r.search("runs of cats", k=2).hits] == ["a.txt"]
