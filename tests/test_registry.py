"""Stage registries, PipelineConfig, the one builder, and a retriever registered through an entry point."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import subprocess
import sys
from dataclasses import dataclass

import pytest

from ragtune.cli import main
from ragtune.config import Config
from ragtune.corpus import load_corpus
from ragtune.errors import ConfigError
from ragtune.pipeline import Pipeline, PipelineConfig, build_pipeline
from ragtune.registry import CHUNKERS, EMBEDDERS, GENERATORS, JUDGES, RERANKERS, RETRIEVERS
from ragtune.sweep import GridError, parse_grid
from ragtune.types import Hit, Ranking
from tests.helpers import write_files, write_jsonl


def test_every_stage_lists_its_builtins_and_suggests_on_typos():
    assert {"fixed", "recursive", "markdown", "semantic", "small_to_big", "section", "document"} <= set(CHUNKERS.names())
    assert {"bm25", "dense", "hybrid"} <= set(RETRIEVERS.names())
    assert {"embedding", "cross-encoder"} <= set(RERANKERS.names())
    assert {"minilm", "e5-small", "onnx", "st", "openai"} <= set(EMBEDDERS.names())
    assert {"extractive", "anthropic", "openai"} <= set(GENERATORS.names())
    assert {"heuristic", "openai", "anthropic"} <= set(JUDGES.names())
    with pytest.raises(ConfigError, match=r"unknown retriever 'hybird'; choose one of: .*\(did you mean 'hybrid'\?\)"):
        RETRIEVERS.get("hybird")
    with pytest.raises(ConfigError, match="needs an argument"):
        EMBEDDERS.get("openai")
    with pytest.raises(ConfigError, match="takes no ':' argument"):
        EMBEDDERS.get("minilm:x")
    # names users know resolve to the bundled copy
    assert EMBEDDERS.canonical("sentence-transformers/all-MiniLM-L6-v2") == "minilm"


def test_pipeline_config_validates_everything_up_front():
    for flags, needle in [
        ({"retriever": "hybrid", "rrf_k": -5}, "rrf_k=-5 must be >= 0"),
        ({"retriever": "hybrid", "weights": [[1]]}, r"weights\[0\] must be a number"),
        ({"retriever": "hybrid", "weights": [1]}, "weights are two numbers"),
        ({"retriever": ["bm25"]}, "retriever must be a name"),
        ({"retriever": "dense", "embedder": 1}, "embedder must be a name"),
        ({"filter": 1}, "filter must be an expression string"),
        ({"chunker": "fixed", "size": "big"}, "size must be an integer"),
        ({"chunker": "fixed", "size": 8, "overlap": 8}, "overlap=8 must be smaller than size=8"),
        ({"chunker": "section", "size": 8}, "size does not apply to chunker section"),
        ({"k1": 1.2, "retriever": "dense"}, "k1 does not apply to retriever dense"),
        ({"rerank": "embedding", "rerank_batch_size": 2}, "unknown option"),  # an option of another reranker
        ({"colour": "red"}, "unknown option 'colour'"),
        ({"candidates": 0, "rerank": "embedding"}, "candidates must be an integer >= 1"),
    ]:
        with pytest.raises(ConfigError, match=needle):
            PipelineConfig.from_flags(flags)


def test_pipeline_config_round_trips_and_normalises_defaults():
    a = PipelineConfig.from_flags({"chunker": "fixed", "size": 256, "overlap": 32, "retriever": "hybrid", "k1": 1.5,
                                   "weights": [1, 2], "rerank": "cross-encoder", "rerank_model": "my/ce", "candidates": 20})
    assert dict(a.chunker_options) == {} and dict(a.retriever_options) == {"weights": (1, 2)}
    assert PipelineConfig.from_dict(json.loads(json.dumps(a.to_dict()))) == a
    assert PipelineConfig.from_dict(a.to_dict()).key == a.key
    assert a.reranker_config().model == "my/ce" and a.candidates == 20
    # an embedder a bm25 pipeline never uses does not change its key
    assert PipelineConfig(retriever="bm25", embedder="e5-small").key == PipelineConfig(retriever="bm25").key
    assert PipelineConfig().retriever == "hybrid" and PipelineConfig().resolved("markdown").prefix is True  # defaults
    # the nested form older store manifests hold
    old = {"chunker": "fixed", "prefix": False, "chunker_options": {"size": 64}, "retriever": "hybrid",
           "retriever_options": {"depth": 20, "rrf_k": 10}, "embedder": "minilm"}
    cfg = PipelineConfig.from_dict(old)
    assert dict(cfg.retriever_options) == {"fusion_depth": 20, "rrf_k": 10}
    # sizes in those versions counted regex tokens: a refresh must chunk changed documents the same way
    assert dict(cfg.chunker_options) == {"size": 64, "tokenizer": "regex"} and cfg.chunker_config().tokenizer == "regex"


def test_pipeline_is_immutable_and_with_reranker_returns_a_new_one(md_corpus):
    corpus = load_corpus(md_corpus)
    p = build_pipeline(corpus, PipelineConfig.from_flags({"chunker": "section"}))
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.reranker = object()  # type: ignore[misc]

    class Reverse:
        name = "reverse"

        def rerank(self, query, ranking):
            return Ranking(query, tuple(Hit(h.chunk, -i) for i, h in enumerate(reversed(ranking.hits))), ranking.timings)

    q = "refunds billing partial"
    plain = [h.chunk.id for h in p.retriever.search(q, k=3).hits]
    r = p.with_reranker(Reverse(), candidates=3)
    assert r is not p and p.reranker is None
    assert [h.chunk.id for h in r.retriever.search(q, k=3).hits] == plain[::-1]
    assert [h.chunk.id for h in p.retriever.search(q, k=3).hits] == plain  # the original is unchanged


@dataclass(frozen=True)
class _FirstConfig(Config):
    n: int = 1


class _First:
    """Returns the first chunks of the corpus whatever the query: easy to tell apart from BM25."""

    name = "first"

    def __init__(self, chunks, config):
        self.chunks, self.config = chunks, config

    def search(self, query, k=10, filters=None):
        return Ranking(query, tuple(Hit(c, 1.0) for c in self.chunks[: min(k, self.config.n)]), {"first": 0.0})


def test_a_retriever_registered_in_process_works_everywhere(md_corpus, tmp_path, capsys):
    RETRIEVERS.register("first", _FirstConfig, lambda config, chunks, resources: _First(chunks, config))
    try:
        corpus = load_corpus(md_corpus)
        p = build_pipeline(corpus, PipelineConfig.from_flags({"retriever": "first", "n": 2, "chunker": "section"}))
        hits = p.retriever.search("anything at all", k=5).hits
        assert [h.chunk.id for h in hits] == [c.id for c in p.chunks[:2]]
        # grids take its options; a bad value is reported before anything runs
        with pytest.raises(GridError, match="n must be an integer"):
            parse_grid({"baseline": {"chunker": "section"}, "grid": {"retriever": ["first"], "n": ["x"]}})
        # and the CLI has a flag for it, derived from the registry
        g = str(write_jsonl(tmp_path / "g.jsonl", [{"id": "q1", "q": "x", "relevant": ["faq.md"]}]))
        assert main(["eval", "--corpus", str(md_corpus), "--golden", g, "--retriever", "first", "--n", "3",
                     "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["config"]["pipeline"]["retriever"] == "first" and data["config"]["pipeline"]["n"] == 3
    finally:
        RETRIEVERS.unregister("first")


def _plugin_installed() -> bool:
    try:
        importlib.metadata.distribution("ragtune-example-overlap")
        return True
    except importlib.metadata.PackageNotFoundError:
        if os.environ.get("CI"):
            pytest.fail("make test installs examples/plugin; it is missing")
        return False


@pytest.mark.skipif(not _plugin_installed(), reason="pip install ./examples/plugin (make test does)")
def test_the_example_plugin_registers_through_its_entry_point(md_corpus, tmp_path, capsys):
    # a fresh interpreter: the entry point alone makes the retriever known
    out = subprocess.run([sys.executable, "-c", "from ragtune.registry import RETRIEVERS; print(RETRIEVERS.names())"],
                         capture_output=True, text=True, check=True).stdout
    assert "overlap" in out
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    assert "smallest share of the query's words a hit must contain (retrievers overlap, overlap-index)" in " ".join(
        capsys.readouterr().out.split())  # the plugin's own help for its flag
    g = str(write_jsonl(tmp_path / "g.jsonl", [
        {"id": "q1", "q": "When are refunds issued?", "relevant": ["guide/billing.md#refunds"]}]))
    assert main(["eval", "--corpus", str(md_corpus), "--golden", g, "--retriever", "overlap", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["metrics"]["recall@5"] == 1.0
    assert main(["eval", "--corpus", str(md_corpus), "--golden", g, "--retriever", "overlap", "--min-share", "2"]) == 2
    assert "min_share=2.0 must be <= 1" in capsys.readouterr().err
    # the store records and reloads it like a built-in
    store = str(tmp_path / "idx")
    assert main(["index", "build", "--store", store, "--corpus", str(md_corpus), "--retriever", "overlap",
                 "--min-share", "0.5"]) == 0
    capsys.readouterr()
    assert main(["search", "--store", store, "refunds issued", "--json"]) == 0
    ranking = json.loads(capsys.readouterr().out)
    assert ranking["hits"] and all(h["score"] >= 0.5 for h in ranking["hits"])


@pytest.mark.skipif(not _plugin_installed(), reason="pip install ./examples/plugin (make test does)")
def test_a_plugin_retriever_with_its_own_index_is_versioned_by_the_store(tmp_path):
    """overlap-index (examples/plugin) saves an inverted index: a store builds it into the version, reopens it
    (load, not rebuild) with the same ranking, refreshes it over changed documents and rolls back to it."""
    from ragtune import load_corpus
    from ragtune.pipeline import PipelineConfig, build_pipeline
    from ragtune.store import IndexStore, build_version, load_pipeline, refresh_version

    docs = tmp_path / "docs"
    write_files(docs, {"billing.md": "# Billing\n\n## Refunds\n\nRefunds are issued within five days.\n",
                       "faq.md": "# FAQ\n\nAsk anything about invoices.\n"})
    config = PipelineConfig.from_flags({"chunker": "section", "retriever": "overlap-index"})
    store = IndexStore(tmp_path / "store")
    v1 = build_version(store, load_corpus(docs), config)
    assert (v1.path / "index" / "overlap-index.json").is_file()
    fresh = build_pipeline(load_corpus(docs), config)
    loaded = load_pipeline(store)
    assert loaded.base.loaded and not fresh.base.loaded  # reopened from the version's files, not rebuilt
    for q in ("refunds issued", "invoices", "nothing matches zzz"):
        assert [(h.chunk.id, h.score) for h in loaded.retriever.search(q, 5).hits] == \
            [(h.chunk.id, h.score) for h in fresh.retriever.search(q, 5).hits]
    # a refresh rebuilds the index over the new chunks; the old version keeps its own
    write_files(docs, {"shipping.md": "# Shipping\n\nParcels leave the warehouse daily.\n"})
    v2, stats = refresh_version(store, load_corpus(docs))
    assert stats["added"] == ["shipping.md"] and store.current_id() == v2.id
    assert [h.chunk.doc_id for h in load_pipeline(store).retriever.search("parcels warehouse", 3).hits] == ["shipping.md"]
    store.rollback()
    assert store.current_id() == v1.id
    assert load_pipeline(store).retriever.search("parcels warehouse", 3).hits == ()
    # its files are sealed with the version's: one overwritten afterwards is caught before the plugin reads it
    (v1.path / "index" / "overlap-index.json").write_text('{"format": 1, "chunks": ["x"], "postings": {}}')
    from ragtune.errors import StoreError

    with pytest.raises(StoreError, match="index/overlap-index.json has 46 bytes"):
        load_pipeline(store, v1.id)


def test_a_chunker_is_one_module(tmp_path, monkeypatch):
    """A module that registers a chunker is all it takes: flags, pipelines, evaluation and sweep grids take it."""
    from ragtune import load_corpus, load_golden
    from ragtune.pipeline import PipelineConfig, build_pipeline, run_eval
    from ragtune.sweep import parse_grid

    (tmp_path / "halves_chunker.py").write_text(
        "from dataclasses import dataclass\n"
        "from ragtune.config import Config\n"
        "from ragtune.chunking import make_chunk\n"
        "from ragtune.registry import CHUNKERS\n\n"
        "@dataclass(frozen=True)\nclass HalvesConfig(Config):\n    prefix: bool = False\n\n"
        "class Halves:\n    name = 'halves'\n"
        "    def __init__(self, config):\n        self.config = config\n"
        "    def chunk(self, doc):\n"
        "        n = len(doc.text); m = n // 2\n"
        "        return [make_chunk(doc, a, b, prefix=self.config.prefix) for a, b in ((0, m), (m, n)) if b > a]\n\n"
        "CHUNKERS.register('halves', HalvesConfig, Halves, summary='two halves')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    importlib.import_module("halves_chunker")
    from ragtune.registry import CHUNKERS

    try:
        docs = write_files(tmp_path / "docs", {"a.md": "# A\n\nalpha beta gamma delta\n", "b.md": "# B\n\nzeta eta\n"})
        g = write_jsonl(tmp_path / "g.jsonl", [{"id": "q", "q": "gamma delta", "relevant": ["a.md"]}])
        config = PipelineConfig.from_flags({"chunker": "halves", "retriever": "bm25"})
        p = build_pipeline(load_corpus(docs), config)
        assert len(p.chunks) == 4 and {c.doc_id for c in p.chunks} == {"a.md", "b.md"}
        assert run_eval(p, load_golden(g)).metrics["recall@5"] == 1.0
        grid = parse_grid({"baseline": {"chunker": "section", "retriever": "bm25"},
                           "grid": {"chunker": ["halves", "section"], "retriever": ["bm25"]}})
        assert "halves/bm25" in {s.label.replace("-prefix", "") for s in grid.resolved("markdown").all_specs}
    finally:
        CHUNKERS.unregister("halves")
