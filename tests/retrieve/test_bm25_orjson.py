"""bm25s writes its vocabulary with orjson when orjson is installed (LangChain's langsmith pulls it in), and orjson
refuses the integer keys of an index built from token ids: saving must still work, and load back the same index."""

import pytest

from ragtune import BM25Config, BM25Retriever, chunk_corpus, load_corpus, make_chunker
from tests.helpers import write_files


def test_save_with_orjson_round_trips(tmp_path, monkeypatch):
    orjson = pytest.importorskip("orjson")
    from bm25s.utils import json_functions

    monkeypatch.setattr(json_functions, "dumps", lambda d, **kw: orjson.dumps(d).decode("utf-8"))
    monkeypatch.setattr(json_functions, "loads", orjson.loads)
    corpus = load_corpus(write_files(tmp_path / "c", {"a.txt": "the cat was running across the garden",
                                                      "b.txt": "a dog barked at cats", "c.txt": "stock markets fell"}))
    r = BM25Retriever.build(chunk_corpus(corpus, make_chunker("document")), BM25Config())
    before = dict(r._model.vocab_dict)
    r.save(tmp_path / "idx")
    assert r._model.vocab_dict == before  # the live index is left as it was
    loaded = BM25Retriever.load(tmp_path / "idx", r.chunks, r.config)
    for q in ("running cats", "dog", "markets", "zebra"):
        assert [(h.chunk.id, round(h.score, 5)) for h in loaded.search(q, k=3).hits] == \
            [(h.chunk.id, round(h.score, 5)) for h in r.search(q, k=3).hits]
