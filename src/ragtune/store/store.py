"""A versioned index store: a folder of plain files, no pickle.

Layout::

    STORE/
      CURRENT                 the promoted version id (replaced atomically)
      history.json            promoted versions, oldest first (rollback walks back)
      versions/v0007/         one immutable, complete version
        manifest.json         ragtune version, config + hash, corpus fingerprint, per-document hashes,
                              embedding model, weights key and dimension, chunk count, build time,
                              and the size and BLAKE2b hash of every other file of the version (``files``)
        documents.jsonl       the documents (text, title, metadata): anchors and snippets come from here
        chunks.jsonl          the chunks (spans, anchors, heading paths, embed text)
        parents.jsonl         small-to-big parents (when used)
        vectors.npy           float32 chunk vectors (dense and hybrid)
        ann.usearch           their HNSW graph, when the version searches through one (usearch's format); recorded
                              under ``ann_graph`` (not ``files``): a graph that does not match is rebuilt on load
        bm25/                 the BM25 index as bm25s writes it (.npy arrays, JSON vocabularies; bm25 and hybrid)
      building/               versions being written; a killed build leaves debris here, never in versions/
        .lock                 the store lock: writes, promotes, rollbacks and gc take it
      trash/                  versions gc is deleting: moved here in one rename first, so a killed gc
                              never leaves a half-deleted version in versions/

A version appears in ``versions/`` only by an atomic rename of a complete
folder, after every file and folder in it is written and synced. Readers
resolve ``CURRENT`` once and then read an immutable folder, so a promote or
rollback never changes what an in-flight reader sees. Promote and rollback
check the sizes and hashes of a version's files; loading checks their sizes
and the content as it is parsed. A damaged version is refused with a
:class:`DamagedStoreError` naming the version, the file and the way back.

Every read of ``CURRENT`` and ``history.json`` goes through one reader
(:meth:`IndexStore.current_id`, :meth:`IndexStore.history`): a pointer that is
not UTF-8, empty, a folder, not a version id, or names a version that is gone
raises :class:`DamagedStoreError` with the repair; gc deletes nothing then.

Every promote is a compare-and-swap under the store lock:
``promote(v, expect=previous)`` refuses with :class:`CurrentMovedError` when
``CURRENT`` no longer names ``previous`` (a refresh, promote, rollback or
migrate moved it meanwhile), so no writer undoes another's change.

The lock waits ``lock_timeout`` seconds (30 by default, ``RAGTUNE_LOCK_TIMEOUT``),
says on stderr who holds it (the holder writes its pid, host, command and start
time into ``building/.lock``) and then raises :class:`StoreLockedError` naming
the holder and whether it is still running, stopped or gone.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import socket
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..corpus.corpus import Corpus
from ..errors import ConfigError, CurrentMovedError, DamagedStoreError, ParameterError, StoreError, StoreLockedError
from ..io import fsync_dir, write_atomic
from ..pipeline import PipelineConfig
from ..types import Chunk, Document, Section

__all__ = ["IndexStore", "StoreError", "DamagedStoreError", "StoreLockedError", "CurrentMovedError",
           "VersionInfo", "doc_hash"]

_VERSION_NAME = re.compile(r"^v\d+$")
_POINTER_TMP = re.compile(r"^\.(CURRENT|history\.json)\.tmp\d+$")
_ANY = object()  # promote(expect=_ANY): no compare-and-swap (a promote by hand, the repair of a damaged CURRENT)
_CURRENT_LIMIT = 4096  # a version id is a few bytes: CURRENT is never read past this
_HISTORY_LIMIT = 64 << 20
DEFAULT_LOCK_TIMEOUT = 30.0
_LOCK_NOTICE_S = 1.0  # say that we wait once the lock has been busy this long
GRAPH_FILE = "ann.usearch"


# A version is built from a PipelineConfig (chunking, first stage, embedder); rerank and filter apply at query time.


@dataclass(frozen=True)
class VersionInfo:
    """A version folder. ``problem`` says what is missing or damaged (``None``: complete, by a cheap size check)."""

    id: str
    path: Path
    manifest: Mapping[str, Any]
    problem: str | None = None

    @property
    def created(self) -> str:
        return self.manifest.get("created", "")

    @property
    def complete(self) -> bool:
        return self.problem is None


def doc_hash(doc: Document) -> str:
    h = hashlib.sha256()
    for part in (doc.id, doc.title, doc.text, json.dumps(dict(doc.metadata), sort_keys=True, default=str)):
        b = part.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


# --- files -----------------------------------------------------------------------------------------
# files inside a version being built: the folder, renamed when complete, is the unit that appears at once
def _write_json(path: Path, data: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1, default=str)
        f.flush()
        os.fsync(f.fileno())


def _write_jsonl(path: Path, rows) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")


def _replace_atomic(path: Path, text: str) -> None:
    write_atomic(path, text)




def _file_digest(path: Path, *, sync: bool = False) -> dict[str, Any]:
    """Size and BLAKE2b-128 of a file (streamed); with ``sync``, also flush it to disk."""
    h = hashlib.blake2b(digest_size=16)
    size = 0
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
            size += len(block)
        if sync:
            os.fsync(f.fileno())
    return {"size": size, "blake2b": h.hexdigest()}


def _seal(folder: Path) -> dict[str, dict[str, Any]]:
    """Fsync every file and folder under ``folder`` (deepest first) and return the checksum list."""
    files: dict[str, dict[str, Any]] = {}
    for dirpath, _dirs, names in os.walk(folder, topdown=False):
        for name in names:
            p = Path(dirpath) / name
            files[p.relative_to(folder).as_posix()] = _file_digest(p, sync=True)
        fsync_dir(Path(dirpath))
    return dict(sorted(files.items()))


def _doc_record(d: Document) -> dict[str, Any]:
    return {"id": d.id, "title": d.title, "text": d.text, "metadata": dict(d.metadata), "source": d.source,
            "text_offset": d.text_offset, "format": d.format, "locations": [[at, dict(loc)] for at, loc in d.locations],
            "sections": [{"id": s.id, "title": s.title, "level": s.level, "heading_path": list(s.heading_path),
                          "parent": s.parent, "start": s.start, "end": s.end, "own_end": s.own_end,
                          "explicit_id": s.explicit_id, "aliases": list(s.aliases)} for s in d.sections]}


def _doc_from_record(r: Mapping[str, Any]) -> Document:
    sections = tuple(Section(doc_id=r["id"], id=s["id"], title=s["title"], level=s["level"],
                             heading_path=tuple(s["heading_path"]), parent=s["parent"], start=s["start"], end=s["end"],
                             own_end=s["own_end"], explicit_id=s.get("explicit_id"),
                             aliases=tuple(s.get("aliases", ()))) for s in r.get("sections", ()))
    return Document(id=r["id"], title=r["title"], text=r["text"], metadata=r.get("metadata", {}), sections=sections,
                    source=r.get("source"), text_offset=r.get("text_offset", 0), format=r.get("format"),
                    locations=tuple((int(at), dict(loc)) for at, loc in r.get("locations", ())))


def _manifest_problem(m: Any) -> str | None:
    """What makes a parsed manifest unusable, or None."""
    if not isinstance(m, dict):
        return "manifest.json is not a JSON object"
    for key, kind in (("config", dict), ("corpus", dict), ("documents", dict), ("chunks", int), ("created", str),
                      ("build_s", (int, float))):
        if key not in m:
            return f"manifest.json has no {key!r}"
        if not isinstance(m[key], kind):
            return f"manifest.json has a malformed {key!r}"
    for key in ("kind", "documents"):
        if key not in m["corpus"]:
            return f"manifest.json has no 'corpus.{key}'"
    if "files" in m and not isinstance(m["files"], dict):
        return "manifest.json has a malformed 'files'"
    return None  # the config itself is validated when the version is loaded


def _embeds(retriever: Any) -> bool:
    """Whether a manifest's retriever embeds chunks (its registry entry uses the embedder); a name no longer
    registered counts as not embedding."""
    from ..registry import RETRIEVERS

    return isinstance(retriever, str) and retriever in RETRIEVERS and RETRIEVERS.get(retriever).uses_embedder


def _files_problem(path: Path, m: Mapping[str, Any], *, hashes: bool) -> str | None:
    """The first missing or damaged file of a version with a well-formed manifest, or None."""
    files = m.get("files")
    if files is None:  # written before checksums were recorded: the files a version cannot do without
        uses_vectors = _embeds(m["config"].get("retriever"))
        needed = ["documents.jsonl", "chunks.jsonl"] + (["parents.jsonl"] if m.get("parents") else []) \
            + (["vectors.npy"] if uses_vectors else [])
        for name in needed:
            p = path / name
            if not p.is_file():
                return f"{name} is missing"
            if p.stat().st_size == 0:
                return f"{name} is empty"
        return None
    for name, want in files.items():
        p = path / name
        try:
            size = p.stat().st_size
        except FileNotFoundError:
            return f"{name} is missing"
        except OSError as e:
            return f"{name} cannot be read ({e.strerror or e})"
        if size != want.get("size"):
            return f"{name} has {size} bytes, the manifest recorded {want.get('size')} (truncated or overwritten)"
        if hashes:
            try:
                got = _file_digest(p)["blake2b"]
            except OSError as e:
                return f"{name} cannot be read ({e.strerror or e})"
            if got != want.get("blake2b"):
                return f"{name} does not match its checksum in the manifest (its content changed)"
    return None


class IndexStore:
    """Versions of one index in a folder; see the module docstring for the layout.

    The constructor touches nothing. Reading a folder that is not a store raises :class:`StoreError`;
    writing a version into a new folder creates the store. ``lock_timeout``: seconds to wait for the store lock
    (default ``RAGTUNE_LOCK_TIMEOUT`` or 30) before :class:`StoreLockedError`.
    """

    def __init__(self, root: str | os.PathLike[str], *, lock_timeout: float | None = None):
        self.root = Path(root)
        self.versions_dir = self.root / "versions"
        self.building_dir = self.root / "building"
        self.trash_dir = self.root / "trash"
        self.lock_timeout = _lock_timeout() if lock_timeout is None else float(lock_timeout)
        if not self.lock_timeout >= 0:
            raise ConfigError(f"lock_timeout must be 0 or more seconds, got {lock_timeout!r}")
        self._held = threading.local()

    # --- reading ---------------------------------------------------------------------------
    def exists(self) -> bool:
        return self.versions_dir.is_dir()

    def _require(self) -> None:
        if not self.exists():
            what = "no index store" if not self.root.exists() else "no index store (no versions/ folder)"
            raise StoreError(f"{what} at {self.root}; build one with "
                             f"`ragtune index build --store {self.root} --corpus PATH`")

    def _damage(self, vid: str, problem: str) -> DamagedStoreError:
        return DamagedStoreError(
            f"version {vid} in {self.root} is damaged: {problem}. Recover with `ragtune index rollback --store "
            f"{self.root}` (or promote another complete version), or rebuild with `ragtune index build --store "
            f"{self.root} --corpus PATH`; `ragtune index gc` removes damaged versions that are not current")

    def _info(self, path: Path) -> VersionInfo:
        try:
            manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            return VersionInfo(path.name, path, {}, "manifest.json is missing")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            return VersionInfo(path.name, path, {}, f"manifest.json is unreadable ({e})")
        problem = _manifest_problem(manifest)
        if problem:  # an empty manifest marks a folder that is not usable as a version at all
            return VersionInfo(path.name, path, {}, problem)
        return VersionInfo(path.name, path, manifest, _files_problem(path, manifest, hashes=False))

    def list(self, *, include_damaged: bool = False) -> list[VersionInfo]:
        """Versions, oldest first. Each has ``problem`` set when a file is missing or has the wrong size.
        Folders whose manifest is missing or malformed are left out unless ``include_damaged``."""
        self._require()
        out = []
        for p in sorted(self.versions_dir.iterdir(), key=lambda p: (len(p.name), p.name)):  # v9999 < v10000
            if not _VERSION_NAME.match(p.name) or not p.is_dir():
                continue
            v = self._info(p)
            if include_damaged or v.manifest:
                out.append(v)
        return out

    def status(self) -> tuple[list[VersionInfo], str | None, DamagedStoreError | None]:
        """Every version (damaged ones included), the current id, and the damage of the ``CURRENT`` pointer if it
        is damaged (unreadable, or naming a version that is gone): the listing still comes back, since one of the
        versions is the repair. The current id is None when there is none or the pointer is damaged."""
        versions = self.list(include_damaged=True)
        try:
            cur = self.current_id()
            if cur is not None and cur not in {v.id for v in versions}:
                self.get()  # CURRENT names a version that is gone: DamagedStoreError
        except DamagedStoreError as e:
            return versions, None, e
        return versions, cur, None

    def get(self, version: str | None = None) -> VersionInfo:
        """A version by id, or the current one. A missing or damaged file is reported in ``problem``;
        a version without a usable manifest raises :class:`StoreError`."""
        self._require()
        vid = version or self.current_id()
        if vid is None:
            raise StoreError(f"{self.root} has no current version; promote one with "
                             f"`ragtune index promote --store {self.root} VERSION`")
        path = self.versions_dir / vid
        if not _VERSION_NAME.match(vid) or not path.is_dir():
            if not version:  # CURRENT names a version that is gone (deleted by hand)
                raise self._pointer_damage("CURRENT", f"it names {vid}, which is not in versions/")
            have = ", ".join(v.id for v in self.list()) or "none"
            shown = vid if len(vid) <= 40 else vid[:40] + "..."
            raise StoreError(f"no version {shown!r} in {self.root}; versions: {have}")
        v = self._info(path)
        if not v.manifest:
            raise self._damage(vid, v.problem or "manifest.json is unusable")
        return v

    def verify(self, version: str | None = None, *, hashes: bool = False) -> VersionInfo:
        """The version if every file is there with its recorded size (and, with ``hashes``, its
        recorded checksum); otherwise :class:`StoreError` naming the file."""
        v = self.get(version)
        problem = (v.problem or _files_problem(v.path, v.manifest, hashes=True)) if hashes else v.problem
        if problem:
            raise self._damage(v.id, problem)
        return v

    # --- the pointers: every read of CURRENT and history.json goes through _read_pointer -------------------
    def _version_names(self) -> list[str]:
        """The ids of the folders in versions/ (no manifest read), oldest first."""
        try:
            names = [p.name for p in self.versions_dir.iterdir() if _VERSION_NAME.match(p.name) and p.is_dir()]
        except OSError:
            return []
        return sorted(names, key=lambda n: (len(n), n))

    def _pointer_damage(self, name: str, problem: str) -> DamagedStoreError:
        path = self.root / name
        have = ", ".join(self._version_names()[-8:]) or "none"
        first = ""
        if path.is_dir() and not path.is_symlink():
            first = f"move the folder away first (`mv {path} {path}.damaged`), then "
        if name == "CURRENT":
            repair = (f"It should hold the id of the current version. Repair: {first}`ragtune index promote --store "
                      f"{self.root} VERSION` (or write a version id into {path}); versions: {have}")
        else:
            repair = (f"It lists the promoted versions, oldest first, for rollback. Repair: {first}`ragtune index "
                      f"promote --store {self.root} VERSION` starts a new history at VERSION; versions: {have}")
        return DamagedStoreError(f"{path} is damaged: {problem}. {repair}")

    def _read_pointer(self, name: str, limit: int) -> bytes | None:
        """The bytes of ``CURRENT`` or ``history.json`` (None: no such file); :class:`DamagedStoreError` when it is
        a folder, not a regular file, unreadable or longer than ``limit``. Never blocks (a FIFO is refused)."""
        path = self.root / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except IsADirectoryError:
            raise self._pointer_damage(name, "it is a folder, not a file") from None
        except OSError as e:
            raise self._pointer_damage(name, f"it cannot be read ({e.strerror or e})") from None
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise self._pointer_damage(name, "it is a folder, not a file")
            if not stat.S_ISREG(st.st_mode):
                raise self._pointer_damage(name, "it is not a regular file")
            chunks, size = [], 0
            while size <= limit and (block := os.read(fd, min(1 << 20, limit + 1 - size))):
                chunks.append(block)
                size += len(block)
        except OSError as e:
            raise self._pointer_damage(name, f"it cannot be read ({e.strerror or e})") from None
        finally:
            os.close(fd)
        if size > limit:
            raise self._pointer_damage(name, f"it holds more than {limit:,} bytes (overwritten)")
        return b"".join(chunks)

    def current_id(self) -> str | None:
        """The id ``CURRENT`` names, or None when there is no ``CURRENT`` file. :class:`DamagedStoreError` when it
        is not UTF-8, empty, a folder, or holds something other than one version id."""
        data = self._read_pointer("CURRENT", _CURRENT_LIMIT)
        if data is None:
            return None
        try:
            vid = data.decode("utf-8").lstrip("\ufeff").strip()  # an editor's byte-order mark or CRLF is fine
        except UnicodeDecodeError:
            raise self._pointer_damage("CURRENT", "it is not UTF-8 text (overwritten)") from None
        if not vid:
            raise self._pointer_damage("CURRENT", "it is empty")
        if not _VERSION_NAME.match(vid):
            shown = f"{vid[:20]!r}{'...' if len(vid) > 20 else ''}"  # never echo a long file
            raise self._pointer_damage("CURRENT", f"it holds {shown}, not a version id like v0001")
        return vid

    def history(self) -> list[str]:
        """The promoted versions, oldest first ([] when there is no ``history.json``); :class:`DamagedStoreError`
        when the file is not UTF-8, not JSON, or not a list of version ids."""
        data = self._read_pointer("history.json", _HISTORY_LIMIT)
        if data is None:
            return []
        try:
            hist = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError:
            raise self._pointer_damage("history.json", "it is not UTF-8 text (overwritten)") from None
        except json.JSONDecodeError as e:
            raise self._pointer_damage("history.json", f"it is not valid JSON ({e.msg} at line {e.lineno})") from None
        if not isinstance(hist, list) or not all(isinstance(h, str) and _VERSION_NAME.match(h) for h in hist):
            raise self._pointer_damage("history.json", "it is not a list of version ids")
        return hist

    def _history_or_reset(self, what: str) -> list[str]:
        """The history for a promote: a damaged one is started again (with a warning), since promote is its repair."""
        try:
            return self.history()
        except DamagedStoreError as e:
            print(f"warning: {e}; {what} starts a new history", file=sys.stderr)
            try:
                cur = self.current_id()
            except DamagedStoreError:
                cur = None
            return [cur] if cur and (self.versions_dir / cur).is_dir() else []

    def _current_or_none(self) -> str | None:
        try:
            return self.current_id()
        except DamagedStoreError:
            return None

    def expect_current(self, expect: str | None, *, doing: str = "this command", kept: str = "nothing was promoted",
                       again: str = "Run it again to apply it on top of {now}") -> None:
        """Raise :class:`CurrentMovedError` unless ``CURRENT`` names ``expect`` (None: no current version). Hold the
        store lock from this check to the write it guards (:meth:`promote` with ``expect`` does)."""
        now = self.current_id()
        if now != expect:
            raise CurrentMovedError(
                f"the current version moved from {expect or 'none'} to {now or 'none'} while {doing} ran (another "
                f"refresh, promote, rollback or migrate); {kept}, so that change is not lost. "
                + again.format(now=now or "none"))

    def _rows(self, v: VersionInfo, name: str, expected: int | None, *, required: bool = True) -> list[dict[str, Any]]:
        p = v.path / name
        if not p.exists():
            if required:
                raise self._damage(v.id, f"{name} is missing")
            return []
        rows = []
        try:
            with open(p, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    if line.strip():
                        try:
                            rows.append(json.loads(line))
                        except json.JSONDecodeError:
                            raise self._damage(v.id, f"line {n} of {name} is not valid JSON (truncated or overwritten)") from None
        except UnicodeDecodeError:
            raise self._damage(v.id, f"{name} is not UTF-8 text (overwritten)") from None
        if expected is not None and len(rows) != expected:
            raise self._damage(v.id, f"{name} holds {len(rows)} records, the manifest recorded {expected}")
        return rows

    def _parse(self, v: VersionInfo, name: str, rows: list[dict[str, Any]], make) -> list:
        out = []
        for n, r in enumerate(rows, 1):
            try:
                out.append(make(r))
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                raise self._damage(v.id, f"record {n} of {name} is malformed ({type(e).__name__}: {e})") from None
        return out

    def documents(self, version: str | None = None) -> list[Document]:
        v = self.verify(version)
        rows = self._rows(v, "documents.jsonl", v.manifest["corpus"]["documents"])
        return self._parse(v, "documents.jsonl", rows, _doc_from_record)

    def corpus(self, version: str | None = None) -> Corpus:
        v = self.verify(version)
        return Corpus(self.documents(v.id), kind=v.manifest["corpus"]["kind"], root=f"{self.root}@{v.id}")

    def chunks(self, version: str | None = None) -> tuple[list[Chunk], list[Chunk]]:
        v = self.verify(version)
        chunks = self._parse(v, "chunks.jsonl", self._rows(v, "chunks.jsonl", v.manifest["chunks"]), Chunk.from_dict)
        n_parents = v.manifest.get("parents") or 0
        parents = self._parse(v, "parents.jsonl", self._rows(v, "parents.jsonl", n_parents, required=bool(n_parents)),
                              Chunk.from_dict)
        return chunks, parents

    def vectors(self, version: str | None = None) -> np.ndarray | None:
        v = self.verify(version)
        p = v.path / "vectors.npy"
        if not p.exists():
            if _embeds(v.manifest["config"].get("retriever")):
                raise self._damage(v.id, "vectors.npy is missing")
            return None
        try:
            arr = np.load(p, mmap_mode="r")
        except (OSError, ValueError) as e:
            raise self._damage(v.id, f"vectors.npy is not a readable array ({e})") from None
        if arr.ndim != 2 or arr.shape[0] != v.manifest["chunks"]:
            raise self._damage(v.id, f"vectors.npy has shape {arr.shape}, expected one row per chunk "
                                     f"({v.manifest['chunks']})")
        return arr

    # --- the lock ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def locked(self, timeout: float | None = None) -> Iterator[None]:
        """Hold the store lock (``building/.lock``): builds, promotes, rollbacks and gc of one store
        run one at a time, across processes and threads. Re-entrant within one thread of this object.

        Waits at most ``timeout`` seconds (default: ``lock_timeout``), saying on stderr after a second who holds
        the lock, then raises :class:`StoreLockedError` naming the holder. The holder records its pid, host,
        command and start time in the lock file."""
        import fcntl

        depth = getattr(self._held, "depth", 0)
        if depth:
            self._held.depth = depth + 1
            try:
                yield
            finally:
                self._held.depth = depth
            return
        lock_path = self.building_dir / ".lock"
        not_a_file = StoreError(f"the store lock {lock_path} is not a regular file; remove it (`rm -r {lock_path}`) "
                                "and run the command again")
        try:
            self.building_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o644)
        except IsADirectoryError:
            raise not_a_file from None
        except OSError as e:
            raise StoreError(f"cannot take the lock of {self.root} ({e.strerror or e}); check that the folder "
                             "is writable and the disk not full") from e
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or device there would block or mislead
            os.close(fd)
            raise not_a_file
        fh = os.fdopen(fd, "r+", encoding="utf-8")
        try:
            wait = self.lock_timeout if timeout is None else timeout
            start = time.monotonic()
            told = None
            while True:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    pass
                waited = time.monotonic() - start
                holder = _lock_holder(lock_path)
                if waited >= wait:
                    raise StoreLockedError(
                        f"the store lock {lock_path} is held by {_describe_holder(holder)}; gave up after waiting "
                        f"{wait:g} s. {_holder_advice(holder, lock_path)}. Then run the command again (or wait "
                        "longer: RAGTUNE_LOCK_TIMEOUT=SECONDS)")
                if waited >= min(_LOCK_NOTICE_S, wait / 2) and told != holder.get("pid", "?"):
                    told = holder.get("pid", "?")
                    print(f"waiting up to {wait:g} s for the store lock {lock_path}, held by "
                          f"{_describe_holder(holder)}", file=sys.stderr, flush=True)
                time.sleep(min(0.05 + waited / 20, 0.5, max(0.0, wait - waited)))
            with contextlib.suppress(OSError):  # who holds it, for anyone who has to wait (best effort)
                fh.seek(0)
                fh.truncate()
                fh.write(json.dumps(_holder_record()) + "\n")
                fh.flush()
            self._held.depth = 1
            try:
                yield
            finally:
                self._held.depth = 0
        finally:
            fh.close()

    def _clean_pointer_tmp(self) -> None:
        """Temporary pointer files left by killed promotes and rollbacks (call under the lock)."""
        with contextlib.suppress(OSError):
            for p in self.root.iterdir():
                if _POINTER_TMP.match(p.name):
                    p.unlink(missing_ok=True)

    def _write_pointers(self, what: str, current: str, hist: list[str]) -> None:
        self._clean_pointer_tmp()
        for name in ("history.json", "CURRENT"):  # a folder there cannot be replaced by a file: say how to repair
            if (self.root / name).is_dir() and not (self.root / name).is_symlink():
                raise self._pointer_damage(name, "it is a folder, not a file")
        try:
            _replace_atomic(self.root / "history.json", json.dumps(hist))
            _replace_atomic(self.root / "CURRENT", current + "\n")
        except OSError as e:
            raise StoreError(f"{what} failed: {e.strerror or e} ({errno.errorcode.get(e.errno or 0, 'OSError')}); "
                             f"CURRENT still names {self._current_or_none()}. {_fix_hint(e, self.root)}") from e

    # --- pointer -----------------------------------------------------------------------------
    def promote(self, version: str, *, expect: Any = _ANY, doing: str = "this promote",
                kept: str | None = None, again: str | None = None) -> VersionInfo:
        """Make ``version`` current (atomic: readers see the old or the new pointer, never half).
        Refuses a version with a missing or damaged file (sizes and checksums are checked).

        With ``expect`` (a version id, or None for "no current version") this is a compare-and-swap: under the
        store lock, :class:`CurrentMovedError` is raised and nothing changes unless ``CURRENT`` still names
        ``expect``. Every writer that decided to promote from what it read earlier (refresh, build, migrate)
        passes it, so none undoes a change made meanwhile. Without it (a promote by hand), a damaged ``CURRENT``
        or ``history.json`` is replaced: this is their repair."""
        self._require()  # before the lock: never create building/ in a folder that is not a store
        with self.locked():
            if expect is not _ANY:
                self.expect_current(expect, doing=doing, kept=kept or f"{version} was not promoted",
                                    again=again or f"Promote it by hand if it should replace {{now}}: `ragtune index "
                                                   f"promote --store {self.root} {version}`")
            v = self.verify(version, hashes=True)
            hist = self._history_or_reset(f"promoting {v.id}")
            self._switch(f"promoting {v.id}", v, [h for h in hist if h != v.id] + [v.id],
                         expect=self._current_or_none() if expect is _ANY else expect)
        return v

    def promote_built(self, version: str, promote: bool | None, expect: str | None) -> bool:
        """What a build does with its new version: ``promote=True`` promotes it if ``CURRENT`` still names
        ``expect`` (read when the build started; :class:`CurrentMovedError` otherwise), ``None`` promotes it only
        into a store without a current version (the first build; a version another build promoted meanwhile
        stays current), ``False`` leaves it. Returns whether it was promoted."""
        if promote:
            self.promote(version, expect=expect, doing="this build", kept=f"{version} was built but not promoted")
            return True
        if promote is None:
            try:
                self.promote(version, expect=None, doing="this build")
                return True
            except CurrentMovedError:
                return False
            except DamagedStoreError as e:  # the build itself succeeded; promoting over a damaged CURRENT is a choice
                print(f"warning: {version} was built but not promoted: {e}", file=sys.stderr)
                return False
        return False

    def _switch(self, what: str, v: VersionInfo, hist: list[str], *, expect: str | None) -> None:
        """Point CURRENT (and, for a version in Milvus, the store's alias first) at ``v``, under the lock, if it
        still names ``expect`` (read under the same lock: the compare-and-swap every promote goes through).
        When CURRENT cannot be written, the alias goes back to the version CURRENT still names."""
        if self._current_or_none() != expect:
            self.expect_current(expect, doing=what, kept=f"{v.id} was not made current")
        engine = v.manifest.get("engine")
        moved = False
        if engine and engine.get("name") == "milvus":
            from .milvus import point_alias

            point_alias(self.root, v.id, engine)
            moved = True
        try:
            self._write_pointers(what, v.id, hist)
        except StoreError:
            cur = self._current_or_none()
            if moved and cur:
                with contextlib.suppress(Exception):
                    old = self.get(cur).manifest.get("engine")
                    if old and old.get("name") == "milvus":
                        from .milvus import point_alias

                        point_alias(self.root, cur, old)
            raise

    def rollback(self, *, expect: Any = _ANY) -> VersionInfo:
        """Back to the version promoted before the current one (checked like a promote). With ``expect``: only if
        ``CURRENT`` still names it (:class:`CurrentMovedError` otherwise). A damaged ``CURRENT`` or
        ``history.json`` is refused with :class:`DamagedStoreError` (repair: promote a version by hand)."""
        self._require()
        with self.locked():
            return self._rollback_locked(expect)

    def _rollback_locked(self, expect: Any = _ANY) -> VersionInfo:
        cur = self.current_id()
        if expect is not _ANY:
            self.expect_current(expect, doing="this rollback", kept="nothing was rolled back",
                                again="Run the rollback again if it should go back from {now}")
        hist = self.history()
        if cur in hist:
            hist = hist[: hist.index(cur)]
        existing = {v.id: v for v in self.list(include_damaged=True)}
        previous = [h for h in hist if h in existing]
        if not previous:
            raise StoreError(f"nothing to roll back to: {cur} is the first promoted version")
        target = previous[-1]
        v = existing[target]
        problem = v.problem or _files_problem(v.path, v.manifest, hashes=True)
        if problem:
            good = [h for h in previous[:-1] if existing[h].complete]
            raise StoreError(f"cannot roll back to {target}: it is damaged: {problem}. Promote another complete "
                             f"version ({', '.join(good) or 'none in the history'}) with `ragtune index promote "
                             f"--store {self.root} VERSION`, or rebuild with `ragtune index build --store {self.root} "
                             "--corpus PATH`")
        self._switch(f"rolling back to {target}", v, previous, expect=cur)
        return v

    def gc(self, keep: int) -> list[str]:
        """Delete versions beyond the ``keep`` newest complete ones, never the current one or the rollback
        target, and every damaged version that is not current. Each goes to ``trash/`` in one rename
        before its files are deleted."""
        if keep < 1:
            raise ParameterError("gc: {} must be at least 1", "keep")
        self._require()
        with self.locked():  # never while a build is writing
            return self._gc_locked(keep)

    def _gc_locked(self, keep: int) -> list[str]:
        # the pointers decide what is protected: when they cannot be read, nothing is deleted
        try:
            cur, hist = self.current_id(), self.history()
        except DamagedStoreError as e:
            raise DamagedStoreError(f"gc deleted nothing: {e}") from None
        if cur is not None and not (self.versions_dir / cur).is_dir():
            raise DamagedStoreError("gc deleted nothing: " + str(self._pointer_damage(
                "CURRENT", f"it names {cur}, which is not in versions/")))
        if cur is None and hist:
            raise DamagedStoreError("gc deleted nothing: " + str(self._pointer_damage(
                "CURRENT", f"it is missing, but history.json lists promoted versions ({', '.join(hist[-3:])})")))
        self._empty_trash()  # what a killed gc left
        versions = self.list(include_damaged=True)
        good = [v for v in versions if v.complete]
        rollback_target = hist[-2] if len(hist) >= 2 else None
        protect = {cur} | {v.id for v in good if v.id == rollback_target} | {v.id for v in good[-keep:]}
        removed = []
        for v in versions:
            if v.id not in protect:
                engine = v.manifest.get("engine")
                if engine and engine.get("name") == "milvus":  # its collection first: never an orphan collection
                    from .milvus import drop_version

                    drop_version(engine)
                self._to_trash(v.path)
                removed.append(v.id)
        self._empty_trash()
        self.clean_debris()
        return removed

    def _to_trash(self, path: Path) -> None:
        self.trash_dir.mkdir(exist_ok=True)
        os.rename(path, self.trash_dir / f"{path.name}.{os.getpid()}.{time.time_ns()}")
        fsync_dir(self.versions_dir)  # the version is gone from versions/ before any file is deleted
        fsync_dir(self.trash_dir)

    def _empty_trash(self) -> None:
        if self.trash_dir.is_dir():
            for p in self.trash_dir.iterdir():
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)

    def clean_debris(self) -> list[str]:
        """Remove what killed builds left in building/, what a killed gc left in trash/, and temporary
        pointer files of killed promotes. Takes the store lock."""
        if not self.exists():
            return []
        with self.locked():
            self._empty_trash()
            self._clean_pointer_tmp()
            gone = []
            for p in self.building_dir.iterdir():
                if p.name == ".lock":
                    continue
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
                gone.append(p.name)
            return gone

    def diff(self, a: str, b: str) -> dict[str, Any]:
        va, vb = self.get(a), self.get(b)
        da, db = va.manifest["documents"], vb.manifest["documents"]
        ca, cb = va.manifest["config"], vb.manifest["config"]
        return {
            "from": va.id, "to": vb.id,
            "added": sorted(set(db) - set(da)),
            "removed": sorted(set(da) - set(db)),
            "changed": sorted(d for d in set(da) & set(db) if da[d] != db[d]),
            "config": {k: {"from": ca.get(k), "to": cb.get(k)} for k in sorted(set(ca) | set(cb)) if ca.get(k) != cb.get(k)},
            "embedding": None if va.manifest.get("embedding") == vb.manifest.get("embedding")
            else {"from": va.manifest.get("embedding"), "to": vb.manifest.get("embedding")},
        }

    # --- writing -----------------------------------------------------------------------------
    def _next_id(self) -> str:
        names = [p.name for p in self.versions_dir.iterdir()] if self.versions_dir.is_dir() else []
        with contextlib.suppress(DamagedStoreError):  # never reuse an id the history names
            names += self.history()
        nums = [int(n[1:]) for n in names if _VERSION_NAME.match(n)]
        return f"v{(max(nums) + 1) if nums else 1:04d}"

    def write_version(self, *, config: PipelineConfig, corpus: Corpus, chunks: list[Chunk], parents: list[Chunk],
                      vectors: np.ndarray | None, embedding: Mapping[str, Any] | None, build_s: float,
                      parent_version: str | None = None, stats: Mapping[str, Any] | None = None,
                      bm25=None, index=None, engine: Callable[[str], Mapping[str, Any]] | None = None,
                      graph=None) -> VersionInfo:
        """Write a complete version under building/, sync every file and folder, then rename it into
        versions/ in one step. A failed write (disk full, ...) removes the partial folder and raises
        :class:`StoreError`; nothing is published. ``engine(version_id)``, when given, publishes the version's
        index in an outside engine (a Milvus collection) and returns what the manifest records as ``engine``.
        ``index``, a retriever that keeps an index of its own (its registry entry ``stores_index``), saves it
        into the version's ``index/`` folder with ``index.save(folder)``. ``graph``, a dense retriever searching
        through an HNSW graph, saves it as ``ann.usearch`` with ``graph.save_graph(path)``; the manifest records
        under ``ann_graph`` what it returns, the file's size and hash, and the hash of the vectors it indexes."""
        try:
            self.versions_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create the store {self.root}: {e.strerror or e}. {_fix_hint(e, self.root)}") from e
        with self.locked():
            self.clean_debris()
            vid = self._next_id()
            tmp = self.building_dir / f"{vid}.{os.getpid()}.{int(time.time() * 1000)}"
            step = "the build folder"
            try:
                tmp.mkdir(parents=True)
                step = "documents.jsonl"
                _write_jsonl(tmp / "documents.jsonl", (_doc_record(d) for d in corpus))
                step = "chunks.jsonl"
                _write_jsonl(tmp / "chunks.jsonl", (c.to_dict() for c in chunks))
                if parents:
                    step = "parents.jsonl"
                    _write_jsonl(tmp / "parents.jsonl", (c.to_dict() for c in parents))
                if vectors is not None:
                    step = "vectors.npy"
                    with open(tmp / "vectors.npy", "wb") as f:
                        np.save(f, np.ascontiguousarray(vectors, dtype=np.float32))
                if bm25 is not None:
                    step = "bm25/"
                    bm25.save(tmp / "bm25")
                if index is not None:
                    step = "index/"
                    index.save(tmp / "index")
                graph_record = None
                if graph is not None and vectors is not None:
                    step = GRAPH_FILE
                    graph_record = graph.save_graph(tmp / GRAPH_FILE)
                step = "syncing the files"
                files = _seal(tmp)
                if graph_record is not None:  # a cache of the vectors: checked when loaded, never a damaged version
                    graph_record = {**graph_record, **files.pop(GRAPH_FILE), "file": GRAPH_FILE,
                                    "vectors_blake2b": files["vectors.npy"]["blake2b"]}
                step = "the engine's index"
                engine_info = dict(engine(vid)) if engine is not None else None
                manifest = {
                    "id": vid, "ragtune": __version__, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "config": config.to_dict(), "config_hash": config.key,
                    "corpus": {"fingerprint": corpus.fingerprint, "kind": corpus.kind, "root": corpus.root,
                               "documents": len(corpus)},
                    "documents": {d.id: doc_hash(d) for d in corpus},
                    "embedding": dict(embedding) if embedding else None,
                    "chunks": len(chunks), "parents": len(parents), "build_s": build_s,
                    "parent_version": parent_version, "stats": dict(stats or {}), "files": files,
                }
                if engine_info is not None:
                    manifest["engine"] = engine_info
                if graph_record is not None:
                    manifest["ann_graph"] = graph_record
                step = "manifest.json"
                _write_json(tmp / "manifest.json", manifest)  # last: a folder without it is never a version
                fsync_dir(tmp)
                step = "publishing the version"
                os.rename(tmp, self.versions_dir / vid)
            except OSError as e:
                shutil.rmtree(tmp, ignore_errors=True)
                code = errno.errorcode.get(e.errno or 0, "OSError")
                raise StoreError(
                    f"building {vid} failed while writing {step}: {e.strerror or e} ({code}). Nothing was published "
                    f"and the partial build was removed: {self._current_or_none() or 'no version'} is still current. "
                    f"{_fix_hint(e, self.root)}") from e
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            fsync_dir(self.versions_dir)
            return self.get(vid)


def _lock_timeout() -> float:
    text = os.environ.get("RAGTUNE_LOCK_TIMEOUT", "").strip()
    if not text:
        return DEFAULT_LOCK_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ConfigError(f"RAGTUNE_LOCK_TIMEOUT={text[:20]!r}: expected a number of seconds, 0 or more")
    return value


def _command_name() -> str:
    """What this process is, for the lock file: the program and its subcommands, never its options (which can
    hold credentials)."""
    argv = sys.argv or ["python"]
    prog = os.path.basename(argv[0])
    if prog == "__main__.py":  # python -m ragtune
        prog = f"python -m {os.path.basename(os.path.dirname(argv[0]))}"
    elif prog in ("", "-c"):
        prog = "python -c"
    words = [prog]
    for a in argv[1:4]:
        if a.startswith("-") or not re.fullmatch(r"[A-Za-z][\w.-]{0,30}", a):
            break
        words.append(a)
    return " ".join(words)


def _holder_record() -> dict[str, Any]:
    return {"pid": os.getpid(), "host": socket.gethostname(), "command": _command_name(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "started_unix": round(time.time(), 3)}


def _lock_holder(path: Path) -> dict[str, Any]:
    """What the lock file says about its holder ({} when it says nothing usable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            data = json.loads(os.read(fd, 4096).decode("utf-8")) if stat.S_ISREG(os.fstat(fd).st_mode) else None
        finally:
            os.close(fd)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or not isinstance(data.get("pid"), int) or data["pid"] <= 0:
        return {}
    return data


def _process_state(pid: int, started_unix: Any) -> str:
    """'running', 'stopped', 'gone' (no such process, or the pid was reused after the holder took the lock) or
    'unknown', for a process of this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "gone"
    except PermissionError:
        pass
    except OSError:
        return "unknown"
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        state, start_ticks = fields[0], int(fields[19])
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        if isinstance(started_unix, (int, float)) and boot + start_ticks / os.sysconf("SC_CLK_TCK") > started_unix + 2:
            return "gone"  # that pid now belongs to a process started after the lock was taken
        if state in ("Z", "X"):
            return "gone"  # exited, not yet reaped
        return "stopped" if state in ("T", "t") else "running"
    except (OSError, ValueError, IndexError, StopIteration):
        return "running"


def _describe_holder(h: Mapping[str, Any]) -> str:
    if not h:
        return "another process (it did not record who it is)"
    pid, host = h["pid"], str(h.get("host", "?"))[:64]
    since = ""
    if isinstance(h.get("started_unix"), (int, float)):
        since = f", since {h.get('started', '?')}, {max(0.0, time.time() - h['started_unix']):.0f} s ago"
    where = "" if host == socket.gethostname() else f" on host {host}"
    state = {"stopped": ", stopped", "gone": ", no longer running"}.get(_holder_state(h), "")
    return f"pid {pid}{where} ({str(h.get('command', '?'))[:80]}{since}{state})"


def _holder_state(h: Mapping[str, Any]) -> str:
    if not h or str(h.get("host")) != socket.gethostname():
        return "unknown"
    return _process_state(h["pid"], h.get("started_unix"))


def _holder_advice(h: Mapping[str, Any], path: Path) -> str:
    state = _holder_state(h)
    released = "the lock is released when the process holding it exits (deleting the lock file does not release it)"
    if state == "stopped":
        return (f"It is stopped (Ctrl-Z or SIGSTOP): resume it with `kill -CONT {h['pid']}` (or `fg` in its shell) or "
                f"end it with `kill -9 {h['pid']}`; {released}")
    if state == "gone":
        return (f"It is a stale lock: pid {h['pid']} is no longer running, but a process it started still holds the "
                f"lock open; find it with `fuser -v {path}` (or `lsof {path}`) and end it; {released}")
    if h and str(h.get("host")) != socket.gethostname():
        return f"Check on host {h.get('host')} whether pid {h['pid']} is still working; {released}"
    who = f"pid {h['pid']}" if h else f"the process (`fuser -v {path}`)"
    return f"Wait for it to finish, or end {who} if it is stuck; {released}"


def _fix_hint(e: OSError, root: Path) -> str:
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"Free disk space (or raise the quota) where {root} lives, then run the command again."
    return f"Check that {root} is writable, then run the command again."
