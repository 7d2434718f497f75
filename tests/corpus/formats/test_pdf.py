"""The PDF loader: text in reading order page by page, sections from the outline or from font sizes, code blocks,
page locations, bad input; on PDFs the tests write themselves and on ../shared/datasets/formats/pdf."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import struct
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

import ragtune as rt
from ragtune.corpus.formats.pdf import PdfLoader, PdfLoaderConfig
from ragtune.errors import ConfigError, CorpusError
from ragtune.registry import CHUNKERS, LOADERS
from tests.helpers import shared_dataset

pytest.importorskip("pypdfium2")

REPO = Path(__file__).resolve().parents[3]
TUTORIAL = ("appetite", "controlflow", "datastructures", "inputoutput", "errors")


# -- a small PDF writer: standard fonts, text runs at positions, an outline, RC4 encryption, images ----------------
_FONTS = {"F1": "Helvetica", "F2": "Helvetica-Bold", "F3": "Courier"}
_PAD = bytes.fromhex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A")

Run = tuple[str, float, float, float, str]  # font, size, x, y, text


def _rc4(key: bytes, data: bytes) -> bytes:
    s = list(range(256))
    j = 0
    for i in range(256):
        j = (j + s[i] + key[i % len(key)]) % 256
        s[i], s[j] = s[j], s[i]
    out = bytearray()
    i = j = 0
    for byte in data:
        i = (i + 1) % 256
        j = (j + s[i]) % 256
        s[i], s[j] = s[j], s[i]
        out.append(byte ^ s[(s[i] + s[j]) % 256])
    return bytes(out)


def _string(text: str) -> bytes:
    return b"(" + text.encode("cp1252").replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def make_pdf(pages: Sequence[Sequence[Run]], *, outline: Sequence[tuple[int, str, int, float]] = (),
             title: str | None = None, password: str | None = None, image_pages: Sequence[int] = (),
             size: tuple[float, float] = (612, 792)) -> bytes:
    """A PDF with one page per list of text runs; ``outline`` holds (depth, title, 0-based page, y); a page in
    ``image_pages`` also draws a small grey image; ``password`` encrypts it (standard security handler, RC4
    40-bit, the owner password ``owner``)."""
    objects: dict[int, bytes] = {}
    streams: dict[int, bytes] = {}
    n_fixed = 3 + len(_FONTS)  # catalog, pages, image, fonts
    font_ids = {name: 4 + i for i, name in enumerate(_FONTS)}
    page_ids = [n_fixed + 1 + 2 * i for i in range(len(pages))]
    streams[3] = bytes(range(0, 256, 64))  # a 2x2 grey image
    objects[3] = b"<< /Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray /BitsPerComponent 8"
    for name, base in _FONTS.items():
        objects[font_ids[name]] = f"<< /Type /Font /Subtype /Type1 /BaseFont /{base} /Encoding /WinAnsiEncoding >>"\
            .encode()
    fonts = b" ".join(f"/{name} {font_ids[name]} 0 R".encode() for name in _FONTS)
    for i, runs in enumerate(pages):
        content = b"".join(b"BT /%s %g Tf %g %g Td %s Tj ET\n" % (f.encode(), s, x, y, _string(t))
                           for f, s, x, y, t in runs)
        if i in image_pages:
            content += b"q 200 0 0 200 100 300 cm /Im0 Do Q\n"
        page, stream = page_ids[i], page_ids[i] + 1
        objects[page] = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %g %g] /Contents %d 0 R /Resources << /Font " \
                        b"<< %s >> /XObject << /Im0 3 0 R >> >> >>" % (size[0], size[1], stream, fonts)
        objects[stream] = b"<<"
        streams[stream] = content
    next_id = n_fixed + 1 + 2 * len(pages)
    catalog = b"<< /Type /Catalog /Pages 2 0 R"
    if outline:
        root, first = next_id, next_id + 1
        ids = [first + k for k in range(len(outline))]
        parents: list[int] = []
        kids: dict[int, list[int]] = {root: []}
        for k, (depth, _, _, _) in enumerate(outline):
            del parents[depth:]
            parent = parents[-1] if parents else root
            kids.setdefault(parent, []).append(ids[k])
            kids.setdefault(ids[k], [])
            parents.append(ids[k])
        parent_of = {kid: p for p, ks in kids.items() for kid in ks}
        for k, (depth, text, page, y) in enumerate(outline):
            me, siblings = ids[k], kids[parent_of[ids[k]]]
            at = siblings.index(me)
            links = b"".join([b" /Prev %d 0 R" % siblings[at - 1] if at else b"",
                              b" /Next %d 0 R" % siblings[at + 1] if at + 1 < len(siblings) else b"",
                              b" /First %d 0 R /Last %d 0 R /Count %d" % (kids[me][0], kids[me][-1], len(kids[me]))
                              if kids[me] else b""])
            objects[me] = b"<< /Title %s /Parent %d 0 R /Dest [%d 0 R /XYZ 0 %g 0]%s >>" % (
                _string(text), parent_of[me], page_ids[page], y, links)
        objects[root] = b"<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count %d >>" % (
            kids[root][0], kids[root][-1], len(kids[root]))
        catalog += b" /Outlines %d 0 R" % root
        next_id = first + len(outline)
    objects[1] = catalog + b" >>"
    objects[2] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % p for p in page_ids), len(pages))
    trailer_extra = b""
    file_id = hashlib.md5(b"ragtune test").digest()
    key = b""
    if title is not None:
        objects[next_id] = b"<< /Title %s >>" % _string(title)
        trailer_extra += b" /Info %d 0 R" % next_id
        next_id += 1
    if password is not None:
        owner_key = hashlib.md5((b"owner" + _PAD)[:32]).digest()[:5]
        o = _rc4(owner_key, (password.encode() + _PAD)[:32])
        p = -4
        key = hashlib.md5((password.encode() + _PAD)[:32] + o + struct.pack("<i", p) + file_id).digest()[:5]
        objects[next_id] = b"<< /Filter /Standard /V 1 /R 2 /O <%s> /U <%s> /P %d >>" % (
            o.hex().encode(), _rc4(key, _PAD).hex().encode(), p)
        trailer_extra += b" /Encrypt %d 0 R" % next_id
        next_id += 1
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for num in sorted(objects):
        offsets[num] = len(out)
        body = objects[num]
        if num in streams:
            data = streams[num]
            if key:
                data = _rc4(hashlib.md5(key + num.to_bytes(3, "little") + b"\0\0").digest()[:10], data)
            body = (body[:-2] if body.endswith(b">>") else body) + b" /Length %d >>\nstream\n%s\nendstream" % (
                len(data), data)
        out += b"%d 0 obj\n%s\nendobj\n" % (num, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (max(objects) + 1)
    for num in range(1, max(objects) + 1):
        out += b"%010d 00000 n \n" % offsets[num] if num in offsets else b"0000000000 65535 f \n"
    out += b"trailer\n<< /Size %d /Root 1 0 R /ID [<%s> <%s>]%s >>\nstartxref\n%d\n%%%%EOF\n" % (
        max(objects) + 1, file_id.hex().encode(), file_id.hex().encode(), trailer_extra, xref)
    return bytes(out)


def body(lines: Sequence[str], y: float, *, x: float = 72, size: float = 11, font: str = "F1",
         step: float = 14) -> list[Run]:
    return [(font, size, x, y - i * step, text) for i, text in enumerate(lines)]


def load(data: bytes, doc_id: str = "guide.pdf", **options) -> rt.Document:
    return PdfLoader(PdfLoaderConfig(**options)).load(data, doc_id, doc_id)


CW = 0.6 * 10  # the width of a Courier character at 10 pt

# Page 1: a title, a paragraph of two lines with a word split at the line end, a two-line heading, a code block
# whose indentation is drawn by position (no spaces in the text); page 2: a paragraph, a bulleted list.
GUIDE_PAGES = [
    [("F2", 24, 72, 720, "1. The Guide"),
     *body(["This guide shows an example of a long para-", "graph over two lines, as a paragraph."], 690),
     ("F2", 16, 72, 640, "1.1. Getting Started with"), ("F2", 16, 72, 622, "the Tools"),
     *body(["Type this:"], 600),
     ("F3", 10, 72, 580, "def f(x):"), ("F3", 10, 72 + 4 * CW, 568, "return x"),
     ("F3", 10, 72, 556, ">>> f(1)"), ("F3", 10, 72, 544, "1"),
     *body(["After the code."], 520)],
    [*body(["Second page text goes here."], 720),
     ("F1", 11, 72, 690, "•"), ("F1", 11, 84, 690, "first item"),
     ("F1", 11, 72, 676, "•"), ("F1", 11, 84, 676, "second item"),
     *body(["The end of the guide."], 640)],
]
GUIDE_OUTLINE = [(0, "1. The Guide", 0, 744), (1, "1.1. Getting Started with theTools", 0, 660),
                 (1, "Not On The Page", 1, 700)]


def guide(**kwargs) -> bytes:
    return make_pdf(GUIDE_PAGES, outline=GUIDE_OUTLINE, title="Guide - My Site", **kwargs)


def fences(text: str) -> list[str]:
    return re.findall(r"^```\n(.*?)\n```$", text, re.S | re.M)


# -- sections from the outline ------------------------------------------------------------------------------------
def test_outline_entries_are_headings_placed_where_their_title_is():
    d = load(guide())
    assert [(s.id, s.level, s.title) for s in d.sections] == [
        ("the-guide", 1, "1. The Guide"),
        ("getting-started-with-the-tools", 2, "1.1. Getting Started with the Tools"),  # the page's text
        ("not-on-the-page", 2, "Not On The Page")]
    assert d.sections[1].parent == "guide.pdf#the-guide"
    assert d.title == "The Guide"  # the first heading, not the PDF's /Title
    assert d.metadata["pdf_title"] == "Guide - My Site" and d.metadata["pages"] == 2
    assert d.format == "pdf"
    text = d.text
    # each heading once: the title lines on the page are the heading, not a paragraph too
    assert text.count("The Guide") == 1 and text.count("the Tools") == 1
    # the title missing from page 2 is placed at its destination (y 700): after the first line, before the list
    assert text.index("Second page text") < text.index("## Not On The Page") < text.index("- first item")


def test_text_blocks_paragraphs_code_and_items():
    text = load(guide()).text
    assert "This guide shows an example of a long paragraph over two lines, as a paragraph." in text
    assert fences(text) == ["def f(x):\n    return x\n>>> f(1)\n1"]  # the indentation drawn by position
    assert "- first item\n- second item" in text
    assert "Type this:\n\n```" in text and "```\n\nAfter the code." in text


def test_every_page_starts_a_location_and_chunks_carry_their_pages():
    d = load(guide())
    assert [loc for _, loc in d.locations] == [{"page": 1}, {"page": 2}]
    assert d.location(d.text.index("After the code"))["page"] == 1
    assert d.location(d.text.index("Second page"))["page"] == 2
    assert d.location(0, len(d.text)) == {"page": 1, "page_end": 2}
    chunks = CHUNKERS.build("section").chunk(d)
    by_anchor = {c.anchor: c.metadata["location"] for c in chunks}
    assert by_anchor["guide.pdf#getting-started-with-the-tools"] == {"page": 1, "page_end": 2}
    assert by_anchor["guide.pdf#not-on-the-page"] == {"page": 2}


@pytest.mark.parametrize("chunker, options", [("markdown", {"size": 40}), ("section", {})])
def test_code_blocks_stay_whole_in_chunks(chunker, options):
    d = load(guide())
    chunks = CHUNKERS.build(chunker, options=options).chunk(d)
    block = "```\ndef f(x):\n    return x\n>>> f(1)\n1\n```"
    assert block in d.text and any(block in c.text for c in chunks)


# -- sections from fonts -------------------------------------------------------------------------------------------
FONT_PAGES = [
    [("F1", 20, 72, 720, "User Manual"), *body(["An introduction in body text that runs long enough."], 690),
     ("F1", 15, 72, 650, "Installing"), *body(["Run the installer, then restart."], 625),
     ("F1", 15, 72, 590, "Configuring the"), ("F1", 15, 72, 572, "Server"),
     *body(["Edit the file. A line that ends a sentence at 20 pt is text:"], 550),
     ("F1", 20, 72, 520, "Big words end here."), *body(["More body text for the body size."], 495)],
]


def test_headings_from_font_size_without_an_outline():
    d = load(make_pdf(FONT_PAGES))
    assert [(s.id, s.level, s.title) for s in d.sections] == [
        ("user-manual", 1, "User Manual"), ("installing", 2, "Installing"),
        ("configuring-the-server", 2, "Configuring the Server")]
    assert "Big words end here." in d.text and d.title == "User Manual"


def test_heading_sources_can_be_chosen():
    assert [s.id for s in load(guide(), headings="fonts").sections] == ["the-guide", "getting-started-with-the-tools"]
    assert load(guide(), headings="none").sections == ()
    assert load(make_pdf(FONT_PAGES), headings="outline").sections == ()  # no outline: no headings
    plain = load(make_pdf(FONT_PAGES), headings="none", doc_id="docs/manual.pdf")
    assert plain.title == "manual"  # no heading, no /Title: the file name
    assert load(make_pdf(FONT_PAGES), headings="none", doc_id="m.pdf").title == "m"
    assert load(make_pdf(FONT_PAGES, title="Manual 2.0"), headings="none").title == "Manual 2.0"
    with pytest.raises(ConfigError, match="headings must be one of auto, outline, fonts, none"):
        PdfLoaderConfig(headings="bookmarks")


def test_running_heads_and_page_numbers_are_left_out():
    pages = [[("F1", 9, 72, 760, "The Manual: Chapter One"), *body([f"Text of page {n}, a sentence."], 700),
              ("F1", 9, 300, 40, str(n))] for n in range(1, 5)]
    d = load(make_pdf(pages))
    assert "Chapter One" not in d.text and not re.search(r"^\d+$", d.text, re.M)
    assert all(f"Text of page {n}" in d.text for n in range(1, 5))


# -- bad input ---------------------------------------------------------------------------------------------------
def test_encrypted_file_needs_its_password():
    data = make_pdf(GUIDE_PAGES, password="openpassword")  # (the writer encrypts streams, not outline strings)
    with pytest.raises(CorpusError, match=r"^encrypted: pass its password with loader option pdf.password=\.\.\.$"):
        load(data)
    with pytest.raises(CorpusError, match="encrypted, and the password given is not its password"):
        load(data, password="wrong")
    assert [s.id for s in load(data, password="openpassword").sections][:2] == \
        ["the-guide", "getting-started-with-the-tools"]


def test_image_only_file_is_an_error_and_textless_pages_are_listed():
    with pytest.raises(CorpusError, match=r"^no text layer on any of its 2 pages \(a scan\?\): run OCR first, e\.g\. "
                                          r"ocrmypdf, then load the result$"):
        load(make_pdf([[], []], image_pages=(0, 1)))
    # text drawn outside the page (ImageMagick's invisible "Background") is no text layer either
    with pytest.raises(CorpusError, match="no text layer on any of its 1 pages"):
        load(make_pdf([[("F1", 12, 0, 16, "Background")]], image_pages=(0,), size=(4, 4)))
    d = load(make_pdf([GUIDE_PAGES[0], [], GUIDE_PAGES[1]], image_pages=(1,)))
    assert d.metadata["pages_without_text"] == [2] and d.metadata["pages"] == 3


@pytest.mark.parametrize("data, message", [
    (b"", "empty file: not a PDF"),
    (b"   \n", "empty file: not a PDF"),
    (b"<html><body>Not found</body></html>",
     r"not a readable PDF: it does not start with %PDF- \(it starts with b'<html>"),
    (b"%PDF-1.3\nThis is not a valid PDF file\n%%EOF\n", "not a readable PDF: its structure is damaged or it is cut "
                                                        "short; check that it opens in a PDF viewer"),
    (None, "not a readable PDF"),  # a real PDF cut off inside its first object
])
def test_unreadable_files_are_one_line(data, message):
    if data is None:
        data = guide()[:40]
    with pytest.raises(CorpusError, match=message) as e:
        load(data)
    assert "\n" not in str(e.value)


def test_missing_pypdfium2_is_one_clear_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "pypdfium2", None)
    with pytest.raises(CorpusError, match=r"needs the pypdfium2 package: pip install 'ragtune\[pdf\]'"):
        load(guide())


# -- through the corpus -----------------------------------------------------------------------------------------
def test_registered_by_suffix_and_loaded_through_load_corpus(tmp_path, capsys):
    entry = LOADERS.get("pdf")
    assert ".pdf" in entry.suffixes and LOADERS.build("pdf").cache is True
    (tmp_path / "guide.pdf").write_bytes(guide())
    (tmp_path / "locked.PDF").write_bytes(make_pdf(GUIDE_PAGES, password="s3cret"))
    (tmp_path / "scan.pdf").write_bytes(make_pdf([[]], image_pages=(0,)))
    (tmp_path / "notes.md").write_text("# Notes\n\nSome notes.\n")
    corpus = rt.load_corpus(tmp_path)
    assert {d.id: d.format for d in corpus} == {"guide.pdf": "pdf", "notes.md": "markdown"}
    assert "guide.pdf#getting-started-with-the-tools" in corpus.anchors()
    err = capsys.readouterr().err
    assert "locked.PDF: encrypted: pass its password with loader option pdf.password=..." in err
    assert "scan.pdf: no text layer on any of its 1 pages (a scan?)" in err
    unlocked = rt.load_corpus(tmp_path, loader_options={"pdf": {"password": "s3cret"}})
    assert "locked.PDF#the-guide" in unlocked.anchors()
    with pytest.raises(CorpusError, match="encrypted"):
        rt.load_corpus(tmp_path, strict=True)


# -- the real files ---------------------------------------------------------------------------------------------
def real(path: str, **options) -> rt.Document:
    p = shared_dataset("formats/pdf") / path
    return PdfLoader(PdfLoaderConfig(**options)).load(p.read_bytes(), p.stem, str(p))


@pytest.mark.dataset
def test_tutorial_controlflow_sections_from_its_outline():
    d = real("python-tutorial/controlflow.pdf")
    ids = [s.id for s in d.sections]
    assert len(ids) == 22 and ids[:3] == ["more-control-flow-tools", "if-statements", "for-statements"]
    assert {"default-argument-values", "break-and-continue-statements-and-else-clauses-on-loops",
            "positional-only-parameters", "intermezzo-coding-style"} <= set(ids)
    s = {s.id: s for s in d.sections}
    assert s["default-argument-values"].parent == "controlflow#more-on-defining-functions"
    assert s["recap"].heading_path == ("4. More Control Flow Tools", "4.7. More on Defining Functions",
                                       "4.7.3. Special parameters", "4.7.3.5. Recap")
    # the outline lost the space at the line wrap ("onLoops"); the heading is the page's text
    assert s["break-and-continue-statements-and-else-clauses-on-loops"].title.endswith("Clauses on Loops")
    assert d.title == "More Control Flow Tools" and d.metadata["pages"] == 14
    assert ">>> if x < 0:\n...     x = 0\n...     print('Negative changed to zero')" in d.text
    assert "        del users[user]\n\n# Strategy:  Create a new collection" in d.text  # a blank line in the code
    assert "The keyword ‘elif’ is short for ‘else if’, and is useful to avoid excessive indentation." in d.text
    chunks = {c.anchor: c for c in CHUNKERS.build("section").chunk(d)}
    assert chunks["controlflow#default-argument-values"].metadata["location"]["page"] == 6
    assert all("page" in c.metadata["location"] for c in chunks.values())


@pytest.mark.dataset
def test_golden_set_anchors_exist_in_the_tutorial_pdfs():
    anchors = {f"{name}#{s.id}" for name in TUTORIAL for s in real(f"python-tutorial/{name}.pdf").sections}
    golden = [json.loads(line) for line in (REPO / "bench" / "golden" / "python-tutorial.jsonl").open()]
    wanted = {a for q in golden for a in q["relevant"] if a.split("#")[0] in TUTORIAL}
    assert len(wanted) > 30 and wanted <= anchors, sorted(wanted - anchors)


@pytest.mark.dataset
def test_two_columns_are_read_column_by_column():
    text = real("py-pdf-sample-files/026-latex-multicolumn/multicolumn.pdf").text
    first = text.index("lacus vel est. Curabitur consectetuer. Suspendisse vel felis.")  # column 1 of page 2
    second = text.index("cubilia Curae; Pellentesque sit amet pede ac sem eleifend consectetuer.")  # its column 2
    assert first < text.index("Aliquam dolor odio, commodo pretium") < second
    assert "Pellentesque habitant morbi tristique" in text  # words LaTeX hyphenated at line ends joined again
    assert "consectetuer. luctus" not in text  # no line of one column run into a line of the other


@pytest.mark.dataset
def test_geotopo_sections_pages_and_text():
    d = real("py-pdf-sample-files/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf")
    assert d.metadata["pages"] == 117 and len(d.sections) == 35
    s = {s.id: s for s in d.sections}
    assert s["flächeninhalt"].level == 3 and s["flächeninhalt"].parent == \
        "GeoTopo-komprimiert#weitere-eigenschaften-einer-euklidischen-ebene"
    assert [x.id for x in d.sections if x.title == "Übungsaufgaben"] == ["übungsaufgaben", "übungsaufgaben-1",
                                                                        "übungsaufgaben-2"]
    at = d.text.index("## 2.2 Differenzierbare Mannigfaltigkeiten")
    assert d.location(at)["page"] == 33  # the outline's destination page
    assert d.title == "Topologische Grundbegriffe"
    assert "ﬀ" not in d.text and "Grundbegriffe" in d.text  # ligatures as letters
    assert "TOPOLOGISCHE RÄUME" not in d.text  # the running head


@pytest.mark.dataset
@pytest.mark.parametrize("path, options, message", [
    ("py-pdf-sample-files/005-libreoffice-writer-password/libreoffice-writer-password.pdf", {},
     "encrypted: pass its password with loader option pdf.password=..."),
    ("py-pdf-sample-files/005-libreoffice-writer-password/libreoffice-writer-password.pdf", {"password": "wrong"},
     "encrypted, and the password given is not its password"),
    ("py-pdf-sample-files/007-imagemagick-images/imagemagick-images.pdf", {},
     "no text layer on any of its 6 pages (a scan?): run OCR first"),
    ("ocrmypdf/epson.pdf", {}, "no text layer on any of its 1 pages (a scan?)"),
    ("ocrmypdf/invalid.pdf", {}, "not a readable PDF: "),
])
def test_real_bad_files(path, options, message):
    with pytest.raises(CorpusError) as e:
        real(path, **options)
    assert str(e.value).startswith(message)


@pytest.mark.dataset
def test_real_encrypted_file_opens_with_its_password():
    d = real("py-pdf-sample-files/005-libreoffice-writer-password/libreoffice-writer-password.pdf",
             password="openpassword")
    assert d.text.startswith("Lorem ipsum dolor sit amet")


@pytest.mark.dataset
def test_malformed_file_in_a_folder_returns_in_bounded_time(tmp_path, capsys):
    src = shared_dataset("formats/pdf")
    shutil.copy(src / "py-pdf-sample-files/017-unreadable-meta-data/unreadablemetadata.pdf", tmp_path)
    shutil.copy(src / "python-tutorial/appetite.pdf", tmp_path)
    corpus = rt.load_corpus(tmp_path, extract_timeout_s=60)
    assert [d.id for d in corpus] == ["appetite.pdf"]
    err = capsys.readouterr().err
    assert "unreadablemetadata.pdf: not a readable PDF" in err  # refused as unreadable, not stopped at the limit
    assert "took more than" not in err


@pytest.mark.dataset
def test_every_real_text_pdf_loads_with_pages():
    folder = shared_dataset("formats/pdf")
    bad = {"libreoffice-writer-password", "imagemagick-images", "imagemagick-CCITTFaxDecode", "unreadablemetadata",
           "epson", "linn", "skew", "francais", "invalid"}
    loaded = 0
    for p in sorted(folder.rglob("*.pdf")):
        if p.stem in bad:
            continue
        d = PdfLoader().load(p.read_bytes(), p.stem, str(p))
        assert d.text.strip() and d.metadata["pages"] >= 1, p.name
        assert d.locations[0] == (0, {"page": 1}), p.name
        loaded += 1
    assert loaded == 17
