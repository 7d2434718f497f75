"""A pipeline round-trips through TOML exactly, and the file a sweep writes (recommended.toml) is taken unchanged by
``eval --config``, ``index build --config`` and ``serve --config``."""

from __future__ import annotations

import json

import pytest

from ragtune.cli import main
from ragtune.corpus import load_corpus
from ragtune.errors import ConfigError
from ragtune.golden import load_golden
from ragtune.pipeline import PipelineConfig
from ragtune.store import IndexStore
from ragtune.sweep import parse_grid, run_grid
from tests.embed.test_model_names import onnx_folder
from tests.helpers import DOCS, QUESTIONS, golden_rows, write_files, write_jsonl


def _rich(folder) -> dict:
    """Flags with a non-default chunker, retriever, embedder (with prefixes) and reranker."""
    return {"chunker": "markdown", "size": 60, "overlap": 10, "prefix": False, "retriever": "hybrid", "rrf_k": 30,
            "weights": [0.4, 0.6], "embedder": str(folder), "query_prefix": "query: ", "passage_prefix": "passage: ",
            "rerank": "embedding", "rerank_model": str(folder), "rerank_mode": "replace", "candidates": 7}


def test_a_pipeline_round_trips_through_toml_exactly(tmp_path):
    config = PipelineConfig.from_flags({**_rich(onnx_folder(tmp_path)), "filter": 'title = "a \\"quoted\\" one"'})
    text = config.to_toml()
    back = PipelineConfig.from_toml(text)
    assert back == config and back.key == config.key and back.to_dict() == config.to_dict()
    assert 'query_prefix = "query: "' in text and "weights = [0.4, 0.6]" in text and "candidates = 7" in text
    # None where the default is not None is written "none", as on the command line
    bm25 = PipelineConfig.from_flags({"retriever": "bm25", "stemmer": None, "k1": 1.25})
    assert 'stemmer = "none"' in bm25.to_toml() and PipelineConfig.from_toml(bm25.to_toml()) == bm25
    path = tmp_path / "p.toml"
    path.write_text(text, encoding="utf-8")
    assert PipelineConfig.from_file(path) == config
    with pytest.raises(ConfigError, match=r"unknown option 'rerank_modle'.*did you mean 'rerank_mode'"):
        PipelineConfig.from_toml(text.replace("rerank_mode", "rerank_modle"))


def test_the_file_a_sweep_writes_is_taken_unchanged_by_eval_index_build_and_serve(tmp_path, capsys):
    pytest.importorskip("fastapi")  # the serve extra
    from ragtune.serve.app import serving_loader
    from ragtune.serve.run import serving_config

    folder = onnx_folder(tmp_path)
    docs = write_files(tmp_path / "docs", DOCS)
    golden = write_jsonl(tmp_path / "g.jsonl", golden_rows(QUESTIONS))
    rich = {k: v for k, v in _rich(folder).items() if k not in ("query_prefix", "passage_prefix")}
    rich["embedder"] = f"onnx:{folder}|query_prefix=query: |passage_prefix=passage: "  # how a grid varies them
    grid = parse_grid({"metric": "recall@5", "k": [5], "samples": 200, "baseline": rich,
                       "grid": {k: [v] for k, v in rich.items()}})
    result = run_grid(load_corpus(docs), load_golden(golden), grid, tmp_path / "sweep", show_progress=False)
    best = tmp_path / "sweep" / "recommended.toml"
    expected = PipelineConfig.from_dict(result.recommended()["spec"])
    assert PipelineConfig.from_file(best) == expected
    assert dict(expected.embedder_options) == {"query_prefix": "query: ", "passage_prefix": "passage: "}
    assert expected.rerank == "embedding" and expected.candidates == 7
    capsys.readouterr()

    # eval: the same configuration, reranker included
    assert main(["eval", "--corpus", str(docs), "--golden", str(golden), "--config", str(best), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert PipelineConfig.from_dict(data["config"]["pipeline"]) == expected.resolved("markdown")

    # index build: the index part; the reranker is left for query time
    store = tmp_path / "store"
    assert main(["index", "build", "--store", str(store), "--corpus", str(docs), "--config", str(best)]) == 0
    capsys.readouterr()
    version = IndexStore(store).get()
    built = PipelineConfig.from_dict(version.manifest["config"])
    assert built.index_key == expected.resolved("markdown").index_key and built.rerank is None

    # eval over the store: the file restates the version, so it is no contradiction; its reranker is added
    assert main(["eval", "--store", str(store), "--golden", str(golden), "--config", str(best), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"]["pipeline"]["rerank"] == "embedding"
    assert main(["eval", "--store", str(store), "--golden", str(golden), "--config", str(best), "--size", "80"]) == 2
    assert "come from the stored version; drop --" in capsys.readouterr().err

    # serve: the file is checked against the version and its reranker reranks every search
    served = serving_config(str(store), str(best))
    assert served == expected
    pipeline = serving_loader(IndexStore(store), served)(version.id)
    assert pipeline.reranker is not None and pipeline.candidates == 7

    # a file that describes another index is refused before serving
    other = tmp_path / "other.toml"
    other.write_text(best.read_text(encoding="utf-8").replace("size = 60", "size = 80"), encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"version {version.id} was built as .*build a version from the file"):
        serving_config(str(store), str(other))
