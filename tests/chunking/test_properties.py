"""Property tests: every strategy keeps exact spans, loses nothing, respects sizes and overlap.

Every strategy below is a pure function of Hypothesis's draws (no ``hash()``, which Python salts per process),
so a failing example replays in the next run.
"""

from __future__ import annotations

import re
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtune import Document, make_chunker
from ragtune.chunking.tokens import TokenSpans, get_tokenizer
from ragtune.corpus.markdown import parse_markdown

WORDS = ["alpha", "beta", "gamma", "delta", "refund", "invoice", "x", "a1", "naïve", "日本語のテキスト", "😀", "résumé",
         "foo_bar", "42", "end.", "why?", "wow!", "(paren)", "`code`", "**bold**", "tab\there", "-", "|", "#tag"]

def stable_id(text: str) -> int:
    """A small number derived from the text, the same in every process (unlike ``hash``)."""
    return zlib.crc32(text.encode("utf-8")) % 97


words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=30).map(" ".join)
heading = st.tuples(st.integers(1, 4), words, st.booleans()).map(
    lambda t: "#" * t[0] + " " + t[1] + (" {#id-" + str(stable_id(t[1])) + "}" if t[2] else ""))
paragraph = st.lists(words, min_size=1, max_size=4).map("\n".join)
code = st.lists(st.one_of(words, st.just("# not a heading"), st.just("")), min_size=0, max_size=12).map(
    lambda ls: "```python\n" + "\n".join(ls) + "\n```")
