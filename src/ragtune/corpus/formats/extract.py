"""Running loaders over many files: extraction cached by file content, in worker processes, each with a time limit.

- **Cache.** A loader that says ``cache = True`` (every format but markdown and text, which read faster than a cache
  would, and are read in the calling process) has its Document kept under ``<cache dir>/extract/``, keyed by the loader's name and version, its options
  and the sha256 of the file's bytes: a sweep, an eval rerun or a refresh never parses an unchanged file again, and
  a changed file (or a new loader version) never reads a stale extraction.
- **Workers.** Files not in the cache are parsed in forked worker processes, as many as there are cores (and files),
  so a folder of PDFs uses both cores of a small machine. Where ``fork`` is not available they are parsed here.
- **Time limit.** A file whose parse runs past ``timeout_s`` (a malformed PDF that loops) is reported and its worker
  killed; the other files load. A parse that raises reports one line naming the file and what went wrong.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import CorpusError
from ...io import write_atomic
from ...paths import default_cache_dir, display_name, usable_cpus
from ...types import Document, Section

__all__ = ["Job", "extract", "document_to_dict", "document_from_dict", "DEFAULT_TIMEOUT_S"]

DEFAULT_TIMEOUT_S = 300.0
_CACHE_FORMAT = 1


@dataclass(frozen=True)
class Job:
    """One file to load: its document id, path, the loader (a registry name and its options) and the size limit.
    The bytes are read where the file is parsed, one file at a time, never all at once."""

    doc_id: str
    path: str
    loader: str
    options: Mapping[str, Any]
    max_bytes: int


def document_to_dict(d: Document) -> dict[str, Any]:
    return {"id": d.id, "title": d.title, "text": d.text, "metadata": dict(d.metadata), "source": d.source,
            "format": d.format, "locations": [[at, dict(loc)] for at, loc in d.locations],
            "sections": [[s.id, s.title, s.level, list(s.heading_path), s.parent, s.start, s.end, s.own_end,
                          s.explicit_id, list(s.aliases)] for s in d.sections]}


def document_from_dict(r: Mapping[str, Any], *, doc_id: str, source: str) -> Document:
    """The Document a cache entry holds, under ``doc_id`` and ``source`` (the same bytes may sit at another path)."""
    old = r["id"]

    def rebase(anchor: str | None) -> str | None:
        return None if anchor is None else doc_id + anchor[len(old):] if anchor.startswith(old + "#") else anchor

    sections = tuple(Section(doc_id=doc_id, id=s[0], title=s[1], level=s[2], heading_path=tuple(s[3]),
                             parent=rebase(s[4]), start=s[5], end=s[6], own_end=s[7], explicit_id=s[8],
                             aliases=tuple(s[9])) for s in r["sections"])
    return Document(id=doc_id, title=r["title"], text=r["text"], metadata=r["metadata"], sections=sections,
                    source=source, format=r["format"], locations=tuple((int(at), loc) for at, loc in r["locations"]))


def _key(name: str, version: str, options: Mapping[str, Any], digest: bytes) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([_CACHE_FORMAT, name, version, dict(options)], sort_keys=True, default=str).encode())
    h.update(digest)
    return h.hexdigest()


def _cache_path(root: Path, key: str) -> Path:
    return root / "extract" / key[:2] / f"{key}.json"


def _read_cache(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):  # absent, or a torn/corrupt entry: extract again (and overwrite it)
        return None


def _write_cache(path: Path, doc: Document) -> None:
    try:
        write_atomic(path, json.dumps(document_to_dict(doc), ensure_ascii=False), durable=False)
    except OSError:  # a read-only cache only costs speed
        pass


def _describe(e: BaseException) -> str:
    if isinstance(e, CorpusError):
        return str(e)
    if isinstance(e, MemoryError):
        return "out of memory while parsing it"
    if isinstance(e, RecursionError):
        return "nested too deeply to parse"
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"cannot be parsed ({type(e).__name__}{': ' + msg[:200] if msg else ''}); check that it opens in its " \
           "own application, or remove it from the corpus"


def _run(job: Job) -> tuple[str, Document | None, str | None]:
    """Parse one file: (doc id, the document or None, the problem or None). Never raises."""
    from ...registry import LOADERS

    from ..files import read_bytes_file

    try:
        loader = LOADERS.build(job.loader, options=dict(job.options))
        data = read_bytes_file(Path(job.path), max_bytes=job.max_bytes)
        doc = loader.load(data, job.doc_id, display_name(job.path))
        del data
    except BaseException as e:  # noqa: BLE001 - any parser failure is this file's problem, reported as one line
        if isinstance(e, KeyboardInterrupt):
            raise
        return job.doc_id, None, _describe(e).removeprefix(f"{display_name(job.path)}: ")
    if not doc.text.strip():
        return job.doc_id, None, "no text could be extracted from it (an image-only or empty file?)"
    return job.doc_id, doc, None


def _fork_context() -> Any:
    if sys.platform == "win32" or sys.platform == "darwin":
        return None
    try:
        return multiprocessing.get_context("fork")
    except ValueError:
        return None


def _parallel(jobs: Sequence[Job], timeout_s: float, workers: int) -> dict[str, tuple[Document | None, str | None]]:
    """Each job in a worker process; a job past ``timeout_s`` is reported, and its pool killed and made again for
    the jobs still waiting."""
    import time

    ctx = _fork_context()
    out: dict[str, tuple[Document | None, str | None]] = {}
    if ctx is None:
        for job in jobs:
            _, doc, why = _run(job)
            out[job.doc_id] = (doc, why)
        return out
    waiting = list(jobs)
    while waiting:
        pool = ctx.Pool(max(1, min(workers, len(waiting))), maxtasksperchild=16)
        try:
            started = time.monotonic()
            pending = [(job, pool.apply_async(_run, (job,))) for job in waiting]
            waiting = []
            timed_out = False
            for i, (job, res) in enumerate(pending):
                if timed_out:
                    waiting.append(job)
                    continue
                # each job gets timeout_s of its own from when the one before it finished (a queue of files is
                # not one time limit), counted from the pool's start for the first
                try:
                    _, doc, why = res.get(timeout=max(0.0, timeout_s - (time.monotonic() - started)))
                except multiprocessing.TimeoutError:
                    out[job.doc_id] = (None, f"parsing it took more than {timeout_s:g} s and was stopped (a "
                                             "malformed file?); check it, or pass a larger extract_timeout_s")
                    waiting.extend(j for j, r in pending[i + 1:] if not r.ready())
                    for j, r in pending[i + 1:]:
                        if r.ready():
                            _, d, w = r.get()
                            out[j.doc_id] = (d, w)
                    timed_out = True
                    break
                out[job.doc_id] = (doc, why)
                started = time.monotonic()
        finally:
            pool.terminate()
            pool.join()
    return out


def _digest(path: str, max_bytes: int) -> bytes:
    from ..files import read_bytes_file

    data = read_bytes_file(Path(path), max_bytes=max_bytes)
    return hashlib.sha256(data).digest()


def extract(jobs: Sequence[Job], *, timeout_s: float = DEFAULT_TIMEOUT_S, cache_dir: Path | None = None,
            workers: int | None = None, show_progress: bool = True) -> dict[str, tuple[Document | None, str | None]]:
    """Document id -> (the document, None) or (None, the problem) for each job, from the cache where it can."""
    from ...progress import progress_iter
    from ...registry import LOADERS

    root = cache_dir if cache_dir is not None else default_cache_dir()
    out: dict[str, tuple[Document | None, str | None]] = {}
    todo: list[tuple[Job, Path | None]] = []
    for job in jobs:
        loader = LOADERS.build(job.loader, options=dict(job.options))
        try:
            digest = _digest(job.path, job.max_bytes)
        except CorpusError as e:
            out[job.doc_id] = (None, str(e).removeprefix(f"{display_name(job.path)}: "))
            continue
        path = _cache_path(root, _key(loader.name, str(getattr(loader, "version", "0")), job.options, digest))
        hit = _read_cache(path)
        if hit is not None:
            try:
                out[job.doc_id] = (document_from_dict(hit, doc_id=job.doc_id, source=display_name(job.path)), None)
                continue
            except (KeyError, TypeError, ValueError, IndexError):
                pass  # an entry of another layout: extract again
        todo.append((job, path))
    if not todo:
        return out
    n = workers or min(usable_cpus(), len(todo))
    done: dict[str, tuple[Document | None, str | None]] = {}
    batch = 8 * max(n, 1)  # files handed to one pool at a time (a time-out restarts only its batch)
    for i in progress_iter(range(0, len(todo), batch), "extracting", enabled=show_progress and len(todo) > batch,
                           total=(len(todo) + batch - 1) // batch):
        part = todo[i:i + batch]
        done.update(_parallel([j for j, _ in part], timeout_s, n))
    for job, path in todo:
        doc, why = done[job.doc_id]
        out[job.doc_id] = (doc, why)
        if doc is not None and path is not None:
            _write_cache(path, doc)
    return out
