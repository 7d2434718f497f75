"""Corpus loaders: folders of documents (each file read by the loader of its format, :mod:`.formats`) and BEIR
folders.

A markdown, text or BEIR file that cannot be read is an error: a bad file never yields a half-loaded corpus of
the formats whose text is the file's. A file of another format that cannot be read (an encrypted or corrupt PDF,
an image-only scan, a parse past its time limit) is one warning line and left out, and the rest loads; with
``strict=True`` it is an error. What a folder loader leaves out on purpose is said on stderr and kept in ``Corpus.skipped`` (``strict=True`` makes it an error):

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
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import CorpusError, CorpusNotFoundError
from ..paths import check_input_file, display_name, doc_id_from_path, file_kind
from ..types import Document
from .corpus import Corpus
from .files import MAX_FILE_BYTES, _no_surrogates, iter_jsonl, read_text_file

__all__ = ["load_corpus", "load_folder", "load_beir_corpus", "read_text_file", "iter_jsonl", "MAX_FILE_BYTES"]


_SHOW_SKIPPED = 10  # lines of warnings printed; the rest are counted


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
                doc_id, path = prefix + doc_id_from_path(entry.name), Path(entry.path)
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
    found: list[tuple[str, Path]] = []
    # a name escaped into an id (caf%E9.md) may be the name of another file: the file named so keeps the id
    for doc_id, path in sorted(files.values(), key=lambda x: (x[0], doc_id_from_path(x[1].name) != x[1].name)):
        if found and found[-1][0] == doc_id:
            skipped.append((str(path), f"its name is not UTF-8 or holds control characters, and the id it is "
                                       f"given, {doc_id}, is the name of another file; rename it"))
        else:
            found.append((doc_id, path))
    return found, skipped


def _report(skipped: list[tuple[str, str]], where: Path, strict: bool, what: str = "path(s) cannot be loaded") -> None:
    if not skipped:
        return
    skipped = [(display_name(p), why) for p, why in skipped]
    if strict:
        first = "; ".join(f"{p}: {why}" for p, why in skipped[:3])
        more = f" (and {len(skipped) - 3} more)" if len(skipped) > 3 else ""
        raise CorpusError(f"{display_name(where)}: {len(skipped)} {what}: {first}{more}; remove them, or load "
                          "without strict to skip them with a warning")
    for p, why in skipped[:_SHOW_SKIPPED]:
        print(f"warning: corpus: skipped {p}: {why}", file=sys.stderr)
    if len(skipped) > _SHOW_SKIPPED:
        print(f"warning: corpus: skipped {len(skipped) - _SHOW_SKIPPED} more path(s) under {display_name(where)}",
              file=sys.stderr)
    sys.stderr.flush()


def _markdown_document(path: Path, doc_id: str, max_bytes: int = MAX_FILE_BYTES) -> Document:
    return _load_one(path, doc_id, "markdown", {}, max_bytes)


def _text_document(path: Path, doc_id: str, max_bytes: int = MAX_FILE_BYTES) -> Document:
    return _load_one(path, doc_id, "text", {}, max_bytes)


def _load_one(path: Path, doc_id: str, loader: str, options: Mapping[str, Any], max_bytes: int) -> Document:
    from ..registry import LOADERS
    from .files import read_bytes_file

    return LOADERS.build(loader, options=dict(options)).load(read_bytes_file(path, max_bytes=max_bytes), doc_id,
                                                              display_name(path))


def suffix_table(formats: Mapping[str, str] | None = None) -> dict[str, str]:
    """File name ending -> loader name: every loader's own suffixes, then ``formats`` on top (``{".htm": "html"}``;
    ``"none"`` leaves files with that ending out)."""
    from ..registry import LOADERS

    table = {suffix: e.name for e in LOADERS for suffix in e.suffixes}
    for suffix, name in (formats or {}).items():
        if not isinstance(suffix, str) or not suffix.strip(". "):
            raise CorpusError(f"formats: {suffix!r} is not a file name ending; write it as '.htm'")
        suffix = "." + suffix.lower().lstrip(".")
        if name in ("none", "", None):
            table.pop(suffix, None)
            continue
        if name not in LOADERS:
            raise CorpusError(f"formats: {suffix}={name}: unknown format; choose one of: "
                              f"{', '.join(LOADERS.names())}, or none to leave such files out")
        table[suffix] = LOADERS.canonical(name)
    return table


def _format_of(name: str, table: Mapping[str, str]) -> str | None:
    lower = name.lower()
    best = max((s for s in table if lower.endswith(s) and len(lower) > len(s)), key=len, default=None)
    return table[best] if best else None


def _in_process(loader: str) -> bool:
    from ..registry import LOADERS

    return not getattr(LOADERS.build(loader), "cache", False)


def load_folder(root: str | os.PathLike[str], *, strict: bool = False, max_file_bytes: int = MAX_FILE_BYTES,
                formats: Mapping[str, str] | None = None, loader_options: Mapping[str, Mapping[str, Any]] | None = None,
                extract_timeout_s: float | None = None) -> Corpus:
    """Load every file under ``root`` (recursively) that a loader reads: markdown, text, HTML, PDF, DOCX,
    reStructuredText, notebooks (see :mod:`ragtune.corpus.formats`; ``formats`` maps other endings to a loader).

    Document ids are paths relative to ``root`` with forward slashes (:func:`~ragtune.paths.doc_id_from_path`: a
    byte of a name that is not UTF-8, or a control character, written ``%XX``; a file whose escaped name is the
    name of another file is skipped with a warning). Links out of ``root``, dangling links
    and special files are skipped with a warning (an error with ``strict``); see the module docstring. A markdown
    or text file that cannot be read is an error; a file of another format that cannot be read (encrypted,
    corrupt, image-only, past the size limit or the time limit) is one warning line and left out, the rest loads
    (an error with ``strict``). ``loader_options`` gives a loader its options (``{"pdf": {"password": "..."}}``).
    """
    base = Path(root)
    try:
        mode = os.stat(base).st_mode
    except OSError:
        check_input_file(base, "corpus folder", error=CorpusError, missing=CorpusNotFoundError)
        raise  # not reached: the check raises
    if not stat.S_ISDIR(mode):
        raise CorpusError(f"corpus folder {display_name(base)} is {file_kind(mode)}, not a folder")
    table = suffix_table(formats)
    options = {k: dict(v) for k, v in (loader_options or {}).items()}
    paths, skipped = _walk(base, tuple(table))
    _report(skipped, base, strict)
    if not paths:
        raise CorpusError(
            f"{base}: no file of a format ragtune reads found ({', '.join(sorted(table))}); point --corpus at a "
            "folder of documents or at a BEIR folder containing corpus.jsonl"
        )
    docs, problems = _load_files([(doc_id, p, _format_of(p.name, table)) for doc_id, p in paths], options,
                                 max_file_bytes, extract_timeout_s)
    _report(problems, base, strict, what="file(s) cannot be read")
    if not docs:
        raise CorpusError(f"{display_name(base)}: none of its {len(paths)} file(s) could be read; see the warnings "
                          "above")
    kinds = {d.format for d in docs}
    kind = "markdown" if kinds == {"markdown"} or kinds == {"markdown", "text"} else \
        "text" if kinds == {"text"} else "documents"
    return Corpus(docs, kind=kind, root=str(base), skipped=[*skipped, *problems])  # type: ignore[arg-type]


def _load_files(files: list[tuple[str, Path, str | None]], options: Mapping[str, Mapping[str, Any]],
                max_bytes: int, timeout_s: float | None) -> tuple[list[Document], list[tuple[str, str]]]:
    """The documents of ``files`` (doc id, path, loader), in order, and (path, problem) of each that failed."""
    from .formats.extract import DEFAULT_TIMEOUT_S, Job, extract

    jobs = [Job(doc_id, str(p), fmt, options.get(fmt, {}), max_bytes)
            for doc_id, p, fmt in files if fmt and not _in_process(fmt)]
    extracted = extract(jobs, timeout_s=timeout_s or DEFAULT_TIMEOUT_S) if jobs else {}
    docs: list[Document] = []
    problems: list[tuple[str, str]] = []
    for doc_id, p, fmt in files:
        if fmt is None:
            continue
        if doc_id not in extracted:  # markdown and text: read here, and an unreadable one is an error
            docs.append(_load_one(p, doc_id, fmt, options.get(fmt, {}), max_bytes))
            continue
        doc, why = extracted[doc_id]
        if doc is None:
            problems.append((str(p), why or "cannot be read"))
        else:
            docs.append(doc)
    return docs, problems


def load_beir_corpus(root: str | os.PathLike[str], *, max_file_bytes: int = MAX_FILE_BYTES) -> Corpus:
    """Load ``corpus.jsonl`` of a BEIR folder (``_id``, ``title``, ``text``, optional ``metadata``), a line at a
    time; a line over ``max_file_bytes`` is refused. A folder's ``corpus.jsonl`` may not be a link out of it."""
    base = Path(root)
    if base.is_dir():
        path = base / "corpus.jsonl"
        if not os.path.lexists(path):
            raise CorpusNotFoundError(f"{display_name(path)}: not found; a BEIR folder holds corpus.jsonl")
        real = os.path.realpath(path)
        if path.is_symlink() and not _inside(real, os.path.realpath(base)):
            raise CorpusError(f"{display_name(path)} is a symbolic link to {display_name(real)}, outside the corpus "
                              f"folder {display_name(base)}; "
                              f"point --corpus at {real} itself to load it")
    else:
        path = base
    docs: list[Document] = []
    seen: dict[str, int] = {}
    shown = display_name(path)
    for lineno, obj in iter_jsonl(path, max_line_bytes=max_file_bytes):
        doc_id = obj.get("_id")
        if not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool) or str(doc_id) == "":
            raise CorpusError(f"{shown}:{lineno}: missing or empty '_id' (each line needs \"_id\", \"title\", "
                              "\"text\")")
        doc_id = _no_surrogates(str(doc_id))
        if doc_id in seen:
            raise CorpusError(f"{shown}:{lineno}: duplicate _id {doc_id!r} (first seen on line {seen[doc_id]})")
        seen[doc_id] = lineno
        text = obj.get("text")
        if not isinstance(text, str):
            raise CorpusError(f"{shown}:{lineno}: 'text' must be a string, got {type(text).__name__}")
        title = obj.get("title") or ""
        if not isinstance(title, str):
            raise CorpusError(f"{shown}:{lineno}: 'title' must be a string, got {type(title).__name__}")
        meta = obj.get("metadata") or {}
        if not isinstance(meta, dict):
            raise CorpusError(f"{shown}:{lineno}: 'metadata' must be an object, got {type(meta).__name__}")
        del obj
        docs.append(Document(id=doc_id, title=_no_surrogates(title), text=_no_surrogates(text), metadata=meta,
                             source=f"{shown}:{lineno}"))
        del text
    if not docs:
        raise CorpusError(f"{shown}: empty corpus (no documents)")
    return Corpus(docs, kind="beir", root=str(base))


