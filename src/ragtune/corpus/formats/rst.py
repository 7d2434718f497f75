"""reStructuredText files (``.rst``, ``.rest``), parsed by docutils, with the Sphinx markup docutils does not know.

**Sections and anchors.** Each docutils ``section`` is a heading; its level is its nesting depth (adornment
characters mean different levels in different files). Its id is the first of the section's docutils ids, the one
derived from its title (``if-statements``), which is the ``<section id>`` Sphinx writes in HTML; a
``.. _label:`` target just before a section adds its label (``tut-if``) as an alias. Docutils runs with Sphinx's
settings for ids (``auto_id_prefix="id"``, no document-title promotion), so a section whose title another section
or a label already has, or whose title has no ASCII letter, gets the ``id1``, ``id2`` a Sphinx build gives it:
such an id is an alias, and the section is anchored by its label (``#sessions``) or else the slug of its title
(``#routing-1``), as the builder does for every format (:mod:`.builder`). A document's title is its first
top-level section title.

**Sphinx and CPython markup.** Plain docutils knows neither Sphinx's directives (``.. function::``,
``.. versionadded::``, ``.. code-block::``, ``.. literalinclude::``, ``.. toctree::``, ...) nor its roles
(``:func:``, ``:ref:``, ...), and drops their text with an error. While a file is parsed, the directive and role
lookups of docutils are wrapped: one parse at a time, under a lock, restored afterwards, and docutils' registries
of directives and roles are never written, so nothing stays behind for other users of docutils in the process. A
name docutils does not know gets a generic directive that keeps its arguments (an object's signature, a version
note, a "See also") and parses its content as body text, and a generic role that keeps its text (the title of
``title <target>``, ``range()`` for ``:func:`range```, as Sphinx writes them; a ``:ref:`` to a label of the same
file shows that section's title; a file alone cannot know the titles its ``:ref:`` and ``:doc:`` roles name in
other files, so :meth:`RstLoader.load` shows the bare label or path there, unless it is given the corpus's labels
and document titles, as the workbench does to show a section as the docs do). ``.. class::`` is Sphinx's Python
class, not docutils' class attribute. Code
directives (``code-block``, ``doctest``, ``testcode``) become code blocks with their language; index entries,
toctrees, module declarations and test setups carry no text and are dropped.

**Files are never read.** ``file_insertion_enabled`` is off and ``raw`` is disabled, so ``.. include::
/etc/passwd``, ``.. raw:: html :file:`` and ``.. csv-table:: :file:`` read nothing; a ``literalinclude`` is the
note "(code included from FILE)". A corpus file cannot pull another file into the index.

**Blocks.** Literal blocks (``::``) are code in the highlight language in effect (``default_language``, or the
last ``.. highlight::``), marked ``python`` only when the block parses as Python or is a ``>>>`` session (as
Sphinx falls back to no highlighting when its lexer fails); doctest blocks are Python. Grid and simple tables are
tables (spanned cells left empty), lists are list items by depth, definition and field lists are
``term: definition``, admonitions keep their title (``Note: ...``), footnotes stay where they are defined.
Markup errors never stop a file: docutils recovers what it can, quietly, and text it gave up on (a malformed
table) is kept verbatim as a code block.

**Locations.** Every block is located at the line of the ``.rst`` file it comes from (``{"line": N}``), or the
nearest line known before it when docutils gives none.
"""

from __future__ import annotations

import ast
import functools
import io
import posixpath
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from ...config import Config, Opt
from ...errors import ConfigError, CorpusError
from ...registry import LOADERS
from ...types import Document
from . import missing_library
from .builder import DocumentBuilder

__all__ = ["RstLoaderConfig", "RstLoader"]


