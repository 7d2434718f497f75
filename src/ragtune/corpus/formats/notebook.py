"""Jupyter notebooks (``.ipynb``, nbformat 4, and 3's worksheets): markdown cells as text and sections, code cells
as code blocks, outputs optional.

A notebook is JSON, read with :mod:`json` and checked here (nbformat's validator would be a dependency for a shape
this small). Markdown cells are split into blocks by ragtune's own markdown scanner
(:func:`~ragtune.corpus.blocks.scan_blocks`), the one the markdown loader and chunker use, so a ``#`` line inside
a fence is code here too:

- **headings** (ATX or setext) become sections; the id is the builder's slug of the heading's plain text
  (``#running-code``), and the id Jupyter gives the rendered heading, the text with each space replaced by ``-``
  and case kept (``#Running-Code``), is an alias, so a link copied from Jupyter names the section too;
- **code** (fenced or indented) becomes a code block, its info string its language;
- **pipe tables** become tables; **lists** list items; an **HTML block** its text without tags (scripts and
  styles dropped); other blocks paragraphs, their inline markdown kept.

Code cells are code blocks in the notebook's language (``metadata.kernelspec.language``, else
``language_info.name``). With ``outputs``, each code cell's text outputs follow it as code blocks: ``stream``
text, the ``text/plain`` form of results and displays (unless it is only Python's default ``<… at 0x…>`` repr),
and the ``ename: evalue`` line of an error (tracebacks left out, ANSI colours removed), each cut to
:data:`MAX_OUTPUT_CHARS`. Images, HTML, LaTeX, JSON and other rich outputs, and cell
attachments, are never read: base64 never reaches the text. Raw cells are left out.

Locations: ``{"cell": N}``, the 0-based index of the cell the text comes from (across worksheets in nbformat 3).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from ...config import Config, Opt
from ...errors import ConfigError, CorpusError
from ...registry import LOADERS
from ...types import Document
from ..blocks import Block, scan_blocks
from ..markdown import strip_inline_markdown
from .builder import DocumentBuilder

__all__ = ["NotebookLoader", "NotebookLoaderConfig", "MAX_OUTPUT_CHARS"]

#: the characters of one output written when ``outputs`` is on; the rest is said to be left out
MAX_OUTPUT_CHARS = 3000

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_LIST_ITEM_RE = re.compile(r"( *)([-+*]|(\d{1,9})[.)])[ \t]+(.*)\Z")
_QUOTE_RE = re.compile(r"\A {0,3}> ?")
_SCRIPT_RE = re.compile(r"<(script|style)\b.*?</\1\s*>", re.I | re.S)
_TAG_RE = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>|<!--.*?-->", re.S)
_INLINE_TAG_RE = re.compile(r"(`+)[^`].*?\1|" + _TAG_RE.pattern)  # a tag outside code spans
# the repr Python gives an object without one of its own (<__main__.Gaussian at 0x116fe76d8>,
# <IPython.core.display.Latex object>): the text/plain placeholder beside a rich output, naming no content
_DEFAULT_REPR_RE = re.compile(r"<[\w.]+(?: object)?(?: at 0x[0-9a-fA-F]+)?>")
_CELL_SPLIT_RE = re.compile(r"(?<!\\)\|")
_NOT_NOTEBOOK = "not a readable Jupyter notebook"


@dataclass(frozen=True)
class NotebookLoaderConfig(Config):
    outputs: Annotated[bool, Opt("write code cells' text outputs (stream, text/plain results, errors) after them")] \
        = False

    def __post_init__(self) -> None:
        if not isinstance(self.outputs, bool):
            raise ConfigError(f"NotebookLoaderConfig: outputs must be true or false, got {self.outputs!r}")


def _json_kind(value: Any) -> str:
    """What a JSON value is, in JSON's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {int: "a number", float: "a number", dict: "an object", list: "a list"}.get(type(value), "a string")


