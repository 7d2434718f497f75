"""The HTML loader: main content of Sphinx, MkDocs Material and Docusaurus pages, anchors, blocks, locations,
encodings, broken and huge pages, and the real Sphinx-built CPython tutorial."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from ragtune import load_corpus
from ragtune.errors import ConfigError, CorpusError
from ragtune.registry import CHUNKERS, LOADERS
from tests.growth import assert_linear
from tests.helpers import shared_dataset

pytest.importorskip("lxml")

ROOT = Path(__file__).resolve().parents[3]


def load(html: str | bytes, name: str = "page.html", **options):
    data = html.encode("utf-8") if isinstance(html, str) else html
    return LOADERS.build("html", options=options).load(data, name, name)


def fences(text: str) -> list[str]:
    """The info strings of the fenced code blocks in ``text``."""
    out, fence = [], ""
    for line in text.splitlines():
        m = re.match(r"`{3,}", line)
        if m and not fence:
            fence = m.group()
            out.append(line[len(fence):])
        elif fence and line == fence:
            fence = ""
    return out


SPHINX_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8" />
<title>4. More Control Flow Tools &#8212; Python Tutorial 3.9.1 documentation</title>
<script src="_static/doctools.js"></script><style>body { color: red }</style></head><body>
<div class="document"><div class="documentwrapper"><div class="bodywrapper">
<div class="body" role="main">
<section id="more-control-flow-tools">
<span id="tut-morecontrol"></span><h1><span class="section-number">4. </span>More Control Flow Tools<a
 class="headerlink" href="#more-control-flow-tools" title="Link to this heading">¶</a></h1>
<p>Besides the <code class="xref"><span class="pre">while</span></code> statement,
Python uses the usual flow control statements.</p>
<section id="if-statements">
<span id="tut-if"></span><h2><span class="section-number">4.1. </span><code><span class="pre">if</span></code>
 Statements<a class="headerlink" href="#if-statements">¶</a></h2>
<p>Perhaps the most well-known statement type is the if statement.</p>
<div class="highlight-python3 notranslate"><div
 class="highlight"><pre><span></span><span class="gp">&gt;&gt;&gt; </span><span
 class="k">if</span> x &lt; 0:
<span class="gp">... </span>    x = 0
</pre></div></div>
<h3>A second heading in the same section</h3>
<p>Its anchor is its slug.</p>
</section>
<div class="section" id="old-style"><h2>Old Sphinx section<a class="headerlink" href="#old-style">¶</a></h2>
<div class="admonition note"><p class="admonition-title">Note</p><p>Read this first.</p></div>
<dl class="py function"><dt class="sig" id="json.dumps"><span class="sig-name">json.dumps</span>(obj)<a
 class="headerlink" href="#json.dumps">¶</a></dt><dd><p>Serialize <em>obj</em> to JSON.</p></dd></dl>
</div>
</section>
</div></div></div>
<div class="sphinxsidebar" role="navigation" aria-label="Main"><div class="sphinxsidebarwrapper">
<h1 class="logo"><a href="index.html">Python Tutorial</a></h1><h3>Navigation</h3><ul><li>Intro</li></ul>
<div class="relations"><h3>Related Topics</h3></div>
<search id="searchbox" role="search"><h3 id="searchlabel">Quick search</h3><form class="search"><input
 type="text" name="q"/></form></search></div></div><div class="clearer"></div></div>
<div class="footer">&#169;2001-2020, Python Software Foundation. | Powered by <a href="https://sphinx.org">Sphinx
 9.0.4</a></div></body></html>"""


