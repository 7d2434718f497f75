"""Corpus loaders: markdown/text folders and BEIR folders.

Every loader reads everything or raises: a bad file never yields a half-loaded corpus. What a folder loader
leaves out on purpose is said on stderr and kept in ``Corpus.skipped`` (``strict=True`` makes it an error):

- a symbolic link that resolves outside the corpus folder (``docs/passwd.txt -> /etc/passwd`` would otherwise
  be indexed and served), a dangling link, a link loop;
- anything that is not a regular file or a folder (a FIFO would block the load forever, a device never ends).

A link that resolves inside the folder is followed, for files and folders alike; every file and folder is read
once, under its own path when it has one (a link to something already in the corpus adds nothing).
A file (or one line of ``corpus.jsonl``) larger than ``max_file_bytes`` (default :data:`MAX_FILE_BYTES`) is
refused before it is read whole.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import CorpusError, CorpusNotFoundError
from ..paths import check_input_file, file_kind
from ..types import Document
from .corpus import Corpus
from .markdown import parse_markdown

__all__ = ["load_corpus", "load_folder", "load_beir_corpus", "read_text_file", "iter_jsonl", "MAX_FILE_BYTES"]

MARKDOWN_SUFFIXES = (".md", ".markdown")
TEXT_SUFFIXES = (".txt",)

#: the largest file (markdown, text, a golden set) or ``corpus.jsonl`` line read, in bytes
MAX_FILE_BYTES = 64 * 1024 * 1024
_SHOW_SKIPPED = 10  # lines of warnings printed; the rest are counted


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n:,} bytes"


def _too_big(path: Path | str, size: int, limit: int, what: str = "file") -> CorpusError:
    return CorpusError(f"{path}: {what} of {_mib(size)} or more, larger than the {_mib(limit)} allowed; split it, "
                       "move it out of the corpus, or pass a larger max_file_bytes to load_corpus")


def _open_regular(path: Path, what: str) -> int:
    """A read-only descriptor of ``path``, which must be a regular file: checked by name first (for the message),
    then on the open descriptor (opened non-blocking, so a FIFO put there meanwhile cannot hang the open)."""
    check_input_file(path, what, error=CorpusError, missing=CorpusNotFoundError)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as e:
        raise CorpusError(f"{path}: cannot read {what}: {e.strerror or e}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise CorpusError(f"{what} {path} is {file_kind(mode)}, not a regular file; point at a regular file")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return fd


def _decode(data: bytes, path: Path | str, line_base: int = 1) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + line_base
        raise CorpusError(
            f"{path}:{line}: not valid UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start}); "
            "re-save the file as UTF-8"
        ) from None
    return text


def read_text_file(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> str:
    """Read a UTF-8 file (a leading BOM is dropped); errors name the file and position. Anything but a regular
    file (a FIFO would block forever) is refused before it is opened, and a file over ``max_bytes`` before it
    is read."""
    path = Path(path)
    fd = _open_regular(path, "file")
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise _too_big(path, size, max_bytes)
        try:
            data = f.read(size + 1)  # the size it says (a buffer of max_bytes would be allocated up front)
            if len(data) > size:  # it grew, or its size said nothing (/proc): read on, still bounded
                parts = [data]
                total = len(data)
                while total <= max_bytes:
                    more = f.read(min(1 << 20, max_bytes + 1 - total))
                    if not more:
                        break
                    parts.append(more)
                    total += len(more)
                data = b"".join(parts)
                del parts
        except OSError as e:
            raise CorpusError(f"{path}: cannot read file: {e.strerror or e}") from None
    if len(data) > max_bytes:
        raise _too_big(path, len(data), max_bytes)
    text = _decode(data, path)
    del data
    return text[1:] if text.startswith("\ufeff") else text


def _too_long(path: Path, lineno: int, size: int, limit: int) -> CorpusError:
    return CorpusError(f"{path}:{lineno}: line of {_mib(size)} or more, larger than the {_mib(limit)} allowed for "
                       "one document; split the document, or pass a larger max_file_bytes to load_corpus")


def _lines(path: Path, fd: int, limit: int) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line, decoded straight from a memory map of the file: no bytes copy of a
    line is made, so a large document costs its text, not three copies of it. A line over ``limit`` bytes
    (its line ending aside) is refused before it is decoded."""
    import mmap

    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return
        try:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # a file system without mmap: a line at a time
            lineno = 0
            for raw in iter(lambda: f.readline(limit + 2), b""):
                lineno += 1
                if len(raw.rstrip(b"\r\n")) > limit:
                    raise _too_long(path, lineno, len(raw), limit) from None
                yield lineno, _decode(raw, path, lineno)
            return
        try:
            with memoryview(mm) as view:
                pos = 3 if mm[:3] == b"\xef\xbb\xbf" else 0
                lineno = 0
                while pos < size:
                    end = mm.find(b"\n", pos)
                    end = size if end == -1 else end + 1
                    lineno += 1
                    stop = end - (mm[end - 1] == 0x0A)
                    stop -= stop > pos and mm[stop - 1] == 0x0D
                    if stop - pos > limit:
                        raise _too_long(path, lineno, stop - pos, limit)
                    yield lineno, _decode_view(view, pos, end, path, lineno)
                    pos = end
        finally:
            mm.close()


