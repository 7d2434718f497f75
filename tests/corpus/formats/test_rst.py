"""The reStructuredText loader: sections and Sphinx's anchors, Sphinx/CPython markup kept as text, blocks, source
lines, bad input; and the CPython docs of ../shared/datasets/formats/rst against their Sphinx HTML build."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest

import ragtune as rt
from ragtune.corpus.formats.rst import RstLoader, RstLoaderConfig
from ragtune.errors import ConfigError, CorpusError
from ragtune.registry import CHUNKERS, LOADERS
from tests.helpers import shared_dataset

pytest.importorskip("docutils")

REPO = Path(__file__).resolve().parents[3]


def load(src: str | bytes, doc_id: str = "doc.rst", **options):
    data = textwrap.dedent(src).encode() if isinstance(src, str) else src
    return RstLoader(RstLoaderConfig(**options)).load(data, doc_id, doc_id)


def fences(text: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced block."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\S*)\n(.*?)\n```$", text, re.S | re.M)]


# -- sections ---------------------------------------------------------------------------------------------------
SECTIONS = """\
    .. _tut-top:

    *********
    The Guide
    *********

    Intro text.

    .. _tut-if:
    .. _tut-if-again:

    :keyword:`!if` Statements
    =========================

    About if.

    Nested part
    -----------

    Deep text.

    Examples
    --------

    First examples.

    Second chapter
    ==============

    Examples
    --------

    Second examples.
    """


def test_sections_levels_ids_aliases_and_title():
    d = load(SECTIONS)
    assert d.format == "rst" and d.title == "The Guide"
    assert [(s.level, s.id, s.aliases) for s in d.sections] == [
        (1, "the-guide", ("tut-top",)),
        (2, "if-statements", ("tut-if-again", "tut-if")),  # the title-derived id first (Sphinx's <section id>)
        (3, "nested-part", ()),
        (3, "examples", ()),
        (2, "second-chapter", ()),
        (3, "examples-1", ("id1",)),  # a repeated title: its slug; docutils' (and Sphinx's) made-up id an alias
    ]
    assert d.sections[1].title == "if Statements"  # the role's text, its "!" gone
    assert d.sections[2].heading_path == ("The Guide", "if Statements", "Nested part")
    assert d.sections[2].parent == "doc.rst#if-statements"


def test_levels_come_from_nesting_not_adornment():
    other = load("""\
        Top
        ###

        Child
        ~~~~~

        Grandchild
        ++++++++++

        text
        """)
    assert [(s.level, s.id) for s in other.sections] == [(1, "top"), (2, "child"), (3, "grandchild")]
    assert other.text.startswith("# Top\n\n## Child\n\n### Grandchild")


def test_title_falls_back_to_the_file_name():
    assert load("Just a paragraph.\n", "dir/notes.rst").title == "notes"


# -- Sphinx and CPython markup ----------------------------------------------------------------------------------
def test_object_descriptions_keep_signature_and_description():
    d = load("""\
        API
        ===

        .. function:: spam(a, b=1, *, c=None)
                      spam(a)
           :noindex:

           Return the spam of *a*.

        .. class:: Eggs(size)

           A carton.

           .. method:: open(mode='r')

              Open it.

        .. py:exception:: NoEggs

           Raised when empty.

        .. class:: Long(first, \\
                        second)
        """)
    for line in ["`spam(a, b=1, *, c=None)`", "`spam(a)`", "Return the spam of a.", "`class Eggs(size)`",
                 "A carton.", "`open(mode='r')`", "Open it.", "`exception NoEggs`", "Raised when empty.",
                 "`class Long(first, second)`"]:  # docutils' own "class" directive is Sphinx's "rst-class"
        assert f"\n{line}\n" in d.text + "\n"
    assert "noindex" not in d.text  # options are options, not text


def test_version_notes_and_labelled_directives():
    d = load("""\
        Doc
        ===

        .. versionadded:: 3.2
           The *foo* parameter.

        .. versionchanged:: 3.9

           Now faster.

        .. deprecated:: 3.1

        .. deprecated-removed:: 3.4 3.10
           Use :func:`bar`.

        .. seealso:: Module :mod:`os`

        .. availability:: Unix, not Emscripten.

        .. audit-event:: open file,mode,flags builtins.open

        .. impl-detail::

           Only in CPython.

        .. note::

           A known admonition.

        .. warning:: Mind the gap.
        """)
    for para in ["New in version 3.2: The foo parameter.", "Changed in version 3.9.", "Now faster.",
                 "Deprecated since version 3.1.",
                 "Deprecated since version 3.4, will be removed in version 3.10: Use bar().",
                 "See also: Module os", "Availability: Unix, not Emscripten.",
                 "Raises an auditing event open with arguments file, mode, flags.",
                 "CPython implementation detail: Only in CPython.", "Note: A known admonition.",
                 "Warning: Mind the gap."]:
        assert f"\n\n{para}\n\n" in f"\n\n{d.text}\n\n", para


def test_code_directives_with_their_language(tmp_path):
    (tmp_path / "example.py").write_text("SECRET_INCLUDED = 1\n")
    d = load("""\
        Doc
        ===

        .. code-block:: shell-session
           :emphasize-lines: 1

           $ python -m venv env

        .. sourcecode:: c

           int main(void) { return 0; }

        .. code-block::

           no language given

        .. doctest::

           >>> 1 + 1
           2

        .. testcode::

           print(3)

        .. testoutput::

           3

        .. literalinclude:: example.py
           :lines: 1

        .. testsetup::

           import hidden_setup

        .. toctree::
           :maxdepth: 2

           hidden_toc_entry

        .. index:: single: hidden_index_entry

        .. module:: hiddenmodule
           :synopsis: hidden synopsis
        """)
    assert fences(d.text) == [("shell-session", "$ python -m venv env"), ("c", "int main(void) { return 0; }"),
                              ("", "no language given"), ("python", ">>> 1 + 1\n2"), ("python", "print(3)"),
                              ("", "3")]
    assert d.location(d.text.index("```shell-session"))["line"] == 7  # the code's first line
    assert "(code included from example.py)" in d.text
    assert "SECRET_INCLUDED" not in d.text  # a literalinclude never reads the file
    for hidden in ["hidden_setup", "hidden_toc_entry", "hidden_index_entry", "hiddenmodule", "hidden synopsis",
                   "emphasize", "maxdepth"]:
        assert hidden not in d.text


def test_unknown_extension_directive_keeps_argument_and_content():
    d = load("""\
        Doc
        ===

        .. my-extension:: Some argument
           :flag:

           Content with *markup* and a nested list:

           - one
           - two
        """)
    assert "Some argument\n\nContent with markup and a nested list:\n\n- one\n- two" in d.text
    assert "flag" not in d.text


def test_roles_show_what_sphinx_shows():
    d = load("""\
        .. _top:

        Guide
        =====

        Call :func:`range`, :meth:`~os.path.join`, :func:`len() <len>`, :class:`.datetime`, :mod:`json`,
        :ref:`the intro <intro>`, :ref:`top`, :ref:`elsewhere`, :term:`iterable`, :keyword:`!for`,
        :pep:`8`, :rfc:`2822`, :source:`Lib/json.py`, :issue:`1234`, :kbd:`Ctrl-C`, :file:`{dir}/x.cfg`,
        :c:func:`PyList_New`, :envvar:`PYTHONPATH`, ``literal`` and *emphasis*.
        """)
    assert ("Call range(), join(), len(), datetime, json, the intro, Guide, elsewhere, iterable, for, PEP 8, "
            "RFC 2822, Lib/json.py, bpo-1234, Ctrl-C, dir/x.cfg, PyList_New(), PYTHONPATH, literal and emphasis."
            ) in d.text


def test_docutils_lookups_are_restored_after_a_load():
    from docutils.core import publish_doctree
    from docutils.parsers.rst import directives, roles

    before = directives.directive, roles.role, dict(directives._directives), dict(roles._roles)
    load(".. function:: f()\n\n   :func:`g` text\n")
    assert (directives.directive, roles.role, directives._directives, roles._roles) == before
    # plain docutils, used by someone else in the process, still does not know Sphinx's markup
    tree = publish_doctree(".. function:: f()\n", settings_overrides={"report_level": 5, "_disable_config": True})
    assert "Unknown directive type" in tree.astext()


# -- blocks -----------------------------------------------------------------------------------------------------
BLOCKS = """\
    Blocks
    ======

    A *paragraph* with ``code``, a `link <https://example.com>`_, a footnote [#f]_ and |sub|.

    .. |sub| replace:: a substitution

    Python code::

        def f(x):
            return x

    Shell output::

        $ ls -l
        total 0

    >>> 1 + 2
    3

    +--------+------------+
    | Head A | Head B     |
    +========+============+
    | spans both columns  |
    +--------+------------+
    | tall   | b1         |
    |        +------------+
    |        | b2         |
    +--------+------------+

    =====  =====
    col 1  col 2
    =====  =====
    x      y
    =====  =====

    * top item
      continued

      * nested item

    3. third
    #. fourth

    term
       Its definition.

    :field: Its value.

    .. [#f] The footnote text.
    """


def test_blocks_are_written_as_markdown():
    d = load(BLOCKS)
    text = d.text
    assert "A paragraph with code, a link, a footnote [1] and a substitution." in text
    assert fences(text) == [("python", "def f(x):\n    return x"), ("", "$ ls -l\ntotal 0"), ("python", ">>> 1 + 2\n3")]
    assert ("| Head A | Head B |\n|---|---|\n| spans both columns |  |\n| tall | b1 |\n|  | b2 |") in text
    assert "| col 1 | col 2 |\n|---|---|\n| x | y |" in text
    assert "- top item continued\n  - nested item" in text
    assert "3. third\n4. fourth" in text
    assert "term: Its definition." in text and "field: Its value." in text
    assert "[1] The footnote text." in text


def test_default_language_and_highlight_directive():
    src = """\
        Doc
        ===

        ::

            x = 1

        .. highlight:: none

        ::

            y = 2
        """
    assert [lang for lang, _ in fences(load(src).text)] == ["python", ""]
    assert [lang for lang, _ in fences(load(src, default_language="none").text)] == ["", ""]
    assert [lang for lang, _ in fences(load(src, default_language="yaml").text)] == ["yaml", ""]
    with pytest.raises(ConfigError, match="default_language"):
        RstLoaderConfig(default_language="py thon")


@pytest.mark.parametrize("chunker, options", [("markdown", {"size": 40}), ("section", {})])
def test_code_blocks_and_tables_stay_whole_in_chunks(chunker, options):
    d = load(BLOCKS)
    chunks = CHUNKERS.build(chunker, options=options).chunk(d)
    whole = [m.group() for m in re.finditer(r"^```.*?^```$", d.text, re.S | re.M)]
    whole += [m.group() for m in re.finditer(r"^\|.*\|$(?:\n\|.*\|$)*", d.text, re.M)]
    assert len(whole) == 5  # three code blocks, two tables
    assert chunker == "section" or len(chunks) > 3  # chunks smaller than the document, larger than each block
    for block in whole:
        assert any(block in c.text for c in chunks), block


def test_blocks_carry_their_source_line():
    d = load(SECTIONS)
    source = textwrap.dedent(SECTIONS).splitlines()
    for needle, line in [("# The Guide", 4), ("Intro text.", 7), ("## if Statements", 12), ("Deep text.", 20),
                         ("Second examples.", 33)]:
        at = d.text.index(needle)
        assert d.location(at)["line"] == line, needle
        assert source[line - 1].strip() in (needle.lstrip("# "), ":keyword:`!if` Statements")
    b = load(BLOCKS)
    assert b.location(b.text.index("```python\ndef f"))["line"] == 10  # the first line of the code
    chunk = CHUNKERS.build("section").chunk(d)[-1]
    assert chunk.metadata["location"]["line"] == 30  # the chunk of the last section starts at its title


# -- bad input --------------------------------------------------------------------------------------------------
def test_undecodable_bytes_name_the_line():
    with pytest.raises(CorpusError, match=r"^line 4: not valid UTF-8 \(byte 0xff at offset 14\)"):
        load(b"Doc\n===\n\nfine \xff\n")


def test_byte_order_mark_is_dropped():
    d = load("\ufeffDoc\n===\n\ntext\n".encode())
    assert d.title == "Doc" and d.text.startswith("# Doc")


@pytest.mark.parametrize("data", [b"", b"  \n\n", b".. just a comment\n\n.. _target:\n"])
def test_a_file_without_text_is_reported(data):
    with pytest.raises(CorpusError, match=r"^no text"):
        load(data)


def test_markup_errors_keep_the_recovered_text_and_print_nothing(capfd):
    d = load("""\
        =====
        Title
        -----

        Text after a broken title.

        +-----+-----+
        | a   | b   |
        +-----+
        | c | d |
        +-----+-----+

        Text after a broken table.

        .. unknown-directive-with-bad-options::
           :
        """)
    assert "Text after a broken title." in d.text and "Text after a broken table." in d.text
    assert "Title" in d.text and "| c | d |" in d.text  # given up on by docutils, kept verbatim
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_deep_nesting_is_an_error_not_a_crash():
    deep = "".join("  " * i + f"- item {i}\n\n" for i in range(1000))
    with pytest.raises(CorpusError, match="nested too deeply"):
        load(deep)
    assert "item 99" in load("".join("  " * i + f"- item {i}\n\n" for i in range(100))).text  # 100 levels load
    assert load("Doc\n===\n\n:func:`f`\n").text == "# Doc\n\nf()"  # and the lookups were restored


def test_include_and_file_options_never_read_files(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-LINE\n")
    d = load(f"""\
        Doc
        ===

        .. include:: /etc/passwd

        .. include:: {secret}

        .. literalinclude:: /etc/passwd

        .. raw:: html
           :file: {secret}

        .. csv-table:: t
           :file: {secret}

        The end.
        """)
    assert "TOP-SECRET-LINE" not in d.text and "root:" not in d.text
    assert "The end." in d.text


def test_missing_docutils_is_one_clear_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "docutils", None)
    with pytest.raises(CorpusError, match=r"needs the docutils package: pip install 'ragtune\[rst\]'"):
        load("Doc\n===\n")


# -- through the corpus -----------------------------------------------------------------------------------------
def test_registered_by_suffix_and_loaded_through_load_corpus(tmp_path, capsys):
    assert LOADERS.get("rst") is not None
    (tmp_path / "guide.rst").write_text(textwrap.dedent(SECTIONS))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "other.rest").write_text("Other\n=====\n\nText.\n")
    (tmp_path / "notes.txt").write_text("Plain *text*.\n")
    (tmp_path / "bad.rst").write_bytes(b"Bad\n===\n\n\xff\n")
    corpus = rt.load_corpus(tmp_path)
    assert {d.id: d.format for d in corpus} == {"guide.rst": "rst", "notes.txt": "text", "sub/other.rest": "rst"}
    assert "guide.rst#if-statements" in corpus.anchors()
    by_alias, by_id = corpus.resolve("guide.rst#tut-if"), corpus.resolve("guide.rst#if-statements")
    assert (by_alias.start, by_alias.end) == (by_id.start, by_id.end)
    assert "bad.rst: line 4: not valid UTF-8" in capsys.readouterr().err
    with pytest.raises(CorpusError, match="line 4: not valid UTF-8"):
        rt.load_corpus(tmp_path, strict=True)


# -- the real files ---------------------------------------------------------------------------------------------
def _real_docs(folder: Path) -> dict[str, rt.Document]:
    loader = RstLoader()
    return {str(p.relative_to(folder)): loader.load(p.read_bytes(), p.stem, str(p))
            for p in sorted(folder.rglob("*.rst"))}


@pytest.mark.dataset
def test_tutorial_section_ids_equal_the_sphinx_html_build():
    rst = shared_dataset("formats/rst/tutorial")
    html = shared_dataset("formats/html/python-tutorial")
    loader = RstLoader()
    files = sorted(rst.glob("*.rst"))
    assert len(files) == 17
    for p in files:
        page = (html / f"{p.stem}.html").read_text(encoding="utf-8")
        d = loader.load(p.read_bytes(), p.stem, str(p))
        assert [s.id for s in d.sections] == re.findall(r'<section id="([^"]+)"', page), p.name
        labels = set(re.findall(r'<span id="([^"]+)"></span>', page))
        assert {a for s in d.sections for a in s.aliases} <= labels, p.name


@pytest.mark.dataset
def test_golden_set_anchors_exist_in_the_rst_tutorial():
    docs = _real_docs(shared_dataset("formats/rst/tutorial"))
    anchors = {f"{name[:-4]}#{a}" for name, d in docs.items() for s in d.sections for a in (s.id, *s.aliases)}
    golden = [json.loads(line) for line in (REPO / "bench" / "golden" / "python-tutorial.jsonl").open()]
    wanted = {a for q in golden for a in q["relevant"]}
    assert len(wanted) > 30 and wanted <= anchors, sorted(wanted - anchors)


@pytest.mark.dataset
def test_every_real_file_loads_quietly(capfd):
    docs = _real_docs(shared_dataset("formats/rst"))
    assert len(docs) == 39
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    sections = {name: len(d.sections) for name, d in docs.items()}
    # the counts of the dataset's README (a Sphinx doctree pass over the same files)
    assert (sections["tutorial/controlflow.rst"], sections["library/argparse.rst"], sections["library/enum.rst"]) \
        == (22, 51, 39)
    assert all(d.title and d.sections for d in docs.values())
    assert docs["library/json.rst"].title == "json --- JSON encoder and decoder"

    def tables(d):
        return len(re.findall(r"^\|(?:---\|)+$", d.text, re.M))

    # 44 in the README: one of them is in using/venv-create.inc, which is included, and includes are not read
    assert sum(tables(d) for name, d in docs.items() if name.startswith("library/")) == 43
    assert sum(tables(d) for name, d in docs.items() if name.startswith("tutorial/")) == 0
    datetime_ = docs["library/datetime.rst"]
    assert tables(datetime_) == 7 and "| Attribute | Value |" in datetime_.text
    code = sum(len(fences(d.text)) for d in docs.values())
    assert code > 900  # README: 977 with the 20 literalincludes and the testsetups, which are not code here
    text = docs["library/statistics.rst"].text
    assert "`mean(data)`" in text and ">>> mean([1, 2, 3, 4, 4])\n2.8" in text
    assert "(code included from ../includes/sqlite3/md5func.py)" in docs["library/sqlite3.rst"].text
    assert "Availability: POSIX" in docs["library/subprocess.rst"].text