def test_sphinx_page_sections_anchors_and_titles():
    doc = load(SPHINX_PAGE, "controlflow.html")
    assert doc.format == "html" and doc.title == "More Control Flow Tools"
    assert doc.metadata["content"] == "[role=main]"
    assert doc.metadata["html_title"].startswith("4. More Control Flow Tools")
    assert [(s.level, s.id, s.title, s.aliases) for s in doc.sections] == [
        (1, "more-control-flow-tools", "More Control Flow Tools", ("tut-morecontrol",)),
        (2, "if-statements", "if Statements", ("tut-if",)),
        (3, "a-second-heading-in-the-same-section", "A second heading in the same section", ()),
        (2, "old-style", "Old Sphinx section", ()),
    ]
    assert [s.explicit_id for s in doc.sections] == ["more-control-flow-tools", "if-statements", None, "old-style"]
    assert doc.sections[2].parent == "controlflow.html#if-statements"
    for boilerplate in ("¶", "4.1.", "Navigation", "Related Topics", "Quick search", "Powered by", "Python Tutorial",
                        "color: red", "doctools"):
        assert boilerplate not in doc.text
    assert "Besides the while statement, Python uses the usual flow control statements." in doc.text
    assert "\n\nNote: Read this first.\n\n" in doc.text
    assert "json.dumps(obj)\n\nSerialize obj to JSON." in doc.text
    assert fences(doc.text) == ["python3"]
    assert "```python3\n>>> if x < 0:\n...     x = 0\n```" in doc.text


def test_locations_follow_the_enclosing_section_or_heading():
    doc = load(SPHINX_PAGE, "controlflow.html")
    at = {loc["element_id"] for _, loc in doc.locations}
    assert at == {"more-control-flow-tools", "if-statements", "old-style"}
    code = doc.text.index("```python3")
    assert doc.location(code) == {"element_id": "if-statements"}
    slugged = doc.text.index("Its anchor is its slug.")  # a heading without an id: its section's id
    assert doc.location(slugged) == {"element_id": "if-statements"}
    first, note = doc.text.index("Besides"), doc.text.index("Note:")
    assert doc.location(first, note + 4) == {"element_id": "more-control-flow-tools", "element_id_end": "old-style"}
    chunks = CHUNKERS.build("section").chunk(doc)
    assert [c.metadata["location"]["element_id"] for c in chunks] == [
        "more-control-flow-tools", "if-statements", "if-statements", "old-style"]


def test_heading_id_rules():
    doc = load("""<body><main>
    <h1 id="own">Own id</h1>
    <section id="sec"><div class="wrap"><h2>First in its section</h2></div><h2>Second in its section</h2></section>
    <section id="outer"><h2 id="inner">Own id wins<a id="alt"></a></h2></section>
    <h2><a name="legacy"></a>Anchor inside</h2>
    <span id="label-a"></span><a id="label-b"></a><h2 id="target">Labels before it</h2>
    <p>text <span id="mid"></span></p><h2>Slugged 4.2. title</h2>
    <h2>   </h2>
    </main></body>""")
    assert [(s.id, s.explicit_id, s.aliases) for s in doc.sections] == [
        ("own", "own", ()),
        ("sec", "sec", ()),
        ("second-in-its-section", None, ()),
        ("inner", "inner", ("outer", "alt")),
        ("legacy", "legacy", ()),
        ("target", "target", ("label-a", "label-b")),
        ("slugged-42-title", None, ()),
    ]


def test_mkdocs_material_page_reads_the_article():
    page = """<html><head><title>Setup - My Docs</title></head><body>
    <header class="md-header"><nav class="md-header__inner"><span class="md-header__topic">My Docs</span></nav></header>
    <div class="md-container"><main class="md-main"><div class="md-main__inner md-grid">
    <div class="md-sidebar md-sidebar--primary"><div class="md-sidebar__scrollwrap"><nav class="md-nav">
      <ul><li>Home</li><li>Setup</li></ul></nav></div></div>
    <div class="md-sidebar md-sidebar--secondary"><nav class="md-nav md-nav--secondary">
      <label class="md-nav__title">Table of contents</label><ul><li>Install</li></ul></nav></div>
    <div class="md-content" data-md-component="content"><article class="md-content__inner md-typeset">
      <a href="edit" title="Edit this page" class="md-content__button md-icon"><svg><path d="M1"/></svg></a>
      <h1 id="setup">Setup</h1><p>Install it first.</p>
      <h2 id="install">Install<a class="headerlink" href="#install" title="Permanent link">&para;</a></h2>
      <div class="language-bash highlight"><pre><span></span><code>pip install mydocs
</code></pre></div>
      <div class="admonition tip"><p class="admonition-title">Tip</p><p>Use a venv.</p></div>
      <aside class="md-source-file"><span>Last update: 2024-01-01</span></aside>
    </article></div></div></main>
    <footer class="md-footer"><div class="md-copyright">Made with Material for MkDocs</div></footer></div>
    </body></html>"""
    doc = load(page, "setup.html")
    assert doc.metadata["content"] == "article.md-content__inner"
    assert doc.title == "Setup"
    assert [(s.id, s.title) for s in doc.sections] == [("setup", "Setup"), ("install", "Install")]
    assert fences(doc.text) == ["bash"]
    assert "Tip: Use a venv." in doc.text
    for boilerplate in ("My Docs", "Home", "Table of contents", "Last update", "Made with", "¶"):
        assert boilerplate not in doc.text


