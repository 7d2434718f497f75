"""Training pairs: golden pairs, pseudo pairs from a markdown corpus, hard-negative mining (no torch needed)."""

from __future__ import annotations

import pytest

import ragtune as rt
from ragtune.errors import ConfigError, UnknownAnchorError
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
    assert heading.anchors == ("install.md#requirements",)
    assert heading.positive.startswith("Python 3.10 or newer is needed. The package") and "#" not in heading.positive
    sentence = pairs["deploy.md#health-checks::sentence"]
    assert sentence.query == "The server answers health probes on a dedicated path."
    assert sentence.positive == "Load balancers should poll it every ten seconds."
    assert sentence.query not in sentence.positive
    assert not any(q.startswith("install.md#tiny") for q in pairs)  # too little text to ask for
    venv = pairs["install.md#virtual-environments::sentence"]  # admonition fences and include lines dropped
    assert venv.query == "Create a virtual environment for each project."
    assert venv.positive == "Activate it before installing so the package lands in the project only."
    assert not any(p.positive is None for p in pairs.values())


def test_pseudo_groups_exclude_the_section_and_strip_headings(corpus):
    pipeline = build_pipeline(corpus, PipelineConfig(retriever="bm25"))
    pairs = pseudo_pairs(corpus)
    groups = mine_groups(pipeline, pairs, negatives=2, random_negatives=1, strip_headings=True, show_progress=False)
    assert len(groups) == len(pairs)
    for g, p in zip(groups, pairs):
        assert g.passages[0] == p.positive
        for neg in g.passages[1:]:
            assert not neg.lstrip().startswith("#") and neg != p.positive
            assert p.positive not in neg  # the section itself is never a negative
        assert len(g.passages) == len(set(g.passages)) >= 2


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
