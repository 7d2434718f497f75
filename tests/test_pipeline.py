"""The pipeline package on its own: one configuration value, one key, resources that cache, a builder without
bypasses, and records that never hold a URL's credentials."""

from __future__ import annotations

import pytest

from ragtune.config import config_key
from ragtune.corpus import load_corpus
from ragtune.errors import ConfigError, EmptyIndexError
from ragtune.pipeline import PipelineConfig, Resources, StoredIndex, build_pipeline
from ragtune.registry import RETRIEVERS
from tests.helpers import write_files

DOCS = {"billing.md": "# Billing\n\n## Refunds\n\nRefunds are issued within five days.\n\n## Invoices\n\nMonthly.\n",
        "faq.md": "# FAQ\n\nAsk anything about invoices and refunds.\n"}


def test_spellings_of_one_configuration_share_one_key():
    a = PipelineConfig.from_flags({"chunker": "fixed", "size": 256, "retriever": "bm25", "k1": 1.5})
    b = PipelineConfig.from_flags({"chunker": "fixed", "retriever": "bm25"})  # size 256, k1 1.5 are the defaults
    c = PipelineConfig.from_flags({"chunker": "fixed", "retriever": "bm25", "k1": 1.2})
    assert a == b and a.key == b.key != c.key
    assert a.key == config_key(a.to_dict()) and len(a.key) == 12
    assert PipelineConfig.from_dict(c.to_dict()) == c
    assert not hasattr(PipelineConfig, "config_hash") and not hasattr(PipelineConfig, "to_flags")


def test_stage_configs_hash_by_the_same_scheme():
    from ragtune.retrieve.bm25 import BM25Config

    assert BM25Config().key == config_key({"type": "BM25Config", **BM25Config().to_dict()})


def test_resources_share_chunkings_and_first_stages_between_builds(tmp_path):
    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    resources = Resources(cache_dir=tmp_path / "cache")
    built = []
    real = RETRIEVERS.build

    def counting(*a, **k):
        built.append(a[0])
        return real(*a, **k)

    cfg = PipelineConfig.from_flags({"chunker": "section", "retriever": "bm25"})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(RETRIEVERS, "build", counting)
        first = build_pipeline(corpus, cfg, resources=resources)
        again = build_pipeline(corpus, cfg, resources=resources)  # same index key: the index is reused
        reranked = build_pipeline(corpus, PipelineConfig.from_flags({"chunker": "section", "retriever": "bm25",
                                                                       "rerank": "embedding"}), resources=resources)
    assert built == ["bm25"]
    assert not first.stats["index_reused"] and again.stats["index_reused"] and reranked.stats["index_reused"]
    assert again.base is first.base and again.chunks == first.chunks
    assert any((tmp_path / "cache" / "chunks").iterdir()) and any((tmp_path / "cache" / "bm25").iterdir())
    # a fresh Resources over the same cache folder loads the chunking from disk: same chunks, same ids
    other = build_pipeline(corpus, cfg, resources=Resources(cache_dir=tmp_path / "cache"))
    assert [c.id for c in other.chunks] == [c.id for c in first.chunks]


def test_stored_artifacts_are_used_as_they_are(tmp_path):
    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    cfg = PipelineConfig.from_flags({"chunker": "section", "retriever": "bm25"})
    fresh = build_pipeline(corpus, cfg)
    one = fresh.chunks[:1]
    stored = build_pipeline(corpus, cfg, resources=Resources(stored=StoredIndex(chunking=(one, ()))))
    assert stored.chunks == one  # the stored chunks, not a rechunking of the corpus


def test_an_empty_corpus_is_an_empty_index_error(tmp_path):
    corpus = load_corpus(write_files(tmp_path / "c", {"empty.md": "   \n"}))
    with pytest.raises(EmptyIndexError, match="produced no chunks"):
        build_pipeline(corpus, PipelineConfig.from_flags({"chunker": "section", "retriever": "bm25"}))
    assert issubclass(EmptyIndexError, ConfigError)


def test_eval_records_redact_url_credentials(tmp_path):
    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    p = build_pipeline(corpus, PipelineConfig.from_flags({"chunker": "section", "retriever": "bm25"}))
    from ragtune.pipeline.build import _redacted

    out = _redacted({**p.describe(), "pipeline": {"milvus_uri": "http://root:s3cret@127.0.0.1:19530?token=abc"}})
    text = str(out)
    assert "s3cret" not in text and "abc" not in text and "127.0.0.1:19530" in text


def test_an_embedder_name_is_parsed_once_into_a_typed_spec():
    from ragtune.embed import EmbedderSpec, with_prefixes

    name = with_prefixes("BAAI/bge-small-en-v1.5", "query: ", "passage: ")
    spec = EmbedderSpec.parse(name)
    assert (spec.kind, spec.model, spec.query_prefix, spec.passage_prefix) == \
        ("st", "BAAI/bge-small-en-v1.5", "query: ", "passage: ")
    assert EmbedderSpec.parse(spec.name) == spec and spec.name == name
    assert EmbedderSpec.parse("sentence-transformers/all-MiniLM-L6-v2") == EmbedderSpec("minilm")
    cfg = PipelineConfig.from_flags({"retriever": "dense", "embedder": name})
    assert cfg.embedder_spec == spec
    with pytest.raises(ConfigError, match="expected query_prefix=TEXT or passage_prefix=TEXT"):
        EmbedderSpec.parse("st:x|prefix=q")


def test_printed_and_served_records_redact_url_credentials(tmp_path, capsys):
    """What the CLI prints or writes, and what /versions returns, never holds a URL's user info or key."""
    from ragtune.cli._common import emit
    from ragtune.http import redact_urls

    data = {"config": {"milvus_uri": "http://root:s3cret@127.0.0.1:19530", "base_url": "http://h/v1?api_key=abc"},
            "text": "see http://h/x?token=zzz in prose", "path": "out/lite.db"}
    out = redact_urls(data)
    assert "s3cret" not in str(out["config"]) and "abc" not in str(out["config"])
    assert out["text"] == data["text"] and out["path"] == data["path"]  # prose and paths are left alone
    import argparse

    emit(argparse.Namespace(json=True, out=str(tmp_path / "o.json")), data, None)
    printed = capsys.readouterr().out + (tmp_path / "o.json").read_text()
    assert "s3cret" not in printed and "api_key=abc" not in printed and "127.0.0.1:19530" in printed


def test_an_embedder_object_given_to_resources_is_the_one_used(tmp_path):
    import numpy as np

    class Counting:
        model_id, dim, max_tokens, cache_key = "counting", 4, 512, "counting-v1"

        def __init__(self):
            self.calls = 0

        def embed(self, texts):
            self.calls += 1
            return np.ones((len(texts), 4), dtype=np.float32) / 2

        def embed_queries(self, texts):
            return self.embed(texts)

    emb = Counting()
    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    p = build_pipeline(corpus, PipelineConfig.from_flags({"chunker": "section", "retriever": "dense"}),
                       resources=Resources(emb))
    assert emb.calls >= 1 and p.retriever.search("refunds", 2).hits
