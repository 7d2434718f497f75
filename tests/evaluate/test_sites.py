"""Doc-site URLs: a real MkDocs site and a real Sphinx site are built from one generated markdown corpus, and every
page URL and heading id they publish is matched to the right document and section, under the generator's rule and
under ``site="auto"``. Docusaurus (a Node tool) and GitHub are checked on their documented rules."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ragtune import ConfigError, load_corpus
from ragtune.corpus.sites import heading_ids, mkdocs_slug, page_keys, sphinx_id
from ragtune.external import HitMatcher, to_hit
from ragtune.evaluate.match import MatchOptions, MatchReport
from tests.helpers import write_files

BASE = "https://docs.example.org/project/"

# headings where the generators' id rules part ways: duplicates, runs of '-', accents, leading digits, inline
# markup, punctuation only, an explicit {#id}; the site root, a folder index, a README standing for its folder
CORPUS = {
    "index.md": "# Welcome\n\nIntro.\n\n## Getting started\n\nText.\n\n## Getting started\n\nAgain.\n\n"
                "## Getting started\n\nThird.\n",
    "guide/index.md": "# Guide\n\n## Overview\n\nAll of it.\n",
    "guide/install.md": "# Install -- the tool\n\nx\n\n## Café & crème\n\nx\n\n## 2. Step one\n\ny\n\n"
                        "## Step\n\na\n\n## Step\n\nb\n\n### Step 1\n\nc\n\n## `foo()` and **bold**\n\nd\n\n"
                        "## Refunds {#money}\n\ne\n\n## !!!\n\nf\n\n## A_b  c--d\n\ng\n",
    "guide/deep/usage.md": "# Usage\n\n## Options\n\n### Options\n\n#### Options\n\no\n",
    "reference/README.md": "# Reference\n\n## API\n\nr\n",
}

needs_mkdocs = pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="needs mkdocs (the test extra)")
needs_sphinx = pytest.mark.skipif(importlib.util.find_spec("sphinx") is None or
                                  importlib.util.find_spec("myst_parser") is None,
                                  reason="needs sphinx and myst-parser (the test extra)")


class _Ids(HTMLParser):
    """Every heading id (MkDocs: ids on h1-h6) or section id (Sphinx: <section id>), in document order."""

    def __init__(self, tags: tuple[str, ...]):
        super().__init__()
        self.tags, self.ids = tags, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in self.tags and a.get("id"):
            self.ids.append(a["id"])


def _ids(html: Path, tags: tuple[str, ...]) -> list[str]:
    p = _Ids(tags)
    p.feed(html.read_text(encoding="utf-8"))
    return p.ids


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("sites")
    return root, load_corpus(write_files(root / "docs", CORPUS))


def _check(corpus, pages: dict[str, tuple[str, list[str]]], site: str, *, extra_page_urls: dict[str, str]):
    """Every page URL and every heading URL of the built site matches its document and its section, under ``site``
    and under auto (which must pick ``site``)."""
    assert set(doc for doc, _ in pages.values()) == {d.id for d in corpus}
    hits, want = [], []
    for url, (doc_id, ids) in pages.items():
        doc = corpus[doc_id]
        assert len(ids) == len(doc.sections), (url, ids)  # one id per heading, in order
        hits.append(BASE + url)
        want.append((doc_id, None))
        for hid, sec in zip(ids, doc.sections):
            hits.append(f"{BASE}{url}#{hid}")
            want.append((doc_id, sec.anchor))
    for url, doc_id in extra_page_urls.items():
        hits.append(BASE + url)
        want.append((doc_id, None))
    for rule in (site, "auto"):
        m = HitMatcher(corpus, base_url=BASE, site=rule)
        assert m.detect(to_hit(h) for h in hits) == site
        for h, (doc_id, anchor) in zip(hits, want):
            chunk, method = m.match(to_hit(h))
            assert chunk.doc_id == doc_id, (rule, h, m.report.unmatched[-1:])
            if anchor is None:
                assert method == "doc", (rule, h)
            else:
                assert method == "anchor" and chunk.anchors == (anchor,), (rule, h, chunk.anchors)
        assert m.report.counts["unmatched"] == 0
        if rule == "auto":
            text = m.report.summary()
            assert f"site rule: {site}, detected from the hits" in text
            counts = m.report.to_dict()["site"]["detection"]
            assert counts[site] == len(hits) and counts["github"] < len(hits)
    # GitHub's rule, today's, does not match these ids, and says which rule would have
    g = HitMatcher(corpus, base_url=BASE, site="github")
    for h in hits:
        g.match(to_hit(h))
    missed = g.report.counts["unmatched"]
    assert missed > 0 and g.report.would_match[site] == missed
    assert f"(site={site})" in g.report.unmatched[0].reason
    assert f"would match under the {site} rule (--site {site})" in g.report.summary()
    return len(hits)


@needs_mkdocs
def test_every_page_and_heading_of_a_real_mkdocs_site_matches(built):
    root, corpus = built
    theme = write_files(root / "mk-theme", {"main.html": "{{ page.content }}"})  # the content alone: no theme ids
    (root / "mkdocs.yml").write_text(
        f"site_name: t\ndocs_dir: docs\nsite_dir: site\nuse_directory_urls: true\n"
        f"theme:\n  name: null\n  custom_dir: {theme}\nmarkdown_extensions:\n  - toc\n  - attr_list\n")
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(root / "mkdocs.yml")], check=True,
                   cwd=root, capture_output=True, timeout=120)
    site = root / "site"
    pages = {}
    for html in sorted(site.rglob("index.html")):
        rel = html.parent.relative_to(site).as_posix()
        url = "" if rel == "." else rel + "/"
        src = {"": "index.md", "guide/": "guide/index.md", "reference/": "reference/README.md"}.get(
            url, url.rstrip("/") + ".md")
        pages[url] = (src, _ids(html, ("h1", "h2", "h3", "h4", "h5", "h6")))
    assert pages[""][1] == ["welcome", "getting-started", "getting-started_1", "getting-started_2"]
    assert "step_1" in pages["guide/install/"][1] and "money" in pages["guide/install/"][1]
    # the root and a root fragment map to index.md (they never did), a folder to its index or README
    extra = {"": "index.md", "index.html": "index.md", "guide": "guide/index.md", "reference/": "reference/README.md",
             "guide/install/index.html": "guide/install.md", "guide/install.html": "guide/install.md"}
    n = _check(corpus, pages, "mkdocs", extra_page_urls=extra)
    assert n > 25


@needs_sphinx
def test_every_page_and_section_of_a_real_sphinx_site_matches(built):
    root, corpus = built
    src = root / "sphinx-src"
    write_files(src, {**CORPUS, "conf.py": 'extensions = ["myst_parser"]\nsource_suffix = {".md": "markdown"}\n'
                                            'exclude_patterns = ["_build"]\nroot_doc = "index"\n'})
    subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src), str(root / "sphinx")], check=True,
                   capture_output=True, timeout=120)
    pages = {}
    for doc in corpus:
        url = doc.id[: -len(".md")] + ".html"
        pages[url] = (doc.id, _ids(root / "sphinx" / url, ("section",)))
    assert pages["index.html"][1] == ["welcome", "getting-started", "id1", "id2"]
    assert "step-one" in pages["guide/install.html"][1] and "refunds-money" in pages["guide/install.html"][1]
    extra = {"": "index.md", "guide/": "guide/index.md", "guide/install/": "guide/install.md"}
    _check(corpus, pages, "sphinx", extra_page_urls=extra)


def test_the_slug_rules_of_each_generator():
    assert mkdocs_slug("Install -- the tool") == "install-the-tool"
    assert mkdocs_slug("Café & crème") == "cafe-creme"
    assert mkdocs_slug("A_b  c--d") == "a_b-c-d"
    assert sphinx_id("2. Step one") == "step-one"
    assert sphinx_id("A_b  c--d") == "a-b-c-d"
    assert sphinx_id("!!!") == ""


def test_docusaurus_urls_cut_number_prefixes_and_follow_slug_and_id(tmp_path):
    corpus = load_corpus(write_files(tmp_path, {
        "01-intro.md": "# Intro\n\n## Why\n",
        "02-guides/01-setup.md": "# Setup\n\n## Step\n\n## Step\n",
        "02-guides/guides.md": "# Guides\n",
        "api/custom.md": "---\nslug: /reference/client\n---\n# Client\n",
        "api/renamed.md": "---\nid: other\n---\n# Other\n",
    }))
    keys = {d.id: [k for k, _ in page_keys(d, "docusaurus")] for d in corpus}
    assert keys == {"01-intro.md": ["intro"], "02-guides/01-setup.md": ["guides/setup"], "02-guides/guides.md": ["guides"],
                    "api/custom.md": ["reference/client"], "api/renamed.md": ["api/other"]}
    m = HitMatcher(corpus, base_url="https://site.dev/docs/", site="auto")
    hits = ["https://site.dev/docs/guides/setup#step-1", "https://site.dev/docs/intro#why",
            "https://site.dev/docs/reference/client", "https://site.dev/docs/guides/"]
    assert m.detect(to_hit(h) for h in hits) == "docusaurus"
    got = [m.match(to_hit(h))[0] for h in hits]
    assert got[0].anchors == ("02-guides/01-setup.md#step-1",) and got[1].anchors == ("01-intro.md#why",)
    assert [c.doc_id for c in got[2:]] == ["api/custom.md", "02-guides/guides.md"]


def test_github_rule_maps_the_root_and_blob_urls(built):
    _, corpus = built
    m = HitMatcher(corpus, site="github")
    for url, doc_id, anchor in [
            ("https://github.com/o/r/blob/main/guide/install.md#step-1", "guide/install.md",
             "guide/install.md#step-1"),
            ("https://docs.example.org/#getting-started-1", "index.md", "index.md#getting-started-1"),
            ("https://docs.example.org/", "index.md", None)]:
        chunk, _ = m.match(to_hit(url))
        assert chunk.doc_id == doc_id and (anchor is None or chunk.anchors == (anchor,)), url
    # the corpus's own anchors read as such under every rule
    for site in ("mkdocs", "sphinx", "docusaurus"):
        chunk, method = HitMatcher(corpus, site=site).match(to_hit("index.md#getting-started-2"))
        assert method == "anchor" and chunk.anchors == ("index.md#getting-started-2",)
    assert heading_ids(corpus["index.md"], "mkdocs").keys() == {"welcome", "getting-started", "getting-started_1",
                                                                "getting-started_2"}


def test_a_site_rule_is_validated_and_reported():
    with pytest.raises(ConfigError, match="site 'hugo'.*mkdocs"):
        MatchOptions(site="hugo")
    r = MatchReport.from_dict({"by_method": {"anchor": 3}, "site": {"rule": "sphinx", "given": "sphinx"}})
    assert "site rule: sphinx (--site sphinx)" in r.summary()
