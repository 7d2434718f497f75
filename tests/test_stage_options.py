"""Every registered embedder, generator, judge and reranker validates its options through a typed config, once:
a misspelt option is a ConfigError naming the valid ones, never a keyword swallowed on the way."""

from __future__ import annotations

import pytest

from ragtune.answer import make_generator, make_judge
from ragtune.embed import get_embedder
from ragtune.errors import ConfigError
from ragtune.registry import EMBEDDERS, GENERATORS, JUDGES, RERANKERS


@pytest.mark.parametrize("registry", [EMBEDDERS, GENERATORS, JUDGES, RERANKERS], ids=lambda r: r.stage)
def test_every_builtin_entry_has_a_typed_config(registry):
    for entry in registry:
        if entry.factory.__module__.startswith("ragtune."):
            assert entry.config is not None, f"{registry.stage} {entry.name} has no config class"


@pytest.mark.parametrize("registry,spec,typo,valid", [
    (EMBEDDERS, "minilm", "thread", "threads, batch_size"),
    (EMBEDDERS, "e5-small", "treads", "threads"),
    (EMBEDDERS, "st:BAAI/bge-small-en-v1.5", "query_prefx", "query_prefix, passage_prefix, device, batch_size"),
    (EMBEDDERS, "onnx:/nowhere", "passage_prefx", "query_prefix, passage_prefix, threads, batch_size"),
    (EMBEDDERS, "openai:text-embedding-3-small", "base_ur", "base_url, api_key_env"),
    (GENERATORS, "extractive", "max_sentence", "max_sentences, min_overlap"),
    (GENERATORS, "openai:gpt-4o-mini", "max_token", "base_url, api_key_env, max_tokens"),
    (GENERATORS, "anthropic", "timout", "base_url, api_key_env, max_tokens, timeout"),
    (JUDGES, "heuristic", "strict", "none"),
    (JUDGES, "openai:gpt-4o-mini", "price_inn", "base_url, attempts, price_in, price_out"),
    (JUDGES, "anthropic:claude-haiku-4-5", "atempts", "base_url, attempts"),
    (RERANKERS, "cross-encoder", "batchsize", "mode, fuse_k, model, backend"),
    (RERANKERS, "embedding", "modle", "mode, fuse_k, model"),
    (RERANKERS, "llm", "max_candidate", "mode, fuse_k, model, base_url, max_candidates"),
])
def test_a_misspelt_option_is_a_config_error_naming_the_valid_ones(registry, spec, typo, valid):
    """Checked by Registry.build before the factory runs: nothing is loaded, no model, no network."""
    with pytest.raises(ConfigError, match=rf"unknown option\(s\) '{typo}'; valid options: {valid}"):
        registry.build(spec, options={typo: 1})


def test_the_library_helpers_validate_too():
    with pytest.raises(ConfigError, match=r"'query_prefx'.*valid options: query_prefix, passage_prefix"):
        get_embedder("st:BAAI/bge-small-en-v1.5", {"query_prefx": "query: "})
    with pytest.raises(ConfigError, match=r"'max_sentence'; valid options: max_sentences"):
        make_generator("extractive", {"max_sentence": 3})
    with pytest.raises(ConfigError, match=r"'price_inn'; valid options: .*price_in.*\(did you mean 'price_in'\?\)"):
        make_judge("openai:gpt-4o-mini", {"price_inn": 1.0})
    with pytest.raises(ConfigError, match=r"ExtractiveConfig: max_sentences=0 must be >= 1"):
        make_generator("extractive", {"max_sentences": 0})


def test_valid_options_reach_the_component():
    assert make_generator("extractive", {"max_sentences": 4}).max_sentences == 4
    judge = make_judge("openai:gpt-4o-mini", {"price_in": 0.15, "attempts": 1})
    assert (judge.price_in, judge.attempts) == (0.15, 1)
    assert get_embedder("minilm", {"batch_size": 3}).batch_size == 3
    reranker = RERANKERS.build("cross-encoder", options={"batch_size": 4, "mode": "replace"})
    assert (reranker.batch_size, reranker.mode) == (4, "replace")


def test_an_entry_without_a_config_class_refuses_options_instead_of_dropping_them():
    from ragtune.answer import ExtractiveGenerator

    GENERATORS.register("bare-test", None, lambda _arg: ExtractiveGenerator(), replace=True)
    try:
        GENERATORS.build("bare-test")
        with pytest.raises(ConfigError, match="generator 'bare-test' takes no options, got 'temperature'"):
            GENERATORS.build("bare-test", options={"temperature": 0})
    finally:
        GENERATORS.unregister("bare-test")


def test_prefixes_are_typed_embedder_options_of_the_pipeline(tmp_path):
    from ragtune.pipeline import PipelineConfig

    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"")  # a folder holding model.onnx names an onnx: embedder
    typed = PipelineConfig(retriever="dense", embedder=str(folder),
                           embedder_options={"query_prefix": "query: ", "passage_prefix": "passage: "})
    assert typed.embedder == f"onnx:{folder}"  # the name holds no options
    assert dict(typed.embedder_options) == {"query_prefix": "query: ", "passage_prefix": "passage: "}
    assert typed.to_dict()["query_prefix"] == "query: " and typed.to_dict()["embedder"] == f"onnx:{folder}"
    # the embedder is still known to caches and stores by one name that holds its prefixes
    assert typed.embedder_id == f"onnx:{folder}|query_prefix=query: |passage_prefix=passage: "
    # the older spelling, inside the name (old manifests, grids, --embedder), is read into the typed options
    old = PipelineConfig.from_flags({"retriever": "dense", "embedder": typed.embedder_id})
    assert old == typed and old.key == typed.key
    assert PipelineConfig.from_flags({"retriever": "dense", "embedder": str(folder), "query_prefix": "query: ",
                                      "passage_prefix": "passage: "}) == typed
    assert PipelineConfig.from_dict(typed.to_dict()) == typed
    # a prefix equal to the default (none) is the same configuration
    assert PipelineConfig(retriever="dense", embedder=str(folder), embedder_options={"query_prefix": ""}) == \
        PipelineConfig(retriever="dense", embedder=str(folder))
    with pytest.raises(ConfigError, match="embedder 'minilm' takes no query/passage prefixes"):
        PipelineConfig.from_flags({"retriever": "dense", "query_prefix": "query: "})
    with pytest.raises(ConfigError, match=r"unknown option 'query_prefx' \(did you mean 'query_prefix'\?\)"):
        PipelineConfig.from_flags({"retriever": "dense", "embedder": str(folder), "query_prefx": "query: "})
    with pytest.raises(ConfigError, match=r"embedder option\(s\) 'threads' are not part of a pipeline"):
        PipelineConfig(retriever="dense", embedder=str(folder), embedder_options={"threads": 2})
    # a sweep grid varies them as keys of their own
    from ragtune.sweep import parse_grid

    grid = parse_grid({"metric": "recall@5", "baseline": {"retriever": "bm25"},
                       "grid": {"retriever": ["dense"], "embedder": [str(folder)], "query_prefix": ["query: ", ""]}})
    assert {s.embedder_options for s in grid.specs} >= {(("query_prefix", "query: "),), ()}
    with pytest.raises(ConfigError, match="query_prefix 'a|b' cannot contain '|'"):
        PipelineConfig(retriever="dense", embedder=str(folder), embedder_options={"query_prefix": "a|b"})
