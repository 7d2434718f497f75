"""One block scanner: the corpus parser's sections and the markdown chunker's code blocks agree."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtune import Document, make_chunker
from ragtune.chunking.markdown import blocks
from ragtune.corpus.blocks import scan_blocks
from ragtune.corpus.markdown import parse_markdown


def parsed(text: str):
    return parse_markdown(text, doc_id="d.md")


def kinds(text: str) -> list[tuple[str, str]]:
    return [(b.kind, text[b.start:b.end]) for b in scan_blocks(text)]


def assert_agree(text: str) -> None:
    """Every section the parser finds starts a heading block the chunker sees, and no
    section starts inside a block the chunker treats as code (or HTML, or a table)."""
    p = parsed(text)
    sections, text = p.sections, p.body  # the chunker sees the body: front matter blanked
    chunker_blocks = blocks(text, 0, len(text))
    heads = [b.start for b in chunker_blocks if b.kind == "heading"]
    assert [s.start for s in sections] == heads
    for s in sections:
        for b in chunker_blocks:
            if b.kind in ("code", "html", "table"):
                assert not (b.start <= s.start < b.end), (s.title, text[b.start:b.end])


def test_backtick_in_a_backtick_info_string_is_not_a_fence():
    text = "```a`b\n# Heading\n\ntext under it\n"
    assert [s.title for s in parsed(text).sections] == ["Heading"]
    assert [k for k, _ in kinds(text)] == ["para", "heading", "para"]
    assert_agree(text)
    chunks = make_chunker("markdown", size=64).chunk(Document(id="d.md", title="D", text=text,
                                                             sections=parsed(text).sections))
    assert any("d.md#heading" in c.anchors and "# Heading" in c.text for c in chunks)


@pytest.mark.parametrize("text, titles, code", [
    # backtick and tilde fences; a tilde fence's info string may hold backticks
    ("```py\n# a\n```\n# H\n", ["H"], ["```py\n# a\n```"]),
    ("~~~ `x`\n# a\n~~~\n# H\n", ["H"], ["~~~ `x`\n# a\n~~~"]),
    # a closing fence must be as long as the opening one and of the same character
    ("````\n```\n# a\n~~~~\n````\n# H\n", ["H"], ["````\n```\n# a\n~~~~\n````"]),
    # a closing fence takes no info string
    ("```\n# a\n``` x\n# b\n```\n# H\n", ["H"], ["```\n# a\n``` x\n# b\n```"]),
    # an unclosed fence runs to the end of the document
    ("# H\n```\n# a\n\n## b\n", ["H"], ["```\n# a\n\n## b"]),
    # indented code, but not as the continuation of a paragraph
    ("# H\n\n    # code\n\ntext\n    # continuation\n", ["H"], ["    # code"]),
    # a fence may interrupt a paragraph; up to three spaces of indentation
    ("text\n   ```\n# a\n   ```\n# H\n", ["H"], ["   ```\n# a\n   ```"]),
    # HTML blocks: up to a blank line, or to their end marker
    ("<div>\n# inside\n</div>\n\n# H\n", ["H"], []),
    ("<!--\n# hidden\n\n# still hidden\n-->\n# H\n", ["H"], []),
    ("<details>\n\n# shown\n\n</details>\n", ["shown"], []),
    # a paragraph under a list item or block quote line is no setext heading
    ("- item\n---\n\n> quote\n---\n\nTitle\n=====\n", ["Title"], []),
    # a fence indented inside a list item is a fence
    ("1. step\n\n    ```sh\n    # comment\n    ```\n\n## H\n", ["H"], ["    ```sh\n    # comment\n    ```"]),
    # a list item's continuation paragraph is not indented code
    ("- item\n\n    more about the item\n\n# H\n", ["H"], []),
])
def test_headings_and_code(text, titles, code):
    assert [s.title for s in parsed(text).sections] == titles
    assert [t for k, t in kinds(text) if k == "code"] == code
    assert_agree(text)


def test_tables():
    text = ("intro line\n| a | b |\n|---|:-:|\n| 1 | 2 |\nlazy row\n\n"
            "| a | b |\n|---|\n\n"  # delimiter with fewer cells: not a table
            "x | y\n--|--\n# H\n")
    got = kinds(text)
    assert got[0] == ("para", "intro line")
    assert got[1] == ("table", "| a | b |\n|---|:-:|\n| 1 | 2 |\nlazy row")
    assert got[2][0] == "para"
    assert got[3] == ("table", "x | y\n--|--")
    assert got[4] == ("heading", "# H")
    assert_agree(text)


def test_setext_headings():
    text = "Title\nover two lines\n===\n\nSub {#sub}\n---\n\ntext\n\n---\n"
    secs = parsed(text).sections
    assert [(s.title, s.level, s.id) for s in secs] == [("Title over two lines", 1, "title-over-two-lines"),
                                                       ("Sub", 2, "sub")]
    assert [k for k, _ in kinds(text)] == ["heading", "heading", "para", "rule"]
    assert_agree(text)


def test_blocks_of_a_range_keep_the_kind_they_have_in_the_whole_text():
    text = "```\n# a\n\n    x\n```\n\n# H\n\n    code\n"
    code = [b for b in scan_blocks(text) if b.kind == "code"]
    inner = blocks(text, text.index("# a"), len(text))
    assert inner[0].kind == "code" and inner[0].start == text.index("# a")  # clipped, still code
    assert [b.kind for b in inner] == ["code", "heading", "code"]
    assert code[0].closed and code[0].fence == "```"


LINES = ["# Head", "## Sub {#sub}", "   ### Three", "    # indented", "```", "```py", "```a`b", "~~~", "````",
         "text", "more text", "===", "---", "- item", "1. first", "> quote", "| a | b |", "|---|---|", "<div>",
         "</div>", "<!-- c", "-->", "", "", "\t# tab"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(LINES), max_size=30), st.sampled_from(["\n", "\r\n"]))
def test_parser_and_chunker_agree_on_any_mix(lines, eol):
    text = eol.join(["start", ""] + lines)  # (front matter has its own tests)
    assert_agree(text)
    for b in scan_blocks(text):  # spans are exact and in order
        assert text[b.start:b.end].strip() and b.lines[0][0] == b.start and b.lines[-1][1] == b.end