def test_docusaurus_page_reads_the_markdown_div_with_its_header_h1():
    page = """<html><head><title>Intro | Site</title></head><body><div id="__docusaurus">
    <nav class="navbar"><a class="navbar__brand">Site</a></nav>
    <div class="main-wrapper"><div class="docsWrapper"><aside class="theme-doc-sidebar-container">
      <ul class="menu__list"><li>Tutorial Intro</li></ul></aside>
    <main class="docMainContainer"><div class="row"><div class="col">
      <article><nav class="theme-doc-breadcrumbs" aria-label="Breadcrumbs"><ul><li>Docs</li></ul></nav>
      <span class="theme-doc-version-badge badge">Version: 2.0</span>
      <div class="theme-doc-toc-mobile tocCollapsible"><button>On this page</button></div>
      <div class="theme-doc-markdown markdown"><header><h1>Tutorial Intro</h1></header>
        <p>Let's discover <strong>Docusaurus in less than 5 minutes</strong>.</p>
        <h2 class="anchor anchorWithStickyNavbar" id="getting-started">Getting Started<a href="#getting-started"
         class="hash-link" aria-label="Direct link to Getting Started">&#8203;</a></h2>
        <div class="language-bash codeBlockContainer"><div class="codeBlockContent"><pre tabindex="0"
         class="prism-code language-bash codeBlock"><code class="codeBlockLines"><span class="token-line"><span
         class="token plain">npm init docusaurus@latest</span><br></span><span class="token-line"><span
         class="token plain">cd my-website</span><br></span></code></pre><div class="buttonGroup"><button
         aria-label="Copy code to clipboard">Copy</button></div></div></div>
      </div>
      <footer class="theme-doc-footer docusaurus-mt-lg"><a href="edit">Edit this page</a></footer></article>
      <nav class="pagination-nav" aria-label="Docs pages"><a>Next: Create a Page</a></nav>
    </div><div class="col col--3"><div class="tableOfContents"><ul class="table-of-contents">
      <li>Getting Started</li></ul></div></div></div></main></div></div>
    <footer class="footer"><div class="footer__copyright">Copyright 2024 My Project</div></footer></div>
    </body></html>"""
    doc = load(page, "intro.html")
    assert doc.metadata["content"] == "div.theme-doc-markdown"
    assert doc.title == "Tutorial Intro"
    assert [(s.id, s.title) for s in doc.sections] == [("tutorial-intro", "Tutorial Intro"),
                                                       ("getting-started", "Getting Started")]
    assert "```bash\nnpm init docusaurus@latest\ncd my-website\n```" in doc.text
    for boilerplate in ("Version: 2.0", "On this page", "Breadcrumbs", "Docs\n", "Edit this page", "Next:",
                        "Copyright", "Copy", "\u200b", "Tutorial Intro\n\n- "):
        assert boilerplate not in doc.text


def test_generic_pages_prefer_main_then_article_then_body():
    assert load("<body><nav>Menu</nav><main><p>Main text</p></main><p>outside</p></body>").text == "Main text"
    doc = load("<body><header><h1>Site name</h1></header><article><header><h1>Post</h1></header><p>Body</p>"
               "</article><aside>Related</aside></body>")
    assert doc.metadata["content"] == "article" and doc.text == "# Post\n\nBody"
    doc = load("<body><header>Site</header><div role='navigation'>Links</div><div aria-hidden='true'>x</div>"
               "<div hidden>y</div><p style='display: none'>z</p><h1>Plain</h1><p>Text<br>on two lines</p>"
               "<footer>Foot</footer></body>")
    assert doc.metadata["content"] == "body" and doc.text == "# Plain\n\nText\non two lines"
    # an empty <main> is passed over for the text that is there
    assert load("<body><main></main><div><p>Real text</p></div></body>").text == "Real text"


