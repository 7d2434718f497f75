"""A corpus folder is untrusted input: nothing outside it is read, and no file in it can exhaust the machine.

Each test here failed before its fix: links out of the folder were indexed and served, a dangling link stopped
the load, a YAML alias bomb grew past 3 GB, non-string front matter keys crashed builds and filters, and
unclosed inline markers or many headings took quadratic time.
"""

from __future__ import annotations

import datetime
import json
import os
import tracemalloc

import pytest

from ragtune import Corpus, CorpusError, Document, load_corpus
from tests.growth import assert_linear
from tests.helpers import write_files, write_jsonl

symlinks = pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt", reason="needs symbolic links")


# --- links -------------------------------------------------------------------------------------------------

@symlinks
def test_links_out_of_the_corpus_are_skipped_and_links_inside_followed_once(tmp_path, capsys):
    outside = write_files(tmp_path / "outside", {"secret.txt": "TOPSECRET credentials", "more/b.md": "# B\n\nTOPSECRET\n"})
    docs = write_files(tmp_path / "docs", {"a.md": "# A\n\nabout refunds\n", "real/c.md": "# C\n\nshipping\n",
                                           ".drafts/d.md": "# D\n\ndraft\n"})
    os.symlink(outside / "secret.txt", docs / "passwd.txt")  # a file link out of the corpus
    os.symlink(outside / "more", docs / "ext")  # a folder link out of the corpus
    os.symlink("a.md", docs / "alias.md")  # a file already in the corpus: read once, under its own name
    os.symlink("real", docs / "also-real")  # a folder already in the corpus
    os.symlink(".drafts", docs / "drafts")  # a hidden folder reached through a link: followed
    os.symlink(".", docs / "loop")  # a loop: ends
    os.symlink("nowhere.md", docs / "gone.md")  # dangling: skipped, the rest still loads
    corpus = load_corpus(docs)
    assert [d.id for d in corpus] == ["a.md", "drafts/d.md", "real/c.md"]
    assert not any("TOPSECRET" in d.text for d in corpus)
    reasons = dict(corpus.skipped)
    assert "outside the corpus folder" in reasons[str(docs / "passwd.txt")]
    assert "outside the corpus folder" in reasons[str(docs / "ext")]
    assert "nowhere.md, which does not exist" in reasons[str(docs / "gone.md")]
    err = capsys.readouterr().err
    assert err.count("warning: corpus: skipped") == 3 and "passwd.txt" in err
    with pytest.raises(CorpusError, match="3 path.*cannot be loaded.*outside the corpus folder"):
        load_corpus(docs, strict=True)

    from ragtune.pipeline import PipelineConfig
    from ragtune.store import IndexStore, build_version, load_pipeline

    store = IndexStore(tmp_path / "store")
    build_version(store, corpus, PipelineConfig.from_flags({"chunker": "section", "retriever": "bm25"}))
    hits = load_pipeline(store).retriever.search("TOPSECRET credentials", k=10).hits
    assert not any("TOPSECRET" in h.chunk.text for h in hits)


@symlinks
def test_a_beir_folder_whose_corpus_links_out_of_it_is_refused(tmp_path):
    data = write_jsonl(tmp_path / "elsewhere" / "corpus.jsonl", [{"_id": "1", "text": "x"}])
    beir = tmp_path / "beir"
    beir.mkdir()
    os.symlink(data, beir / "corpus.jsonl")
    with pytest.raises(CorpusError, match="outside the corpus folder"):
        load_corpus(beir)
    assert [d.id for d in load_corpus(data)] == ["1"]  # named directly, it is the operator's choice


# --- inputs that eat the machine -----------------------------------------------------------------------------

def _laughs(levels: int, width: int = 9) -> str:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def _merges(levels: int) -> str:
    lines = ["m0: &m0 {k0: 0}"]
    for i in range(1, levels):
        lines.append(f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}], k{i}: {i}}}")
    return "\n".join(lines) + "\n"


def test_yaml_alias_and_merge_bombs_are_refused_before_they_expand(tmp_path):
    bomb = _laughs(9)
    assert len(bomb) < 1100  # a 1 kB file: 9**9 values once written out
    files = {"laughs.md": f"---\n{bomb}---\n# T\n", "merges.md": f"---\n{_merges(22)}---\n# T\n",
             "self.md": "---\na: &a [1, *a]\n---\n# T\n"}
    messages = {"laughs.md": "expands to more than", "merges.md": "expands to more than", "self.md": "refers to itself"}
    for name, text in files.items():
        folder = write_files(tmp_path / name.split(".")[0], {name: text})
        tracemalloc.start()
        with pytest.raises(CorpusError, match=messages[name]):
            load_corpus(folder)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 50 * 2**20, (name, peak)  # refused before it expands: 9**9 values would take gigabytes
    small = write_files(tmp_path / "ok", {"a.md": "---\nbase: &b {team: docs}\nowner: *b\n---\n# A\n"})
    assert load_corpus(small)["a.md"].metadata == {"base": {"team": "docs"}, "owner": {"team": "docs"}}


