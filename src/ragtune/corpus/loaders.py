"""Corpus loaders: markdown/text folders and BEIR folders.

Every loader reads everything or raises: a bad file never yields a
half-loaded corpus.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import CorpusError, CorpusNotFoundError
from ..types import Document
from .corpus import Corpus
from .markdown import parse_markdown

__all__ = ["load_corpus", "load_folder", "load_beir_corpus", "read_text_file", "iter_jsonl"]

MARKDOWN_SUFFIXES = (".md", ".markdown")
TEXT_SUFFIXES = (".txt",)


def read_text_file(path: Path) -> str:
    """Read a UTF-8 file (a leading BOM is dropped); errors name the file and position. Anything but a regular
    file (a FIFO would block forever) is refused before it is opened."""
    from ..errors import ConfigError
    from ..io import check_regular_file

    try:
        check_regular_file(path)
    except ConfigError as e:
        raise CorpusError(str(e)) from None
    try:
        data = path.read_bytes()
    except OSError as e:
        raise CorpusError(f"{path}: cannot read file: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise CorpusError(
            f"{path}:{line}: not valid UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start}); "
            "re-save the file as UTF-8"
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; malformed lines raise."""
    text = read_text_file(path)
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise CorpusError(f"{path}:{lineno}: malformed JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(obj, dict):
            raise CorpusError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
        yield lineno, obj


def _walk(root: Path, suffixes: tuple[str, ...]) -> list[Path]:
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.lower().endswith(suffixes) and not name.startswith("."):
                found.append(Path(dirpath) / name)
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def _markdown_document(path: Path, doc_id: str) -> Document:
    text = read_text_file(path)
    parsed = parse_markdown(text, doc_id=doc_id, source=str(path))
    meta = dict(parsed.front_matter)
    title = meta.get("title")
    if not isinstance(title, str) or not title.strip():
        title = parsed.first_h1 or path.stem
    return Document(
        id=doc_id, title=title.strip(), text=parsed.body, metadata=meta,
        sections=parsed.sections, source=str(path),
    )


def load_folder(root: str | os.PathLike[str]) -> Corpus:
    """Load every ``.md``/``.markdown``/``.txt`` file under ``root`` (recursively).

    Document ids are paths relative to ``root`` with forward slashes.
    """
    base = Path(root)
    if not base.is_dir():
        raise CorpusNotFoundError(f"corpus folder {str(base)!r} does not exist")
    paths = _walk(base, MARKDOWN_SUFFIXES + TEXT_SUFFIXES)
    if not paths:
        raise CorpusError(
            f"{base}: no .md, .markdown or .txt files found; point --corpus at a folder of "
            "documents or at a BEIR folder containing corpus.jsonl"
        )
    docs = []
    kind = "text"
    for p in paths:
        doc_id = p.relative_to(base).as_posix()
        if p.name.lower().endswith(MARKDOWN_SUFFIXES):
            docs.append(_markdown_document(p, doc_id))
            kind = "markdown"
        else:
            docs.append(Document(id=doc_id, title=p.stem, text=read_text_file(p), source=str(p)))
    return Corpus(docs, kind=kind, root=str(base))  # type: ignore[arg-type]


def load_beir_corpus(root: str | os.PathLike[str]) -> Corpus:
    """Load ``corpus.jsonl`` of a BEIR folder (``_id``, ``title``, ``text``, optional ``metadata``)."""
    base = Path(root)
    path = base / "corpus.jsonl" if base.is_dir() else base
    if not path.is_file():
        raise CorpusNotFoundError(f"{path}: not found; a BEIR folder holds corpus.jsonl")
    docs: list[Document] = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        doc_id = obj.get("_id")
        if not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool) or str(doc_id) == "":
            raise CorpusError(f"{path}:{lineno}: missing or empty '_id' (each line needs \"_id\", \"title\", \"text\")")
        doc_id = str(doc_id)
        if doc_id in seen:
            raise CorpusError(f"{path}:{lineno}: duplicate _id {doc_id!r} (first seen on line {seen[doc_id]})")
        seen[doc_id] = lineno
        text = obj.get("text")
        if not isinstance(text, str):
            raise CorpusError(f"{path}:{lineno}: 'text' must be a string, got {type(text).__name__}")
        title = obj.get("title") or ""
        if not isinstance(title, str):
            raise CorpusError(f"{path}:{lineno}: 'title' must be a string, got {type(title).__name__}")
        meta = obj.get("metadata") or {}
        if not isinstance(meta, dict):
            raise CorpusError(f"{path}:{lineno}: 'metadata' must be an object, got {type(meta).__name__}")
        docs.append(Document(id=doc_id, title=title, text=text, metadata=meta, source=f"{path}:{lineno}"))
    if not docs:
        raise CorpusError(f"{path}: empty corpus (no documents)")
    return Corpus(docs, kind="beir", root=str(base))


def is_beir_folder(path: Path) -> bool:
    return path.is_dir() and (path / "corpus.jsonl").is_file()


def load_corpus(path: str | os.PathLike[str]) -> Corpus:
    """Load a corpus from a BEIR folder, a ``corpus.jsonl`` file, a folder of
    markdown/text files, or a single markdown/text file."""
    p = Path(path)
    if not p.exists():
        raise CorpusNotFoundError(f"corpus path {str(p)!r} does not exist")
    if is_beir_folder(p) or (p.is_file() and p.suffix == ".jsonl"):
        return load_beir_corpus(p)
    if p.is_file():
        if not p.name.lower().endswith(MARKDOWN_SUFFIXES + TEXT_SUFFIXES):
            raise CorpusError(f"{p}: unsupported file type; use .md, .markdown, .txt or a BEIR corpus.jsonl")
        if p.name.lower().endswith(MARKDOWN_SUFFIXES):
            return Corpus([_markdown_document(p, p.name)], kind="markdown", root=str(p.parent))
        return Corpus([Document(id=p.name, title=p.stem, text=read_text_file(p), source=str(p))],
                      kind="text", root=str(p.parent))
    return load_folder(p)