@pytest.mark.parametrize("page, container", [
    # Read the Docs theme: the article body inside div.document[role=main], its footer buttons outside
    ("<div class='wy-nav-side'><p>Side</p></div><div class='document' role='main'><div itemprop='articleBody'>"
     "<h1>Doc</h1><p>Text</p></div><div class='rst-footer-buttons'>Next</div></div>", "[itemprop=articleBody]"),
    # furo: article[role=main] beside its sidebar and TOC drawer
    ("<div class='sidebar-drawer'><p>Side</p></div><article role='main' id='furo-main-content'><h1>Doc</h1>"
     "<p>Text</p></article><div class='toc-drawer'><p>Next</p></div>", "[role=main]"),
    # the MkDocs theme
    ("<div class='col-md-3'><p>Side</p></div><div class='col-md-9' role='main'><h1>Doc</h1><p>Text</p></div>"
     "<p>Next</p>", "[role=main]"),
    # an older Sphinx theme: div.body without a role
    ("<div class='document'><div class='body'><h1>Doc</h1><p>Text</p></div>"
     "<div class='sphinxsidebar'><p>Side</p></div></div><p>Next</p>", "div.body"),
    # only div.document: its sidebar is still never read
    ("<div class='document'><h1>Doc</h1><div class='sphinxsidebar'><p>Side</p></div><p>Text</p></div><p>Next</p>",
     "div.document"),
])
def test_doc_site_containers(page, container):
    doc = load(f"<html><body>{page}</body></html>")
    assert doc.metadata["content"] == container
    assert doc.text == "# Doc\n\nText"


def test_main_option_names_the_container():
    page = "<body><div class='content'><h1>Mine</h1><p>kept</p></div><main><p>not this</p></main></body>"
    doc = load(page, main="div.content")
    assert doc.text == "# Mine\n\nkept" and doc.metadata["content"] == "div.content"
    assert load(page, main="body > div[class=content]").text == "# Mine\n\nkept"
    assert load(page, main="section.none, main").text == "not this"
    with pytest.raises(CorpusError, match=r"^no text: the html loader's main selector '#missing' matches nothing"):
        load(page, main="#missing")
    for bad in ("div:first-child", "div >", "a[href^=x]", "> p"):
        with pytest.raises(ConfigError, match="is not a selector ragtune reads"):
            LOADERS.build("html", options={"main": bad})


def test_selector_xpath():
    from ragtune.corpus.formats.html import selector_xpath

    cls = "contains(@class, 'body') and contains(concat(' ', normalize-space(@class), ' '), ' body ')"
    assert selector_xpath("div.body") == f"//div[{cls}]"
    assert selector_xpath("main > #content [data-x='a b'], ARTICLE") == \
        "//main/*[@id='content']//*[@data-x='a b'] | //article"
    assert selector_xpath('[title="it\'s"][hidden]') == '//*[@title="it\'s"][@hidden]'


def test_tables_are_pipe_tables_kept_whole_by_the_chunker():
    doc = load("""<body><h1>T</h1><table><caption>Prices</caption>
    <thead><tr><th>Plan</th><th colspan="2">Limits</th></tr></thead>
    <tbody><tr><td rowspan="2">Free</td><td>1 | 2</td><td>a<br>b</td></tr><tr><td>3</td><td>4</td></tr>
    <tr><td>Pro</td><td><p>nested <b>block</b></p></td></tr></tbody>
    <tfoot><tr><td>Total</td><td></td><td>9</td></tr></tfoot></table>
    <table><tr><td>no</td><td>header</td></tr></table></body>""")
    assert doc.text == ("# T\n\nPrices\n\n"
                        "| Plan | Limits |  |\n|---|---|---|\n| Free | 1 \\| 2 | a b |\n|  | 3 | 4 |\n"
                        "| Pro | nested block |  |\n| Total |  | 9 |\n\n"
                        "|  |  |\n|---|---|\n| no | header |")
    words = "<p>" + "words of a paragraph " * 15 + "</p>"
    doc = load("<body><h1>Big</h1>" + words + "<table>" + "".join(
        f"<tr><td>row {i}</td><td>cell {i}</td></tr>" for i in range(12)) + "</table>" + words + "</body>")
    start, end = doc.text.index("|  |  |"), doc.text.index("| row 11 | cell 11 |") + len("| row 11 | cell 11 |")
    chunks = CHUNKERS.build("markdown", options={"size": 100}).chunk(doc)
    assert len(chunks) > 1
    assert [c for c in chunks if c.start <= start and c.end >= end]  # one chunk holds the whole table
    assert not [c for c in chunks if start < c.start < end or start < c.end < end]


