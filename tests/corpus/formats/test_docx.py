"""The DOCX loader: headings by style and outline level, tables, lists, notes, locations, bad files, real files."""

from __future__ import annotations

import io
import struct
import sys
import zipfile
from pathlib import Path

import pytest

from ragtune import load_corpus
from ragtune.errors import CorpusError
from ragtune.registry import CHUNKERS, LOADERS
from tests.helpers import shared_dataset

docx = pytest.importorskip("docx")

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def load(data: bytes, name: str = "doc.docx"):
    return LOADERS.build("docx").load(data, name, name)


def save(document) -> bytes:
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def raw_docx(body: str, *, footnotes: str | None = None, styles: str | None = None,
             main_type: str = "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
             ) -> bytes:
    """A DOCX package written by hand: ``body`` is the XML inside ``w:body`` (for what python-docx cannot write:
    footnotes, outline levels, content controls, tracked changes, XML comments)."""
    ns = f'xmlns:w="{W_NS}" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    overrides = [f'<Override PartName="/word/document.xml" ContentType="{main_type}"/>']
    doc_rels = []
    parts = {"word/document.xml": f'<?xml version="1.0"?><w:document {ns}><w:body>{body}</w:body></w:document>'}
    if footnotes is not None:
        parts["word/footnotes.xml"] = f'<?xml version="1.0"?><w:footnotes {ns}>{footnotes}</w:footnotes>'
        overrides.append('<Override PartName="/word/footnotes.xml" ContentType="application/vnd.openxmlformats-'
                         'officedocument.wordprocessingml.footnotes+xml"/>')
        doc_rels.append(f'<Relationship Id="rId1" Type="{rel}/footnotes" Target="footnotes.xml"/>')
    if styles is not None:
        parts["word/styles.xml"] = f'<?xml version="1.0"?><w:styles {ns}>{styles}</w:styles>'
        overrides.append('<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-'
                         'officedocument.wordprocessingml.styles+xml"/>')
        doc_rels.append(f'<Relationship Id="rId2" Type="{rel}/styles" Target="styles.xml"/>')
    ct = ('<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
          '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
          '<Default Extension="xml" ContentType="application/xml"/>' + "".join(overrides) + "</Types>")
    rels_ns = 'xmlns="http://schemas.openxmlformats.org/package/2006/relationships"'
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("[Content_Types].xml", ct)
        z.writestr("_rels/.rels", f'<?xml version="1.0"?><Relationships {rels_ns}><Relationship Id="rId1" '
                                  f'Type="{rel}/officeDocument" Target="word/document.xml"/></Relationships>')
        z.writestr("word/_rels/document.xml.rels",
                   f'<?xml version="1.0"?><Relationships {rels_ns}>{"".join(doc_rels)}</Relationships>')
        for name, xml in parts.items():
            z.writestr(name, xml)
    return out.getvalue()


def p(text: str, ppr: str = "") -> str:
    return f'<w:p>{"<w:pPr>" + ppr + "</w:pPr>" if ppr else ""}<w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>'


def ole_file(*streams: str) -> bytes:
    """A minimal OLE compound file (what Word 97-2003 .doc and encrypted Office files are) holding empty streams
    of these names: a header, one FAT sector and one directory sector."""
    free, end, fat_sect = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD
    header = (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 16 + struct.pack("<HHHHH", 0x3E, 3, 0xFFFE, 9, 6)
              + b"\0" * 6 + struct.pack("<IIIIIIIII", 0, 1, 1, 0, 4096, end, 0, end, 0)
              + struct.pack("<I", 0) + struct.pack("<I", free) * 108)
    fat = struct.pack("<II", fat_sect, end) + struct.pack("<I", free) * 126

    def entry(name: str, kind: int, child: int, right: int) -> bytes:
        raw = name.encode("utf-16-le") + b"\0\0"
        return (raw.ljust(64, b"\0") + struct.pack("<HBBIII", len(raw), kind, 1, free, right, child)
                + b"\0" * 36 + struct.pack("<IQ", end if kind == 2 else end, 0))

    names = list(streams)
    directory = entry("Root Entry", 5, 1 if names else free, free)
    for i, name in enumerate(names, start=1):
        directory += entry(name, 2, free, i + 1 if i < len(names) else free)
    directory = directory.ljust(512, b"\0")
    return header + fat + directory


# -- generated files ----------------------------------------------------------------------------------------------