def _decode_view(view: memoryview, start: int, end: int, path: Path, lineno: int) -> str:
    try:
        with view[start:end] as part:
            return str(part, "utf-8")
    except UnicodeDecodeError as e:
        raise CorpusError(f"{path}:{lineno}: not valid UTF-8 (byte 0x{view[start + e.start]:02x} at offset "
                          f"{start + e.start}); re-save the file as UTF-8") from None


def iter_jsonl(path: Path, *, max_line_bytes: int = MAX_FILE_BYTES) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; malformed lines raise. The file is never read
    whole, and a line over ``max_line_bytes`` is refused before it is decoded."""
    path = Path(path)
    fd = _open_regular(path, "file")
    for lineno, line in _lines(path, fd, max_line_bytes):
        if not line or line.isspace():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise CorpusError(f"{path}:{lineno}: malformed JSON ({e.msg} at column {e.colno})") from None
        except RecursionError:
            raise CorpusError(f"{path}:{lineno}: JSON nested too deeply to read") from None
        del line
        if not isinstance(obj, dict):
            raise CorpusError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
        yield lineno, obj


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def _no_surrogates(text: str) -> str:
    """``text`` with lone surrogates (JSON may escape them: ``"\\ud800"``) replaced by U+FFFD: they cannot be
    written as UTF-8, so hashing, storing or serving the text would fail later."""
    return _SURROGATE_RE.sub("\ufffd", text) if _SURROGATE_RE.search(text) else text


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _link_target(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def _walk(root: Path, suffixes: tuple[str, ...]) -> tuple[list[tuple[str, Path]], list[tuple[str, str]]]:
    """(document id, path) of every file to load, sorted by id, and (path, reason) of what was left out.

    Real entries are walked first, then symbolic links (so a file keeps its own path as its id when a link
    points at it too); a link is followed only when it resolves inside ``root``, and each resolved folder and
    file is taken once (so link loops end)."""
    real_root = os.path.realpath(root)
    files: dict[str, tuple[str, Path]] = {}  # resolved path -> (id, path)
    seen_dirs = {real_root}
    skipped: list[tuple[str, str]] = []
    links: list[tuple[str, Path]] = []  # (id, path) of links, followed once the real tree is walked
    folders: list[tuple[Path, str, str]] = [(root, real_root, "")]  # (path, resolved path, id prefix)

    def matches(name: str) -> bool:
        return name.lower().endswith(suffixes)

    def walk_folders() -> None:
        while folders:
            folder, real_folder, prefix = folders.pop()
            try:
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as e:
                skipped.append((str(folder), f"cannot list the folder: {e.strerror or e}"))
                continue
            for entry in reversed(entries):  # folders is a stack: reversed keeps the walk in name order
                if entry.name.startswith("."):
                    continue
                doc_id, path = prefix + entry.name, Path(entry.path)
                try:
                    if entry.is_symlink():
                        links.append((doc_id, path))
                        continue
                    mode = entry.stat(follow_symlinks=False).st_mode
                except OSError as e:
                    skipped.append((str(path), f"cannot read: {e.strerror or e}"))
                    continue
                real = os.path.join(real_folder, entry.name)
                if stat.S_ISDIR(mode):
                    seen_dirs.add(real)
                    folders.append((path, real, doc_id + "/"))
                elif matches(entry.name):
                    if stat.S_ISREG(mode):
                        files[real] = (doc_id, path)
                    else:
                        skipped.append((str(path), f"{file_kind(mode)}, not a regular file"))

    walk_folders()
    links.sort()
    done = 0
    while done < len(links):
        doc_id, path = links[done]
        done += 1
        try:
            real = os.path.realpath(path, strict=True)
            mode = os.stat(real).st_mode
        except (OSError, RuntimeError) as e:  # dangling, a loop, unreadable: this link only, never the load
            loop = isinstance(e, RuntimeError) or getattr(e, "errno", None) == errno.ELOOP
            skipped.append((str(path), "a symbolic link loop" if loop else
                            f"a symbolic link to {_link_target(str(path))}, which does not exist"))
            continue
        if not _inside(real, real_root):
            if stat.S_ISDIR(mode) or matches(path.name):
                skipped.append((str(path), f"a symbolic link to {real}, outside the corpus folder {real_root}; "
                                           "copy what it points at into the folder to index it"))
            continue
        if stat.S_ISDIR(mode):
            if real not in seen_dirs:  # else a folder already in the corpus (or a loop): nothing new
                seen_dirs.add(real)
                before = len(links)
                folders.append((path, real, doc_id + "/"))
                walk_folders()
                links[before:] = sorted(links[before:])  # links found in there: after those already queued
        elif matches(path.name):
            if not stat.S_ISREG(mode):
                skipped.append((str(path), f"a symbolic link to {file_kind(mode)}, not a regular file"))
            elif real not in files:
                files[real] = (doc_id, path)
    found = sorted(files.values(), key=lambda x: x[0])
    return found, skipped


def _report(skipped: list[tuple[str, str]], where: Path, strict: bool) -> None:
    if not skipped:
        return
    if strict:
        first = "; ".join(f"{p}: {why}" for p, why in skipped[:3])
        more = f" (and {len(skipped) - 3} more)" if len(skipped) > 3 else ""
        raise CorpusError(f"{where}: {len(skipped)} path(s) cannot be loaded: {first}{more}; remove them, or load "
                          "without strict to skip them with a warning")
    for p, why in skipped[:_SHOW_SKIPPED]:
        print(f"warning: corpus: skipped {p}: {why}", file=sys.stderr)
    if len(skipped) > _SHOW_SKIPPED:
        print(f"warning: corpus: skipped {len(skipped) - _SHOW_SKIPPED} more path(s) under {where}", file=sys.stderr)
    sys.stderr.flush()


def _markdown_document(path: Path, doc_id: str, max_bytes: int = MAX_FILE_BYTES) -> Document:
    text = read_text_file(path, max_bytes=max_bytes)
    parsed = parse_markdown(text, doc_id=doc_id, source=str(path))
    del text
    meta = parsed.front_matter
    title = meta.get("title")
    if not isinstance(title, str) or not title.strip():
        title = parsed.first_h1 or path.stem
    return Document(
        id=doc_id, title=title.strip(), text=parsed.body, metadata=meta,
        sections=parsed.sections, source=str(path),
    )


def _text_document(path: Path, doc_id: str, max_bytes: int = MAX_FILE_BYTES) -> Document:
    return Document(id=doc_id, title=path.stem, text=read_text_file(path, max_bytes=max_bytes), source=str(path))


def load_folder(root: str | os.PathLike[str], *, strict: bool = False, max_file_bytes: int = MAX_FILE_BYTES) -> Corpus:
    """Load every ``.md``/``.markdown``/``.txt`` file under ``root`` (recursively).

    Document ids are paths relative to ``root`` with forward slashes. Links out of ``root``, dangling links
    and special files are skipped with a warning (an error with ``strict``); see the module docstring.
    """
    base = Path(root)
    try:
        mode = os.stat(base).st_mode
    except OSError:
        check_input_file(base, "corpus folder", error=CorpusError, missing=CorpusNotFoundError)
        raise  # not reached: the check raises
    if not stat.S_ISDIR(mode):
        raise CorpusError(f"corpus folder {base} is {file_kind(mode)}, not a folder")
    paths, skipped = _walk(base, MARKDOWN_SUFFIXES + TEXT_SUFFIXES)
    _report(skipped, base, strict)
    if not paths:
        raise CorpusError(
            f"{base}: no .md, .markdown or .txt files found; point --corpus at a folder of "
            "documents or at a BEIR folder containing corpus.jsonl"
        )
    docs = []
    kind = "text"
    for doc_id, p in paths:
        if p.name.lower().endswith(MARKDOWN_SUFFIXES):
            docs.append(_markdown_document(p, doc_id, max_file_bytes))
            kind = "markdown"
        else:
            docs.append(_text_document(p, doc_id, max_file_bytes))
    return Corpus(docs, kind=kind, root=str(base), skipped=skipped)  # type: ignore[arg-type]


def load_beir_corpus(root: str | os.PathLike[str], *, max_file_bytes: int = MAX_FILE_BYTES) -> Corpus:
    """Load ``corpus.jsonl`` of a BEIR folder (``_id``, ``title``, ``text``, optional ``metadata``), a line at a
    time; a line over ``max_file_bytes`` is refused. A folder's ``corpus.jsonl`` may not be a link out of it."""
    base = Path(root)
    if base.is_dir():
        path = base / "corpus.jsonl"
        if not os.path.lexists(path):
            raise CorpusNotFoundError(f"{path}: not found; a BEIR folder holds corpus.jsonl")
        real = os.path.realpath(path)
        if path.is_symlink() and not _inside(real, os.path.realpath(base)):
            raise CorpusError(f"{path} is a symbolic link to {real}, outside the corpus folder {base}; "
                              f"point --corpus at {real} itself to load it")
    else:
        path = base
    docs: list[Document] = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path, max_line_bytes=max_file_bytes):
        doc_id = obj.get("_id")
        if not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool) or str(doc_id) == "":
            raise CorpusError(f"{path}:{lineno}: missing or empty '_id' (each line needs \"_id\", \"title\", \"text\")")
        doc_id = _no_surrogates(str(doc_id))
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
        del obj
        docs.append(Document(id=doc_id, title=_no_surrogates(title), text=_no_surrogates(text), metadata=meta,
                             source=f"{path}:{lineno}"))
        del text
    if not docs:
        raise CorpusError(f"{path}: empty corpus (no documents)")
    return Corpus(docs, kind="beir", root=str(base))