def test_code_blocks_languages_and_atomic_chunks():
    doc = load("""<body><h1>Code</h1>
    <pre class="language-js"><code>let a = 1;</code></pre>
    <pre><code class="language-rust">fn main() {}</code></pre>
    <div class="highlight-none"><div class="highlight"><pre>plain</pre></div></div>
    <pre>  indented\n\ttab   spaces  \nline&lt;3</pre>
    <table class="highlighttable"><tr><td class="linenos"><div class="linenodiv"><pre>1\n2</pre></div></td>
    <td class="code"><div class="highlight"><pre><span class="linenos">1</span>x = 1\n<span
 class="linenos">2</span>y = 2
</pre></div></td></tr></table>
    <pre>```\nbackticks inside\n```</pre></body>""")
    assert fences(doc.text) == ["js", "rust", "", "", "", ""]
    assert "```\n  indented\n\ttab   spaces  \nline<3\n```" in doc.text
    assert "```\nx = 1\ny = 2\n```" in doc.text and "1\n2" not in doc.text
    assert "````\n```\nbackticks inside\n```\n````" in doc.text
    code = "\n".join(f"    line_{i} = {i}" for i in range(12))
    words = "<p>" + "words of a paragraph " * 15 + "</p>"
    doc = load(f"<body><h1>Long</h1>{words}<pre class='language-python'>{code}</pre>{words}</body>")
    start, end = doc.text.index("```python"), doc.text.index("line_11 = 11\n```") + len("line_11 = 11\n```")
    chunks = CHUNKERS.build("markdown", options={"size": 100}).chunk(doc)
    assert len(chunks) > 1
    assert [c for c in chunks if c.start <= start and c.end >= end]  # one chunk holds the whole code block
    assert not [c for c in chunks if start < c.start < end or start < c.end < end]


def test_lists_definition_lists_quotes_and_inline_flattening():
    doc = load("""<body><h1>L</h1>
    <ul><li><p>first <em>item</em></p><p>same item</p></li>
      <li>second<ol start="3"><li>three</li><li value="7">seven</li><li>eight</li></ol></li></ul>
    <dl><dt>term</dt><dd>its definition</dd></dl>
    <blockquote><div><p>quoted text</p></div></blockquote>
    <p>a<span>b</span> <code>c</code><a href="#">d</a><img src="x.png" alt="pic">e</p>
    <div>loose <b>div</b> text<div>inner block</div>tail text</div>
    <details class="note"><summary>Collapsed</summary><p>hidden until opened</p></details></body>""")
    assert doc.text == ("# L\n\n- first item same item\n- second\n  3. three\n  7. seven\n  8. eight\n\n"
                        "term\n\nits definition\n\nquoted text\n\nab cde\n\nloose div text\n\ninner block\n\n"
                        "tail text\n\nCollapsed: hidden until opened")


def test_malformed_markup_loads_what_it_can():
    doc = load(b"<html><body><h2 id=a>One<p>para <b>bold <i>it</p><table><tr><td>a<td>b<tr><td>c</table>"
               b"<ul><li>x<li>y<ul><li>z</ul></ul><p>\xff\xfe bad \x00bytes\x01</div></span></body><p>late")
    assert doc.sections[0].id == "a"
    assert "para bold it" in doc.text and "| a | b |\n| c |  |" in doc.text
    assert "- x\n- y\n  - z" in doc.text
    assert "\ufffd\ufffd bad" in doc.text and "\x00" not in doc.text and "\x01" not in doc.text
    assert doc.text.endswith("late")
    garbage = bytes(range(256)) * 40 + b"<p>still read</p>"
    assert "still read" in load(garbage).text


