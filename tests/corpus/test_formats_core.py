"""The format-independent core of loaders: the document builder, the registry by suffix, extraction in workers
(cached, time-limited, failures one line each), aliases, page anchors and locations on chunks and citations."""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import dataclass

import pytest

import ragtune as rt
from ragtune.cli import main
from ragtune.config import Config
from ragtune.corpus import load_corpus
from ragtune.corpus.formats import DocumentBuilder, heading_slug, strip_section_number
from ragtune.errors import CorpusError
from ragtune.evaluate.evaluate import covers
from ragtune.registry import CHUNKERS, LOADERS


def test_section_numbers_are_not_part_of_the_slug():
    assert strip_section_number("4.7.1. Default Argument Values") == "Default Argument Values"
    assert strip_section_number("A.\tPURPOSE") == "PURPOSE"
    assert strip_section_number("2020") == "2020"  # a title that is only a number stays
    assert heading_slug("4.1. if Statements") == "if-statements"


def _doc():
    b = DocumentBuilder("guide.x", source="guide.x", format="x")
    b.locate({"page": 1})
    b.heading(1, "1. Guide", id="guide", aliases=["top"])
    b.paragraph("# not a heading\n> not a quote   either")
    b.heading(2, "Install")
    b.code("pip install x\n```inner fence```", "bash")
    b.locate({"page": 2})
    b.heading(2, "Install")  # the same title twice: de-duplicated like GitHub
    b.table([["a", "b|c"], ["1", "2"]])
    b.item("first")
    b.item("second", depth=1)
    b.heading(3, "Deep")
    return b.build()


def test_builder_sections_ids_aliases_and_tree():
    d = _doc()
    assert [s.id for s in d.sections] == ["guide", "install", "install-1", "deep"]
    assert d.sections[0].aliases == ("top",)
    assert d.title == "Guide"
    assert d.sections[3].parent == "guide.x#install-1"
    assert d.sections[3].heading_path == ("1. Guide", "Install", "Deep")
    assert d.sections[0].end == len(d.text) and d.sections[1].end == d.sections[2].start
    for s in d.sections:  # every section starts at its heading line
        assert d.text[s.start:].startswith("#" * min(s.level, 6) + " ")


def test_builder_escapes_block_markers_and_fences_code():
    d = _doc()
    assert "\\# not a heading\n\\> not a quote either" in d.text
    assert "````bash\npip install x\n```inner fence```\n````" in d.text  # the fence outgrows the one inside
    assert "| a | b\\|c |\n|---|---|\n| 1 | 2 |" in d.text
    assert "- first\n  - second" in d.text  # consecutive items, one line each


def test_locations_reach_chunks_and_page_anchors_resolve():
    d = _doc()
    corpus = rt.Corpus([d])
    p2 = d.text.index("### Deep") if "### Deep" in d.text else d.text.index("# Deep")
    assert d.location(p2) == {"page": 2}
    assert d.location(0, p2) == {"page": 1, "page_end": 2}
    chunks = CHUNKERS.build("section").chunk(d)
    assert {c.metadata["location"]["page"] for c in chunks} == {1, 2}
    page2 = corpus.resolve("guide.x#page=2")
    assert page2.page == 2 and not page2.is_document
    assert [covers(c, page2) for c in chunks] == [c.metadata["location"].get("page_end", c.metadata["location"]["page"])
                                                  == 2 for c in chunks]
    assert not corpus.has_anchor("guide.x#page=9")
    assert corpus.resolve("guide.x#top").section.id == "guide"  # an alias names its section
    assert corpus.n_sections == 4  # aliases are not extra sections


# -- the registry and extraction ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class _SlowConfig(Config):
    delay: float = 0.0
    fail: str = ""


