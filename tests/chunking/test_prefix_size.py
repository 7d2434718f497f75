"""With a prefix, a size counts it: a piece and the ``Title > Heading path`` it is indexed with fit the size.

The README's ``--chunker markdown --size 256 --prefix --retriever hybrid`` warned that 11-17% of chunks were longer
than MiniLM's window on new corpora: the prefix came on top of the size. Counted with the embedder's own counter
(the one the window warning uses), no chunk passes the size now, and the README's example fits the window.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest

from ragtune import load_corpus
from ragtune.chunking import chunk_documents
from ragtune.embed import get_embedder
from ragtune.embed.window import window_overflow
from ragtune.pipeline.config import PipelineConfig
from ragtune.registry import CHUNKERS
from tests.helpers import ConstantEmbedder

ROOT = Path(__file__).resolve().parents[2]
SIZED = ("fixed", "recursive", "markdown", "semantic", "small_to_big")
WORDS = ("refund", "invoice", "customer", "configuration", "authentication", "dependency", "middleware",
         "serialization", "parameter", "endpoint", "background", "asynchronous", "validation", "response")


def _words(rnd: random.Random, n: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(n))


@pytest.fixture(scope="module")
def deep_corpus(tmp_path_factory):
    """Pages whose sections sit six levels deep under long headings (10-40 words each), with long paragraphs,
    a table and a code block, and text before the first heading."""
    rnd = random.Random(7)
    folder = tmp_path_factory.mktemp("deep")
    for page in range(3):
        parts = [f"Intro {_words(rnd, 120)}.\n"]
        for level in range(1, 7):
            for _ in range(2):
                parts.append(f"{'#' * level} {_words(rnd, rnd.randint(10, 40))}\n")
                parts.extend(f"{_words(rnd, rnd.randint(20, 300))}.\n" for _ in range(rnd.randint(1, 4)))
        parts.append("| a | b |\n|---|---|\n" + "".join(f"| {_words(rnd, 6)} | {_words(rnd, 6)} |\n" for _ in range(80)))
        parts.append("```python\n" + "".join(f"call_{i}({_words(rnd, 5).replace(' ', ', ')})\n" for i in range(80))
                     + "```\n")
        (folder / f"page{page}.md").write_text("\n".join(parts), encoding="utf-8")
    return load_corpus(folder)


def _chunks(corpus, chunker: str, size: int):
    """The chunks the pipeline indexes for ``--chunker X --size N --prefix --retriever hybrid``, and its embedder."""
    config = PipelineConfig.from_flags({"chunker": chunker, "size": size, "prefix": True,
                                        "retriever": "hybrid"}).resolved(corpus.kind)
    options = config.chunker_config()
    assert options.tokenizer == "minilm"  # sizes counted in the embedder's tokens
    context = {"embedder": ConstantEmbedder()} if chunker == "semantic" else {}
    chunks, _ = chunk_documents(corpus, CHUNKERS.build(config.chunker, options=options, **context))
    return chunks, get_embedder(config.embedder)


@pytest.mark.parametrize("chunker", SIZED)
def test_no_prefixed_chunk_is_longer_than_the_size(deep_corpus, chunker):
    chunks, embedder = _chunks(deep_corpus, chunker, 256)
    # the window warning's counter (the embedder's tokenizer), less the [CLS] and [SEP] it adds to every text
    counts = np.asarray(embedder.count_tokens([c.embed_text for c in chunks])) - 2
    assert len(chunks) > 20
    assert counts.max() <= 256, f"{chunker}: {(counts > 256).sum()} of {len(chunks)} chunks over 256 tokens"
    assert counts.max() > 200  # pieces still use the size
    prefixed = [c for c in chunks if c.embed_text != c.text]
    assert len(prefixed) == len(chunks)


def test_the_readme_example_fits_the_window(deep_corpus):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"ragtune eval .*--chunker markdown --size (\d+) --prefix --retriever hybrid", readme)
    assert found, "the README's chunking example is gone: point this test at what replaced it"
    chunks, embedder = _chunks(deep_corpus, "markdown", int(found.group(1)))
    over = window_overflow(embedder, [c.embed_text for c in chunks], sample=None)
    assert over is not None and over.over == 0, f"{over.over} of {over.total} chunks over the {over.max_tokens}-token window"


def test_a_prefix_longer_than_half_the_size_is_cut_to_half(tmp_path):
    heading = " ".join(f"word{i}" for i in range(40))  # about 40 tokens, under the 300-character clip
    (tmp_path / "a.md").write_text(f"# {heading}\n\n## {heading}\n\n" + "text " * 500, encoding="utf-8")
    doc = load_corpus(tmp_path)["a.md"]
    chunks = CHUNKERS.build("fixed", options={"size": 64, "overlap": 0, "prefix": True}).chunk(doc)
    from ragtune.chunking.tokens import get_tokenizer

    tok = get_tokenizer("regex")
    for c in chunks:
        prefix = c.embed_text[: -len(c.text)].strip()
        assert prefix.endswith("\u2026") and len(tok.spans(prefix)) <= 32
        assert len(tok.spans(c.embed_text)) <= 64


def test_chunks_cached_on_disk_by_an_earlier_chunking_revision_are_not_served(tmp_path, monkeypatch):
    """The same config cuts differently now (the size counts the prefix): a chunking cache written before must
    not hand back the old pieces."""
    import ragtune.chunking as chunking
    from ragtune.pipeline.resources import _cached_chunking

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# Title\n\n## A long heading path here\n\n" + "word " * 300, encoding="utf-8")
    corpus = load_corpus(tmp_path / "docs")
    chunker = CHUNKERS.build("fixed", options={"size": 64, "prefix": True})
    cache = tmp_path / "cache"
    monkeypatch.setattr(chunking, "CHUNKING_REVISION", chunking.CHUNKING_REVISION - 1)
    _cached_chunking(corpus, chunker, cache)
    stale = next(cache.iterdir())
    stale.write_text("", encoding="utf-8")  # what an earlier revision left: served if the key matched
    monkeypatch.undo()
    chunks, _ = _cached_chunking(corpus, chunker, cache)
    assert chunks and len(list(cache.iterdir())) == 2