@dataclass(frozen=True)
class RstLoaderConfig(Config):
    default_language: Annotated[str, Opt(
        "language of '::' literal blocks before any '.. highlight::' (Sphinx's highlight_language; "
        "'python' is also CPython's); '' or 'none' for none")] = "python"

    def __post_init__(self) -> None:
        if not isinstance(self.default_language, str) or any(c.isspace() for c in self.default_language):
            raise ConfigError(f"RstLoaderConfig: default_language must be a language name without spaces "
                              f"(python, text, none, ''), got {self.default_language!r}")


# -- what Sphinx's markup becomes -------------------------------------------------------------------------------
# directives without text of their own
_DROPPED = frozenset({
    "toctree", "index", "module", "currentmodule", "testsetup", "testcleanup", "sectionauthor", "moduleauthor",
    "codeauthor", "tabularcolumns", "program", "default-domain", "autosummary", "highlight"})
# code directives: name -> their language when they give none (None: the highlight language in effect)
_CODE: dict[str, str | None] = {"code-block": None, "sourcecode": None, "code": None, "doctest": "python",
                                "testcode": "python", "testoutput": "none", "productionlist": "none",
                                "ipython": "python"}
_LANGUAGE_ARGUMENT = frozenset({"code-block", "sourcecode", "code"})
# object descriptions (Python, C and std domains): the signature, then the description
_OBJECTS = {
    "function": "", "method": "", "attribute": "", "data": "", "decorator": "@", "decoratormethod": "@",
    "class": "class ", "exception": "exception ", "classmethod": "classmethod ", "staticmethod": "staticmethod ",
    "abstractmethod": "abstractmethod ", "coroutinefunction": "coroutine ", "coroutinemethod": "coroutine ",
    "awaitablefunction": "awaitable ", "awaitablemethod": "awaitable ", "property": "property ",
    "describe": "", "object": "", "option": "", "cmdoption": "", "envvar": "", "opcode": "", "pdbcommand": "",
    "macro": "", "type": "", "member": "", "var": "", "struct": "", "union": "", "enum": "", "enumerator": "",
    "2to3fixer": "", "monitoring-event": "", "confval": ""}
# version notes: name -> how Sphinx words them
_VERSIONS = {"versionadded": "New in version", "versionchanged": "Changed in version",
             "deprecated": "Deprecated since version", "versionremoved": "Removed in version",
             "deprecated-removed": "Deprecated since version"}
# admonition-like directives docutils does not know: name -> the title Sphinx gives them
_LABELLED = {"seealso": "See also", "availability": "Availability", "impl-detail": "CPython implementation detail",
             "todo": "Todo"}
_DOMAIN_RE = re.compile(r"^(?:py|c|cpp|js|rst|std|math):")
# roles Sphinx writes with "()" after the name (add_function_parentheses); plain-text roles (no "~", no "()")
_XREF_PARENS = frozenset({"func", "meth", "py:func", "py:meth", "c:func", "cpp:func"})
_PLAIN_XREFS = frozenset({"ref", "term", "doc", "numref", "keyword", "std:ref", "std:term", "std:doc"})
_CONTINUED_RE = re.compile(r"\\[ \t]*\n\s*")
_TITLE_RE = re.compile(r"^(.+?)\s*(?<!\x00)<(.*?)>$", re.S)
_SAMP_RE = re.compile(r"(?<!\x00)[{}]")  # the braces of :samp:`{var}` (an escaped brace is kept)


def _role_text(name: str, text: str) -> str:
    """The text Sphinx shows for ``:name:`text```: the title of ``title <target>``, the last component of
    ``~a.b.c``, ``f()`` for a function, ``PEP 8``, ``bpo-1234``."""
    from docutils.utils import unescape

    name = name.lower()
    text = text.lstrip("!") if name not in ("kbd", "samp", "file", "code", "math") else text
    m = _TITLE_RE.match(text)
    if m and name not in ("kbd", "samp", "file", "abbr", "math"):
        return unescape(m.group(1))
    if name in ("samp", "file"):
        return unescape(_SAMP_RE.sub("", text))
    text = unescape(text)
    if name in ("pep", "rfc"):
        return f"{name.upper()} {text}"
    if name == "issue":
        return f"bpo-{text}"
    if name in _PLAIN_XREFS:
        return text
    if text.startswith("~"):
        text = text[1:].rsplit(".", 1)[-1]
    elif text.startswith(".") and len(text) > 1:  # ".name": Sphinx searches for the target, shows "name"
        text = text[1:]
    if name in _XREF_PARENS and not text.endswith(")"):
        text += "()"
    return text


