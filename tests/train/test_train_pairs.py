"""Training pairs: golden pairs, pseudo pairs from a markdown corpus, hard-negative mining (no torch needed)."""

from __future__ import annotations

import json

import pytest

import ragtune as rt
from ragtune.errors import ConfigError, UnknownAnchorError
from ragtune.judgments.draft import draft_units
from ragtune.pipeline import PipelineConfig, build_pipeline
from ragtune.train import golden_pairs, mine_groups, pseudo_pairs
from ragtune.train.trainer import _split
from tests.helpers import golden_rows, write_files, write_jsonl

DOCS = {
    "install.md": """# Installation {#install}

## Requirements

Python 3.10 or newer is needed. The package installs from PyPI with pip and pulls no compiled extensions.

## Virtual environments

/// tip
Create a virtual environment for each project. Activate it before installing so the package lands in the project only.
///

{* ../examples/venv.py *}

## Tiny

Too short.
""",
    "deploy.md": """# Deployment

## Docker images

Build the image from the provided Dockerfile. The image runs the server as an unprivileged user on port 8000.

## Health checks

The server answers health probes on a dedicated path. Load balancers should poll it every ten seconds.
""",
}


@pytest.fixture
def corpus(tmp_path):
    return rt.load_corpus(write_files(tmp_path / "docs", DOCS))


def test_pseudo_pairs_ask_for_sections_by_heading_and_first_sentence(corpus):
    pairs = {p.qid: p for p in pseudo_pairs(corpus)}
    heading = pairs["install.md#requirements::heading"]
    assert heading.query == "Installation > Requirements"  # the explicit {#install} id is not part of the query
    assert heading.anchors == ("install.md#requirements",) and heading.positive is None and not heading.cut
    sentence = pairs["deploy.md#health-checks::sentence"]
    assert sentence.query == sentence.cut == "The server answers health probes on a dedicated path."
    assert not any(q.startswith("install.md#tiny") for q in pairs)  # too little text to ask for
    venv = pairs["install.md#virtual-environments::sentence"]  # admonition fences and include lines dropped
    assert venv.query == "Create a virtual environment for each project."


def test_pseudo_groups_look_like_inference_and_cut_the_query_sentence(corpus):
    pipeline = build_pipeline(corpus, PipelineConfig(retriever="bm25"))
    pairs = pseudo_pairs(corpus)
    groups = mine_groups(pipeline, pairs, negatives=2, random_negatives=1, show_progress=False)
    assert len(groups) == len(pairs)
    texts = {c.embed_text for c in pipeline.chunks}
    for g, p in zip(groups, pairs):
        positive = g.passages[0]
        if p.cut:  # the rest of the section, as the reranker sees it: prefix kept, the query sentence taken out
            assert p.cut not in positive and positive.startswith(("Installation >", "Deployment >")), positive
        else:  # a heading path asks for the section's chunk exactly as it is indexed
            assert positive in texts
        for neg in g.passages[1:]:
            assert neg in texts and neg != positive  # negatives are indexed chunks too, never the section itself
        assert len(g.passages) == len(set(g.passages)) >= 2
    health = next(g for g, p in zip(groups, pairs) if p.qid == "deploy.md#health-checks::sentence")
    assert health.passages[0] == "Deployment > Health checks ## Health checks Load balancers should poll it every ten seconds."


def test_golden_pairs_and_groups(corpus, tmp_path):
    golden = rt.load_golden(write_jsonl(tmp_path / "g.jsonl", golden_rows([
        ("a", "which python version do I need", ["install.md#requirements"]),
        ("b", "how often should load balancers poll", ["deploy.md#health-checks", "deploy.md#docker-images"]),
        ("c", "is there a GUI", []),  # unanswerable: nothing to train on
    ])))
    pairs = golden_pairs(golden, corpus)
    assert [(p.qid, p.anchors[0]) for p in pairs] == [("a", "install.md#requirements"), ("b", "deploy.md#health-checks"),
                                                      ("b", "deploy.md#docker-images")]
    pipeline = build_pipeline(corpus, PipelineConfig(retriever="bm25"))
    groups = mine_groups(pipeline, pairs, negatives=3, random_negatives=2, show_progress=False)
    g = groups[1]
    assert g.passages[0].startswith("Deployment > Health checks")  # the chunk's embed_text, heading prefixed
    assert not any("Docker images" in n or "Health checks" in n for n in g.passages[1:])  # both anchors excluded
    bad = rt.load_golden(write_jsonl(tmp_path / "bad.jsonl", golden_rows([("x", "q", ["install.md#requirments"])])),
                         strict=False)
    with pytest.raises(UnknownAnchorError, match="install.md#requirements"):
        golden_pairs(bad, corpus)


def test_pseudo_needs_headings(tmp_path):
    flat = rt.load_corpus(write_files(tmp_path / "flat", {"a.txt": "plain text " * 40}))
    with pytest.raises(ConfigError, match="needs a corpus with headings"):
        pseudo_pairs(flat)


def test_validation_holds_out_whole_queries():
    from ragtune.train import Group

    groups = [Group(f"q{i // 2}", "q", ("p", "n")) for i in range(40)]  # 20 queries, 2 groups each
    train, val = _split(groups, 0.25, seed=3)
    assert len({g.qid for g in val}) == 5 and len(val) == 10
    assert not {g.qid for g in train} & {g.qid for g in val}
    assert _split(groups, 0.25, seed=3) == (train, val) != _split(groups, 0.25, seed=4)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_llm_written_questions_join_the_pseudo_pairs(corpus, kind, monkeypatch):
    from ragtune.train import TrainOptions, mine
    from tests.answer.fake_llm import FakeLLM

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    sections = draft_units(corpus, per_section=1, kinds=("paraphrase",), min_words=12)
    asked = [f"Which part of the guide covers topic {i}?" for i in range(len(sections))]
    server = FakeLLM([json.dumps({"questions": [{"kind": "paraphrase", "q": q}]}) for q in asked])
    try:
        options = TrainOptions(pairs="pseudo", retriever="bm25", generator=f"{kind}:m1", llm_questions=1,
                               generator_base_url=server.url + ("/v1" if kind == "openai" else ""))
        groups = mine(corpus, None, options, show_progress=False)
    finally:
        server.close()
    assert len(server.requests) == len(sections) > 0  # one call per section with enough words
    assert server.requests[0]["body"]["model"] == "m1"
    llm = {g.query: g for g in groups if g.qid.startswith("llm-")}
    assert sorted(llm) == sorted(asked)  # every question written became a training group
    assert any(g.qid.endswith("::heading") for g in groups)  # next to the heading and sentence pairs
    with pytest.raises(ConfigError, match="pairs='pseudo'"):
        TrainOptions(generator="openai:m1")  # golden pairs take no generator
    with pytest.raises(ConfigError, match="unknown generator"):
        TrainOptions(pairs="pseudo", generator="gpt")
