"""The DOCX loader's memory and limits: loading a file takes at most a stated multiple of its unpacked XML plus a
fixed amount per paragraph, whatever the shape of that XML (one-letter paragraphs by the hundred thousand, runs by
the million, one huge text node); a file past the loader's limits is skipped in one line and the rest loads.

Peak memory is measured in a fresh interpreter: its own peak (``VmHWM``: ``ru_maxrss`` would count what the test
process held before exec) and that of the worker processes that parse the files (``RUSAGE_CHILDREN``: forked after
exec and waited for)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ragtune.errors import CorpusError
from ragtune.registry import LOADERS

pytest.importorskip("docx")
pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak memory is read from /proc")

KiB, MiB = 1 << 10, 1 << 20
W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
TINY = "<w:p><w:r><w:t>a</w:t></w:r></w:p>"  # 34 bytes of XML: a paragraph of one letter
RUNS = "<w:p>" + "<w:r><w:t>twenty characters...</w:t></w:r>" * 10 + "</w:p>"  # 441 bytes, 200 characters


def bound(unpacked: int, paragraphs: int) -> int:
    """The stated bound (docs/guide/corpus-formats.md, the docx module's docstring): what loading a file may add to
    the peak memory of a folder load, for ``unpacked`` bytes of XML and ``paragraphs`` paragraphs kept. A parsed
    tree alone is about 30 times the XML."""
    return 6 * unpacked + KiB * paragraphs


# A fresh interpreter: the docx module's limits set from argv[3] (forked workers inherit them); then "folder" loads
# the folder argv[2] and prints the ids loaded and the peak memory, "files" loads each file of argv[2] (comma
# separated) here, in turn, and prints how far the peak rose above where it was after the first (a warm-up: the
# imports and buffers of a first load are not the file's).
CHILD = r"""
import json, resource, sys
from pathlib import Path
import ragtune.corpus.formats.docx as docx_format

def hwm():
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")) * 1024

mode, where = sys.argv[1], sys.argv[2]
for name, value in json.loads(sys.argv[3]).items():
    if not hasattr(docx_format, name):
        sys.exit(f"the docx module has no {name}")
    setattr(docx_format, name, value)
if mode == "folder":
    from ragtune.corpus.loaders import load_folder
    corpus = load_folder(where)
    out = {"ids": sorted(d.id for d in corpus),
           "peak": max(hwm(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)}
else:
    files = [Path(p).read_bytes() for p in where.split(",")]
    loader, out = docx_format.DocxLoader(), {"growth": []}
    loader.load(files.pop(0), "x.docx", "x.docx")
    before = hwm()
    for data in files:
        loader.load(data, "x.docx", "x.docx")
        out["growth"].append(hwm() - before)
print(json.dumps(out))
"""


def run_child(tmp: Path, mode: str, where: str, **limits: int) -> tuple[dict, str]:
    """(what CHILD printed, its stderr)."""
    env = {**os.environ, "RAGTUNE_CACHE_DIR": str(tmp / "cache")}  # a fresh cache: every file is parsed
    done = subprocess.run([sys.executable, "-c", CHILD, mode, where, json.dumps(limits)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def folder_of(tmp: Path, name: str, files: dict[str, bytes]) -> str:
    folder = tmp / name
    folder.mkdir()
    for file, data in files.items():
        (folder / f"{file}.docx").write_bytes(data)
    return str(folder)


def package(body: str, *, parts: dict[str, str] | None = None, doc_rels: str = "") -> bytes:
    """A DOCX file whose ``w:body`` holds ``body``; ``parts`` adds parts (name -> XML) that ``doc_rels``
    (Relationship elements) points the document at."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml",
                   '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                   '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
                   + "".join(f'<Override PartName="/{name}" ContentType="application/vnd.openxmlformats-officedocument.'
                             f'wordprocessingml.{name[5:-4].replace("document", "document.main")}+xml"/>'
                             for name in ["word/document.xml", *(parts or {})]) + "</Types>")
        rels = ('<?xml version="1.0"?><Relationships '
                'xmlns="http://schemas.openxmlformats.org/package/2006/relationships">')
        z.writestr("_rels/.rels", f'{rels}<Relationship Id="rId1" Type="{REL}/officeDocument" '
                                  'Target="word/document.xml"/></Relationships>')
        z.writestr("word/_rels/document.xml.rels", f"{rels}{doc_rels}</Relationships>")
        z.writestr("word/document.xml",
                   f'<?xml version="1.0"?><w:document xmlns:w="{W_NS}"><w:body>{body}</w:body></w:document>')
        for name, xml in (parts or {}).items():
            z.writestr(name, xml)
    return out.getvalue()


def good() -> bytes:
    return package('<w:p><w:pPr><w:outlineLvl w:val="0"/></w:pPr><w:r><w:t>Good file</w:t></w:r></w:p>'
                   "<w:p><w:r><w:t>It loads beside the others.</w:t></w:r></w:p>")


def load(data: bytes):
    return LOADERS.build("docx").load(data, "x.docx", "x.docx")


@pytest.fixture(scope="module")
def base_peak(tmp_path_factory: pytest.TempPathFactory) -> int:
    """The peak memory of loading a folder holding only the good file."""
    tmp = tmp_path_factory.mktemp("base")
    out, _ = run_child(tmp, "folder", folder_of(tmp, "f", {"good": good()}))
    return out["peak"]


# -- peak memory, measured ----------------------------------------------------------------------------------------

def test_a_file_of_tiny_paragraphs_is_skipped_in_one_line_within_the_bound(tmp_path: Path, base_peak: int):
    # the audit's file scaled down: 8 MiB of one-letter paragraphs (about 250,000) that pack to 40 KB, read with
    # MAX_ENTRIES lowered to 20,000 so the test stays fast; parsed whole, it took about 35 times its XML
    unpacked, entries = 8 * MiB, 20_000
    hostile = package(TINY * (unpacked // len(TINY)))
    assert len(hostile) < unpacked / 100
    out, err = run_child(tmp_path, "folder", folder_of(tmp_path, "f", {"good": good(), "hostile": hostile}),
                         MAX_ENTRIES=entries)
    assert out["ids"] == ["good.docx"]
    lines = [line for line in err.splitlines() if "hostile.docx" in line]
    assert len(lines) == 1 and lines[0].startswith("warning: corpus: skipped ")
    assert "more than 20,000 paragraphs, table rows" in lines[0]
    growth = out["peak"] - base_peak
    assert growth < bound(unpacked, entries), f"{growth / MiB:.0f} MiB"


def test_one_huge_text_node_is_refused_while_it_streams(tmp_path: Path, base_peak: int):
    # one text node of 32 MiB: refused at the XML parser's limit on one node (10,000,000 bytes) as the part is
    # unpacked, never held whole (reading the part into memory alone would take 32 MiB, parsing it about 60)
    unpacked = 32 * MiB
    huge = package("<w:p><w:r><w:t>" + "x" * unpacked + "</w:t></w:r></w:p>")
    out, err = run_child(tmp_path, "folder", folder_of(tmp_path, "f", {"good": good(), "huge": huge}))
    growth = out["peak"] - base_peak
    assert growth < unpacked / 4, f"{growth / MiB:.0f} MiB"
    assert out["ids"] == ["good.docx"]
    lines = [line for line in err.splitlines() if "huge.docx" in line]
    assert len(lines) == 1 and "holds a text, a tag or a nesting larger than the XML parser reads" in lines[0]


def test_memory_grows_linearly_when_the_xml_doubles(tmp_path: Path):
    # paragraphs of ten runs, loaded in one process, 2 then 4 MiB of XML: what is kept is the text and one
    # location per paragraph, so the growth doubles (a quadratic walk would give four times) and stays within the
    # bound (a tree of these runs is about 18 times their XML)
    sizes = (2 * MiB, 4 * MiB)
    (tmp_path / "good.docx").write_bytes(good())
    paths = [str(tmp_path / "good.docx")]
    for size in sizes:
        path = tmp_path / f"{size}.docx"
        path.write_bytes(package(RUNS * (size // len(RUNS))))
        paths.append(str(path))
    out, _ = run_child(tmp_path, "files", ",".join(paths))
    small, large = out["growth"]
    assert large < 2.8 * small + MiB, (small / MiB, large / MiB)
    assert large < bound(sizes[1], sizes[1] // len(RUNS)), f"{large / MiB:.0f} MiB"


# -- the limits, each checked while the XML streams -----------------------------------------------------------------

def test_text_past_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch):
    import ragtune.corpus.formats.docx as docx_format

    monkeypatch.setattr(docx_format, "MAX_TEXT_CHARS", 100_000)
    paragraph = "<w:p><w:r><w:t>" + "word " * 200 + "</w:t></w:r></w:p>"
    assert load(package(paragraph * 50)).text.count("word") == 10_000
    with pytest.raises(CorpusError, match=r"more than 100,000 characters of text"):
        load(package(paragraph * 200))


def test_a_note_referred_to_many_times_counts_each_time(monkeypatch: pytest.MonkeyPatch):
    import ragtune.corpus.formats.docx as docx_format

    monkeypatch.setattr(docx_format, "MAX_TEXT_CHARS", 100_000)
    note = f'<w:footnote w:id="1"><w:p><w:r><w:t>{"n" * 5_000}</w:t></w:r></w:p></w:footnote>'
    notes = f'<?xml version="1.0"?><w:footnotes xmlns:w="{W_NS}">{note}</w:footnotes>'
    refs = '<w:r><w:footnoteReference w:id="1"/></w:r>' * 100  # 5,000 characters written 100 times
    with pytest.raises(CorpusError, match=r"more than 100,000 characters of text"):
        load(package(f"<w:p>{refs}</w:p>", parts={"word/footnotes.xml": notes},
                     doc_rels=f'<Relationship Id="rId9" Type="{REL}/footnotes" Target="footnotes.xml"/>'))


def test_one_paragraph_of_too_many_elements_is_refused(monkeypatch: pytest.MonkeyPatch):
    import ragtune.corpus.formats.docx as docx_format

    monkeypatch.setattr(docx_format, "MAX_HELD_ELEMENTS", 1_000)
    run = "<w:r><w:t>a</w:t></w:r>"
    assert len(load(package(("<w:p>" + run * 100 + "</w:p>") * 50)).text) == 50 * 100 + 49 * 2  # dropped as read
    with pytest.raises(CorpusError, match=r"one paragraph or entry of word/document\.xml has more than 1,000 XML"):
        load(package("<w:p>" + run * 5_000 + "</w:p>"))


def test_attributes_and_bytes_held_count_too(monkeypatch: pytest.MonkeyPatch):
    import ragtune.corpus.formats.docx as docx_format

    monkeypatch.setattr(docx_format, "MAX_HELD_ELEMENTS", 1_000)
    attrs = " ".join(f'a{i}="x"' for i in range(50))  # 50 attributes a run: 20 runs are over 1,000
    with pytest.raises(CorpusError, match=r"more than 1,000 XML elements and attributes"):
        load(package(f"<w:p>{f'<w:r {attrs}><w:t>a</w:t></w:r>' * 40}</w:p>"))
    monkeypatch.setattr(docx_format, "MAX_HELD_BYTES", 1 << 20)  # namespace declarations, long texts: bytes held
    decls = " ".join(f'xmlns:n{i}="urn:n{i}"' for i in range(500))
    with pytest.raises(CorpusError, match=r"or 1 MiB of XML"):
        load(package(f"<w:p>{f'<w:r {decls}><w:t>a</w:t></w:r>' * 200}</w:p>"))
    assert load(package(f"<w:p><w:r {decls}><w:t>a</w:t></w:r></w:p>" * 200)).text.count("a") == 200


def test_the_rows_of_a_body_table_are_read_one_at_a_time(monkeypatch: pytest.MonkeyPatch):
    import ragtune.corpus.formats.docx as docx_format

    monkeypatch.setattr(docx_format, "MAX_HELD_ELEMENTS", 1_000)
    cell = "<w:tc><w:p><w:r><w:t>c</w:t></w:r></w:p></w:tc>"
    doc = load(package(f"<w:tbl><w:tblPr/>{f'<w:tr>{cell * 3}</w:tr>' * 2_000}</w:tbl>"))
    assert doc.text.count("| c | c | c |") == 2_000
    inner = f"<w:tbl>{f'<w:tr>{cell * 3}</w:tr>' * 200}</w:tbl>"  # a nested table is held whole
    with pytest.raises(CorpusError, match=r"more than 1,000 XML elements"):
        load(package(f"<w:tbl><w:tr><w:tc>{inner}</w:tc></w:tr></w:tbl>"))


def test_a_part_of_too_many_elements_is_refused(monkeypatch: pytest.MonkeyPatch):
    import ragtune.corpus.formats.docx as docx_format

    monkeypatch.setattr(docx_format, "MAX_PART_ELEMENTS", 10_000)
    with pytest.raises(CorpusError, match=r"word/document\.xml has more than 10,000 XML elements"):
        load(package("<w:p><w:r><w:t>a</w:t></w:r></w:p>" + "<w:bookmarkStart/>" * 20_000))


def test_styles_go_through_the_same_limits(monkeypatch: pytest.MonkeyPatch):
    import ragtune.corpus.formats.docx as docx_format

    monkeypatch.setattr(docx_format, "MAX_ENTRIES", 1_000)
    styles = "".join(f'<w:style w:type="paragraph" w:styleId="s{i}"><w:name w:val="s{i}"/></w:style>'
                     for i in range(2_000))
    with pytest.raises(CorpusError, match=r"more than 1,000 paragraphs, table rows, notes, styles"):
        load(package("<w:p><w:r><w:t>a</w:t></w:r></w:p>",
                     parts={"word/styles.xml": f'<w:styles xmlns:w="{W_NS}">{styles}</w:styles>'},
                     doc_rels=f'<Relationship Id="rId8" Type="{REL}/styles" Target="styles.xml"/>'))


def test_a_long_based_on_chain_is_resolved_once():
    # 3,000 styles, each based on the one before; only the first sets an outline level: every paragraph styled
    # anywhere on the chain is a heading of level 1 (each style's chain resolved once, not once per style)
    styles = ['<w:style w:type="paragraph" w:styleId="s0"><w:name w:val="s0"/><w:pPr><w:outlineLvl w:val="0"/>'
              "</w:pPr></w:style>"]
    styles += [f'<w:style w:type="paragraph" w:styleId="s{i}"><w:name w:val="s{i}"/><w:basedOn w:val="s{i - 1}"/>'
               "</w:style>" for i in range(1, 3_000)]
    body = "".join(f'<w:p><w:pPr><w:pStyle w:val="s{i}"/></w:pPr><w:r><w:t>T{i}</w:t></w:r></w:p>'
                   for i in (2_999, 1_500, 0))
    doc = load(package(body, parts={"word/styles.xml": f'<w:styles xmlns:w="{W_NS}">{"".join(styles)}</w:styles>'},
                       doc_rels=f'<Relationship Id="rId8" Type="{REL}/styles" Target="styles.xml"/>'))
    assert [(s.level, s.title) for s in doc.sections] == [(1, "T2999"), (1, "T1500"), (1, "T0")]


def test_a_row_too_wide_is_refused_before_it_is_made():
    cell = '<w:tc><w:tcPr><w:gridSpan w:val="2000000000"/></w:tcPr><w:p><w:r><w:t>x</w:t></w:r></w:p></w:tc>'
    with pytest.raises(CorpusError, match=r"a table row of more than 1,000 columns"):
        load(package(f"<w:tbl><w:tr>{cell}</w:tr></w:tbl>"))
    with pytest.raises(CorpusError, match=r"a table row of more than 1,000 columns"):  # in a nested table too
        load(package(f"<w:tbl><w:tr><w:tc><w:tbl><w:tr>{cell}</w:tr></w:tbl></w:tc></w:tr></w:tbl>"))


def with_dtd(dtd: str, body: str) -> bytes:
    """A DOCX whose document.xml declares ``dtd`` before its root."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(package("<w:p/>"))) as src, zipfile.ZipFile(out, "w") as z:
        for name in src.namelist():
            xml = src.read(name)
            if name == "word/document.xml":
                xml = (f'<?xml version="1.0"?>{dtd}<w:document xmlns:w="{W_NS}"><w:body>{body}</w:body>'
                       "</w:document>").encode()
            z.writestr(name, xml)
    return out.getvalue()


def test_entities_are_never_expanded_nor_files_read():
    lol = "".join(f'<!ENTITY l{i} "{("&l" + str(i - 1) + ";") * 10}">' for i in range(1, 9))
    laughs = with_dtd(f'<!DOCTYPE w:document [<!ENTITY l0 "lol">{lol}]>',
                      "<w:p><w:r><w:t>a &l8; b</w:t></w:r></w:p>")
    try:  # refused by libxml2's amplification limit (2.11 and later), else read without expanding them
        assert "lol" not in load(laughs).text
    except CorpusError as e:
        assert "declares entities that would expand past what the XML parser allows" in str(e)
    passwd = with_dtd('<!DOCTYPE w:document [<!ENTITY pw SYSTEM "file:///etc/passwd">]>',
                      "<w:p><w:r><w:t>&pw;</w:t></w:r></w:p><w:p><w:r><w:t>end</w:t></w:r></w:p>")
    assert load(passwd).text == "end"
