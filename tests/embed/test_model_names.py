"""Model names users know: Hugging Face ids, local folders, query/passage prefixes from the CLI, typos."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragtune import ConfigError
from ragtune.cli import main
from ragtune.embed import get_embedder, split_prefixes, with_prefixes
from ragtune.registry import EMBEDDERS
from tests.helpers import DOCS, QUESTIONS, golden_rows, write_files, write_jsonl

ROOT = Path(__file__).resolve().parents[2]


def onnx_folder(tmp_path):
    """A folder holding the bundled MiniLM as model.onnx + tokenizer.json (links, no copy)."""
    from ragtune.chunking.tokens import bundled_minilm_tokenizer_path
    from ragtune.embed.onnx import bundled_minilm_model_path

    folder = tmp_path / "my-minilm"
    folder.mkdir()
    (folder / "model.onnx").symlink_to(bundled_minilm_model_path())
    (folder / "tokenizer.json").symlink_to(bundled_minilm_tokenizer_path())
    return folder


def test_names_resolve_to_what_users_mean(tmp_path):
    assert EMBEDDERS.canonical("sentence-transformers/all-MiniLM-L6-v2") == "minilm"  # the bundled int8 copy
    assert EMBEDDERS.canonical("intfloat/multilingual-e5-small") == "e5-small"
    assert EMBEDDERS.canonical("BAAI/bge-small-en-v1.5") == "st:BAAI/bge-small-en-v1.5"
    assert EMBEDDERS.canonical("st:BAAI/bge-small-en-v1.5") == "st:BAAI/bge-small-en-v1.5"
    folder = onnx_folder(tmp_path)
    assert EMBEDDERS.canonical(str(folder)) == f"onnx:{folder}"  # a local folder with model.onnx
    (tmp_path / "st-model").mkdir()
    assert EMBEDDERS.canonical(str(tmp_path / "st-model")) == f"st:{tmp_path / 'st-model'}"
    emb = get_embedder("sentence-transformers/all-MiniLM-L6-v2")
    assert emb.model_id == get_embedder("minilm").model_id
    with pytest.raises(ConfigError, match="unknown embedder 'minlm'.*did you mean 'minilm'"):
        EMBEDDERS.get("minlm")


def test_prefixes_are_part_of_the_name_and_reach_the_model(tmp_path):
    folder = onnx_folder(tmp_path)
    spec = with_prefixes(str(folder), "query: ", "passage: ")
    assert spec == f"onnx:{folder}|query_prefix=query: |passage_prefix=passage: "
    assert split_prefixes(spec.partition(":")[2]) == (str(folder), {"query_prefix": "query: ",
                                                                      "passage_prefix": "passage: "})
    plain, prefixed = get_embedder(f"onnx:{folder}"), get_embedder(spec)
    assert np.allclose(prefixed.embed_queries(["refund policy"]), plain.embed(["query: refund policy"]), atol=1e-6)
    assert np.allclose(prefixed.embed(["refunds take 14 days"]), plain.embed(["passage: refunds take 14 days"]),
                       atol=1e-6)
    assert not np.allclose(prefixed.embed(["refunds take 14 days"]), plain.embed(["refunds take 14 days"]), atol=1e-3)
    assert prefixed.cache_key != plain.cache_key  # cached vectors never mix prefixes
    # one prefix changed, the other kept
    assert with_prefixes(spec, query_prefix="q: ") == f"onnx:{folder}|query_prefix=q: |passage_prefix=passage: "
    with pytest.raises(ConfigError, match="takes no query/passage prefixes"):
        with_prefixes("minilm", "query: ")
    with pytest.raises(ConfigError, match="cannot contain '|'"):
        with_prefixes(str(folder), "a|b")
    with pytest.raises(ConfigError, match="expected query_prefix=TEXT or passage_prefix=TEXT"):
        get_embedder(f"onnx:{folder}|query=x")


def test_hub_ids_and_prefixes_reach_the_tokenizer_and_the_reranker(tmp_path):
    from ragtune.embed.window import embedder_tokenizer
    from ragtune.registry import RERANKERS

    folder = onnx_folder(tmp_path)
    assert embedder_tokenizer(with_prefixes(str(folder), "query: ")) == str(folder / "tokenizer.json")
    assert embedder_tokenizer(str(folder)) == str(folder / "tokenizer.json")
    assert RERANKERS.config("embedding", {"model": "BAAI/bge-small-en-v1.5"}).model == "BAAI/bge-small-en-v1.5"
    with pytest.raises(ConfigError, match="did you mean 'e5-small'"):
        RERANKERS.config("embedding", {"model": "e5-smal"})


def test_cli_prefix_flags(tmp_path, capsys):
    folder = onnx_folder(tmp_path)
    docs = write_files(tmp_path / "docs", DOCS)
    golden = write_jsonl(tmp_path / "g.jsonl", golden_rows(QUESTIONS))
    common = ["eval", "--corpus", str(docs), "--golden", str(golden), "--retriever", "dense", "--json"]
    assert main(common + ["--embedder", str(folder), "--query-prefix", "query: ", "--passage-prefix", "passage: "]) == 0
    data = json.loads(capsys.readouterr().out)
    # typed options of the pipeline, not part of the embedder's name (the embedder itself is named with them)
    assert data["config"]["pipeline"]["embedder"] == f"onnx:{folder}"
    assert (data["config"]["pipeline"]["query_prefix"], data["config"]["pipeline"]["passage_prefix"]) == (
        "query: ", "passage: ")
    assert data["config"]["retriever"]["embedder"] == "onnx:my-minilm|query_prefix=query: |passage_prefix=passage: "
    assert main(common + ["--query-prefix", "query: "]) == 2  # the default minilm takes none
    assert "takes no query/passage prefixes" in capsys.readouterr().err


def test_a_hub_id_not_here_fails_fast_with_the_fix(monkeypatch, tmp_path):
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    emb = get_embedder("ragtune-tests/no-such-model-7c2e")  # a bare id: sentence-transformers, nothing loaded yet
    assert emb.model_id == "st:ragtune-tests/no-such-model-7c2e"
    with pytest.raises(ConfigError) as e:  # from the check before the model library loads: no network tried
        emb.embed(["hello"])
    assert "HF_HUB_OFFLINE=1 is set" in str(e.value)
    assert "hf download ragtune-tests/no-such-model-7c2e" in str(e.value) and "HF_HUB_OFFLINE=1" in str(e.value)


def test_a_hub_id_in_the_local_cache_loads_offline_through_the_cli(tmp_path):
    pytest.importorskip("sentence_transformers")
    from tests.embed.test_sentence_transformers import tiny_bert

    snap = tmp_path / "hf" / "hub" / "models--ragtune-tests--tiny-bert" / "snapshots" / "0123abcd"
    tiny_bert(snap, classifier=False)
    refs = snap.parent.parent / "refs"
    refs.mkdir()
    (refs / "main").write_text("0123abcd")
    docs = write_files(tmp_path / "docs", DOCS)
    golden = write_jsonl(tmp_path / "g.jsonl", golden_rows(QUESTIONS))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hf" / "hub"),
           "RAGTUNE_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-m", "ragtune", "eval", "--corpus", str(docs), "--golden", str(golden),
                          "--retriever", "dense", "--embedder", "ragtune-tests/tiny-bert", "--query-prefix", "query: ",
                          "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout)
    assert data["config"]["pipeline"]["embedder"] == "st:ragtune-tests/tiny-bert"
    assert data["config"]["pipeline"]["query_prefix"] == "query: "
    assert data["config"]["retriever"]["embedder"] == "st:ragtune-tests/tiny-bert|query_prefix=query: "
    assert data["counts"]["answerable"] == 7 and 0 <= data["metrics"]["recall@5"] <= 1