def is_beir_folder(path: Path) -> bool:
    """A folder holding ``corpus.jsonl`` (whatever kind of file that is: the loader says when it cannot be read)."""
    return path.is_dir() and os.path.lexists(path / "corpus.jsonl")


def load_corpus(path: str | os.PathLike[str] | Corpus, *, strict: bool = False, max_file_bytes: int = MAX_FILE_BYTES,
                formats: Mapping[str, str] | None = None, loader_options: Mapping[str, Mapping[str, Any]] | None = None,
                extract_timeout_s: float | None = None) -> Corpus:
    """Load a corpus from a BEIR folder, a ``corpus.jsonl`` file, a folder of documents, or a single document
    (markdown, text, HTML, PDF, DOCX, reStructuredText, a notebook; see :func:`load_folder` for ``formats``,
    ``loader_options`` and what is skipped).

    In a folder, links that resolve outside it, dangling links and special files (FIFOs, devices) are skipped
    with a warning on stderr and listed in ``Corpus.skipped``; with ``strict`` they are an error. A file (or a
    ``corpus.jsonl`` line) over ``max_file_bytes`` is an error. A :class:`Corpus` is returned as it is.
    """
    if isinstance(path, Corpus):
        return path
    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except OSError:
        check_input_file(p, "corpus path", error=CorpusError, missing=CorpusNotFoundError)
        raise  # not reached: the check raises
    if stat.S_ISDIR(mode):
        if is_beir_folder(p):
            return load_beir_corpus(p, max_file_bytes=max_file_bytes)
        return load_folder(p, strict=strict, max_file_bytes=max_file_bytes, formats=formats,
                           loader_options=loader_options, extract_timeout_s=extract_timeout_s)
    if not stat.S_ISREG(mode):
        raise CorpusError(f"corpus path {display_name(p)} is {file_kind(mode)}, not a folder or a regular file; "
                          "point --corpus at a folder of documents, a BEIR folder or a corpus.jsonl file")
    if p.suffix == ".jsonl":
        return load_beir_corpus(p, max_file_bytes=max_file_bytes)
    table = suffix_table(formats)
    fmt = _format_of(p.name, table)
    if fmt is None:
        raise CorpusError(f"{display_name(p)}: unsupported file type; use one of {', '.join(sorted(table))}, a "
                          "BEIR corpus.jsonl, or name its format (formats={'.ext': 'html'}, --format .ext=html)")
    docs, problems = _load_files([(doc_id_from_path(p.name), p, fmt)],
                                 {k: dict(v) for k, v in (loader_options or {}).items()}, max_file_bytes,
                                 extract_timeout_s)
    if problems:
        raise CorpusError(f"{display_name(problems[0][0])}: {problems[0][1]}")
    kind = fmt if fmt in ("markdown", "text") else "documents"
    return Corpus(docs, kind=kind, root=str(p.parent))  # type: ignore[arg-type]
