"""A versioned index store: a folder of plain files, no pickle.

Layout::

    STORE/
      CURRENT                 the promoted version id (replaced atomically)
      history.json            promoted versions, oldest first (rollback walks back)
      versions/v0007/         one immutable, complete version
        manifest.json         ragtune version, config + hash, corpus fingerprint, per-document hashes,
                              embedding model, weights key and dimension, chunk count, build time
        documents.jsonl       the documents (text, title, metadata): anchors and snippets come from here
        chunks.jsonl          the chunks (spans, anchors, heading paths, embed text)
        parents.jsonl         small-to-big parents (when used)
        vectors.npy           float32 chunk vectors (dense and hybrid)
        bm25/                 the BM25 index as bm25s writes it (.npy arrays, JSON vocabularies; bm25 and hybrid)
      building/               versions being written; a killed build leaves debris here, never in versions/

A version appears in ``versions/`` only by an atomic rename of a complete
folder, after every file is written and synced. Readers resolve ``CURRENT``
once and then read an immutable folder, so a promote or rollback never
changes what an in-flight reader sees.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..config import Config, check_choice
from ..corpus.corpus import Corpus
from ..errors import ConfigError, RagtuneError
from ..types import Chunk, Document, Section

__all__ = ["IndexConfig", "IndexStore", "StoreError", "VersionInfo", "doc_hash"]


class StoreError(RagtuneError, ValueError):
    """The store is missing, a version is unknown, or an operation would mix incompatible indexes."""


@dataclass(frozen=True)
class IndexConfig(Config):
    """What a version is built with: chunking, retrieval and the embedding model."""

    chunker: str = "auto"
    prefix: bool | None = None
    chunker_options: Mapping[str, Any] = field(default_factory=dict)
    retriever: str = "bm25"
    retriever_options: Mapping[str, Any] = field(default_factory=dict)
    embedder: str = "minilm"

    def __post_init__(self) -> None:
        check_choice("IndexConfig", "retriever", self.retriever, ("bm25", "dense", "hybrid"))

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["chunker_options"] = dict(sorted(self.chunker_options.items()))
        d["retriever_options"] = dict(sorted(self.retriever_options.items()))
        if self.retriever == "bm25" and self.chunker != "semantic":
            d["embedder"] = None
        return d

    @classmethod
    def from_flags(cls, flags: Mapping[str, Any]) -> "IndexConfig":
        """From ``ragtune eval`` flag names (a config file or CLI flags), validated like a sweep grid entry."""
        from ..sweep.grid import RunSpec

        spec = RunSpec.from_flags(flags)
        if spec.rerank or spec.filter:
            raise ConfigError("an index config holds chunking and retrieval only; rerank and filter apply at query time")
        spec.validate()
        ropts = dict(spec.retriever_options)
        if "fusion_depth" in ropts:
            ropts["depth"] = ropts.pop("fusion_depth")
        if isinstance(ropts.get("weights"), tuple):
            ropts["weights"] = list(ropts["weights"])
        return cls(chunker=spec.chunker, prefix=spec.prefix, chunker_options=dict(spec.chunker_options),
                   retriever=spec.retriever, retriever_options=ropts, embedder=spec.embedder)

    @property
    def uses_vectors(self) -> bool:
        return self.retriever in ("dense", "hybrid")


@dataclass(frozen=True)
class VersionInfo:
    id: str
    path: Path
    manifest: Mapping[str, Any]

    @property
    def created(self) -> str:
        return self.manifest.get("created", "")


def doc_hash(doc: Document) -> str:
    h = hashlib.sha256()
    for part in (doc.id, doc.title, doc.text, json.dumps(dict(doc.metadata), sort_keys=True, default=str)):
        b = part.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def _write_json(path: Path, data: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1, default=str)
        f.flush()
        os.fsync(f.fileno())


def _write_jsonl(path: Path, rows) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _replace_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _doc_record(d: Document) -> dict[str, Any]:
    return {"id": d.id, "title": d.title, "text": d.text, "metadata": dict(d.metadata), "source": d.source,
            "text_offset": d.text_offset,
            "sections": [{"id": s.id, "title": s.title, "level": s.level, "heading_path": list(s.heading_path),
                          "parent": s.parent, "start": s.start, "end": s.end, "own_end": s.own_end} for s in d.sections]}


def _doc_from_record(r: Mapping[str, Any]) -> Document:
    sections = tuple(Section(doc_id=r["id"], id=s["id"], title=s["title"], level=s["level"],
                             heading_path=tuple(s["heading_path"]), parent=s["parent"], start=s["start"], end=s["end"],
                             own_end=s["own_end"]) for s in r.get("sections", ()))
    return Document(id=r["id"], title=r["title"], text=r["text"], metadata=r.get("metadata", {}), sections=sections,
                    source=r.get("source"), text_offset=r.get("text_offset", 0))


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


class IndexStore:
    """Versions of one index in a folder; see the module docstring for the layout."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self.versions_dir = self.root / "versions"
        self.building_dir = self.root / "building"

    # --- reading ---------------------------------------------------------------------------
    def exists(self) -> bool:
        return self.versions_dir.is_dir()

    def _require(self) -> None:
        if not self.exists():
            raise StoreError(f"{self.root} is not an index store; create one with `ragtune index build --store {self.root}`")

    def list(self) -> list[VersionInfo]:
        """Complete versions, oldest first (a folder without a readable manifest is not a version)."""
        if not self.versions_dir.is_dir():
            return []
        out = []
        for p in sorted(self.versions_dir.iterdir(), key=lambda p: (len(p.name), p.name)):  # v9999 < v10000
            try:
                manifest = json.loads((p / "manifest.json").read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                continue
            out.append(VersionInfo(p.name, p, manifest))
        return out

    def get(self, version: str | None = None) -> VersionInfo:
        """A version by id, or the current one."""
        self._require()
        vid = version or self.current_id()
        if vid is None:
            raise StoreError(f"{self.root} has no current version; promote one with `ragtune index promote V`")
        for v in self.list():
            if v.id == vid:
                return v
        have = ", ".join(v.id for v in self.list()) or "none"
        raise StoreError(f"no version {vid!r} in {self.root}; versions: {have}")

    def current_id(self) -> str | None:
        try:
            vid = (self.root / "CURRENT").read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        return vid or None

    def history(self) -> list[str]:
        try:
            return list(json.loads((self.root / "history.json").read_text(encoding="utf-8")))
        except (FileNotFoundError, json.JSONDecodeError):
            return []

    def documents(self, version: str | None = None) -> list[Document]:
        v = self.get(version)
        return [_doc_from_record(r) for r in _read_jsonl(v.path / "documents.jsonl")]

    def corpus(self, version: str | None = None) -> Corpus:
        v = self.get(version)
        return Corpus(self.documents(v.id), kind=v.manifest["corpus"]["kind"], root=f"{self.root}@{v.id}")

    def chunks(self, version: str | None = None) -> tuple[list[Chunk], list[Chunk]]:
        v = self.get(version)
        return ([Chunk.from_dict(r) for r in _read_jsonl(v.path / "chunks.jsonl")],
                [Chunk.from_dict(r) for r in _read_jsonl(v.path / "parents.jsonl")])

    def vectors(self, version: str | None = None) -> np.ndarray | None:
        v = self.get(version)
        p = v.path / "vectors.npy"
        return np.load(p, mmap_mode="r") if p.exists() else None

    # --- pointer -----------------------------------------------------------------------------
    def promote(self, version: str) -> VersionInfo:
        """Make ``version`` current (atomic: readers see the old or the new pointer, never half)."""
        v = self.get(version)  # also refuses a folder that is not a store
        lock = self._lock()
        try:
            hist = [h for h in self.history() if h != v.id] + [v.id]
            _replace_atomic(self.root / "history.json", json.dumps(hist))
            _replace_atomic(self.root / "CURRENT", v.id + "\n")
        finally:
            lock.close()
        return v

    def rollback(self) -> VersionInfo:
        """Back to the version promoted before the current one."""
        self._require()
        lock = self._lock()
        try:
            return self._rollback_locked()
        finally:
            lock.close()

    def _rollback_locked(self) -> VersionInfo:
        hist = self.history()
        cur = self.current_id()
        if cur in hist:
            hist = hist[: hist.index(cur)]
        existing = {v.id for v in self.list()}
        previous = [h for h in hist if h in existing]
        if not previous:
            raise StoreError(f"nothing to roll back to: {cur} is the first promoted version")
        target = previous[-1]
        _replace_atomic(self.root / "CURRENT", target + "\n")
        _replace_atomic(self.root / "history.json", json.dumps(previous))
        return self.get(target)

    def gc(self, keep: int) -> list[str]:
        """Delete versions beyond the ``keep`` newest, never the current one or the rollback target."""
        if keep < 1:
            raise ConfigError("gc --keep must be at least 1")
        self._require()
        lock = self._lock()  # never while a build is writing
        try:
            return self._gc_locked(keep)
        finally:
            lock.close()

    def _gc_locked(self, keep: int) -> list[str]:
        versions = self.list()
        protect = {self.current_id()} | set(self.history()[-2:])
        newest = {v.id for v in versions[-keep:]}
        removed = []
        for v in versions:
            if v.id not in newest and v.id not in protect:
                shutil.rmtree(v.path)
                removed.append(v.id)
        self.clean_debris()
        return removed

    def clean_debris(self) -> list[str]:
        """Remove what killed builds left in building/ (no process may be writing there:
        builds of one store are serialised by a lock)."""
        if not self.building_dir.is_dir():
            return []
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
        nums = [int(p.name[1:]) for p in self.versions_dir.iterdir() if p.name[:1] == "v" and p.name[1:].isdigit()] \
            if self.versions_dir.is_dir() else []
        return f"v{(max(nums) + 1) if nums else 1:04d}"

    def _lock(self):
        import fcntl

        self.building_dir.mkdir(parents=True, exist_ok=True)
        fh = open(self.building_dir / ".lock", "w")
        fcntl.flock(fh, fcntl.LOCK_EX)
        return fh

    def write_version(self, *, config: IndexConfig, corpus: Corpus, chunks: list[Chunk], parents: list[Chunk],
                      vectors: np.ndarray | None, embedding: Mapping[str, Any] | None, build_s: float,
                      parent_version: str | None = None, stats: Mapping[str, Any] | None = None,
                      bm25=None) -> VersionInfo:
        """Write a complete version under building/, then rename it into versions/ in one step."""
        self.versions_dir.mkdir(parents=True, exist_ok=True)
        lock = self._lock()
        try:
            self.clean_debris()
            vid = self._next_id()
            tmp = self.building_dir / f"{vid}.{os.getpid()}.{int(time.time() * 1000)}"
            tmp.mkdir(parents=True)
            _write_jsonl(tmp / "documents.jsonl", (_doc_record(d) for d in corpus))
            _write_jsonl(tmp / "chunks.jsonl", (c.to_dict() for c in chunks))
            if parents:
                _write_jsonl(tmp / "parents.jsonl", (c.to_dict() for c in parents))
            if vectors is not None:
                with open(tmp / "vectors.npy", "wb") as f:
                    np.save(f, np.ascontiguousarray(vectors, dtype=np.float32))
                    f.flush()
                    os.fsync(f.fileno())
            if bm25 is not None:
                bm25.save(tmp / "bm25")
            manifest = {
                "id": vid, "ragtune": __version__, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "config": config.to_dict(), "config_hash": config.config_hash(),
                "corpus": {"fingerprint": corpus.fingerprint, "kind": corpus.kind, "root": corpus.root,
                           "documents": len(corpus)},
                "documents": {d.id: doc_hash(d) for d in corpus},
                "embedding": dict(embedding) if embedding else None,
                "chunks": len(chunks), "parents": len(parents), "build_s": build_s, "parent_version": parent_version,
                "stats": dict(stats or {}),
            }
            _write_json(tmp / "manifest.json", manifest)  # last: a folder without it is never a version
            _fsync_dir(tmp)
            os.rename(tmp, self.versions_dir / vid)
            _fsync_dir(self.versions_dir)
            return self.get(vid)
        finally:
            lock.close()
