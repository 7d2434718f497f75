"""One very long heading costs work linear in its length under every chunker, the prefix included.

A heading is repeated in every chunk cut from its section (heading path, anchor, ``Title > Heading`` prefix).
`# ` followed by 30,000 words took 643 MB under the default chunker and 60,000 words 2.3 GB: each of the
thousands of window-sized pieces carried the whole heading. Headings are now clipped where they are repeated
(``ragtune.corpus.headings``) and a prefix takes at most half of a size that counts it.
"""

from __future__ import annotations

import json
import random
import tracemalloc

import pytest

from ragtune import load_corpus
from ragtune.corpus.headings import MAX_HEADING_CHARS, clip_heading
from ragtune.pipeline.config import PipelineConfig
from ragtune.registry import CHUNKERS
from tests.helpers import ConstantEmbedder

WORDS = ("alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "theta")


def heading_file(tmp_path, words: int, name: str):
    rnd = random.Random(words)
    folder = tmp_path / name
    folder.mkdir()
    heading = " ".join(rnd.choice(WORDS) for _ in range(words))
    (folder / "a.md").write_text(f"# {heading}\n\nOne short line under it.\n", encoding="utf-8")
    return load_corpus(folder)["a.md"]


# every registered chunker, with the prefix on where it takes one, sizes small enough to make many pieces
CASES = {
    "fixed": {"size": 64},
    "recursive": {"size": 64},
    "markdown": {"size": 64},
    "semantic": {"size": 64},
    "small_to_big": {"size": 32, "parent_size": 128},
    "small_to_big/section": {"size": 64, "parent": "section"},
    "section": {"max_tokens": 64},
    "document": {},
}


def build(case: str):
    name = case.split("/")[0]
    options = {**CASES[case], "prefix": True}
    context = {"embedder": ConstantEmbedder()} if name == "semantic" else {}
    return CHUNKERS.build(name, options=options, **context)


def output_chars(chunker, document) -> int:
    """What chunking the document produces, in characters: every chunk (and parent) as the JSON it is stored as."""
    with_parents = getattr(chunker, "chunk_with_parents", None)
    chunks = [c for part in with_parents(document) for c in part] if with_parents else chunker.chunk(document)
    return sum(len(json.dumps(c.to_dict())) for c in chunks)


def test_every_registered_chunker_is_covered():
    assert {c.split("/")[0] for c in CASES} >= set(CHUNKERS.names())


@pytest.mark.parametrize("case", list(CASES))
def test_one_long_heading_costs_linear_output_under_every_chunker(tmp_path, case):
    chunker = build(case)
    n = 3000
    small = output_chars(chunker, heading_file(tmp_path, n, "small"))
    large = output_chars(chunker, heading_file(tmp_path, 2 * n, "large"))
    # linear: twice the heading, about twice the output; each piece carrying the whole heading made it 4x
    assert large / small < 3, f"{case}: twice the heading made {large / small:.1f}x the output ({small} -> {large})"


def test_the_default_chunker_on_a_doubled_heading_grows_linearly_in_output_and_memory(tmp_path):
    config = PipelineConfig().resolved("markdown")
    chunker = CHUNKERS.build(config.chunker, options=config.chunker_config())
    docs = [heading_file(tmp_path, n, f"w{n}") for n in (4000, 8000)]
    chunker.chunk_with_parents(docs[0])  # the tokenizer loaded outside the measurement
    out, peaks = [], []
    for doc in docs:
        tracemalloc.start()
        out.append(output_chars(chunker, doc))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert out[1] / out[0] < 3, out
    assert peaks[1] / peaks[0] < 3, peaks


def test_the_default_chunker_on_a_30k_word_heading_peaks_under_40_mb(tmp_path):
    """The audit's file: `# ` and 30,000 words (about 170 KB). Python's allocations while the default pipeline's
    chunker runs (the document loaded beforehand) peaked at 634 MB before headings were clipped, about 5 MB
    after; the bound, 40 MB, is about 240x the file."""
    config = PipelineConfig().resolved("markdown")
    chunker = CHUNKERS.build(config.chunker, options=config.chunker_config())
    doc = heading_file(tmp_path, 30_000, "w30k")
    chunker.chunk_with_parents(heading_file(tmp_path, 10, "warm"))  # the tokenizer loaded outside the measurement
    tracemalloc.start()
    try:
        parents, children = chunker.chunk_with_parents(doc)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert children and parents
    assert peak < 40 * 2**20, f"peak {peak / 2**20:.0f} MB for a {len(doc.text) / 1024:.0f} KB heading"


def test_a_long_heading_is_clipped_where_it_is_repeated_and_whole_in_the_text(tmp_path):
    doc = heading_file(tmp_path, 2000, "one")
    (section,) = doc.sections
    assert len(section.title) <= MAX_HEADING_CHARS and section.title.endswith("\u2026")
    assert section.heading_path == (section.title,) and doc.title == section.title
    assert len(section.id) <= MAX_HEADING_CHARS
    chunks = CHUNKERS.build("section", options={"prefix": True}).chunk(doc)
    assert chunks[0].text.startswith("# ") and len(chunks[0].text) > 10_000  # the source keeps the heading whole
    assert chunks[0].heading_path == (section.title,)
    assert chunks[0].embed_text.startswith(section.title + "\n\n")


def test_clip_heading_keeps_short_headings_and_cuts_long_ones_at_a_space():
    assert clip_heading("Refunds and returns") == "Refunds and returns"
    exact = "x" * MAX_HEADING_CHARS
    assert clip_heading(exact) is exact
    long = "word " * 100
    clipped = clip_heading(long)
    assert len(clipped) <= MAX_HEADING_CHARS and clipped.endswith("word\u2026")
    assert len(clip_heading("y" * 10_000)) == MAX_HEADING_CHARS  # no space: cut at the bound