class _Probe:
    """A test format: ``.probe`` files; each parse appends to ``<file>.parsed`` (so forked workers are counted)."""

    name = "probe"
    version = "1"
    cache = True

    def __init__(self, config: _SlowConfig):
        self.config = config

    def load(self, data: bytes, doc_id: str, source: str):
        with open(source + ".parsed", "a") as f:
            f.write(f"{os.getpid()}\n")
        text = data.decode()
        if "HANG" in text:
            time.sleep(3600)  # longer than any run: only a stop ends it
        if "BOOM" in text:
            raise ZeroDivisionError("division by zero")
        if "BAD" in text:
            raise CorpusError("encrypted: pass its password")
        b = DocumentBuilder(doc_id, source=source, format="probe")
        b.locate({"line": 1})
        b.heading(1, text.splitlines()[0] if text else "")
        b.paragraph("\n".join(text.splitlines()[1:]))
        return b.build()


@pytest.fixture
def probe():
    LOADERS.register("probe", _SlowConfig, _Probe, suffixes=(".probe",), replace=True)
    yield
    LOADERS.unregister("probe")


def _write(folder, files):
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def _parses(path) -> int:
    p = path.parent / (path.name + ".parsed")
    return len(p.read_text().split()) if p.exists() else 0


def test_extraction_is_cached_by_content(tmp_path, probe):
    folder = tmp_path / "c"
    folder.mkdir()
    _write(folder, {"a.probe": "Alpha\nbody a", "b.probe": "Beta\nbody b", "c.md": "# Gamma\n"})
    first = load_corpus(folder)
    assert [d.id for d in first] == ["a.probe", "b.probe", "c.md"] and first.kind == "documents"
    assert first["a.probe"].format == "probe" and first["a.probe"].sections[0].id == "alpha"
    again = load_corpus(folder)
    assert _parses(folder / "a.probe") == 1 and _parses(folder / "b.probe") == 1  # read from the cache
    assert again["a.probe"] == first["a.probe"]
    (folder / "a.probe").write_text("Alpha\nchanged")
    assert "changed" in load_corpus(folder)["a.probe"].text
    assert _parses(folder / "a.probe") == 2 and _parses(folder / "b.probe") == 1


def test_files_that_fail_are_one_line_each_and_the_rest_loads(tmp_path, probe, capsys):
    _write(tmp_path, {"ok.probe": "Fine\ntext", "boom.probe": "BOOM", "bad.probe": "BAD", "empty.probe": "",
                      "note.md": "# Note\n"})
    corpus = load_corpus(tmp_path)
    assert [d.id for d in corpus] == ["note.md", "ok.probe"]
    err = capsys.readouterr().err
    assert "boom.probe: cannot be parsed (ZeroDivisionError: division by zero)" in err
    assert "bad.probe: encrypted: pass its password" in err
    assert "empty.probe: no text could be extracted" in err
    assert len(corpus.skipped) == 3
    with pytest.raises(CorpusError, match=r"3 file\(s\) cannot be read: .*bad\.probe"):
        load_corpus(tmp_path, strict=True)


def test_a_parse_past_its_time_limit_is_stopped(tmp_path, probe, capsys):
    _write(tmp_path, {"hang.probe": "HANG", "ok.probe": "Fine\ntext", "z.probe": "Zed\nlast"})
    def hung(*_):
        raise AssertionError("load_corpus did not return: the parse past its limit was not stopped")

    before = signal.signal(signal.SIGALRM, hung)
    signal.alarm(120)  # a guard against a true hang only: the parse sleeps an hour unless it is stopped
    try:
        corpus = load_corpus(tmp_path, extract_timeout_s=2)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)
    assert [d.id for d in corpus] == ["ok.probe", "z.probe"]
    assert "hang.probe: parsing it took more than 2 s and was stopped" in capsys.readouterr().err