def sample() -> bytes:
    d = docx.Document()
    d.add_paragraph("Handbook", style="Title")
    d.add_paragraph("Front matter.")
    d.add_heading("1. Introduction", level=1)
    d.add_paragraph("Why this exists.")
    d.add_heading("A.\tPURPOSE", level=2)
    d.add_paragraph("First step", style="List Bullet")
    d.add_paragraph("Nested step", style="List Bullet 2")
    d.add_paragraph("Counted one", style="List Number")
    d.add_paragraph("Counted two", style="List Number")
    t = d.add_table(rows=3, cols=3)
    for r in range(3):
        for c in range(3):
            t.cell(r, c).text = f"r{r}c{c}"
    t.cell(0, 0).merge(t.cell(0, 1)).text = "wide"
    t.cell(1, 2).merge(t.cell(2, 2)).text = "tall"
    inner = t.cell(2, 0).add_table(rows=1, cols=2)
    inner.cell(0, 0).text, inner.cell(0, 1).text = "inner-a", "inner-b"
    d.add_paragraph("After the table.")
    d.add_heading("Deep", level=3)
    d.add_paragraph("Deep text.")
    d.sections[0].header.paragraphs[0].text = "RUNNING HEADER"
    d.sections[0].footer.paragraphs[0].text = "PAGE FOOTER"
    return save(d)


def test_headings_become_the_section_tree_with_slug_ids():
    doc = load(sample())
    assert doc.format == "docx"
    assert [(s.level, s.id, s.title) for s in doc.sections] == [
        (1, "handbook", "Handbook"), (1, "introduction", "1. Introduction"), (2, "purpose", "A. PURPOSE"),
        (3, "deep", "Deep")]
    purpose = doc.sections[2]
    assert purpose.parent == "doc.docx#introduction" and purpose.heading_path == ("1. Introduction", "A. PURPOSE")
    assert doc.text[purpose.start:purpose.own_end].startswith("## A. PURPOSE")
    assert "After the table." in doc.text[purpose.start:purpose.own_end]


def test_paragraphs_and_tables_in_document_order_and_headers_footers_dropped():
    text = load(sample()).text
    order = [text.index(s) for s in ("Front matter.", "Why this exists.", "| wide", "After the table.", "Deep text.")]
    assert order == sorted(order)
    assert "RUNNING HEADER" not in text and "PAGE FOOTER" not in text


def test_lists_keep_depth_and_numbering():
    text = load(sample()).text
    assert "- First step\n  - Nested step\n1. Counted one\n2. Counted two" in text


def test_merged_cells_are_written_once_and_nested_tables_flattened():
    text = load(sample()).text
    start = text.index("| wide")
    table = text[start:text.index("\n\n", start)].split("\n")
    assert table == ["| wide |  | r0c2 |", "|---|---|---|", "| r1c0 | r1c1 | tall |",
                     "| r2c0 inner-a inner-b | r2c1 |  |"]


def test_tables_stay_whole_in_markdown_chunks():
    d = docx.Document()
    d.add_heading("Numbers", level=1)
    d.add_paragraph("Opening words come first. " * 20)
    t = d.add_table(rows=8, cols=3)
    for r in range(8):
        for c in range(3):
            t.cell(r, c).text = f"value {r} {c}"
    d.add_paragraph("Closing words come last. " * 20)
    doc = load(save(d))
    chunks = CHUNKERS.build("markdown", options={"size": 120}).chunk(doc)
    start = doc.text.index("| value 0 0")
    end = doc.text.index("|", doc.text.index("| value 7 2") + 2) + 1
    assert len(chunks) >= 3
    assert [c for c in chunks if c.start <= start and c.end >= end]  # one chunk holds the whole table
    assert all(c.end <= start or c.start >= end or (c.start <= start and c.end >= end) for c in chunks)


def test_title_from_core_properties_then_top_heading_then_file_stem():
    d = docx.Document()
    d.add_heading("Top Heading", level=1)
    assert load(save(d)).title == "Top Heading"
    d.core_properties.title = "Set In Properties"
    assert load(save(d)).title == "Set In Properties"
    plain = docx.Document()
    plain.add_paragraph("Only text.")
    assert load(save(plain), "folder/My Notes.docx").title == "My Notes"


def test_locations_name_body_paragraphs_and_tables():
    d = docx.Document()
    d.add_paragraph("zero")
    d.add_paragraph("")
    d.add_paragraph("two")
    d.add_table(rows=1, cols=1).cell(0, 0).text = "cell"
    d.add_paragraph("three")
    doc = load(save(d))
    assert [loc for _, loc in doc.locations] == [{"paragraph": 0}, {"paragraph": 2}, {"table": 0}, {"paragraph": 3}]
    assert doc.location(doc.text.index("two"), doc.text.index("two") + 3) == {"paragraph": 2}
    chunks = CHUNKERS.build("section").chunk(doc)
    assert chunks[0].metadata["location"] == {"paragraph": 0, "paragraph_end": 3}
    # the index points back into the file as python-docx reads it
    assert docx.Document(io.BytesIO(save(d))).paragraphs[3].text == "three"


