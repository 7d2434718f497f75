"""File names a corpus may hold: bytes that are not UTF-8 and control characters load under a stable, safe id, and
every command prints names escaped (issue 39, item 7)."""

import json
import os

import pytest

from ragtune.cli import main
from ragtune.corpus import load_corpus
from ragtune.paths import display_name, doc_id_from_path

CAFE = b"caf\xe9.md"  # Latin-1, not UTF-8: Python names it "caf\udce9.md"


def _write(folder, name: bytes, text: str) -> None:
    try:
        with open(os.path.join(os.fsencode(folder), name), "wb") as f:
            f.write(text.encode())
    except (OSError, UnicodeError):  # a file system that takes only UTF-8 names (macOS, Windows)
        pytest.skip(f"this file system refuses the name {name!r}")


@pytest.fixture
def odd_corpus(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    _write(folder, CAFE, "# Cafe\n\nCoffee is brewed here every morning.\n\n## Beans\n\nArabica beans only.\n")
    _write(folder, b"new\nline.md", "# Newline\n\nA file whose name holds a line break.\n")
    _write(folder, b"esc\x1b[31m.md", "# Escape\n\nA name that would colour a terminal red.\n")
    _write(folder, b"p\xe9ge.html", "<html><body><main><h1>Page</h1><p>Milk is kept cold.</p></main></body></html>")
    _write(folder, b"tea.md", "# Tea\n\nGreen tea is steeped briefly.\n")
    return folder


def test_a_name_becomes_a_safe_id_and_prints_on_one_line():
    name = os.fsdecode(CAFE)
    assert doc_id_from_path(name) == "caf%E9.md" and doc_id_from_path("a/new\nline.md") == "a/new%0Aline.md"
    assert doc_id_from_path("Ünï 100%.md") == "Ünï 100%.md"  # nothing to escape: the id is the name
    assert display_name(name) == "caf\\xe9.md" and display_name(CAFE) == "caf\\xe9.md"
    assert display_name("new\nline\x1b[31m\u202e.md") == "new\\nline\\x1b[31m\\u202e.md"
    assert display_name("Ünï.md") == "Ünï.md"


def test_names_that_are_not_utf8_load_under_stable_ids(odd_corpus):
    ids = [d.id for d in load_corpus(odd_corpus)]
    assert ids == ["caf%E9.md", "esc%1B[31m.md", "new%0Aline.md", "p%E9ge.html", "tea.md"]
    assert [d.id for d in load_corpus(odd_corpus)] == ids  # the same on every load
    corpus = load_corpus(odd_corpus)
    assert corpus.resolve("caf%E9.md#beans").doc_id == "caf%E9.md"
    assert all(d.source and d.source.isprintable() for d in corpus)  # sources too: stored, served, printed
    for d in corpus:
        json.dumps(d.source, ensure_ascii=False).encode("utf-8")  # no lone surrogate left to fail a write


def test_the_commands_run_and_print_names_escaped(odd_corpus, tmp_path, capsys):
    golden = tmp_path / "g.jsonl"
    golden.write_text("\n".join(json.dumps(r) for r in [
        {"id": "q1", "q": "Where is coffee brewed?", "relevant": ["caf%E9.md#cafe"]},
        {"id": "q2", "q": "Which name holds a line break?", "relevant": ["new%0Aline.md"]}]) + "\n")
    corpus = str(odd_corpus)
    assert main(["chunk", "--corpus", corpus]) == 0
    assert main(["eval", "--corpus", corpus, "--golden", str(golden), "--retriever", "bm25"]) == 0
    assert "recall@5   1.00" in capsys.readouterr().out
    assert main(["index", "build", "--store", str(tmp_path / "store"), "--corpus", corpus,
                 "--retriever", "bm25"]) == 0
    capsys.readouterr()
    assert main(["anchors", "--corpus", corpus]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    lines = out.splitlines()
    assert "caf%E9.md  (Cafe)" in lines and "  new%0Aline.md#newline  (Newline)" in lines
    assert "  esc%1B[31m.md#escape  (Escape)" in lines
    assert all(line.isprintable() for line in lines)  # no raw newline, escape or surrogate in any name
    assert main(["corpus", "show", "--corpus", corpus, "new%0Aline.md", "--sections-only"]) == 0
    shown = capsys.readouterr().out
    assert "source: " + display_name(str(odd_corpus / "new\nline.md")) in shown and "\\n" in shown


def test_an_escaped_name_that_is_another_files_name_is_skipped_in_one_line(tmp_path, capsys):
    folder = tmp_path / "docs"
    folder.mkdir()
    _write(folder, CAFE, "# Latin\n\nThe file whose name is not UTF-8.\n")
    _write(folder, b"caf%E9.md", "# Literal\n\nThe file named with a percent sign.\n")
    corpus = load_corpus(folder)
    assert [(d.id, d.title) for d in corpus] == [("caf%E9.md", "Literal")]  # the file named so keeps its name
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "caf\\xe9.md" in err[0] and "rename it" in err[0]


def test_an_unreadable_file_with_an_odd_name_is_one_escaped_error_line(tmp_path, capsys):
    folder = tmp_path / "docs"
    folder.mkdir()
    _write(folder, b"bad\nname.md", "# Bad\n\n")
    with open(os.path.join(os.fsencode(folder), b"bad\nname.md"), "ab") as f:
        f.write(b"\xff not UTF-8\n")
    assert main(["anchors", "--corpus", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad\\nname.md:3: not valid UTF-8" in err
