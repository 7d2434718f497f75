"""One generic index cache (``Resources.index``): any retriever factory builds its index through it and is reused
across the configurations one ``Resources`` serves, with no edit to pipeline/resources.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np
import pytest

from ragtune.config import Config, Opt
from ragtune.corpus import load_corpus
from ragtune.pipeline import PipelineConfig, Resources, build_pipeline
from ragtune.pipeline.resources import chunks_fingerprint
from ragtune.registry import RETRIEVERS
from ragtune.types import Hit, Ranking
from tests.helpers import write_files

DOCS = {"billing.md": "# Billing\n\n## Refunds\n\nRefunds are issued within five days.\n\n## Invoices\n\nMonthly.\n",
        "faq.md": "# FAQ\n\nAsk anything about invoices and refunds.\n"}


@dataclass(frozen=True)
class ToyConfig(Config):
    weight: Annotated[float, Opt("a score multiplier")] = 1.0


class ToyRetriever:
    """Scores a chunk by the query words it holds, times ``weight``; its "index" is a word set per chunk."""

    name = "toy"

    def __init__(self, chunks, index, weight):
        self.chunks, self.index, self.weight = chunks, index, weight

    def search(self, query, k=10, filters=None):
        words = set(query.lower().split())
        scored = sorted(((len(words & s) * self.weight, i) for i, s in enumerate(self.index)), reverse=True)[:k]
        return Ranking(query, tuple(Hit(self.chunks[i], float(s)) for s, i in scored if s > 0))


@pytest.fixture
def toy():
    """``toy`` and ``toy-twin`` (another retriever over the same index, as hybrid is over BM25's), counting builds."""
    builds: list[ToyConfig] = []

    def index(config, chunks, resources):
        def build():
            builds.append(config)
            return [set(c.embed_text.lower().split()) for c in chunks]

        return resources.index("toy", config, chunks, build)

    def factory(config, chunks, resources):
        return ToyRetriever(chunks, index(config, chunks, resources), config.weight)

    RETRIEVERS.register("toy", ToyConfig, factory, summary="word overlap (test)")
    RETRIEVERS.register("toy-twin", ToyConfig, factory, summary="word overlap again (test)")
    try:
        yield builds
    finally:
        RETRIEVERS.unregister("toy")
        RETRIEVERS.unregister("toy-twin")


def _config(**flags):
    return PipelineConfig.from_flags({"chunker": "section", **flags})


def test_a_new_retriever_is_built_once_across_configurations_that_share_its_config(tmp_path, toy):
    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    resources = Resources()  # what a sweep passes to every build
    a = build_pipeline(corpus, _config(retriever="toy", weight=2.0), resources=resources)
    b = build_pipeline(corpus, _config(retriever="toy-twin", weight=2.0), resources=resources)  # another index key
    c = build_pipeline(corpus, _config(retriever="toy", weight=2.0, rerank="embedding"), resources=resources)
    assert toy == [ToyConfig(2.0)]
    assert a.base.index is b.base.index is c.base.index
    assert a.retriever.search("refunds issued", 3).hits  # the index it built is the one searched


def test_a_new_retriever_is_built_again_when_its_config_or_chunks_differ(tmp_path, toy):
    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    resources = Resources()
    build_pipeline(corpus, _config(retriever="toy", weight=2.0), resources=resources)
    build_pipeline(corpus, _config(retriever="toy-twin", weight=3.0), resources=resources)
    build_pipeline(corpus, PipelineConfig.from_flags({"chunker": "fixed", "size": 64, "retriever": "toy-twin",
                                                      "weight": 3.0}), resources=resources)
    assert toy == [ToyConfig(2.0), ToyConfig(3.0), ToyConfig(3.0)]
    build_pipeline(corpus, _config(retriever="toy", weight=2.0), resources=Resources())  # other resources: their own
    assert len(toy) == 4


def test_the_index_cache_keeps_the_newest_indexes(tmp_path, toy):
    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    chunks = build_pipeline(corpus, _config(retriever="toy"), resources=Resources()).chunks
    resources = Resources(keep_indexes=2)
    for w in (1.0, 2.0, 3.0, 1.0):  # 1.0 was pushed out by 2.0 and 3.0
        RETRIEVERS.build("toy", chunks, resources, options={"weight": w})
    RETRIEVERS.build("toy", chunks, resources, options={"weight": 3.0})  # still held
    assert [c.weight for c in toy] == [1.0, 1.0, 2.0, 3.0, 1.0]


class _Embedder:
    name = "toy-embedder"
    dim = 3
    model_id = "toy-embedder"

    def __init__(self):
        self.texts = 0

    def embed(self, texts):
        self.texts += len(texts)
        return np.asarray([[len(t) % 7 + 1.0, t.count("e") + 1.0, 1.0] for t in texts], dtype=np.float32)


def test_hybrid_reuses_the_bm25_and_dense_indexes_built_for_other_configurations(tmp_path):
    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    emb = _Embedder()
    resources = Resources(emb)
    bm25 = build_pipeline(corpus, _config(retriever="bm25"), resources=resources)
    dense = build_pipeline(corpus, _config(retriever="dense"), resources=resources)
    embedded = emb.texts
    hybrid = build_pipeline(corpus, _config(retriever="hybrid"), resources=resources)
    assert embedded == len(dense.chunks) and emb.texts == embedded  # nothing embedded again
    assert hybrid.base.retrievers[0] is bm25.base and hybrid.base.retrievers[1] is dense.base


def test_chunkings_with_the_same_ids_and_texts_but_other_parents_do_not_share_an_index(tmp_path):
    """Section pieces and small-to-big children can have the same ids and texts; the index hands back its chunks,
    so the children must not be served the pieces (which have no parent): a sweep of the demo grid did."""
    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    resources = Resources(_Embedder())
    pieces = build_pipeline(corpus, _config(retriever="bm25", max_tokens=256), resources=resources)
    s2b = build_pipeline(corpus, PipelineConfig.from_flags({"chunker": "small_to_big", "parent": "section",
                                                            "size": 256, "retriever": "bm25"}), resources=resources)
    assert {c.id for c in pieces.chunks} & {c.id for c in s2b.chunks}, "the two chunkings must share ids to test this"
    ranking = s2b.retriever.search("refunds", k=3)  # a piece without parent_id here raised in ParentRetriever
    assert ranking.hits
    assert chunks_fingerprint(pieces.chunks) != chunks_fingerprint(s2b.chunks)