def test_outline_levels_in_the_paragraph_or_its_style_are_headings_and_toc_lines_left_out():
    styles = ('<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>'
              '<w:style w:type="paragraph" w:styleId="Chap"><w:name w:val="Chapter Title"/>'
              '<w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>'
              '<w:style w:type="paragraph" w:styleId="SubChap"><w:name w:val="Sub Chapter"/>'
              '<w:basedOn w:val="Chap"/></w:style>'
              '<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/></w:style>'
              '<w:style w:type="paragraph" w:styleId="TOC1"><w:name w:val="toc 1"/></w:style>')
    body = (p("Styled", '<w:pStyle w:val="Chap"/>') + p("body one") + p("Inherited", '<w:pStyle w:val="SubChap"/>')
            + p("Direct", '<w:outlineLvl w:val="2"/>') + p("body two")
            + p("Not a heading", '<w:pStyle w:val="Heading1"/><w:outlineLvl w:val="9"/>')
            + p("Styled 1", '<w:pStyle w:val="TOC1"/>'))
    doc = load(raw_docx(body, styles=styles))
    assert [(s.level, s.title) for s in doc.sections] == [(1, "Styled"), (1, "Inherited"), (3, "Direct")]
    assert "Not a heading" in doc.text and "# Not a heading" not in doc.text
    assert "Styled 1" not in doc.text  # a table-of-contents line: a copy of a heading


def test_footnotes_follow_their_paragraph_and_hidden_deleted_text_is_left_out():
    notes = ('<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>'
             '<w:footnote w:id="1"><w:p><w:r><w:footnoteRef/></w:r><w:r><w:t>See the statute.</w:t></w:r></w:p>'
             '</w:footnote>')
    body = ('<w:p><w:r><w:t>Claim</w:t></w:r><w:r><w:footnoteReference w:id="1"/></w:r>'
            '<w:ins w:id="5" w:author="a"><w:r><w:t xml:space="preserve"> inserted</w:t></w:r></w:ins>'
            '<w:del w:id="6" w:author="a"><w:r><w:delText>DELETED</w:delText><w:tab/></w:r></w:del>'
            '<w:r><w:rPr><w:vanish/></w:rPr><w:t>HIDDEN</w:t></w:r>'
            '<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText>PAGE</w:instrText></w:r>'
            '<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t xml:space="preserve"> 7</w:t></w:r>'
            '<w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>'
            + p("Next paragraph."))
    doc = load(raw_docx(body, footnotes=notes))
    assert doc.text == "Claim[1] inserted 7\n\n[1] See the statute.\n\nNext paragraph."


def test_content_controls_are_unwrapped_and_an_xml_comment_is_no_problem():
    body = ("<!-- Generated by a tool -->" + '<w:sdt><w:sdtPr/><w:sdtContent>' + p("Inside a control")
            + "</w:sdtContent></w:sdt>" + p("Outside"))
    doc = load(raw_docx(body))
    assert doc.text == "Inside a control\n\nOutside"
    assert [loc for _, loc in doc.locations] == [{"paragraph": 0}, {"paragraph": 1}]


def test_load_corpus_reads_a_folder_of_docx(tmp_path: Path):
    (tmp_path / "guide.docx").write_bytes(sample())
    (tmp_path / "notes.md").write_text("# Notes\n\nplain markdown\n")
    corpus = load_corpus(tmp_path)
    doc = corpus["guide.docx"]
    assert doc.format == "docx" and doc.title == "Handbook"
    assert [s.anchor for s in doc.sections][:2] == ["guide.docx#handbook", "guide.docx#introduction"]


# -- bad files ------------------------------------------------------------------------------------------------------

def test_not_a_zip_file():
    with pytest.raises(CorpusError, match=r"^not a readable DOCX \(Word 2007\+\) file: not a zip package"):
        load(b"{\\rtf1 this is RTF renamed}")


def test_truncated_docx():
    with pytest.raises(CorpusError, match=r"^not a readable DOCX \(Word 2007\+\) file"):
        load(sample()[:3000])