def _source(value: Any, where: str) -> str:
    """A notebook's multi-line string: a string, or a list of strings to join (as nbformat writes them)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    if isinstance(value, list):
        kind = "a list holding " + _json_kind(next(v for v in value if not isinstance(v, str)))
    else:
        kind = _json_kind(value)
    raise CorpusError(f"{_NOT_NOTEBOOK}: {where} is {kind}, not a string or a list of strings; the file is damaged "
                      "or not written by Jupyter")


def _cells(nb: Any) -> tuple[list[Any], int]:
    """The cells of a notebook (nbformat 4's ``cells``, or every worksheet's in nbformat 3) and its major version."""
    if not isinstance(nb, dict):
        raise CorpusError(f"{_NOT_NOTEBOOK}: JSON, but {_json_kind(nb)}, not a notebook object")
    version = nb.get("nbformat")
    if "cells" in nb:
        cells = nb["cells"]
    elif "worksheets" in nb and isinstance(nb["worksheets"], list):
        cells = [c for ws in nb["worksheets"] if isinstance(ws, dict) for c in ws.get("cells") or []]
    else:
        raise CorpusError(f"{_NOT_NOTEBOOK}: JSON without \"cells\" (nbformat 4) or \"worksheets\" (nbformat 3), so "
                          "not a notebook")
    if not isinstance(cells, list):
        raise CorpusError(f"{_NOT_NOTEBOOK}: \"cells\" is {_json_kind(cells)}, not a list")
    return cells, version if isinstance(version, int) else 4


def _language(nb: Mapping[str, Any]) -> str:
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    for holder, key in ((meta.get("kernelspec"), "language"), (meta.get("language_info"), "name"), (meta, "language")):
        if isinstance(holder, dict) and isinstance(holder.get(key), str):
            return holder[key]
    return ""


def _jupyter_id(title: str) -> str:
    """The id Jupyter gives a rendered heading: its text, each space replaced by ``-``."""
    return title.replace(" ", "-")


def _table_rows(text: str, block: Block) -> list[list[str]]:
    rows = []
    for i, (s, e) in enumerate(block.lines):
        if i == 1:
            continue  # the delimiter row
        line = text[s:e].strip()
        line = line[1:] if line.startswith("|") else line
        line = line[:-1] if line.endswith("|") and not line.endswith("\\|") else line
        rows.append([c.strip().replace("\\|", "|") for c in _CELL_SPLIT_RE.split(line)])
    return rows


def _code(text: str, block: Block) -> tuple[str, str]:
    """(code, language) of a fenced or indented code block, fences and indentation removed."""
    lines = [text[s:e] for s, e in block.lines]
    if not block.fence:
        return "\n".join(line[4:] if line.startswith("    ") else line.lstrip("\t ") for line in lines), ""
    first = lines[0]
    indent = len(first) - len(first.lstrip(" "))
    info = first.lstrip(" ")[len(block.fence):].strip()
    body = lines[1:-1] if block.closed else lines[1:]
    return "\n".join(line[min(indent, len(line) - len(line.lstrip(" "))):] for line in body), \
        info.split()[0] if info else ""


def _untag(line: str) -> str:
    """``line`` without its inline HTML tags (a ``<button>`` in the text), code spans left as they are."""
    return _INLINE_TAG_RE.sub(lambda m: m.group() if m.group(1) else " ", line) if "<" in line else line


def _paragraphs(lines: Sequence[str], builder: DocumentBuilder) -> None:
    """A paragraph block as the scanner gives it: plain lines, list items (nested by their indentation, with
    their continuation lines) or block-quote lines (markers removed); inline HTML tags removed."""
    para: list[str] = []
    item: tuple[int, bool, int, list[str]] | None = None  # (depth, ordered, number, lines)
    indents: list[int] = []  # the indentation of each open list level

    def flush() -> None:
        nonlocal item, para
        if para:
            builder.paragraph("\n".join(para))
        if item:
            builder.item(" ".join(item[3]), depth=item[0], ordered=item[1], number=item[2])
        para, item = [], None

    for line in map(_untag, lines):
        m = _LIST_ITEM_RE.match(line)
        if m:
            flush()
            indent = len(m.group(1))
            while indents and indents[-1] > indent:
                indents.pop()
            if not indents or indents[-1] < indent:
                indents.append(indent)
            item = (len(indents) - 1, m.group(3) is not None, int(m.group(3) or 1), [m.group(4)])
        elif item:
            item[3].append(line.strip())
        else:
            para.append(_QUOTE_RE.sub("", line, count=1))
    flush()


def _markdown(text: str, builder: DocumentBuilder) -> None:
    for block in scan_blocks(text):
        if block.kind == "heading":
            title = strip_inline_markdown(block.title)
            builder.heading(block.level, title, aliases=(_jupyter_id(title),))
        elif block.kind == "code":
            builder.code(*_code(text, block))
        elif block.kind == "table":
            builder.table(_table_rows(text, block))
        elif block.kind == "html":
            builder.paragraph(_TAG_RE.sub(" ", _SCRIPT_RE.sub(" ", text[block.start:block.end])))
        elif block.kind == "para":
            _paragraphs([text[s:e] for s, e in block.lines], builder)


def _outputs(outputs: Any, where: str, version: int) -> Iterator[str]:
    """The text of a code cell's outputs: stream text, text/plain results and displays, error lines."""
    if not isinstance(outputs, list):
        return
    for i, out in enumerate(outputs):
        if not isinstance(out, dict):
            continue
        kind = out.get("output_type")
        at = f"{where}, output {i}"
        if kind == "stream":
            text = _source(out.get("text", ""), f"{at} text")
        elif kind in ("execute_result", "display_data", "pyout"):
            bundle = out.get("data") if version >= 4 else out  # nbformat 3: each form beside output_type
            plain = bundle.get("text/plain" if version >= 4 else "text") if isinstance(bundle, dict) else None
            text = _source(plain, f"{at} text/plain") if plain is not None else ""
        elif kind in ("error", "pyerr"):
            text = f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"
        else:
            continue
        text = _ANSI_RE.sub("", text).strip("\n")
        if _DEFAULT_REPR_RE.fullmatch(text.strip()):
            continue
        if len(text) > MAX_OUTPUT_CHARS:
            cut = text.rfind("\n", 0, MAX_OUTPUT_CHARS)
            cut = cut if cut > MAX_OUTPUT_CHARS // 2 else MAX_OUTPUT_CHARS
            text = f"{text[:cut]}\n[... {len(text) - cut:,} more characters of output left out]"
        if text.strip():
            yield text


