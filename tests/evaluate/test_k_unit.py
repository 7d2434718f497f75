"""Top-k in chunks or in distinct documents; the default follows what the golden set labels."""

import pytest

from ragtune import Chunk, Hit, Ranking, load_corpus, load_golden
from ragtune.errors import ConfigError
from ragtune.evaluate import evaluate
from ragtune.evaluate.evaluate import evaluate_rankings
from ragtune.evaluate.render import render_eval
from tests.helpers import write_files, write_jsonl

DOCS = {"a.md": "# A\n\nalpha one.\n\n## Two\n\nalpha two.\n\n## Three\n\nalpha three.\n",
        "b.md": "# B\n\nbeta one.\n", "c.md": "# C\n\ngamma one.\n"}


def chunk(corpus, doc_id, needle):
    doc = corpus[doc_id]
    s = doc.text.index(needle)
    return Chunk(id=f"{doc_id}@{s}", doc_id=doc_id, text=needle, start=s, end=s + len(needle), embed_text=needle)


class Fixed:
    name = "fixed"

    def __init__(self, chunks):
        self.chunks = chunks

    def search(self, query, k=10):
        return Ranking(query, tuple(Hit(c, 1.0 / (i + 1)) for i, c in enumerate(self.chunks[:k])), {})


@pytest.fixture
def setup(tmp_path):
    corpus = load_corpus(write_files(tmp_path / "docs", DOCS))
    # three chunks of a.md fill the top 3 before b.md appears
    ranked = [chunk(corpus, "a.md", "alpha one."), chunk(corpus, "a.md", "alpha two."),
              chunk(corpus, "a.md", "alpha three."), chunk(corpus, "b.md", "beta one."),
              chunk(corpus, "c.md", "gamma one.")]
    return corpus, Fixed(ranked), tmp_path


def golden(tmp_path, relevant, name="g.jsonl"):
    return load_golden(write_jsonl(tmp_path / name, [{"id": "q1", "q": "alpha and beta", "relevant": relevant}]))


def test_doc_level_golden_sets_count_documents_by_default(setup):
    corpus, retriever, tmp = setup
    g = golden(tmp, ["a.md", "b.md"])
    by_default = evaluate(retriever, g, corpus, ks=[2])
    assert by_default.config["k_unit"] == "doc"
    assert by_default.metrics["recall@2"] == 1.0  # a.md then b.md: both in the top 2 documents
    assert [r["doc_id"] for r in by_default.questions[0].retrieved] == ["a.md", "b.md"]  # top 2, distinct
    chunks = evaluate(retriever, g, corpus, ks=[2], k_unit="chunk")
    assert chunks.config["k_unit"] == "chunk"
    assert chunks.metrics["recall@2"] == 0.5  # the top 2 chunks are both from a.md
    assert chunks.questions[0].first_hit_rank == 1
    assert chunks.questions[0].anchor_ranks["b.md"] == 4 and by_default.questions[0].anchor_ranks["b.md"] == 2


def test_section_level_golden_sets_count_chunks_by_default(setup):
    corpus, retriever, tmp = setup
    g = golden(tmp, ["a.md#three", "b.md"])
    result = evaluate(retriever, g, corpus, ks=[2])
    assert result.config["k_unit"] == "chunk"
    assert result.questions[0].anchor_ranks["a.md#three"] == 3
    docs = evaluate(retriever, g, corpus, ks=[2], k_unit="doc")  # asked for: a.md keeps only its best chunk
    assert docs.questions[0].anchor_ranks["a.md#three"] is None


def test_the_unit_is_said_in_text_and_json(setup):
    corpus, retriever, tmp = setup
    result = evaluate(retriever, golden(tmp, ["a.md", "b.md"]), corpus, ks=[2])
    assert render_eval(result).splitlines()[0] == "top-k counts distinct documents (--k-unit doc)"
    assert result.to_dict()["config"]["k_unit"] == "doc"
    chunked = evaluate(retriever, golden(tmp, ["a.md", "b.md"]), corpus, ks=[2], k_unit="chunk")
    assert render_eval(chunked).splitlines()[0] == "top-k counts chunks (--k-unit chunk)"


def test_rankings_made_elsewhere_follow_the_same_rule(setup):
    corpus, retriever, tmp = setup
    g = golden(tmp, ["a.md", "b.md"])
    r = evaluate_rankings({"q1": retriever.search("alpha and beta")}, g, corpus, ks=[2])
    assert r.config["k_unit"] == "doc" and r.metrics["recall@2"] == 1.0


def test_a_bad_unit_is_refused(setup):
    corpus, retriever, tmp = setup
    with pytest.raises(ConfigError, match="choose chunk .* or doc"):
        evaluate(retriever, golden(tmp, ["a.md"]), corpus, k_unit="docs")


def test_cli_flag(setup, capsys):
    from ragtune.cli import main

    corpus, _, tmp = setup
    g = tmp / "g.jsonl"
    write_jsonl(g, [{"id": "q1", "q": "alpha beta", "relevant": ["a.md", "b.md"]}])
    assert main(["eval", "--corpus", str(tmp / "docs"), "--golden", str(g), "--chunker", "fixed", "--size", "3",
                 "--overlap", "0", "--k-unit", "chunk", "-k", "2"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "top-k counts chunks (--k-unit chunk)"
    assert main(["eval", "--corpus", str(tmp / "docs"), "--golden", str(g), "--chunker", "fixed", "--size", "3",
                 "--overlap", "0", "-k", "2", "--json"]) == 0
    import json

    assert json.loads(capsys.readouterr().out)["config"]["k_unit"] == "doc"