def test_zip_without_word_document_xml():
    src = zipfile.ZipFile(io.BytesIO(sample()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name in src.namelist():
            if name != "word/document.xml":
                z.writestr(name, src.read(name))
    with pytest.raises(CorpusError, match=r"a zip file without word/document\.xml"):
        load(out.getvalue())


def test_main_part_of_another_office_type():
    data = raw_docx(p("x"), main_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml")
    with pytest.raises(CorpusError, match=r"its main part is .*spreadsheetml.*not a Word document"):
        load(data)


def test_old_binary_doc_renamed():
    with pytest.raises(CorpusError, match=r"^an old binary Word document \(\.doc, Word 97-2003\).*convert-to docx"):
        load(ole_file("WordDocument", "1Table", "\x05SummaryInformation"))


def test_password_protected_docx():
    with pytest.raises(CorpusError, match=r"^a password-protected \(encrypted\) DOCX file: .*remove the password"):
        load(ole_file("EncryptionInfo", "EncryptedPackage"))


def test_empty_document():
    d = docx.Document()
    d.add_paragraph("")
    d.add_table(rows=2, cols=2)
    with pytest.raises(CorpusError, match=r"^no text: "):
        load(save(d))


def test_zip_bomb_refused_before_unpacking():
    data = bytearray(raw_docx(p("small")))
    at = data.find(b"PK\x01\x02")  # first central directory entry: set its uncompressed size to 4 GiB - 1
    data[at + 24:at + 28] = struct.pack("<I", 0xFFFFFFFE)
    with pytest.raises(CorpusError, match=r"unpacks to .* MiB, over the 1024 MiB"):
        load(bytes(data))


# -- real files -----------------------------------------------------------------------------------------------------

def real(name: str) -> Path:
    path = shared_dataset("formats") / "docx" / name
    if not path.exists():
        pytest.skip(f"{path} not available")
    return path


def load_real(name: str):
    path = real(name)
    return LOADERS.build("docx").load(path.read_bytes(), path.name, str(path))


@pytest.mark.dataset
def test_handbook_heading_tree_tables_and_lists():
    doc = load_real("unstructured/handbook-872p.docx")
    levels = [s.level for s in doc.sections]
    assert (levels.count(1), levels.count(2), levels.count(3)) == (14, 90, 190)
    assert len(doc.text) > 800_000
    first = doc.sections[0]
    assert (first.id, first.title) == ("chapter-1--introduction", "CHAPTER 1 – INTRODUCTION")
    assert doc.sections[1].id == "purpose" and doc.sections[1].parent == f"{doc.id}#chapter-1--introduction"
    chunks = CHUNKERS.build("markdown").chunk(doc)
    tables = [i for i in range(len(doc.text)) if doc.text.startswith("| Related Provisions:", i)]
    assert len(tables) == 2
    for start in tables:
        end = doc.text.index("\n\n", start)
        assert any(c.start <= start and c.end >= end for c in chunks)
    assert "\n1. an amount not to exceed the highest rate of basic pay" in doc.text
    assert "[1] / 28 U.S.C. § 586(b)" in doc.text  # a footnote, after the paragraph referring to it


@pytest.mark.dataset
def test_merged_cells_sampler_grid():
    doc = load_real("docx2python/merged_cells.docx")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in doc.text.split("\n") if "---" not in line]
    assert len(rows) == 5 and all(len(r) == 4 for r in rows)
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            if cell:  # "34-123": rows 3-4, columns 1-3; written in the span's top-left grid cell only
                span_rows, span_cols = cell.split("-")
                assert (span_rows[0], span_cols[0]) == (str(r), str(c))


@pytest.mark.dataset
def test_government_notice_with_an_xml_comment_loads():
    doc = load_real("docx2python/invalid_tag_name.docx")
    assert "Notice of Intent" in doc.text and doc.text.count("|---|---|") == 3
    assert doc.sections == ()  # its headings are bold Normal paragraphs, not heading styles
    assert doc.title == "invalid_tag_name"


@pytest.mark.dataset
def test_samplers_order_nested_tables_unknown_styles_and_notes():
    tables = load_real("unstructured/docx-tables.docx")
    assert "| d | e f g&t h | i |" in tables.text and "| a | b |  |" in tables.text
    order = load_real("python-docx/blk-paras-and-tables.docx").text
    assert order.index("Lorem ipsum") < order.index("| Text before") < order.index("Donec semper")
    styles = load_real("python-docx/par-known-styles.docx")
    assert [s.level for s in styles.sections] == [1]
    example = load_real("docx2python/example.docx")
    assert [(s.level, s.title) for s in example.sections] == [(1, "Heading 1"), (2, "Heading 2")]
    assert "Reference footnote 1[1]\n\n[1] First footnote" in example.text
    assert "10 < 20 and 20 > 10" in example.text


def test_missing_python_docx_names_the_extra(monkeypatch):
    data = sample()
    for name in [m for m in sys.modules if m == "docx" or m.startswith("docx.")]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(CorpusError, match=r"needs the python-docx package: pip install 'ragtune\[docx\]'"):
        load(data)