class NotebookLoader:
    """Markdown cells as text and sections (Jupyter's heading ids as aliases), code cells as code blocks."""

    name = "ipynb"
    version = "1"
    cache = True

    def __init__(self, config: NotebookLoaderConfig | None = None):
        self.config = config or NotebookLoaderConfig()

    def load(self, data: bytes, doc_id: str, source: str) -> Document:
        try:
            nb = json.loads(data.decode("utf-8-sig"))
        except UnicodeDecodeError as e:
            raise CorpusError(f"{_NOT_NOTEBOOK}: not UTF-8 text (byte {e.start}); a notebook is a JSON file") \
                from None
        except json.JSONDecodeError as e:
            raise CorpusError(f"{_NOT_NOTEBOOK}: not JSON ({e.msg} at line {e.lineno} column {e.colno}); a "
                              "notebook is a JSON file, check that it opens in Jupyter") from None
        cells, version = _cells(nb)
        language = _language(nb)
        builder = DocumentBuilder(doc_id, source=source, format=self.name)
        for n, cell in enumerate(cells):
            if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
                raise CorpusError(f"{_NOT_NOTEBOOK}: cell {n} is not a cell object with a \"cell_type\"")
            kind = cell["cell_type"]
            where = f"the source of cell {n}"
            builder.locate({"cell": n})
            if kind == "markdown":
                _markdown(_source(cell.get("source", ""), where), builder)
            elif kind == "heading":  # nbformat 3
                level = cell.get("level")
                title = " ".join(_source(cell.get("source", ""), where).split())
                builder.heading(level if isinstance(level, int) else 1, title, aliases=(_jupyter_id(title),))
            elif kind == "code":
                key = "input" if version < 4 and "input" in cell else "source"
                own = cell.get("language")  # nbformat 3 names it per cell
                builder.code(_source(cell.get(key, ""), where), own if isinstance(own, str) else language)
                if self.config.outputs:
                    for text in _outputs(cell.get("outputs"), f"cell {n}", version):
                        builder.code(text, "text")
        if not builder.text.strip():
            raise CorpusError("no text: the notebook has no markdown or code cell with text")
        title = builder.headings[0].title if builder.headings else None
        stem = doc_id.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        return builder.build(title=title, fallback_title=stem, metadata={"cells": len(cells)}
                             | ({"language": language} if language else {}))


LOADERS.register("ipynb", NotebookLoaderConfig, NotebookLoader,
                 summary="Jupyter notebooks: markdown headings, code cells, outputs optional", suffixes=(".ipynb",),
                 replace=True)
