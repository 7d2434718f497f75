"""Ids that docutils and Sphinx make up (``id1``, ``id5``) are aliases, never anchors: a section is anchored by its
label or the slug of its title everywhere (sections, chunks, the workbench's pool), an old ``#id5`` still resolves,
and ``golden check`` suggests the readable anchor (issue 39, item 10)."""

from __future__ import annotations

import json
import textwrap

import pytest

from ragtune.cli import main
from ragtune.corpus import load_corpus
from ragtune.corpus.formats.builder import is_auto_id
from ragtune.golden import GoldenItem, check_golden, load_golden
from tests.helpers import write_jsonl

pytest.importorskip("docutils")
pytest.importorskip("lxml")

# "Sessions" has a label of its own name (docutils then gives the section id1), "Routing" comes twice (id2) and
# a title without an ASCII letter has no docutils id at all (id3)
QUICKSTART = textwrap.dedent("""\
    Quickstart
    ==========

    .. _sessions:

    Sessions
    --------

    Sessions keep a user's data between requests, signed with the secret key.

    Routing
    -------

    Use the route decorator to bind a function to a URL.

    Routing
    -------

    Variable rules add parts to a URL with angle brackets.

    快速开始
    --------

    A quick start written in Chinese.
    """)

# the page Sphinx 9 builds from QUICKSTART (its sections and anchors; the theme left out)
QUICKSTART_HTML = """<html><head><title>Quickstart</title></head><body><div class="body" role="main">
<section id="quickstart">
<h1>Quickstart<a class="headerlink" href="#quickstart" title="Link to this heading">¶</a></h1>
<section id="sessions">
<span id="id1"></span><h2>Sessions<a class="headerlink" href="#sessions" title="Link to this heading">¶</a></h2>
<p>Sessions keep a user's data between requests, signed with the secret key.</p>
</section>
<section id="routing">
<h2>Routing<a class="headerlink" href="#routing" title="Link to this heading">¶</a></h2>
<p>Use the route decorator to bind a function to a URL.</p>
</section>
<section id="id2">
<h2>Routing<a class="headerlink" href="#id2" title="Link to this heading">¶</a></h2>
<p>Variable rules add parts to a URL with angle brackets.</p>
</section>
<section id="id3">
<h2>快速开始<a class="headerlink" href="#id3" title="Link to this heading">¶</a></h2>
<p>A quick start written in Chinese.</p>
</section>
</section>
</div></body></html>
"""

READABLE = [("quickstart", ()), ("sessions", ("id1",)), ("routing", ()), ("routing-1", ("id2",)),
            ("快速开始", ("id3",))]


@pytest.fixture
def rst_corpus(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "quickstart.rst").write_text(QUICKSTART, encoding="utf-8")
    return folder


def test_what_counts_as_a_made_up_id():
    assert is_auto_id("id1") and is_auto_id("id25")
    assert not any(is_auto_id(i) for i in ("id", "ids", "idle", "id-1", "sessions", "grid1", "routing-1"))


def test_a_made_up_id_is_an_alias_and_the_readable_id_the_anchor(rst_corpus, tmp_path):
    corpus = load_corpus(rst_corpus)
    doc = corpus["quickstart.rst"]
    assert [(s.id, s.aliases) for s in doc.sections] == READABLE
    assert corpus.resolve("quickstart.rst#id1").section.anchor == "quickstart.rst#sessions"  # still resolves
    assert corpus.resolve("quickstart#id2").section.anchor == "quickstart.rst#routing-1"
    # the page Sphinx builds from the same file gives the same anchors
    html = tmp_path / "site"
    html.mkdir()
    (html / "quickstart.html").write_text(QUICKSTART_HTML, encoding="utf-8")
    page = load_corpus(html)["quickstart.html"]
    assert [(s.id, s.aliases) for s in page.sections] == READABLE


def test_chunks_cite_the_readable_anchor(rst_corpus, capsys):
    assert main(["chunk", "--corpus", str(rst_corpus), "--json", "--chunker", "section"]) == 0
    anchors = {a for line in capsys.readouterr().out.splitlines() for a in json.loads(line)["anchors"]}
    assert {"quickstart.rst#sessions", "quickstart.rst#routing-1", "quickstart.rst#快速开始"} <= anchors
    assert not any(is_auto_id(a.partition("#")[2]) for a in anchors)


def test_golden_check_suggests_the_readable_anchor_for_a_made_up_id(rst_corpus, tmp_path, capsys):
    golden = write_jsonl(tmp_path / "g.jsonl", [
        {"id": "q1", "q": "How are sessions signed?", "relevant": ["quickstart.rst#id1"]},
        {"id": "q2", "q": "What are variable rules?", "relevant": ["quickstart#id2"]},
        {"id": "q3", "q": "How is a function bound to a URL?", "relevant": ["quickstart.rst#routing"]}])
    report = check_golden(load_golden(golden), load_corpus(rst_corpus))
    assert report.ok  # advice, not a problem: the anchors resolve
    assert [(a.item_id, a.suggestions) for a in report.advice] == [("q1", ("quickstart.rst#sessions",)),
                                                                   ("q2", ("quickstart#routing-1",))]
    assert main(["golden", "check", "--corpus", str(rst_corpus), "--golden", str(golden)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: 3 questions")
    assert "suggestion: " in out and "write quickstart.rst#sessions" in out and "write quickstart#routing-1" in out
    assert main(["golden", "check", "--corpus", str(rst_corpus), "--golden", str(golden), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] and [a["kind"] for a in data["advice"]] == ["auto_id_anchor", "auto_id_anchor"]


def test_the_workbench_pools_and_saves_the_readable_anchor(rst_corpus):
    from ragtune.label.candidates import Candidates

    corpus = load_corpus(rst_corpus)
    # a pool file written before: its hole by the made-up id is shown (and so graded and saved) by the readable one
    cands = Candidates(corpus, pool={"q1": ["quickstart.rst#id1"], "q2": ["quickstart.rst#id1"]}, systems=("bm25",))
    fresh = GoldenItem("q1", "How are sessions signed?")
    assert [c.anchor for c in cands.for_question(fresh)] == ["quickstart.rst#sessions"]
    # a question that graded the section by its made-up id keeps that card, and it is not shown twice
    graded = GoldenItem("q2", "How are sessions signed?", relevant={"quickstart.rst#id1": 1.0})
    assert [c.anchor for c in cands.for_question(graded)] == ["quickstart.rst#id1"]
