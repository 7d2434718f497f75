import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ragtune import load_corpus, load_golden
from ragtune.cli import main
from ragtune.pipeline import PipelineConfig
from ragtune.store import IndexStore, StoreError, build_version, load_pipeline, migrate, refresh_version
from tests.helpers import DOCS, QUESTIONS, write_files, write_jsonl


@pytest.fixture
def corpus_dir(tmp_path):
    return write_files(tmp_path / "c", DOCS)


def test_versions_promote_rollback_gc_diff(corpus_dir, tmp_path):
    store = IndexStore(tmp_path / "s")
    corpus = load_corpus(corpus_dir)
    v1 = build_version(store, corpus, PipelineConfig.from_flags({"chunker": "section"}))
    assert store.current_id() == v1.id == "v0001"  # the first version becomes current
    v2 = build_version(store, corpus, PipelineConfig.from_flags({"chunker": "fixed", "size": 16}))
    assert store.current_id() == "v0001"  # later builds wait for promote
    store.promote(v2.id)
    assert store.current_id() == "v0002" and store.history() == ["v0001", "v0002"]
    assert store.rollback().id == "v0001" and store.current_id() == "v0001"
    with pytest.raises(StoreError, match="nothing to roll back to"):
        store.rollback()
    d = store.diff("v0001", "v0002")
    assert d["added"] == d["removed"] == d["changed"] == [] and d["config"]["chunker"] == {"from": "section", "to": "fixed"}
    (corpus_dir / "shipping.md").write_text("# Shipping\n\nNow shipping takes a week.\n")
    (corpus_dir / "new.md").write_text("# New\n\nA new page.\n")
    (corpus_dir / "account" / "delete.md").unlink()
    v3 = build_version(store, load_corpus(corpus_dir), PipelineConfig.from_flags({"chunker": "section"}), promote=True)
    d = store.diff("v0001", v3.id)
    assert (d["added"], d["changed"], d["removed"]) == (["new.md"], ["shipping.md"], ["account/delete.md"])
    for _ in range(3):
        build_version(store, load_corpus(corpus_dir), PipelineConfig.from_flags({"chunker": "section"}))
    removed = store.gc(keep=2)
    left = [v.id for v in store.list()]
    assert store.current_id() in left and len(left) >= 2 and set(removed).isdisjoint(left)
    with pytest.raises(StoreError, match="no version 'v9999'"):
        store.get("v9999")


def test_refresh_reembeds_only_changed_documents_and_matches_a_full_build(corpus_dir, tmp_path):
    pytest.importorskip("onnxruntime")
    store = IndexStore(tmp_path / "s")
    config = PipelineConfig.from_flags({"chunker": "markdown", "size": 32, "retriever": "hybrid"})
    v1 = build_version(store, load_corpus(corpus_dir), config)
    (corpus_dir / "shipping.md").write_text("# Shipping\n\nParcels now ship within five days, express in two.\n")
    corpus = load_corpus(corpus_dir)
    v2, stats = refresh_version(store, corpus)
    assert stats["changed"] == ["shipping.md"] and stats["added"] == stats["removed"] == []
    assert stats["documents_chunked"] == 1
    changed_chunks = [c for c in store.chunks(v2.id)[0] if c.doc_id == "shipping.md"]
    assert stats["chunks_new"] == len(changed_chunks) and stats["texts_embedded"] == len(changed_chunks)
    full = build_version(IndexStore(tmp_path / "full"), corpus, config)
    a_chunks, b_chunks = store.chunks(v2.id)[0], IndexStore(tmp_path / "full").chunks(full.id)[0]
    assert [c.to_dict() for c in a_chunks] == [c.to_dict() for c in b_chunks]
    assert np.allclose(store.vectors(v2.id), IndexStore(tmp_path / "full").vectors(full.id), atol=1e-6)
    assert store.current_id() == v2.id and v2.manifest["parent_version"] == v1.id
    hits = load_pipeline(store).retriever.search("how many days does shipping take", k=1).hits
    assert hits[0].chunk.doc_id == "shipping.md" and "five days" in hits[0].chunk.text