def test_front_matter_size_depth_and_values_are_bounded(tmp_path):
    cases = {
        "big.md": ("---\nnotes: " + "x" * (70 * 1024) + "\n---\n# T\n", "front matter is .* more than the 65,536"),
        "deep.md": ("---\na: " + "[" * 3000 + "]" * 3000 + "\n---\n# T\n", "nested more than 32 levels"),
        "int.md": ("---\nn: " + "9" * 5000 + "\n---\n# T\n", "invalid value in YAML front matter"),
    }
    for name, (text, message) in cases.items():
        folder = write_files(tmp_path / name.split(".")[0], {name: text})
        with pytest.raises(CorpusError, match=message):
            load_corpus(folder)


def test_metadata_made_in_python_is_bounded_too():
    from ragtune.corpus.metadata import normalise_metadata

    with pytest.raises(CorpusError, match="d: metadata too large"):
        normalise_metadata({"a": list(range(10_001))}, source="d")
    with pytest.raises(CorpusError, match="d: metadata too large"):
        normalise_metadata({"a": "x" * 1_000_001}, source="d")
    loop: list = []
    loop.append(loop)
    with pytest.raises(CorpusError, match="refers to itself"):
        Corpus([Document(id="d", title="t", text="x", metadata={"a": loop})])
    plain = {"a": [1, "b", None, 2.5, {"c": True}]}
    assert normalise_metadata(plain, source="d") is plain  # nothing to change: nothing copied


def test_a_file_over_the_size_cap_is_refused_before_it_is_read(tmp_path):
    from ragtune.corpus import MAX_FILE_BYTES

    assert MAX_FILE_BYTES == 64 * 2**20
    folder = write_files(tmp_path / "docs", {"a.md": "# A\n\n" + "word " * 400, "b.txt": "small"})
    with pytest.raises(CorpusError, match=r"a\.md: file of 2,005 bytes or more, larger than the 1,000 bytes allowed"):
        load_corpus(folder, max_file_bytes=1000)
    beir = write_jsonl(tmp_path / "beir" / "corpus.jsonl", [{"_id": "1", "text": "x"}, {"_id": "2", "text": "y" * 3000}])
    with pytest.raises(CorpusError, match=r"corpus\.jsonl:2: line of .* larger than the 1,000 bytes allowed"):
        load_corpus(beir.parent, max_file_bytes=1000)
    assert len(load_corpus(beir.parent)) == 2


def test_a_large_beir_document_is_loaded_without_copies_of_the_file(tmp_path):
    size = 8 * 2**20
    text = ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]
    path = write_jsonl(tmp_path / "beir" / "corpus.jsonl", [{"_id": "big", "title": "t", "text": text}])
    del text
    tracemalloc.start()
    corpus = load_corpus(path.parent)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(corpus["big"].text) == size
    assert peak < 2.6 * size, f"peak {peak / size:.1f}x the document"  # the line and its text; was 4x


# --- metadata ------------------------------------------------------------------------------------------------

def test_non_string_keys_and_yaml_values_become_plain_json(tmp_path):
    fm = ("2020: yes\ntrue: 1\n~: x\n2021-05-01: d\ndate: 2020-01-01\nwhen: 2020-01-01 10:00:00\n"
          "tags: !!set {b, a}\nratio: .nan\nbin: !!binary aGk=\nnested: {1: [2020-01-02, {2: 3}]}\n")
    folder = write_files(tmp_path / "docs", {"a.md": f"---\n{fm}---\n# A\n\ntext\n"})
    corpus = load_corpus(folder)
    meta = corpus["a.md"].metadata
    assert meta == {"2020": True, "true": 1, "null": "x", "2021-05-01": "d", "date": "2020-01-01",
                    "when": "2020-01-01T10:00:00", "tags": ["a", "b"], "ratio": "nan", "bin": "aGk=",
                    "nested": {"1": ["2020-01-02", {"2": 3}]}}
    json.loads(json.dumps(meta, sort_keys=True, allow_nan=False))
    assert len(corpus.fingerprint) == 64
    clash = write_files(tmp_path / "clash", {"a.md": "---\n1: a\n'1': b\n---\n# A\n"})
    with pytest.raises(CorpusError, match="same key once written as text"):
        load_corpus(clash)
    # a corpus made in Python goes through the same place
    made = Corpus([Document(id="d", title="t", text="x", metadata={2020: datetime.date(2020, 1, 1), "s": {3}})])
    assert made["d"].metadata == {"2020": "2020-01-01", "s": [3]}