table = st.lists(st.lists(st.sampled_from(WORDS[:8]), min_size=2, max_size=2), min_size=1, max_size=12).map(
    lambda rows: "| h1 | h2 |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows))
setext = words.map(lambda w: w + "\n" + "=" * 5)
block = st.one_of(heading, heading, paragraph, paragraph, code, table, setext, st.just("- item one\n- item two"))
markdown_doc = st.tuples(st.lists(block, min_size=0, max_size=14), st.sampled_from(["\n\n", "\n", "\r\n\r\n", "\n\n\n"])).map(
    lambda t: t[1].join(t[0]))
any_text = st.text(alphabet=st.characters(codec="utf-8", categories=["L", "N", "P", "Zs", "Cc", "So"]), max_size=1500)

SIZED = ["fixed", "recursive", "markdown"]
ALL = SIZED + ["section", "document"]


def doc_of(text: str) -> Document:
    parsed = parse_markdown(text, doc_id="d.md")
    return Document(id="d.md", title="Doc", text=parsed.body, sections=parsed.sections)


def chunker(name: str, size: int, overlap: int):
    if name in SIZED:
        return make_chunker(name, size=size, overlap=overlap)
    return make_chunker(name)


def check_invariants(doc: Document, name: str, size: int, overlap: int):
    ch = chunker(name, size, overlap)
    chunks = ch.chunk(doc)
    text = doc.text
    covered = bytearray(len(text))
    for c in chunks:
        assert 0 <= c.start < c.end <= len(text)
        assert c.text == text[c.start:c.end]
        assert c.doc_id == doc.id
        covered[c.start:c.end] = b"\x01" * (c.end - c.start)
        if name in SIZED:
            assert c.tokens is not None and c.tokens <= size, (name, c.tokens, size, c.text)
    lost = [i for i, ch_ in enumerate(text) if not ch_.isspace() and not covered[i]]
    assert not lost, f"{name} lost characters at {lost[:5]}: {text[lost[0]:lost[0] + 20]!r}"
    # deterministic
    again = chunker(name, size, overlap).chunk(doc)
    assert [(c.id, c.start, c.end, c.embed_text) for c in again] == [(c.id, c.start, c.end, c.embed_text) for c in chunks]
    return chunks


settings_ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings_
@given(text=markdown_doc, name=st.sampled_from(ALL), size=st.integers(4, 80), overlap_frac=st.floats(0, 0.5))
def test_invariants_on_markdown(text, name, size, overlap_frac):
    check_invariants(doc_of(text), name, size, int(size * overlap_frac))


@settings_
@given(text=any_text, name=st.sampled_from(ALL), size=st.integers(1, 40), overlap_frac=st.floats(0, 0.9))
def test_invariants_on_arbitrary_text(text, name, size, overlap_frac):
    overlap = min(int(size * overlap_frac), size - 1)
    check_invariants(doc_of(text), name, size, overlap)


@settings_
@given(text=markdown_doc, size=st.integers(4, 60), overlap_frac=st.floats(0, 0.9))
def test_fixed_windows_share_exactly_overlap_tokens(text, size, overlap_frac):
    overlap = min(int(size * overlap_frac), size - 1)
    doc = doc_of(text)
    chunks = make_chunker("fixed", size=size, overlap=overlap).chunk(doc)
    ts = TokenSpans(doc.text, get_tokenizer("regex"))
    for a, b in zip(chunks, chunks[1:]):
        assert a.tokens == size
        assert ts.count(b.start, a.end) == overlap


@settings_
@given(text=markdown_doc, size=st.integers(8, 80), overlap_frac=st.floats(0, 0.5))
def test_recursive_and_markdown_overlap_stays_within_previous_chunk(text, size, overlap_frac):
    overlap = int(size * overlap_frac)
    doc = doc_of(text)
    ts = TokenSpans(doc.text, get_tokenizer("regex"))
    for name in ("recursive", "markdown"):
        chunks = make_chunker(name, size=size, overlap=overlap).chunk(doc)
        for a, b in zip(chunks, chunks[1:]):
            shared = ts.count(b.start, a.end) if b.start < a.end else 0
            assert shared <= overlap


def heading_end(text: str, start: int) -> int:
    """End of a section's heading line(s): one line for ATX, two for setext."""
    eol = text.find("\n", start)
    eol = len(text) if eol < 0 else eol
    if re.match(r" {0,3}#{1,6}(?:[ \t]|$)", text[start:eol]):
        return eol
    nxt = text.find("\n", eol + 1)
    return len(text) if nxt < 0 else nxt


@settings_
@given(text=markdown_doc, size=st.integers(8, 80))
def test_markdown_heading_never_ends_a_chunk(text, size):
    doc = doc_of(text)
    t = doc.text
    chunks = make_chunker("markdown", size=size).chunk(doc)
    heads = [(s.start, heading_end(t, s.start)) for s in doc.sections]
    for c in chunks:
        last = [h for h in heads if c.start <= h[0] < c.end]
        if not last:
            continue
        hs, he = last[-1]
        if c.end <= he and t[he:].strip():
            # only a chunk of nothing but headings may end on one (a chain too long to carry forward)
            body = t[c.start:c.end]
            inside = [h for h in heads if c.start <= h[0] < c.end]
            rest = body
            for a, b in reversed(inside):
                rest = rest[: a - c.start] + rest[b - c.start:]
            assert not rest.strip(), (c.text, t[c.end:c.end + 40])


def test_table_and_code_kept_whole_when_they_fit():
    table = "| a | b |\n|---|---|\n" + "\n".join(f"| r{i} | v{i} |" for i in range(6))
    code = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(6)) + "\n\n# comment\n```"
    text = "# T\n\n" + ("word " * 30) + "\n\n" + table + "\n\n" + ("more " * 30) + "\n\n" + code + "\n\ntail text"
    doc = doc_of(text)
    chunks = make_chunker("markdown", size=60, overlap=0).chunk(doc)
    assert any(table in c.text for c in chunks)
    assert any(code in c.text for c in chunks)
    # the recursive chunker at the same size has no such guarantee, which is the point of markdown
    assert all(c.tokens <= 60 for c in chunks)


def test_oversized_table_repeats_header_and_code_reopens_fence():
    table = "| name | value |\n|---|---|\n" + "\n".join(f"| row{i} | {i} |" for i in range(40))
    code = "```python\n" + "\n".join(f"value_{i} = compute({i})" for i in range(40)) + "\n```"
    doc = doc_of("# T\n\n" + table + "\n\n## Code\n\n" + code + "\n")
    chunks = make_chunker("markdown", size=30, overlap=0).chunk(doc)
    table_pieces = [c for c in chunks if "| row" in c.text]
    assert len(table_pieces) > 1
    for c in table_pieces[1:]:
        assert c.embed_text.startswith("| name | value |\n|---|---|\n| row")
        assert "\n" + c.text.split("\n")[0] in "\n" + table  # cut between rows
    code_pieces = [c for c in chunks if "compute(" in c.text]
    assert len(code_pieces) > 1
    for c in code_pieces[1:]:
        assert c.embed_text.startswith("```python\nvalue_")
    for c in code_pieces[:-1]:
        assert c.embed_text.endswith("\n```")
    assert code_pieces[0].text.startswith("## Code\n\n```python")  # heading stays with its content


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("text", ["", "   \n\t \r\n", "x"])
def test_empty_whitespace_and_tiny_documents(name, text):
    chunks = chunker(name, 16, 4).chunk(doc_of(text))
    assert [c.text for c in chunks] == ([] if not text.strip() else ["x"])