@functools.cache
def _sphinx_markup() -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(directive lookup, role lookup) that answer every name docutils does not know with a generic one. Built
    on first use, so docutils is imported only when an ``.rst`` file is read."""
    from docutils import nodes
    from docutils.parsers.rst import Directive, directives, roles

    class AnyOptions(dict):  # type: ignore[type-arg]
        """Every option is accepted (and kept as text): an unknown directive's options are not its content."""

        def __missing__(self, key: str) -> Callable[[str | None], str]:
            return directives.unchanged

        def __bool__(self) -> bool:
            return True

    class Sphinx(Directive):
        """A directive docutils does not know (Sphinx's, CPython's, an extension's): see the module docstring."""

        required_arguments = 0
        optional_arguments = 1
        final_argument_whitespace = True
        option_spec = AnyOptions()
        has_content = True

        def inline(self, text: str) -> list[Any]:
            found, messages = self.state.inline_text(text, self.lineno)
            return [*found, *messages]

        def paragraph(self, text: str, *, prefix: str = "") -> Any:
            node = nodes.paragraph(text, prefix, *self.inline(text))
            node.source, node.line = self.state_machine.get_source_and_line(self.lineno)
            return node

        def body(self) -> list[Any]:
            holder = nodes.Element()
            if self.content:
                self.state.nested_parse(self.content, self.content_offset, holder)
            return list(holder.children)

        def run(self) -> list[Any]:
            name = _DOMAIN_RE.sub("", self.name.lower())
            argument = self.arguments[0] if self.arguments else ""
            if name == "highlight":
                return [nodes.comment("", "", highlight=argument.split()[0] if argument.split() else "")]
            if name in _DROPPED:
                return []
            if name in _CODE:
                language = argument.split()[0] if name in _LANGUAGE_ARGUMENT and argument.split() else _CODE[name]
                text = "\n".join(self.content)
                node = nodes.literal_block(text, text)
                if language is not None:
                    node["language"] = language
                node.line = self.content_offset + 1
                return [node]
            if name == "literalinclude":
                return [self.paragraph(f"(code included from {argument})")] if argument else []
            if name in _OBJECTS:
                out = []
                joined = _CONTINUED_RE.sub(" ", argument)  # a signature continued on the next line ends in "\\"
                for signature in filter(None, (s.strip() for s in joined.splitlines())):
                    sig = nodes.literal(signature, _OBJECTS[name] + signature)
                    out.append(nodes.paragraph(signature, "", sig, classes=["signature"]))
                    out[-1].line = self.lineno
                return out + self.body()
            if name in _VERSIONS:
                versions = 2 if name == "deprecated-removed" else 1  # "3.4 3.10": deprecated, then removed
                parts = argument.split(None, versions) + [""] * (versions + 1)
                label = f"{_VERSIONS[name]} {parts[0]}"
                if versions == 2:
                    label += f", will be removed in version {parts[1]}"
                rest = parts[versions].strip()
                return [self.paragraph(rest, prefix=f"{label}: " if rest else f"{label}.")] + self.body()
            if name == "audit-event":
                event, args = (argument.split() + ["", ""])[:2]  # name, comma-separated arguments[, target]
                args = ", ".join(a for a in args.split(",") if a)
                said = f"Raises an auditing event {event}" + (f" with arguments {args}." if args else ".")
                return [self.paragraph(said)] + self.body()
            if name in _LABELLED:
                children = ([self.paragraph(argument)] if argument.strip() else []) + self.body()
                return [nodes.admonition("", nodes.title(_LABELLED[name], _LABELLED[name]), *children)]
            return ([self.paragraph(argument)] if argument.strip() else []) + self.body()

    def role(name: str, rawtext: str, text: str, lineno: int, inliner: Any, options: Any = None,
             content: Any = None) -> tuple[list[Any], list[Any]]:
        shown = _role_text(name, text)
        if name.lower() in _PLAIN_XREFS:
            node = nodes.inline(rawtext, shown)
            if name.lower() in ("ref", "std:ref") and not _TITLE_RE.match(text):
                node["ref_label"] = nodes.make_id(shown)  # shown as its section's title when it is known
            elif name.lower() in ("doc", "std:doc") and not _TITLE_RE.match(text):
                node["ref_doc"] = shown  # shown as the document's title when it is known
            return [node], []
        return [nodes.literal(rawtext, shown)], []

    original_directive, original_role = directives.directive, roles.role
    # names docutils knows but Sphinx reads its own way (``class`` is the Python class, docutils' is ``rst-class``)
    own_directives = set(_CODE) | {"highlight", "literalinclude", "class"}
    own_roles = {"pep", "rfc", "issue"}

    def directive_lookup(name: str, language: Any, document: Any) -> tuple[Any, list[Any]]:
        if _DOMAIN_RE.sub("", name.lower()) in own_directives:
            return Sphinx, []
        found, messages = original_directive(name, language, document)
        return (found or Sphinx), messages

    def role_lookup(name: str, language: Any, lineno: int, reporter: Any) -> tuple[Any, list[Any]]:
        if name.lower() in own_roles:
            return role, []
        found, messages = original_role(name, language, lineno, reporter)
        return (found or role), messages

    return directive_lookup, role_lookup