def test_embeddings_never_mix(corpus_dir, tmp_path):
    pytest.importorskip("onnxruntime")
    store = IndexStore(tmp_path / "s")
    v = build_version(store, load_corpus(corpus_dir), PipelineConfig.from_flags({"chunker": "section", "retriever": "dense"}))
    manifest = json.loads((v.path / "manifest.json").read_text())
    manifest["embedding"]["key"] = "some-other-model:0000"
    (v.path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(StoreError, match="would not match the index"):
        load_pipeline(store)
    with pytest.raises(StoreError, match="never mix"):
        refresh_version(store, load_corpus(corpus_dir))


def test_migrate_promotes_only_within_the_allowed_drop(corpus_dir, tmp_path):
    pytest.importorskip("onnxruntime")
    store = IndexStore(tmp_path / "s")
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [{"id": i, "q": q, "relevant": r} for i, q, r in QUESTIONS]))
    build_version(store, load_corpus(corpus_dir), PipelineConfig.from_flags({"chunker": "section", "retriever": "dense"}))
    strict = migrate(store, "onnx:" + _onnx_copy(tmp_path), golden, max_drop=-1.0, samples=200)  # must improve by 1.0
    assert strict["promoted"] is False and store.current_id() == strict["blue"]
    assert strict["comparison"]["n"] == 7
    loose = migrate(store, "onnx:" + _onnx_copy(tmp_path), golden, max_drop=1.0, samples=200)
    assert loose["promoted"] is True and store.current_id() == loose["green"]
    assert store.rollback().id == loose["blue"]  # blue kept for rollback


def test_migrate_refuses_before_building_when_there_is_no_embedder_to_change(corpus_dir, tmp_path, capsys, monkeypatch):
    """Issue 25 item 13 and issue 39 item 13, through the CLI: a store whose retriever uses no embedder (the
    registry entry's ``uses_embedder``: bm25, over section or even semantic chunks), or a migrate to the embedder
    the store already uses, is refused with exit 2 in one line before any version is built or any text embedded;
    the store's files (versions, CURRENT, history) are left as they were."""
    golden = write_jsonl(tmp_path / "g.jsonl", [{"id": i, "q": q, "relevant": r} for i, q, r in QUESTIONS])
    cache = tmp_path / "cache"
    monkeypatch.setenv("RAGTUNE_CACHE_DIR", str(cache))

    def migrate_cli(store, embedder):
        capsys.readouterr()
        code = main(["index", "migrate", "--store", store, "--embedder", embedder, "--golden", str(golden)])
        return code, capsys.readouterr().err

    def files(store):
        return {str(p.relative_to(store)): p.read_bytes() for p in sorted(Path(store).rglob("*")) if p.is_file()}

    bm25 = str(tmp_path / "bm25")
    assert main(["index", "build", "--store", bm25, "--corpus", str(corpus_dir), "--retriever", "bm25"]) == 0
    before = files(bm25)
    code, err = migrate_cli(bm25, "e5-small")
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: ")
    assert "v0001's retriever bm25 uses no embedder: nothing to migrate to e5-small" in err
    assert files(bm25) == before  # nothing written: no version, CURRENT and history untouched
    assert [v.id for v in IndexStore(bm25).list()] == ["v0001"] and IndexStore(bm25).current_id() == "v0001"
    assert not (cache / "embeddings.sqlite").exists()  # nothing was embedded

    # the chunker embedding does not make the retriever use one: still refused, saying how to recut
    semantic = str(tmp_path / "semantic")
    assert main(["index", "build", "--store", semantic, "--corpus", str(corpus_dir), "--retriever", "bm25",
                 "--chunker", "semantic"]) == 0
    before = files(semantic)
    code, err = migrate_cli(semantic, "e5-small")
    assert code == 2 and err.count("\n") == 1 and "retriever bm25 uses no embedder" in err
    assert "its semantic chunker's cuts do depend on the model" in err and files(semantic) == before

    pytest.importorskip("onnxruntime")
    hybrid = str(tmp_path / "hybrid")
    assert main(["index", "build", "--store", hybrid, "--corpus", str(corpus_dir), "--retriever", "hybrid"]) == 0
    code, err = migrate_cli(hybrid, "minilm")
    assert code == 2 and "already uses the embedder minilm: nothing to migrate" in err
    assert [v.id for v in IndexStore(hybrid).list()] == ["v0001"]


def _onnx_copy(tmp_path):
    """A second ONNX embedder folder (same weights under another name: a different model id)."""
    import shutil

    from ragtune.chunking.tokens import bundled_minilm_tokenizer_path
    from ragtune.embed.onnx import bundled_minilm_model_path

    folder = tmp_path / "minilm-copy"
    if not folder.exists():
        folder.mkdir()
        shutil.copy(bundled_minilm_model_path(), folder / "model.onnx")
        shutil.copy(bundled_minilm_tokenizer_path(), folder / "tokenizer.json")
    return str(folder)


