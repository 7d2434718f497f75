"""The corpus's own cross-references (ragtune.corpus.links): markdown, HTML and reStructuredText links resolved to
corpus anchors, per section, unresolvable ones dropped and counted; and on the real CPython docs of
../shared/datasets/formats (the tutorial's links found alike in its reStructuredText and its Sphinx HTML)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ragtune.corpus import load_corpus
from ragtune.corpus.links import find_links
from tests.helpers import shared_dataset


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def pairs(links) -> list[tuple[str, str, str]]:
    return [(link.source, link.target, link.kind) for link in links.links]


MARKDOWN = {
    "guide.md": """\
        # Guide

        Start with [the setup](sub/install.md#setup) and read [usage][u].

        ## Testing

        Run the tests as in <a href="sub/install.md#usage">usage</a>; see also [the top](#guide) of this page,
        [the project site](https://example.org/docs) and [an old page](gone.md).
        ![a diagram](sub/install.md#setup)

        ```
        [not a link](sub/install.md#usage)
        ```

        [u]: sub/install.md#usage
        """,
    "sub/install.md": """\
        # Install

        ## Setup

        Back to [the guide](../guide.md) or its [testing part](../guide.md#testing); a folder: [docs](../).

        ## Usage

        Outside the corpus: [up](../../other.md). A missing section: [x](../guide.md#nowhere).
        """,
    "index.md": "# Home\n\nSee [the guide](guide.html).\n",  # another extension: a site's built page names the source
}


def test_markdown_links_resolve_to_sections_in_the_order_written(tmp_path):
    corpus = load_corpus(write(tmp_path, MARKDOWN))
    links = find_links(corpus)
    assert pairs(links) == [
        ("guide.md#guide", "sub/install.md#setup", "markdown"),
        ("guide.md#guide", "sub/install.md#usage", "markdown"),  # the reference link, where it is used
        ("guide.md#testing", "sub/install.md#usage", "html"),
        ("guide.md#testing", "guide.md#guide", "markdown"),
        ("index.md#home", "guide.md", "markdown"),
        ("sub/install.md#setup", "guide.md", "markdown"),
        ("sub/install.md#setup", "guide.md#testing", "markdown"),
        ("sub/install.md#setup", "index.md", "markdown"),  # ../ is the corpus root: its index
    ]
    # the image and the fenced code are no links; the missing page, the section that is not there and the path out
    # of the corpus are dropped and counted; the URL is external
    assert (links.unresolved, links.external, links.unread) == (3, 1, ())
    assert sorted(e[2] for e in links.examples) == ["../../other.md", "../guide.md#nowhere", "gone.md"]
    assert links.targets("sub/install.md#setup") == ["guide.md", "guide.md#testing", "index.md"]
    guide = corpus["guide.md"]
    testing = next(s for s in guide.sections if s.id == "testing")
    assert [link.target for link in links.within("guide.md", testing.start, testing.end)] == [
        "sub/install.md#usage", "guide.md#guide"]


HTML = {
    "index.html": """\
        <html><body><nav><a href="other.html">Next</a></nav>
        <div role="main"><section id="intro"><h1>Intro</h1>
        <p>See <a class="reference internal" href="other.html#tut-x">the x</a> and
        <a href="https://docs.python.org/3/">Python</a>.</p>
        <section id="more"><h2>More</h2><p><a href="other.html">The other page</a>, <a href="#id1">[1]</a>,
        <a href="missing.html#a">gone</a>.</p></section></section></div>
        <footer><a href="other.html#the-x">footer link</a></footer></body></html>
        """,
    "other.html": """\
        <html><body><div role="main"><section id="other"><h1>Other</h1><p>Text.</p>
        <section id="the-x"><span id="tut-x"></span><h2>The X</h2><p>Back <a href="index.html#more">more</a>.</p>
        </section></section></div></body></html>
        """,
}


def test_html_links_of_the_main_content_resolve_through_ids_and_aliases(tmp_path):
    pytest.importorskip("lxml")
    links = find_links(load_corpus(write(tmp_path, HTML)))
    # the label's id (tut-x, an alias) names its section; navigation and footer links are not read
    assert pairs(links) == [("index.html#intro", "other.html#the-x", "html"),
                            ("index.html#more", "other.html", "html"),
                            ("other.html#the-x", "index.html#more", "html")]
    assert (links.unresolved, links.external) == (2, 1)  # a footnote id and a missing page; the URL


RST = {
    "index.rst": """\
        Home
        ====

        .. toctree::
           :maxdepth: 1

           guide
           Other things <other>

        Read :ref:`tut-x` first, or :ref:`the setup <setup-label>`; all of :doc:`guide`; never :ref:`nowhere`.
        """,
    "guide.rst": """\
        Guide
        =====

        Intro text.

        .. _tut-x:

        The X
        -----

        See `the home page <index.rst>`_ and :doc:`/other`.

        .. _setup-label:

        Setup
        -----

        Set up.
        """,
    "other.rst": "Other\n=====\n\nBack to :ref:`setup-label`.\n",
}


def test_rst_roles_labels_and_toctrees_resolve(tmp_path):
    pytest.importorskip("docutils")
    links = find_links(load_corpus(write(tmp_path, RST)))
    assert pairs(links) == [
        ("guide.rst#the-x", "index.rst", "rst-link"),
        ("guide.rst#the-x", "other.rst", "doc"),
        ("index.rst#home", "guide.rst", "toctree"),
        ("index.rst#home", "other.rst", "toctree"),
        ("index.rst#home", "guide.rst#the-x", "ref"),
        ("index.rst#home", "guide.rst#setup", "ref"),
        ("index.rst#home", "guide.rst", "doc"),
        ("other.rst#other", "guide.rst#setup", "ref"),
    ]
    assert links.unresolved == 1 and links.examples[0][1:] == ("ref", "nowhere")


def test_a_document_whose_source_file_is_gone_is_listed_unread(tmp_path):
    pytest.importorskip("docutils")
    corpus = load_corpus(write(tmp_path, RST))
    (tmp_path / "other.rst").unlink()
    links = find_links(corpus)
    assert links.unread == ("other.rst",)
    assert all(link.doc_id != "other.rst" for link in links.links)


@pytest.mark.dataset
def test_the_cpython_docs_links_resolve_and_agree_across_formats():
    """On the CPython 3.9 docs (61 reStructuredText files; the tutorial also as Sphinx HTML): how many links
    resolve, and the tutorial's reStructuredText links found again in its HTML, section for section."""
    pytest.importorskip("docutils")
    pytest.importorskip("lxml")
    rst_all = find_links(load_corpus(shared_dataset("formats/rst")))
    assert rst_all.resolved > 100 and rst_all.unread == ()
    assert {"ref", "toctree"} <= set(rst_all.by_kind())
    corpus_rst = load_corpus(shared_dataset("formats/rst/tutorial"))
    rst = find_links(corpus_rst)
    html = find_links(load_corpus(shared_dataset("formats/html/python-tutorial")))
    for links, corpus in ((rst, corpus_rst),):
        assert all(corpus.has_anchor(link.target) for link in links.links)

    def stem(a):
        return a.replace(".rst", "").replace(".html", "")

    in_rst = {(stem(x.source), stem(x.target)) for x in rst.links}
    in_html = {(stem(x.source), stem(x.target)) for x in html.links}
    assert len(in_rst) > 30
    assert len(in_rst & in_html) >= 0.9 * len(in_rst), sorted(in_rst - in_html)
    assert ("controlflow#the-range-function", "datastructures#looping-techniques") in in_html


@pytest.mark.dataset
def test_the_fastapi_docs_relative_links_resolve():
    links = find_links(load_corpus(shared_dataset("fastapi_docs/md/docs/en/docs")))
    assert links.resolved > 100
    assert ("advanced/advanced-dependencies.md#dependencies-with-yield-and-scope",
            "tutorial/dependencies/dependencies-with-yield.md#early-exit-and-scope", "markdown") in pairs(links)
