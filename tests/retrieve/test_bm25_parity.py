"""Parity: ragtune's BM25Retriever ranks and scores exactly as a raw ``bm25s.BM25`` given the same texts and the
same tokenisation (lower-cased ``\\w\\w+`` words, English stopwords, Snowball English stemming), per
src/ragtune/retrieve/bm25.py."""

import json
from pathlib import Path

import bm25s
import numpy as np
import pytest
import Stemmer

from ragtune import BM25Config, BM25Retriever, chunk_corpus, load_corpus, make_chunker
from tests.helpers import shared_dataset

DOCS = Path(__file__).resolve().parents[2] / "docs"


def raw_bm25(texts):
    stem = Stemmer.Stemmer("english")
    model = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    model.index(bm25s.tokenize(texts, stopwords="en", stemmer=stem, show_progress=False), show_progress=False)

    def search(query, k):
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stem, return_ids=False, show_progress=False)
        tokens = [[t for t in tokens[0] if t in model.vocab_dict]]
        if not tokens[0]:
            return []
        ids, scores = model.retrieve(tokens, k=len(texts), show_progress=False)
        pairs = [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if s > 0]
        # ragtune breaks ties by chunk order; bm25s leaves their order open
        return sorted(pairs, key=lambda p: (-p[1], p[0]))[:k]

    return search


def assert_parity(chunks, queries, k):
    ours = BM25Retriever.build(chunks, BM25Config())
    theirs = raw_bm25([c.embed_text for c in chunks])
    index = {c.id: i for i, c in enumerate(chunks)}
    compared = 0
    for q in queries:
        got = [(index[h.chunk.id], h.score) for h in ours.search(q, k=k).hits]
        want = theirs(q, k)
        assert [i for i, _ in got] == [i for i, _ in want], q
        assert np.allclose([s for _, s in got], [s for _, s in want], rtol=0, atol=1e-6), q
        compared += bool(want)
    return compared


def test_parity_with_raw_bm25s_on_the_documentation():
    corpus = load_corpus(DOCS)
    chunks = chunk_corpus(corpus, make_chunker("section"))
    queries = [json.loads(line)["q"] for line in (DOCS / "golden.jsonl").read_text(encoding="utf-8").splitlines()
               if line.strip()]
    assert len(chunks) > 100 and len(queries) >= 30
    assert assert_parity(chunks, queries + ["the of and", "zzzz unknown words"], k=10) >= 30


@pytest.mark.dataset
def test_parity_with_raw_bm25s_on_scifact():
    path = shared_dataset("scifact")
    corpus = load_corpus(path)
    chunks = chunk_corpus(corpus, make_chunker("document", prefix=True))
    queries = [json.loads(line)["text"] for line in (path / "queries.jsonl").read_text(encoding="utf-8").splitlines()[:50]]
    assert assert_parity(chunks, queries, k=10) == 50