def test_sigkill_during_builds_never_corrupts_the_store(corpus_dir, tmp_path):
    store_dir = tmp_path / "s"
    store = IndexStore(store_dir)
    build_version(store, load_corpus(corpus_dir), PipelineConfig.from_flags({"chunker": "section"}))
    script = (
        "import sys\nfrom ragtune import load_corpus\n"
        "from ragtune.store import IndexStore, build_version\nfrom ragtune.pipeline import PipelineConfig\n"
        f"s = IndexStore({str(store_dir)!r}); c = load_corpus({str(corpus_dir)!r})\n"
        "while True:\n    build_version(s, c, PipelineConfig.from_flags({'chunker': 'fixed', 'size': 8}), promote=True)\n"
    )
    rng = random.Random(1)
    for _ in range(6):
        proc = subprocess.Popen([sys.executable, "-c", script])
        time.sleep(rng.uniform(0.6, 1.6))  # kill at a random point of some build
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        versions = store.list()
        cur = store.current_id()
        assert cur in {v.id for v in versions}
        for v in versions:  # every listed version is complete and loadable
            chunks, _ = store.chunks(v.id)
            assert len(chunks) == v.manifest["chunks"] > 0
        assert load_pipeline(store).retriever.search("refunds", k=1).hits
    build_version(store, load_corpus(corpus_dir), PipelineConfig.from_flags({"chunker": "section"}))
    assert [p.name for p in (store_dir / "building").iterdir() if p.name != ".lock"] == []  # debris cleaned


def test_cli_index_and_store_flags(corpus_dir, tmp_path, capsys):
    s = str(tmp_path / "s")
    assert main(["index", "build", "--store", s, "--corpus", str(corpus_dir), "--chunker", "markdown", "--size", "24"]) == 0
    (corpus_dir / "shipping.md").write_text("# Shipping\n\nParcels ship in a week.\n")
    assert main(["index", "refresh", "--store", s, "--corpus", str(corpus_dir)]) == 0
    out = capsys.readouterr().out
    assert "1 changed" in out and "current: v0002" in out
    assert main(["index", "list", "--store", s]) == 0
    assert "* v0002" in capsys.readouterr().out
    assert main(["search", "--store", s, "parcels week", "-k", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hits"][0]["doc_id"] == "shipping.md"
    assert main(["index", "rollback", "--store", s]) == 0
    assert main(["search", "--store", s, "--chunker", "fixed", "x"]) == 2
    assert "come from the stored version" in capsys.readouterr().err
    assert main(["index", "promote", "--store", s, "v0042"]) == 2
    assert "no version 'v0042'" in capsys.readouterr().err


def test_cli_answers_from_a_store_are_logged_unless_switched_off(corpus_dir, tmp_path, capsys):
    from ragtune.serve.telemetry import TelemetryLog

    s = tmp_path / "s"
    assert main(["index", "build", "--store", str(s), "--corpus", str(corpus_dir)]) == 0
    assert main(["answer", "--store", str(s), "Do you sell gift cards?"]) == 0
    assert main(["answer", "--store", str(s), "Do you sell gift cards?", "--no-log"]) == 0
    rows = list(TelemetryLog(s / "telemetry.sqlite").rows())
    assert len(rows) == 1 and rows[0]["outcome"] == "not_found" and rows[0]["version"] == "v0001"


def test_versions_store_bm25_and_loading_rebuilds_nothing(corpus_dir, tmp_path, monkeypatch):
    import ragtune.store.build as build_mod

    store = IndexStore(tmp_path / "s")
    v = build_version(store, load_corpus(corpus_dir), PipelineConfig.from_flags({"chunker": "section", "retriever": "bm25", "k1": 1.2}))
    assert (v.path / "bm25" / "ragtune-bm25.json").exists()
    expected = [h.chunk.id for h in load_pipeline(store).retriever.search("refunds", k=3).hits]

    def no_build(*a, **k):
        raise AssertionError("BM25 was rebuilt instead of loaded")

    monkeypatch.setattr(build_mod.BM25Retriever, "build", no_build)
    p = load_pipeline(store)
    assert [h.chunk.id for h in p.retriever.search("refunds", k=3).hits] == expected
    assert p.base.config.k1 == 1.2


def test_promote_is_atomic_for_concurrent_readers(corpus_dir, tmp_path):
    """Readers polling CURRENT while versions are promoted back and forth only ever see a complete version id."""
    import threading

    store = IndexStore(tmp_path / "s")
    corpus = load_corpus(corpus_dir)
    ids = {build_version(store, corpus, PipelineConfig.from_flags({"chunker": "section"})).id for _ in range(3)}
    seen, bad = set(), []
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            vid = store.current_id()
            if vid in ids:
                seen.add(vid)
            else:
                bad.append(vid)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for i in range(200):
        store.promote(sorted(ids)[i % 3])
    stop.set()
    for t in threads:
        t.join()
    assert bad == [] and seen == ids


def test_reranked_store_pipelines_keep_their_version(corpus_dir, tmp_path):
    store = IndexStore(tmp_path / "s")
    build_version(store, load_corpus(corpus_dir), PipelineConfig.from_flags({"chunker": "section"}))
    p = load_pipeline(store)
    assert p.version == "v0001" and p.with_reranker(None, 10).version == "v0001"
    with pytest.raises(StoreError, match="no index store at"):
        IndexStore(tmp_path / "typo").gc(keep=1)
    assert not (tmp_path / "typo").exists()
