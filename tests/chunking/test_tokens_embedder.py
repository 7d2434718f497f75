"""Chunk sizes count the embedder's tokens when the chunks are embedded; the window check says what is cut."""

import pytest

import ragtune.pipeline.build as pipeline_mod
from ragtune.corpus import load_corpus
from ragtune.embed import get_embedder
from ragtune.embed.window import embedder_tokenizer, window_overflow
from ragtune.pipeline import Pipeline, PipelineConfig
from tests.helpers import write_files

pytest.importorskip("tokenizers")

LONG = "Internationalization of electroencephalography datasets necessitates standardization. " * 80


def test_dense_and_hybrid_count_in_the_embedders_tokens():
    for retriever in ("dense", "hybrid"):
        cfg = PipelineConfig.from_flags({"chunker": "fixed", "size": 64, "retriever": retriever})
        assert cfg.chunker_config().tokenizer == "minilm"
    bm25 = PipelineConfig.from_flags({"chunker": "fixed", "size": 64, "retriever": "bm25"})
    assert bm25.chunker_config().tokenizer == "regex"  # BM25 keeps the dependency-free default


def test_an_explicit_tokenizer_wins_even_regex():
    explicit = PipelineConfig.from_flags({"chunker": "fixed", "retriever": "hybrid", "tokenizer": "regex"})
    assert explicit.chunker_config().tokenizer == "regex"
    assert explicit.to_dict()["tokenizer"] == "regex"  # kept through to_dict/from_dict (manifests, grids)
    assert PipelineConfig.from_dict(explicit.to_dict()).chunker_config().tokenizer == "regex"
    implicit = PipelineConfig.from_flags({"chunker": "fixed", "retriever": "hybrid"})
    assert implicit.key != explicit.key
    assert "tokenizer" not in implicit.to_dict()  # the default is resolved, not stored: keys stay as they were


def test_embedders_without_an_offline_tokenizer_keep_regex(tmp_path):
    assert embedder_tokenizer("minilm") == "minilm"
    assert embedder_tokenizer("e5-small") is None
    assert embedder_tokenizer("openai:text-embedding-3-small") is None
    folder = tmp_path / "onnx-model"
    folder.mkdir()
    assert embedder_tokenizer(f"onnx:{folder}") is None
    (folder / "tokenizer.json").write_text("{}")
    assert embedder_tokenizer(f"onnx:{folder}") == str(folder / "tokenizer.json")
    cfg = PipelineConfig.from_flags({"chunker": "fixed", "retriever": "hybrid", "embedder": "e5-small"})
    assert cfg.chunker_config().tokenizer == "regex"


def test_minilm_sized_chunks_fit_the_window_where_regex_sized_ones_do_not(tmp_path):
    corpus = load_corpus(write_files(tmp_path / "c", {"a.txt": LONG}))
    emb = get_embedder("minilm")
    from ragtune.chunking import chunk_documents
    from ragtune.registry import CHUNKERS

    def overflow(tokenizer):
        flags = {"chunker": "fixed", "size": 200, "retriever": "dense", "prefix": False}
        if tokenizer:
            flags["tokenizer"] = tokenizer
        cfg = PipelineConfig.from_flags(flags).resolved(corpus.kind)
        chunks, _ = chunk_documents(corpus, CHUNKERS.build(cfg.chunker, options=cfg.chunker_config()))
        return window_overflow(emb, [c.embed_text for c in chunks])

    regex, default = overflow("regex"), overflow(None)
    assert regex.over >= 1 and regex.share > 0.5  # 200 regex tokens of long terms are about 490 word pieces
    assert default.over == 0  # 200 MiniLM tokens + [CLS] + [SEP] fit in 256


def test_window_warning_once_per_configuration_with_the_share(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(pipeline_mod, "_WARNED_WINDOW", set())
    root = write_files(tmp_path / "c", {"a.txt": LONG, "b.txt": "short text about cats"})
    flags = dict(chunker="fixed", size=500, overlap=0, retriever="dense", tokenizer="regex")
    Pipeline.build(load_corpus(root), **flags)
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if x.startswith("warning:"))
    assert "fixed-500-o0" in line and "256-token window" in line
    # LONG is 560 regex tokens: a chunk of 500 (cut), one of 60 (about 150 MiniLM tokens: fits), the short text
    assert "1 of 3 chunks (33%)" in line, line
    Pipeline.build(load_corpus(root), **flags)
    assert "warning:" not in capsys.readouterr().err  # once per configuration


def test_no_warning_when_everything_fits_or_nothing_is_embedded(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(pipeline_mod, "_WARNED_WINDOW", set())
    root = write_files(tmp_path / "c", {"a.txt": LONG})
    Pipeline.build(load_corpus(root), chunker="fixed", size=128, retriever="dense")  # minilm-counted
    Pipeline.build(load_corpus(root), chunker="fixed", size=400, retriever="bm25")
    assert "warning:" not in capsys.readouterr().err


def test_a_large_chunk_set_is_counted_from_an_even_sample():
    emb = get_embedder("minilm")
    long, short = LONG, "short text about cats"
    texts = [long if i % 4 == 0 else short for i in range(10_000)]  # a quarter are cut
    found = window_overflow(emb, texts, sample=400)
    assert found.total == 10_000 and found.counted == 400 and found.sampled
    assert abs(found.share - 0.25) < 0.02, found
    every = window_overflow(emb, texts[:800], sample=None)
    assert every.counted == every.total == 800 and not every.sampled and every.over == 200
    assert found.tokens_lost / found.over == pytest.approx(every.tokens_lost / every.over, rel=0.01)