def test_encodings_bom_meta_charset_xml_declaration_else_utf8():
    text = "Café – €5"
    page = f"<html><head><meta charset='windows-1252'></head><body><p>{text}</p></body></html>"
    assert load(page.encode("cp1252")).text == text
    page = f"<html><head><meta http-equiv='Content-Type' content='text/html; charset=ISO-8859-1'></head><body><p>{text}"
    assert load(page.encode("cp1252")).text == text  # ISO-8859-1 means windows-1252, as in a browser
    assert load("\ufeff<p>é</p>".encode("utf-16-le")).text == "é"
    assert load(b"\xef\xbb\xbf<p>\xc3\xa9</p>").text == "é"
    xhtml = ('<?xml version="1.0" encoding="iso-8859-15"?><html xmlns="http://www.w3.org/1999/xhtml"><body>'
             '<h1 id="x">Café €5</h1></body></html>').encode("iso-8859-15")
    doc = load(xhtml, "page.xhtml")
    assert doc.title == "Café €5" and doc.sections[0].id == "x"
    assert load(b"<p>no declaration: caf\xe9</p>").text == "no declaration: caf\ufffd"  # UTF-8, replaced
    assert load(b"<meta charset='no-such-codec'><p>caf\xc3\xa9</p>").text == "café"


@pytest.mark.parametrize("data", [b"", b"  \n\t", b"<!-- only a comment -->"])
def test_empty_file_is_no_text(data):
    with pytest.raises(CorpusError, match=r"^no text: the HTML file is empty"):
        load(data)


def test_page_without_text_is_no_text():
    with pytest.raises(CorpusError, match=r"^no text in the page's content .*main option"):
        load("<html><head><title>Only a title</title></head><body><script>render()</script><nav>menu</nav>"
             "<div id='root'></div></body></html>")


def test_title_prefers_the_first_h1_then_the_title_tag_then_the_file_name():
    assert load("<title>T — Site</title><h2>Two</h2><h1>1.2. One</h1><h1>Other</h1>").title == "One"
    assert load("<title>The page — Site</title><h2>Two</h2>").title == "The page — Site"
    assert load("<h2>4. Two</h2><p>x</p>").title == "Two"
    assert load("<p>just text</p>", "folder/some-page.html").title == "some-page"


def test_deeply_nested_markup_loads_without_recursion_error():
    n = 100_000
    page = "<html><body><h1>Deep</h1><p>before</p>" + "<div>" * n + "deep\ufffe text\f" + "</div>" * n + "<p>after</p>"
    doc = load(page)
    assert doc.text == "# Deep\n\nbefore\n\ndeep text\n\nafter"
    unclosed = "<body><h1>Deep</h1>" + "<div><span>x</span>" * (n // 5) + "<p>the end</p>"
    doc = load(unclosed)
    assert doc.text.startswith("# Deep\n\nx") and doc.text.endswith("the end")
    assert doc.text.count("x") == n // 5


def test_a_large_page_loads_in_linear_time():
    section = ("<section id='s{i}'><h2>Section {i}</h2><p>" + "Some words of a paragraph with <b>bold</b> and "
               "<a href='#'>links</a> in it. " * 12 + "</p><pre class='language-python'>x = {i}\nprint(x)</pre>"
               "<ul><li>one</li><li>two</li></ul></section>")

    def page(n: int) -> bytes:
        return ("<html><body><main><h1>Big</h1>" + "".join(section.format(i=i) for i in range(n)) +
                "</main></body></html>").encode()

    assert len(page(2400)) > 2_400_000
    doc = assert_linear(load, page, 600, "an HTML page of many sections")  # 600 sections, then 2,400
    assert len(doc.sections) == 2401 and doc.sections[-1].id == "s2399"


def test_missing_lxml_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "lxml", None)
    with pytest.raises(CorpusError, match=r"reading HTML files needs the lxml package: pip install 'ragtune\[html\]'"):
        load("<p>x</p>")


