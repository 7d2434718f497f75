"""An on-disk embedding cache: the same text is never embedded twice by the same model.

Keyed by (embedder cache key = model id + weights hash, sha256 of the text), or,
for embedders that expose ``input_keys``, of the token ids the model sees after
truncation (two chunks that agree on their first ``max_tokens`` tokens get the
same vector from the model, so they share one entry);
vectors are stored as float32 bytes in SQLite (no pickle), safe for several
processes. The cache also keeps each model's measured speed (texts per second on
this machine), so the next run can say how long its cache misses will take.

The cache is an optimisation and never costs a result: when its file cannot be
opened, read or written (a read-only or full disk, a folder or a non-database
file in its place, a parent path that is a file), it is switched off for the
rest of the process with one warning on stderr naming the file, the cause and
the fix, and every text is embedded as if it were not there (as the telemetry
log degrades, :mod:`ragtune.serve.telemetry`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..paths import default_cache_dir
from ..progress import format_duration, note, progress_iter, status
from .base import Embedder

__all__ = ["EmbeddingCache", "CachedEmbedder", "default_cache_dir"]


_warned: set[str] = set()  # cache files already reported in this process: one warning each
_warned_lock = threading.Lock()


def _hint(e: BaseException, path: Path) -> str:
    text = str(e).lower()
    if "unable to open" in text and path.parent.is_dir() and not os.access(path.parent, os.W_OK):
        text = "read-only"  # sqlite says only that it could not create the file
    if "full" in text or "no space" in text or "quota" in text:
        return "the disk is full: free space"
    if "readonly" in text or "read-only" in text or "permission" in text or isinstance(e, PermissionError):
        return "it or its folder is not writable: fix the permissions or set RAGTUNE_CACHE_DIR to a writable folder"
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return "it is not a valid SQLite cache: move it away (a new one is created)"
    if "locked" in text or "busy" in text:
        return "another process held a lock on it for more than a minute"
    if isinstance(e, (NotADirectoryError, FileExistsError)):
        return "a file stands where its folder should be: move it away or set RAGTUNE_CACHE_DIR"
    return "check that the path is a writable file in a writable folder, or set RAGTUNE_CACHE_DIR"


class EmbeddingCache:
    """The cache file. A failure to open, read or write it switches the cache off for this process (one warning;
    ``disabled`` says why): lookups then find nothing and stores are dropped."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        p = Path(path) if path is not None else default_cache_dir() / "embeddings.sqlite"
        self.path = p
        self.disabled: str | None = None
        self._db: sqlite3.Connection | None = None
        db = None
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(str(p), timeout=60, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT, key TEXT, dim INTEGER, vec BLOB, "
                       "PRIMARY KEY (model, key))")
            db.execute("CREATE TABLE IF NOT EXISTS speeds (model TEXT PRIMARY KEY, texts_per_s REAL)")
            db.commit()
            self._db = db
        except (sqlite3.Error, OSError) as e:
            if db is not None:
                with contextlib.suppress(sqlite3.Error):
                    db.close()
            self._off(e, "open")

    def _off(self, e: BaseException, doing: str) -> None:
        """Switch the cache off for this process, saying so once per file."""
        db, self._db = self._db, None
        if db is not None:
            with contextlib.suppress(sqlite3.Error):
                db.close()
        reason = f"cannot {doing} {self.path}: {type(e).__name__}: {e}"
        self.disabled = reason
        key = os.path.abspath(self.path)
        with _warned_lock:
            if key in _warned:
                return
            _warned.add(key)
        print(f"warning: embedding cache off for this process: {reason}; {_hint(e, self.path)}. Texts are embedded without "
              "the cache (same results, slower)", file=sys.stderr, flush=True)

    @staticmethod
    def text_key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def get_many(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        db = self._db
        if db is None:
            return found
        try:
            for i in range(0, len(keys), 500):
                batch = list(keys[i:i + 500])
                q = f"SELECT key, dim, vec FROM vectors WHERE model = ? AND key IN ({','.join('?' * len(batch))})"
                for key, dim, blob in db.execute(q, [model, *batch]):
                    if not isinstance(blob, bytes) or not isinstance(dim, int) or len(blob) != 4 * dim:
                        continue  # a damaged row: embedded again
                    found[key] = np.frombuffer(blob, dtype=np.float32, count=dim)
        except (sqlite3.Error, OSError) as e:
            self._off(e, "read")
            return {}
        return found

    def put_many(self, model: str, items: dict[str, np.ndarray]) -> None:
        db = self._db
        if db is None:
            return
        rows = [(model, k, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()]
        try:
            with db:
                db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
        except (sqlite3.Error, OSError) as e:
            self._off(e, "write")

    def speed(self, model: str) -> float | None:
        """Texts per second last measured for ``model`` on this machine (None: never measured)."""
        db = self._db
        if db is None:
            return None
        try:
            row = db.execute("SELECT texts_per_s FROM speeds WHERE model = ?", (model,)).fetchone()
        except (sqlite3.Error, OSError) as e:
            self._off(e, "read")
            return None
        try:
            return float(row[0]) if row and row[0] and row[0] > 0 else None
        except (TypeError, ValueError):
            return None

    def put_speed(self, model: str, texts_per_s: float) -> None:
        db = self._db
        if db is None or not texts_per_s > 0:
            return
        try:
            with db:
                db.execute("INSERT OR REPLACE INTO speeds VALUES (?, ?)", (model, float(texts_per_s)))
        except (sqlite3.Error, OSError) as e:
            self._off(e, "write")

    def count(self, model: str | None = None) -> int:
        db = self._db
        if db is None:
            return 0
        try:
            if model is None:
                return db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
            return db.execute("SELECT COUNT(*) FROM vectors WHERE model = ?", (model,)).fetchone()[0]
        except (sqlite3.Error, OSError) as e:
            self._off(e, "read")
            return 0

    def close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            db.close()


class CachedEmbedder:
    """Wraps an embedder: looks texts up in the cache, embeds only the misses.

    ``stats`` counts texts embedded (``misses``) and texts served without embedding
    (``hits``: found in the cache, or repeated within the call).
    """

    def __init__(self, inner: Embedder, cache: EmbeddingCache | None = None, *, batch: int = 256,
                 show_progress: bool = False):
        self.inner = inner
        self.cache = cache if cache is not None else EmbeddingCache()
        self.batch = batch
        self.show_progress = show_progress
        self.stats = {"hits": 0, "misses": 0}
        self._keys: dict[str, str] = {}  # text -> input key, memoised in process (sweeps re-embed the same texts)
        self._queries: dict[str, np.ndarray] | None = None

    def warm_up(self) -> None:
        """Load the wrapped model now, when it loads lazily (``inner.warm_up``)."""
        fn = getattr(self.inner, "warm_up", None)
        if callable(fn):
            fn()

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def max_tokens(self) -> int:
        return self.inner.max_tokens

    @property
    def cache_key(self) -> str:
        return self.inner.cache_key

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Passage vectors: from the cache where present, embedded (and stored) otherwise."""
        input_keys = getattr(self.inner, "input_keys", None)
        if input_keys is not None:  # keyed by what the model sees: texts equal up to truncation share a vector
            model = f"{self.inner.cache_key}|passage|tokens"
            memo = self._keys  # another thread may clear it meanwhile: this call reads its own copy of the keys
            mine = {t: memo.get(t) for t in dict.fromkeys(texts)}
            new = [t for t, k in mine.items() if k is None]
            if new:
                mine.update(zip(new, input_keys(new)))
                if len(memo) > 500_000:
                    memo.clear()
                memo.update((t, mine[t]) for t in new)
            keys = [mine[t] for t in texts]
        else:
            model = f"{self.inner.cache_key}|passage"
            keys = [EmbeddingCache.text_key(t) for t in texts]
        found = self.cache.get_many(model, list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        text_of = dict(zip(keys, texts))
        self.stats["hits"] += len(texts) - len(missing)  # served without embedding (cached or repeated)
        self.stats["misses"] += len(missing)
        missing.sort(key=lambda k: len(text_of[k]))
        if missing:
            self._embed_missing(model, missing, text_of, found)
        if not texts:
            return np.zeros((0, self.inner.dim), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    def _short_name(self) -> str:
        """``all-MiniLM-L6-v2`` for ``sentence-transformers/all-MiniLM-L6-v2@onnx-int8``."""
        return self.inner.model_id.split("@")[0].rstrip("/").rsplit("/", 1)[-1] or self.inner.model_id

    def _embed_missing(self, model: str, missing: list[str], text_of: dict[str, str],
                       found: dict[str, np.ndarray]) -> None:
        """Embed the cache misses in steps, storing each step. With ``show_progress``: the model loads under a
        spinner, one line on stderr announces the work with an estimate (from the speed stored for this model,
        else from timing the first step), and a bar with an ETA follows the rest."""
        # progress granularity; the inner embedder batches on its own. An inner embedder that spreads one call
        # over many workers (ragtune.scale.RayEmbedder) asks for larger steps with ``progress_step``
        step = getattr(self.inner, "progress_step", None) or max(1, min(self.batch, 32))
        done = 0
        seconds = 0.0

        def run(ks: list[str]) -> None:
            nonlocal done, seconds
            t0 = time.perf_counter()
            vecs = self.inner.embed([text_of[k] for k in ks])
            seconds += time.perf_counter() - t0
            done += len(ks)
            new = dict(zip(ks, vecs))
            self.cache.put_many(model, new)
            found.update(new)

        n = len(missing)
        if self.show_progress:
            warm_up = getattr(self.inner, "warm_up", None)
            if warm_up is not None:
                with status(f"loading {self._short_name()}"):
                    warm_up()
            rate = self.cache.speed(model)
            if rate is None:  # time one step of typical (median-length) texts first
                mid = max(0, min(n // 2 - step // 2, n - step))
                missing = missing[mid:mid + step] + missing[:mid] + missing[mid + step:]
                run(missing[:step])
                rate = done / seconds if seconds > 0 else None
            eta = format_duration(n / rate) if rate else "time unknown"
            note(f"embedding {n:,} chunks with {self._short_name()}, {eta} on this machine; cached for later runs")
        rest = missing[done:]
        starts = range(0, len(rest), step)
        for s in progress_iter(starts, f"embedding {n:,} chunks", enabled=self.show_progress, total=len(rest),
                               weights=(min(step, len(rest) - s) for s in starts)):
            run(rest[s:s + step])
        if done >= 8 and seconds > 0:  # too few texts time model start-up more than throughput
            self.cache.put_speed(model, done / seconds)

    def memoize_queries(self, queries: Sequence[str]) -> list[float]:
        """Embed ``queries`` once now and serve them from memory afterwards (a sweep asks the same
        questions of every configuration). Returns the seconds each query took, so the query-embedding
        latency can be reported once instead of being re-measured per configuration."""
        import time

        self._queries = {} if self._queries is None else self._queries
        seconds = []
        for q in dict.fromkeys(queries):
            t0 = time.perf_counter()
            self._queries[q] = self.inner.embed_queries([q])[0]
            seconds.append(time.perf_counter() - t0)
        return seconds

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Queries are not cached on disk: search latency includes embedding them, as in production
        (unless :meth:`memoize_queries` was called, as sweeps do)."""
        if self._queries is not None and all(t in self._queries for t in texts):
            return np.stack([self._queries[t] for t in texts])
        return self.inner.embed_queries(texts)
