"""The HTML loader on doc sites built in the test by the real generators: MkDocs with its two bundled themes
(mkdocs, readthedocs) and Sphinx (alabaster). Every page's sections must be its headings, with the ids the
generator wrote, and nothing of the navigation, sidebars or footers may reach the text."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ragtune.corpus import load_corpus

PAGES = {
    "index.md": "# Welcome\n\nThe start page of the site.\n\n## Getting started\n\nInstall it first.\n",
    "guide/install.md": "# Install\n\nHow to install.\n\n## Step 1\n\nDownload the wheel.\n\n```bash\npip install x\n```\n\n"
                        "## Step 2\n\nRun it.\n\n| flag | meaning |\n|---|---|\n| -v | verbose |\n",
    "guide/billing.md": "# Billing\n\n## Refunds\n\nMoney back within thirty days.\n\n### Partial refunds\n\nHalf.\n",
}
NAV_WORDS = ("Search", "Previous", "Next", "Built with MkDocs", "Powered by", "Navigation", "Quick search")

needs_mkdocs = pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="needs mkdocs (the test extra)")
needs_sphinx = pytest.mark.skipif(importlib.util.find_spec("sphinx") is None or
                                  importlib.util.find_spec("myst_parser") is None,
                                  reason="needs sphinx and myst-parser (the test extra)")
pytest.importorskip("lxml")


def _write(root: Path) -> Path:
    for name, text in PAGES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _content_ids(html: str, start: str, end: str | None) -> list[str]:
    """The ids of the h1-h6 between ``start`` and ``end`` in the raw page (the generator's content area)."""
    body = html[html.index(start):html.index(end) if end and end in html else len(html)]
    return re.findall(r'<h[1-6][^>]*\bid="([^"]+)"', body)


def _check(site: Path, pages: dict[str, list[str]]) -> int:
    corpus = load_corpus(site, strict=True)
    checked = 0
    for page, ids in pages.items():
        doc = corpus[page]
        assert doc.format == "html"
        assert [s.id for s in doc.sections] == ids, page
        assert not any(w in doc.text for w in NAV_WORDS), (page, [w for w in NAV_WORDS if w in doc.text])
        assert "¶" not in doc.text
        checked += len(ids)
    install = next(corpus[p] for p in pages if "install" in p)
    assert "```" in install.text and "pip install x" in install.text
    assert "| flag | meaning |" in install.text
    return checked


@needs_mkdocs
@pytest.mark.parametrize("theme", ["mkdocs", "readthedocs"])
def test_a_real_mkdocs_site(tmp_path, theme):
    _write(tmp_path / "docs")
    (tmp_path / "mkdocs.yml").write_text(f"site_name: t\nsite_url: https://example.org/\ntheme:\n  name: {theme}\n"
                                         "markdown_extensions:\n  - toc:\n      permalink: true\n  - tables\n")
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q"], check=True, cwd=tmp_path, capture_output=True,
                   timeout=120)
    site = tmp_path / "site"
    for extra in site.rglob("*.html"):  # the search page and 404 page are not content
        if extra.name in ("search.html", "404.html"):
            extra.unlink()
    pages = {}
    for html in sorted(site.rglob("index.html")):
        rel = html.relative_to(site).as_posix()
        if rel.startswith(("search/", "css/", "js/")):
            continue
        raw = html.read_text(encoding="utf-8")
        start = '<div role="main"' if '<div role="main"' in raw else '<div class="col-md-9" role="main">'
        pages[rel] = _content_ids(raw, start, "<footer")
    assert sum(len(v) for v in pages.values()) == 8
    assert _check(site, pages) == 8


@needs_sphinx
def test_a_real_sphinx_site(tmp_path):
    src = _write(tmp_path / "src")
    (src / "conf.py").write_text("extensions = ['myst_parser']\nproject = 't'\nhtml_theme = 'alabaster'\n"
                                 "myst_heading_anchors = 3\n")
    (src / "index.md").write_text(PAGES["index.md"] + "\n```{toctree}\nguide/install\nguide/billing\n```\n")
    subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src), str(tmp_path / "site")],
                   check=True, capture_output=True, timeout=240)
    site = tmp_path / "site"
    for extra in ("genindex.html", "search.html"):
        (site / extra).unlink(missing_ok=True)
    pages = {}
    for html in sorted(site.rglob("*.html")):
        rel = html.relative_to(site).as_posix()
        if rel.startswith("_"):
            continue
        raw = html.read_text(encoding="utf-8")
        body = raw[raw.index('<div class="body" role="main">'):raw.index('<div class="sphinxsidebar"')]
        pages[rel] = re.findall(r'<section id="([^"]+)"', body)
    assert sum(len(v) for v in pages.values()) == 8
    assert _check(site, pages) == 8