@pytest.mark.parametrize("name", SIZED)
def test_one_200kb_line_without_spaces(name):
    text = "a" * 200_000
    chunks = check_invariants(doc_of(text), name, 256, 32)
    assert len(chunks) > 1


@pytest.mark.parametrize("name", ALL)
def test_crlf_tabs_emoji_cjk(name):
    text = "# Title\r\n\r\nCafé\tnaïve 😀 日本語の文章です。\r\n\r\n## Next\r\n\r\n" + "中文句子。" * 50 + "\r\n"
    check_invariants(doc_of(text), name, 16, 4)


def check_small_to_big(doc: Document, size: int, parent_size: int, overlap: int, parent: str):
    options = dict(size=size, parent_size=parent_size, overlap=overlap, parent=parent)
    ch = make_chunker("small_to_big", **options)
    parents, children = ch.chunk_with_parents(doc)
    text = doc.text
    by_id = {p.id: p for p in parents}
    assert len(by_id) == len(parents)  # parent ids are unique
    for p in parents:
        assert 0 <= p.start < p.end <= len(text) and p.text == text[p.start:p.end] and p.parent_id is None
        assert p.tokens is not None and p.tokens <= parent_size
    covered = bytearray(len(text))
    for c in children:
        assert c.text == text[c.start:c.end] and c.doc_id == doc.id
        parent = by_id[c.parent_id]
        assert parent.start <= c.start and c.end <= parent.end  # a child lies inside its parent
        assert c.tokens is not None and c.tokens <= size
        covered[c.start:c.end] = b"\x01" * (c.end - c.start)
    lost = [i for i, ch_ in enumerate(text) if not ch_.isspace() and not covered[i]]
    assert not lost, f"small_to_big children lost characters at {lost[:5]}"
    assert {c.parent_id for c in children} == set(by_id)  # every parent is reachable from a child
    assert ch.chunk(doc) == children
    again = make_chunker("small_to_big", **options).chunk_with_parents(doc)
    assert again == (parents, children)


@settings_
@given(text=markdown_doc, size=st.integers(4, 40), parent_factor=st.integers(2, 6), overlap_frac=st.floats(0, 0.5),
       parent=st.sampled_from(["markdown", "recursive"]))
def test_small_to_big_children_tile_their_parents(text, size, parent_factor, overlap_frac, parent):
    check_small_to_big(doc_of(text), size, size * parent_factor, int(size * overlap_frac), parent)


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("onnxruntime")
    from ragtune.embed import get_embedder

    return get_embedder("minilm")


SENTENCES = ["The cat sleeps on the sofa.", "Kittens chase a ball of wool.", "Interest rates rose again.",
             "The bank raised its mortgage rates.", "Parcels ship within two days.", "Express delivery costs more.",
             "naïve café résumé", "日本語の文章です。", "Why? Because!", "- a list item", "x"]
prose = st.lists(st.sampled_from(SENTENCES), min_size=0, max_size=12).flatmap(
    lambda ss: st.lists(st.sampled_from([" ", "\n", "\n\n"]), min_size=len(ss), max_size=len(ss)).map(
        lambda seps: "".join(s + sep for s, sep in zip(ss, seps))))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=st.one_of(prose, markdown_doc), size=st.integers(4, 60), threshold=st.one_of(st.none(), st.floats(-1, 1)))
def test_semantic_invariants_with_the_offline_embedder(minilm, text, size, threshold):
    from ragtune.chunking import SemanticChunker, SemanticChunkerConfig

    doc = doc_of(text)
    make = lambda: SemanticChunker(SemanticChunkerConfig(size=size, threshold=threshold), embedder=minilm)  # noqa: E731
    chunks = make().chunk(doc)
    covered = bytearray(len(doc.text))
    for c in chunks:
        assert 0 <= c.start < c.end <= len(doc.text) and c.text == doc.text[c.start:c.end]
        assert c.tokens is not None and c.tokens <= size
        covered[c.start:c.end] = b"\x01" * (c.end - c.start)
    lost = [i for i, ch_ in enumerate(doc.text) if not ch_.isspace() and not covered[i]]
    assert not lost, f"semantic lost characters at {lost[:5]}"
    for a, b in zip(chunks, chunks[1:]):
        assert a.end <= b.start  # in order, never overlapping
    assert [(c.start, c.end) for c in make().chunk(doc)] == [(c.start, c.end) for c in chunks]
