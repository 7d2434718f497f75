"""Spans are offsets into the source file, front matter or not, for every chunker."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtune import load_corpus, make_chunker
from ragtune.chunking import CHUNKERS, SemanticChunker, SemanticChunkerConfig
from tests.helpers import write_files

FILES = {
    "plain.md": "# Plain\n\nNo front matter here.\n",
    "fm.md": "---\ntitle: Billing guide\nowner: finance\n---\n\n# Billing\n\nRefunds take 14 days.\n\n"
             "## Refunds {#refunds}\n\nAsk support within 30 days.\n\n```sh\n# not a heading\n```\n",
    "crlf.md": "---\r\ntitle: Windows\r\n---\r\n# Crlf\r\n\r\nLine one.\r\n\r\n## Two\r\n\r\nLine two.\r\n",
    "bom.md": "\ufeff---\ntitle: With a BOM\n---\nSetext\n======\n\nbody text\n",
    "notes.txt": "plain text file\n\nwith two paragraphs\n",
}


class WordEmbedder:
    """A tiny deterministic embedder so the semantic chunker runs offline."""

    model_id = "words"
    dim = 2
    max_tokens = 64
    cache_key = "words:1"

    def embed(self, texts):
        v = np.array([[1.0 + len(t) % 3, 1.0 + len(t) % 5] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    embed_queries = embed


def chunkers(size: int):
    for name in CHUNKERS.names():
        if name == "semantic":
            yield name, SemanticChunker(SemanticChunkerConfig(size=max(size, 8)), embedder=WordEmbedder())
        elif name in ("section", "document"):
            yield name, make_chunker(name)
        elif name == "small_to_big":
            yield name, make_chunker(name, size=size, parent_size=size * 4)
        else:
            yield name, make_chunker(name, size=size, overlap=size // 4)


def source_text(path) -> str:
    """The file's text as an editor shows it: UTF-8, a leading BOM dropped, line endings kept."""
    with open(path, encoding="utf-8-sig", newline="") as f:
        return f.read()


def all_chunks(chunker, doc):
    if hasattr(chunker, "chunk_with_parents"):
        children, parents = chunker.chunk_with_parents(doc)
        return children + parents
    return chunker.chunk(doc)


def check_corpus(root, size: int) -> int:
    corpus = load_corpus(root)
    n = 0
    for doc in corpus:
        src = source_text(doc.source)
        assert len(doc.text) == len(src)
        for s in doc.sections:  # a section's heading is where its span says, in the file
            a, b = doc.source_span(s.start, s.end)
            assert src[a:b] == doc.text[s.start:s.end]
        for name, chunker in chunkers(size):
            for c in all_chunks(chunker, doc):
                assert c.text == doc.text[c.start:c.end]
                a, b = doc.source_span(c.start, c.end)
                assert c.text == src[a:b], (name, doc.id, c.text)
                assert (a, b) == (c.start, c.end)  # no offset to add for documents loaded now
                n += 1
    return n


@pytest.mark.parametrize("size", [4, 16, 64])
def test_every_chunk_of_every_chunker_is_a_span_of_the_source_file(tmp_path, size):
    assert check_corpus(write_files(tmp_path, FILES), size) > 20


def test_front_matter_is_not_indexed_but_keeps_its_place(tmp_path):
    corpus = load_corpus(write_files(tmp_path, FILES))
    doc = corpus["fm.md"]
    assert doc.metadata == {"title": "Billing guide", "owner": "finance"}
    assert doc.title == "Billing guide"
    assert "finance" not in doc.text and doc.text.startswith("   \n")
    refunds = corpus.resolve("fm.md#refunds")
    src = source_text(doc.source)
    assert src[refunds.start:].startswith("## Refunds {#refunds}")
    assert doc.text.count("\n", 0, refunds.start) + 1 == 10  # line numbers match the file too
    for name, chunker in chunkers(64):
        assert all("finance" not in c.text and "title:" not in c.text for c in all_chunks(chunker, doc)), name


front = st.lists(st.sampled_from(["title: T", "tags: [a, b]", "n: 1", ""]), max_size=4).map(
    lambda ls: "---\n" + "".join(line + "\n" for line in ls) + "---\n")
body_line = st.sampled_from(["# H", "## Sub {#sub}", "text with words", "more words here", "```", "# in code?",
                             "| a | b |", "|---|---|", "- item", "", "", "Setext", "===="])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(head=front, lines=st.lists(body_line, max_size=25), eol=st.sampled_from(["\n", "\r\n"]),
       bom=st.booleans(), size=st.integers(3, 40))
def test_source_offsets_property(tmp_path_factory, head, lines, eol, bom, size):
    text = ("\ufeff" if bom else "") + (head + "\n".join(lines)).replace("\n", eol)
    root = tmp_path_factory.mktemp("c")
    (root / "d.md").write_text(text, encoding="utf-8", newline="")
    check_corpus(root, size)