_PARSE_LOCK = threading.Lock()


def _settings() -> dict[str, Any]:
    """Sphinx's docutils settings where they shape ids and sections, plus: nothing read from disk (neither
    config files nor included files), nothing printed, no exit."""
    return {"report_level": 5, "halt_level": 5, "warning_stream": io.StringIO(), "traceback": True,
            "file_insertion_enabled": False, "raw_enabled": False, "_disable_config": True,
            "doctitle_xform": False, "docinfo_xform": False, "sectsubtitle_xform": False, "auto_id_prefix": "id",
            "syntax_highlight": "none", "smart_quotes": False, "pep_references": False, "rfc_references": False,
            "input_encoding": "unicode", "language_code": "en", "embed_stylesheet": False}


def _parse(text: str, source: str) -> Any:
    """The docutils doctree of ``text``, transforms applied, with Sphinx's markup understood (see the module
    docstring). The lookups are swapped back even when parsing fails."""
    from docutils.core import publish_doctree
    from docutils.parsers.rst import directives, roles

    directive_lookup, role_lookup = _sphinx_markup()
    with _PARSE_LOCK:
        saved = directives.directive, roles.role
        directives.directive, roles.role = directive_lookup, role_lookup
        try:
            return publish_doctree(text, source_path=source, settings_overrides=_settings())
        finally:
            directives.directive, roles.role = saved