def is_beir_folder(path: Path) -> bool:
    """A folder holding ``corpus.jsonl`` (whatever kind of file that is: the loader says when it cannot be read)."""
    return path.is_dir() and os.path.lexists(path / "corpus.jsonl")


def load_corpus(path: str | os.PathLike[str], *, strict: bool = False, max_file_bytes: int = MAX_FILE_BYTES) -> Corpus:
    """Load a corpus from a BEIR folder, a ``corpus.jsonl`` file, a folder of
    markdown/text files, or a single markdown/text file.

    In a folder, links that resolve outside it, dangling links and special files (FIFOs, devices) are skipped
    with a warning on stderr and listed in ``Corpus.skipped``; with ``strict`` they are an error. A file (or a
    ``corpus.jsonl`` line) over ``max_file_bytes`` is an error.
    """
    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except OSError:
        check_input_file(p, "corpus path", error=CorpusError, missing=CorpusNotFoundError)
        raise  # not reached: the check raises
    if stat.S_ISDIR(mode):
        if is_beir_folder(p):
            return load_beir_corpus(p, max_file_bytes=max_file_bytes)
        return load_folder(p, strict=strict, max_file_bytes=max_file_bytes)
    if not stat.S_ISREG(mode):
        raise CorpusError(f"corpus path {p} is {file_kind(mode)}, not a folder or a regular file; point --corpus at "
                          "a folder of documents, a BEIR folder or a corpus.jsonl file")
    if p.suffix == ".jsonl":
        return load_beir_corpus(p, max_file_bytes=max_file_bytes)
    if not p.name.lower().endswith(MARKDOWN_SUFFIXES + TEXT_SUFFIXES):
        raise CorpusError(f"{p}: unsupported file type; use .md, .markdown, .txt or a BEIR corpus.jsonl")
    if p.name.lower().endswith(MARKDOWN_SUFFIXES):
        return Corpus([_markdown_document(p, p.name, max_file_bytes)], kind="markdown", root=str(p.parent))
    return Corpus([_text_document(p, p.name, max_file_bytes)], kind="text", root=str(p.parent))