def test_an_index_builds_and_filters_over_non_string_keys(tmp_path):
    from ragtune.errors import ConfigError
    from ragtune.pipeline import PipelineConfig
    from ragtune.retrieve.filters import ChunkFilter
    from ragtune.store import IndexStore, build_version, load_pipeline
    from ragtune.types import Chunk

    folder = write_files(tmp_path / "docs", {"a.md": "---\n2020: yes\nlang: en\n---\n# A\n\nrefunds\n",
                                             "b.md": "---\nlang: de\ndate: 2020-01-01\n---\n# B\n\nshipping\n"})
    store = IndexStore(tmp_path / "store")
    build_version(store, load_corpus(folder), PipelineConfig.from_flags({"chunker": "section", "retriever": "bm25"}))
    retriever = load_pipeline(store).retriever
    assert [h.chunk.doc_id for h in retriever.search("refunds shipping", k=5, filters="lang = de").hits] == ["b.md"]
    with pytest.raises(ConfigError, match="unknown filter field.*2020, date, dir, doc_id, lang, path"):
        retriever.search("refunds", k=5, filters="nope = 1")
    # chunks made elsewhere with an int key: the filter's field list still sorts
    chunk = Chunk(id="c", doc_id="d", text="x", start=0, end=1, embed_text="x", metadata={2020: True, "a": 1})
    with pytest.raises(ConfigError, match="fields in this corpus: 2020, a, dir"):
        ChunkFilter([chunk]).mask("nope = 1")


def test_lone_surrogates_in_a_beir_corpus_do_not_break_hashing(tmp_path):
    path = tmp_path / "beir" / "corpus.jsonl"
    path.parent.mkdir()
    path.write_text('{"_id": "a\\ud800", "title": "\\udc00", "text": "x \\ud83d", "metadata": {"k\\ud800": "\\udfff"}}\n')
    corpus = load_corpus(path.parent)
    doc = corpus.documents[0]
    assert doc.id == "a\ufffd" and doc.text == "x \ufffd" and doc.metadata == {"k\ufffd": "\ufffd"}
    assert len(corpus.fingerprint) == 64


# --- growth ------------------------------------------------------------------------------------------------
# Quadratic work is caught by the ratio when the input grows (tests/growth.py), never by seconds.

UNCLOSED = ["**a ", "__a ", "*a ", "_a ", "~~a\n", "[a](", "![a](", "[a][", "<a ", "[", "`a", "**_a ~~[ "]


def test_inline_markdown_stripping_is_linear_on_unclosed_markers():
    from ragtune.corpus.markdown import strip_inline_markdown

    for unit in UNCLOSED:
        assert_linear(strip_inline_markdown, lambda n, u=unit: u * n, 5000, repr(unit))  # "**a " x 8,000 was 4.3 s


def test_headings_with_unclosed_markers_and_long_lines_parse_in_linear_time():
    from ragtune.corpus.blocks import scan_blocks
    from ragtune.corpus.markdown import parse_markdown

    def parse(text: str) -> None:
        scan_blocks.cache_clear()
        parse_markdown(text, doc_id="d")

    cases = {
        # a 180 kB file of unclosed ** in headings took 207 s to build
        "unclosed ** in a setext heading": lambda n: "**a\n" * (n // 4) + "===\n",
        "unclosed ** in an ATX heading": lambda n: "# " + "**a " * (n // 4) + "\n",
        "spaces in an ATX heading": lambda n: "# a" + " " * n + "b\n",
        "spaces before an attribute list": lambda n: "# a {" + " " * n + "b\n",
        "spaces after a table delimiter row": lambda n: "a | b\n---" + " " * n + "x\n",
        "spaces in an emphasised heading": lambda n: "# *a" + " " * n + "b\n",
    }
    for what, make in cases.items():
        assert_linear(parse, make, 20_000, what)


def test_many_headings_parse_and_chunk_in_linear_time():
    from ragtune.chunking.section import SectionChunker
    from ragtune.corpus.markdown import parse_markdown

    def build(text: str) -> None:
        parsed = parse_markdown(text, doc_id="d")
        doc = Document(id="d", title="t", text=parsed.body, sections=parsed.sections)
        SectionChunker().chunk(doc)

    def headings(n: int) -> str:
        return "# Top\n\n" + "".join(f"{'#' * (2 + i % 4)} h{i}\n\ntext {i}\n\n" for i in range(n))

    assert_linear(build, headings, 2_000, "headings")  # 50,000 took 96 s


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(8))


def test_every_yaml_reader_refuses_an_alias_bomb(tmp_path):
    """Golden sets, sweep grids and config files go through the same bounded loader as front matter."""
    from ragtune.config import read_config_file
    from ragtune.errors import ConfigError, GoldenSetError, GridError
    from ragtune.golden import load_golden
    from ragtune.sweep import load_grid

    for name, load, error in (("g.yaml", load_golden, GoldenSetError), ("grid.yaml", load_grid, GridError),
                              ("c.yaml", read_config_file, ConfigError)):
        (tmp_path / name).write_text(BOMB)
        tracemalloc.start()
        with pytest.raises(error, match="expands to more than"):
            load(str(tmp_path / name))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 50 * 2**20, (name, peak)  # refused before it expands


def test_a_large_golden_set_without_aliases_is_not_refused(tmp_path):
    from ragtune.golden import load_golden

    rows = "".join(f"- id: q{i}\n  q: question {i}\n  relevant: [a.md, b.md#s{i}]\n" for i in range(2500))
    (tmp_path / "g.yaml").write_text(rows)  # about 25,000 values: past the front-matter budget, fine for a golden set
    assert len(load_golden(str(tmp_path / "g.yaml"))) == 2500