def _decode(data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise CorpusError(f"line {line}: not valid UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start}); "
                          "re-save the file as UTF-8") from None
    return text[1:] if text.startswith("\ufeff") else text


def _looks_python(code: str) -> bool:
    if code.lstrip().startswith(">>>"):
        return True
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


# -- from doctree to builder ------------------------------------------------------------------------------------
class _Writer:
    """Walks a doctree and writes it through a :class:`DocumentBuilder`."""

    def __init__(self, builder: DocumentBuilder, nodes: Any, default_language: str, lines: list[str], *,
                 labels: Mapping[str, str] | None = None, doc_titles: Mapping[str, str] | None = None):
        self.outside = labels or {}  # labels of other files -> their section's title
        self.doc_titles = doc_titles or {}  # document path without suffix -> its title, for :doc:`path`
        self.folder = posixpath.dirname(builder.doc_id)
        self.nodes = nodes  # docutils.nodes
        self.lines = lines
        self.b = builder
        self.language = default_language
        self.line = 1
        self.title: str | None = None
        self.labels: dict[str, str] = {}  # section id or label -> its title, for :ref:`label`

    # text of inline markup
    def text(self, node: Any) -> str:
        n = self.nodes
        if isinstance(node, n.Text):
            return node.astext()  # backslash escapes (kept as NUL characters in the doctree) removed
        label = node.get("ref_label")
        if label is not None and (label in self.labels or label in self.outside):
            return self.labels[label] if label in self.labels else self.outside[label]
        target = node.get("ref_doc")
        if target is not None:
            path = target[1:] if target.startswith("/") else posixpath.join(self.folder, target)
            path = posixpath.normpath(path)
            path = path.rsplit(".", 1)[0] if path.endswith((".rst", ".rest", ".txt")) else path
            if path in self.doc_titles:
                return self.doc_titles[path]
        if isinstance(node, (n.footnote_reference, n.citation_reference)):
            return f"[{node.astext()}]"
        if isinstance(node, (n.image, n.comment, n.system_message, n.substitution_definition, n.generated, n.raw)):
            return ""
        return "".join(self.text(c) for c in node.children)

    def flat(self, node: Any) -> str:
        return " ".join(self.text(node).split())

    def locate(self, node: Any, line: int | None = None) -> None:
        line = line or getattr(node, "line", None)
        if isinstance(line, int) and line > 0:
            self.line = line
        self.b.locate({"line": self.line})

    def document(self, tree: Any) -> None:
        titles = {}
        for section in tree.findall(self.nodes.section):
            if section.children and isinstance(section[0], self.nodes.title):
                titles.update(dict.fromkeys(section.get("ids", ()), self.flat(section[0])))
        self.labels = titles
        self.blocks(tree.children)

    # blocks
    def blocks(self, nodes_: Any, depth: int = 0) -> None:
        for node in nodes_:
            self.block(node, depth)

    def block(self, node: Any, depth: int = 0) -> None:
        n = self.nodes
        if isinstance(node, n.section):
            self.section(node, depth)
        elif isinstance(node, (n.paragraph, n.rubric)):
            self.locate(node)
            text = self.flat(node)
            if "signature" in node.get("classes", ()) and text:
                text = f"`{text}`"
            self.b.paragraph(text)
        elif isinstance(node, n.literal_block):
            language = node.get("language")
            self.code(node, self.literal_language(node) if language is None else "" if language == "none" else
                      language)
        elif isinstance(node, n.doctest_block):
            self.code(node, "python")
        elif isinstance(node, n.math_block):
            self.code(node, "latex")
        elif isinstance(node, n.table):
            self.table(node)
        elif isinstance(node, (n.bullet_list, n.enumerated_list)):
            self.list(node, depth)
        elif isinstance(node, n.definition_list):
            for item in node.children:
                if isinstance(item, n.definition_list_item):
                    term = " : ".join(self.flat(c) for c in item.children if isinstance(c, (n.term, n.classifier)))
                    body = next((c for c in item.children if isinstance(c, n.definition)), None)
                    self.labelled(item, term, body.children if body is not None else [], depth)
        elif isinstance(node, n.field_list):
            for field in node.children:
                if isinstance(field, n.field) and len(field.children) == 2:
                    self.labelled(field, self.flat(field[0]), field[1].children, depth)
        elif isinstance(node, n.option_list):
            for item in node.children:
                if isinstance(item, n.option_list_item) and len(item.children) == 2:
                    self.labelled(item, self.flat(item[0]), item[1].children, depth)
        elif isinstance(node, (n.Admonition, n.topic, n.sidebar)):
            if isinstance(node, n.topic) and "contents" in node.get("classes", ()):
                return
            titles = [c for c in node.children if isinstance(c, (n.title, n.subtitle))]
            label = " - ".join(self.flat(t) for t in titles) or node.tagname.replace("_", " ").capitalize()
            self.labelled(node, label, [c for c in node.children if c not in titles], depth)
        elif isinstance(node, (n.footnote, n.citation)):
            labels = [c for c in node.children if isinstance(c, n.label)]
            label = "[" + self.flat(labels[0]) + "]" if labels else ""
            self.labelled(node, label, [c for c in node.children if c not in labels], depth, sep=" ")
        elif isinstance(node, n.line_block):
            self.locate(node)
            self.b.paragraph("\n".join(" ".join(self.text(line).split()) for line in node.findall(n.line)))
        elif isinstance(node, n.attribution):
            self.locate(node)
            self.b.paragraph("\u2014 " + self.flat(node))
        elif isinstance(node, n.figure):
            self.blocks((c for c in node.children if not isinstance(c, n.image)), depth)
        elif isinstance(node, (n.caption, n.legend)):
            self.locate(node)
            self.b.paragraph(self.flat(node))
        elif isinstance(node, n.comment):
            if "highlight" in node.attributes:
                self.language = node["highlight"]
        elif isinstance(node, n.system_message):
            if node.get("level", 0) >= 3:  # an error docutils recovered from: the text it gave up on, verbatim
                for kept in node.findall(n.literal_block):
                    self.code(kept, "")
        elif isinstance(node, (n.target, n.substitution_definition, n.image, n.raw, n.transition, n.pending,
                               n.title, n.decoration, n.meta)):
            return
        elif isinstance(node, n.TextElement):  # any other text block
            self.locate(node)
            self.b.paragraph(self.flat(node))
        else:  # containers: block_quote, compound, container, definition bodies, ...
            self.blocks(node.children, depth)

    def section(self, node: Any, depth: int) -> None:
        n = self.nodes
        level = 1 + sum(1 for p in _ancestors(node) if isinstance(p, n.section))
        title = next((c for c in node.children if isinstance(c, n.title)), None)
        text = self.flat(title) if title is not None else ""
        if text:
            self.locate_title(title)
            ids = list(node.get("ids", ()))
            self.b.heading(level, text, id=ids[0] if ids else None, aliases=ids[1:])
            if self.title is None and level == 1:
                self.title = text
        self.blocks(node.children, depth)

    def locate_title(self, title: Any) -> None:
        """A title's line is its underline in docutils: the title text is on the line above it."""
        line = title.line if isinstance(title.line, int) and title.line > 1 else None
        first = title.rawsource.strip().split("\n")[0].strip()
        if line is not None and first and self.lines[line - 2].strip() == first:
            line -= 1
        self.locate(title, line)

    def labelled(self, node: Any, label: str, body: Any, depth: int, sep: str = ": ") -> None:
        """``label: first paragraph`` as one paragraph (a term with its definition, a note with its text), then the
        rest of the body."""
        body = list(body)
        self.locate(node)
        if body and isinstance(body[0], self.nodes.paragraph):
            first = self.flat(body[0])
            self.b.paragraph(f"{label}{sep}{first}" if label else first)
            body = body[1:]
        elif label:
            self.b.paragraph(label)
        self.blocks(body, depth)

    def literal_language(self, node: Any) -> str:
        language = self.language
        if language in ("none", "text", ""):
            return "" if language == "none" else language
        if language in ("python", "python3", "py", "py3", "default", "pycon"):
            return "python" if _looks_python(node.astext()) else ""
        return language

    def code(self, node: Any, language: str) -> None:
        self.locate(node)
        self.b.code(node.astext(), language)

    def list(self, node: Any, depth: int) -> None:
        n = self.nodes
        ordered = isinstance(node, n.enumerated_list)
        number = int(node.get("start", 1) or 1)
        for item in node.children:
            if not isinstance(item, n.list_item):
                continue
            self.locate(item)
            children = list(item.children)
            first = ""
            if children and isinstance(children[0], n.paragraph):
                first = self.flat(children.pop(0))
            if first:
                self.b.item(first, depth=depth, ordered=ordered, number=number)
            self.blocks(children, depth + 1)
            number += 1

    def table(self, node: Any) -> None:
        n = self.nodes
        self.locate(node)
        for title in (c for c in node.children if isinstance(c, n.title)):
            self.b.paragraph(self.flat(title))
        for group in (c for c in node.children if isinstance(c, n.tgroup)):
            width = max(1, sum(1 for c in group.children if isinstance(c, n.colspec)))
            head = [r for c in group.children if isinstance(c, n.thead) for r in c.children]
            body = [r for c in group.children if isinstance(c, n.tbody) for r in c.children]
            rows = list(_grid([*head, *body], width, lambda e: " ".join(
                self.flat(b) for b in e.children if not isinstance(b, n.system_message))))
            self.b.table(rows, header=bool(head))


def _ancestors(node: Any) -> Iterator[Any]:
    node = node.parent
    while node is not None:
        yield node
        node = node.parent


def _grid(rows: list[Any], width: int, cell: Callable[[Any], str]) -> Iterator[list[str]]:
    """The rows of a table as lists of cell texts, ``width`` wide: a cell spanning columns (``morecols``) or rows
    (``morerows``) is written once, the cells it covers left empty."""
    covered: dict[int, int] = {}  # column -> rows below still covered by a cell above
    for row in rows:
        entries = iter(row.children)
        out: list[str] = []
        col = 0
        while col < width:
            if covered.get(col, 0) > 0:
                covered[col] -= 1
                out.append("")
                col += 1
                continue
            entry = next(entries, None)
            if entry is None:
                break
            span = int(entry.get("morecols", 0))
            down = int(entry.get("morerows", 0))
            out.append(cell(entry))
            out.extend([""] * span)
            for c in range(col, col + span + 1):
                if down:
                    covered[c] = down
            col += span + 1
        yield out + [""] * (width - len(out))


class RstLoader:
    """A reStructuredText file as a Document: see the module docstring."""

    name = "rst"
    version = "2"  # 2: a made-up docutils id (id1) is an alias, never the anchor
    cache = True

    def __init__(self, config: RstLoaderConfig | None = None):
        self.config = config or RstLoaderConfig()

    def load(self, data: bytes, doc_id: str, source: str, *, labels: Mapping[str, str] | None = None,
             doc_titles: Mapping[str, str] | None = None) -> Document:
        """The Document of one file. ``labels`` (label -> section title) and ``doc_titles`` (document path
        without its suffix, from the corpus root -> title) are what other files of the corpus define: a ``:ref:``
        or ``:doc:`` to them shows the title, as Sphinx does; without them, the label or path."""
        try:
            from docutils import nodes
        except ImportError:
            raise missing_library("reStructuredText", "docutils", "rst") from None
        text = _decode(data)
        if not text.strip():
            raise CorpusError("no text: the file is empty; remove it from the corpus or write its content")
        builder = DocumentBuilder(doc_id=doc_id, source=source, format="rst")
        writer = _Writer(builder, nodes, self.config.default_language, text.splitlines(), labels=labels,
                         doc_titles=doc_titles)
        try:
            tree = _parse(text, source)
            writer.document(tree)
        except RecursionError:
            raise CorpusError("nested too deeply to parse (lists or blocks inside one another hundreds of levels "
                              "deep); flatten the nesting") from None
        stem = doc_id.rsplit("/", 1)[-1]
        stem = stem.rsplit(".", 1)[0] if "." in stem[1:] else stem
        doc = builder.build(title=writer.title, fallback_title=stem)
        if not doc.text.strip():
            raise CorpusError("no text: the file holds only comments, targets or directives without text")
        return doc


LOADERS.register("rst", RstLoaderConfig, RstLoader, summary="reStructuredText (docutils, Sphinx markup kept as text)",
                 suffixes=(".rst", ".rest"), replace=True)