def test_formats_override_the_suffix_table(tmp_path, probe):
    _write(tmp_path, {"a.txt": "# Heading\nbody\n", "b.bak": "x", "c.md": "# C\n"})
    assert load_corpus(tmp_path)["a.txt"].sections == ()
    as_md = load_corpus(tmp_path, formats={".txt": "markdown", "bak": "none"})
    assert as_md["a.txt"].sections[0].id == "heading" and "b.bak" not in as_md
    assert "c.md" not in load_corpus(tmp_path, formats={".md": "none"})
    with pytest.raises(CorpusError, match="unknown format; choose one of: .*markdown"):
        load_corpus(tmp_path, formats={".txt": "markdwn"})
    one = load_corpus(tmp_path / "a.txt", formats={".txt": "probe"})
    assert one["a.txt"].format == "probe" and one.kind == "documents"


def test_citations_and_search_carry_the_location(tmp_path, probe):
    _write(tmp_path, {"a.probe": "Refunds\nMoney back within thirty days.", "b.probe": "Shipping\nParcels ship."})
    pipe = rt.build_pipeline(load_corpus(tmp_path), rt.PipelineConfig.from_flags({"retriever": "bm25"}))
    ranking = pipe.retriever.search("money back", k=1)
    hit = ranking.hits[0]
    assert hit.chunk.doc_id == "a.probe" and hit.chunk.metadata["location"] == {"line": 1}
    assert ranking.to_dict()["hits"][0]["location"] == {"line": 1}  # what search --json prints
    from ragtune.answer.base import Citation

    c = Citation(1, True, hit.chunk.id, "a.probe", hit.chunk.anchor, 0, 5, hit.chunk.metadata["location"])
    assert c.to_dict()["location"] == {"line": 1}


def test_a_store_keeps_formats_aliases_and_locations(tmp_path):
    from ragtune.store.store import _doc_from_record, _doc_record

    d = _doc()
    back = _doc_from_record(json.loads(json.dumps(_doc_record(d))))
    assert back == d


def test_cli_corpus_show_and_format_flag(tmp_path, capsys):
    _write(tmp_path, {"a.txt": "# Heading\nbody\n"})
    assert main(["corpus", "show", "--corpus", str(tmp_path), "a.txt", "--format", ".txt=markdown",
                        "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["format"] == "markdown" and shown["sections"][0]["anchor"] == "a.txt#heading"
    assert shown["sections"][0]["location"] == {"line": 1, "line_end": 2}
    with pytest.raises(SystemExit):
        main(["anchors", "--corpus", str(tmp_path), "--format", "txt"])
    assert "expected .SUFFIX=FORMAT" in capsys.readouterr().err


def test_an_anchor_may_leave_out_the_extension(tmp_path):
    _write(tmp_path, {"guide.md": "# Guide\n## Install\ntext\n", "notes.txt": "plain", "other.md": "# O\n"})
    corpus = load_corpus(tmp_path)
    span = corpus.resolve("guide#install")
    assert span.doc_id == "guide.md" and span.section.id == "install" and span.anchor == "guide#install"
    assert corpus.resolve("notes").doc_id == "notes.txt" and corpus.has_anchor("guide")
    assert not corpus.has_anchor("guide#nope")
    (tmp_path / "guide.txt").write_text("the same guide, as text")
    both = load_corpus(tmp_path)
    assert not both.has_anchor("guide#install")
    with pytest.raises(rt.UnknownAnchorError, match=r"in 2 formats \(guide\.md, guide\.txt\); write the one meant"):
        both.resolve("guide#install")
    assert both.resolve("guide.md#install").section.id == "install"


def test_a_file_past_the_size_limit_is_one_line_and_never_read(tmp_path, probe, capsys):
    _write(tmp_path, {"big.probe": "Big\n" + "x" * 5000, "small.probe": "Small\ntext"})
    corpus = load_corpus(tmp_path, max_file_bytes=1000)
    assert [d.id for d in corpus] == ["small.probe"]
    assert "big.probe: file of 5,004 bytes or more, larger than the 1,000 bytes allowed" in capsys.readouterr().err
    assert _parses(tmp_path / "big.probe") == 0  # refused before any loader saw it