def test_registered_suffixes_and_folder_load(tmp_path):
    entry = LOADERS.get("html")
    assert set(entry.suffixes) == {".html", ".htm", ".xhtml"} and LOADERS.build("html").cache is True
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "install.html").write_text(SPHINX_PAGE, encoding="utf-8")
    (tmp_path / "legacy.htm").write_text("<h1 id='top'>Legacy</h1><p>old page</p>", encoding="utf-8")
    (tmp_path / "book.xhtml").write_bytes(b'<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/'
                                          b'1999/xhtml"><body><h1 id="ch1">Chapter</h1><p>text</p></body></html>')
    (tmp_path / "notes.md").write_text("# Notes\n\nmarkdown\n", encoding="utf-8")
    (tmp_path / "empty.html").write_bytes(b"")
    corpus = load_corpus(tmp_path)
    assert sorted(d.id for d in corpus) == ["book.xhtml", "guide/install.html", "legacy.htm", "notes.md"]
    assert {corpus[i].format for i in ("book.xhtml", "guide/install.html", "legacy.htm")} == {"html"}
    anchors = corpus.anchors()
    for a in ("guide/install.html#if-statements", "guide/install.html#old-style", "legacy.htm#top", "book.xhtml#ch1",
              "notes.md#notes"):
        assert a in anchors
    span = corpus.resolve("guide/install.html#tut-if")  # an alias resolves to its section
    assert corpus["guide/install.html"].text[span.start:].startswith("## if Statements")
    assert any("empty.html" in p and "no text" in why for p, why in corpus.skipped)


# -- the real Sphinx build of the CPython tutorial -------------------------------------------------------------------
def tutorial() -> Path:
    return shared_dataset("formats") / "html" / "python-tutorial"


def main_content(path: Path):
    from lxml import etree

    root = etree.HTML(path.read_bytes())
    return root.xpath("//div[@role='main']")[0]


@pytest.mark.dataset
def test_real_sphinx_pages_all_load_with_their_section_ids_and_code_blocks():
    pages = sorted(tutorial().glob("*.html"))
    assert len(pages) == 17
    for page in pages:
        doc = load(page.read_bytes(), page.name)
        body = main_content(page)
        section_ids = [s.get("id") for s in body.iter("section")]
        assert [s.id for s in doc.sections] == section_ids, page.name
        for s in doc.sections:
            assert "¶" not in s.title and not re.match(r"\d+\.", s.title), (page.name, s.title)
        for boilerplate in ("Navigation", "Related Topics", "Quick search", "Powered by", "©2001"):
            assert boilerplate not in doc.text, (page.name, boilerplate)
        assert len(fences(doc.text)) == len(body.xpath(".//pre")), page.name
        assert doc.title == doc.sections[0].title and doc.metadata["content"] == "[role=main]"


@pytest.mark.dataset
def test_real_controlflow_page():
    doc = load((tutorial() / "controlflow.html").read_bytes(), "controlflow.html")
    assert len(doc.sections) == 22
    assert doc.title == "More Control Flow Tools"
    by_id = {s.id: s for s in doc.sections}
    assert by_id["if-statements"].title == "if Statements" and by_id["if-statements"].aliases == ("tut-if",)
    assert by_id["recap"].heading_path == ("More Control Flow Tools", "More on Defining Functions",
                                           "Special parameters", "Recap")
    assert "The keyword ‘elif’ is short for ‘else if’" in doc.text
    code = doc.text.index("```python3\n>>> x = int(input(\"Please enter an integer: \"))")
    assert doc.location(code) == {"element_id": "if-statements"}


@pytest.mark.dataset
def test_golden_set_anchors_exist_in_the_html_pages():
    golden = ROOT / "bench" / "golden" / "python-tutorial.jsonl"
    if not golden.exists():
        pytest.skip("bench/golden/python-tutorial.jsonl not in this checkout")
    questions = [json.loads(line) for line in golden.read_text(encoding="utf-8").splitlines() if line.strip()]
    anchors = [a for q in questions for a in q["relevant"]]
    assert len(questions) == 40 and len(anchors) >= 30
    docs: dict[str, set[str]] = {}
    for anchor in anchors:
        name, _, fragment = anchor.partition("#")
        if name not in docs:
            doc = load((tutorial() / f"{name}.html").read_bytes(), f"{name}.html")
            docs[name] = {s.id for s in doc.sections} | {a for s in doc.sections for a in s.aliases}
        assert not fragment or fragment in docs[name], anchor


@pytest.mark.dataset
def test_real_folder_through_load_corpus():
    corpus = load_corpus(tutorial())
    assert len(corpus) == 17 and {d.format for d in corpus} == {"html"}
    assert "controlflow.html#default-argument-values" in corpus.anchors()
