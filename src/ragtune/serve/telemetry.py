"""Answer telemetry in SQLite: what was asked, what was retrieved, and whether it was found.

Logging must never cost an answer. So:

- the file uses SQLite's rollback journal, not WAL, and no memory map: WAL maps
  the ``-shm`` file into memory, and a fault on a mapped page (a truncated or
  unusable ``-shm``) is a SIGBUS that kills the process. A log left in WAL mode
  by an older version is converted when it is opened (in exclusive locking
  mode, which keeps the WAL index in heap memory rather than in ``-shm``);
- :class:`TelemetryWriter` (the server's) takes rows into a bounded queue and
  writes them from one thread with a short busy timeout; a full queue drops
  the row and counts it, a failed write counts it, and both are reported on
  standard error and by :meth:`TelemetryWriter.stats`;
- :func:`log_answer` (the command line's) turns any failure into a warning.

Several processes may write at once (a busy timeout; each batch is one
``BEGIN IMMEDIATE`` transaction). API keys are never logged: only the fields
below are stored.
"""

from __future__ import annotations

import json
import os
import queue
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from ..errors import ConfigError, TelemetryBusyError, TelemetryError

__all__ = ["TelemetryLog", "TelemetryWriter", "TelemetryError", "TelemetryBusyError", "log_answer", "answer_log_fields",
           "make_row", "parse_since", "check_log_path", "not_found_share"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  ts REAL NOT NULL,
  query TEXT NOT NULL,
  version TEXT,
  filters TEXT,
  outcome TEXT NOT NULL,
  reason TEXT,
  retrieved TEXT NOT NULL,
  latency_ms REAL,
  source TEXT
);
CREATE INDEX IF NOT EXISTS answers_ts ON answers (ts);
CREATE INDEX IF NOT EXISTS answers_outcome ON answers (outcome);
"""
_COLUMNS = ("ts", "query", "version", "filters", "outcome", "reason", "retrieved", "latency_ms", "source")
_INSERT = f"INSERT INTO answers ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"


def _is_busy(e: BaseException) -> bool:
    text = str(e).lower()
    return "locked" in text or "busy" in text


def _wrap(path: Path, e: BaseException, doing: str) -> TelemetryError:
    cls = TelemetryBusyError if _is_busy(e) else TelemetryError
    hint = {True: "another process holds a lock on it; it is retried"}.get(_is_busy(e), "")
    if not hint:
        text = str(e).lower()
        if "full" in text or "no space" in text:
            hint = "the disk is full; free space"
        elif "readonly" in text or "read-only" in text or "permission" in text or isinstance(e, PermissionError):
            hint = "the file or its folder is not writable; fix the permissions or choose another --log"
        elif "not a database" in text or "malformed" in text or "corrupt" in text:
            hint = "the file is not a valid SQLite log; move it away (a new one is created)"
        else:
            hint = "check the file and its folder"
    return cls(f"telemetry log {str(path)!r}: cannot {doing}: {type(e).__name__}: {e}; {hint}")


def parse_since(text: str | None) -> float | None:
    """``7d``, ``12h``, ``30m`` -> a unix time that far back (None: no limit)."""
    if not text:
        return None
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    try:
        return time.time() - float(text[:-1]) * units[text[-1]]
    except (KeyError, ValueError):
        from ..errors import ConfigError

        raise ConfigError(f"--since {text!r}: use a number and a unit, like 7d, 12h or 30m") from None


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "FIFO (named pipe)"), (stat.S_ISDIR, "folder"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "special file"


def _not_a_file(path: str | os.PathLike[str], mode: int) -> TelemetryError:
    return TelemetryError(f"telemetry log {str(path)!r}: cannot open: it is a {_kind(mode)}, not a regular file; a log "
                          "is a SQLite file: give the path of a file (it is created if missing) with --log, or --no-log")


def check_log_path(path: str | os.PathLike[str]) -> None:
    """:class:`TelemetryError` when ``path`` exists and is not a regular file (a FIFO, a device, a folder): opening
    a FIFO would wait for a writer forever. Follows symbolic links; a missing file is fine (it is created)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise _wrap(Path(path), e, "read") from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_a_file(path, st.st_mode)


def _header(path: Path) -> bytes | None:
    """The first 100 bytes of an existing, non-empty file (None otherwise); :class:`TelemetryError` for a path that
    is not a regular file. Opened without blocking, so a FIFO swapped in after the check cannot hang it."""
    check_log_path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _not_a_file(path, mode)
        head = os.read(fd, 100)
    finally:
        os.close(fd)
    return head or None


class TelemetryLog:
    """A telemetry file: ``log`` appends one row, ``rows``/``count`` read.

    Opening raises :class:`TelemetryError` (``TelemetryBusyError`` for a lock held
    beyond ``busy_timeout`` seconds) with the cause and what to do; nothing here
    maps a file into memory.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0, readonly: bool = False):
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        try:
            head = _header(self.path)
        except TelemetryError:
            raise
        except OSError as e:
            raise _wrap(self.path, e, "read") from None
        if head is not None and not head.startswith(b"SQLite format 3\x00"):
            raise TelemetryError(f"telemetry log {str(self.path)!r}: cannot open: the file is not a SQLite database; "
                                 "move it away (a new one is created) or choose another --log")
        try:
            if readonly:
                uri = "file:" + self.path.resolve().as_posix().replace("?", "%3f").replace("#", "%23") + "?mode=ro"
                self._db = sqlite3.connect(uri, uri=True, timeout=busy_timeout, check_same_thread=False,
                                           isolation_level=None)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(str(self.path), timeout=busy_timeout, check_same_thread=False,
                                           isolation_level=None)
        except (sqlite3.Error, OSError) as e:
            raise _wrap(self.path, e, "open") from None
        try:
            self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
            self._db.execute("PRAGMA mmap_size=0")
            wal = head is not None and len(head) > 19 and head[18] == 2  # file format 2: WAL
            if wal and not readonly:
                # exclusive locking keeps the WAL index in heap memory, so converting never maps -shm
                self._db.execute("PRAGMA locking_mode=EXCLUSIVE")
                mode = self._db.execute("PRAGMA journal_mode=DELETE").fetchone()[0]
                self._db.execute("PRAGMA locking_mode=NORMAL")
                self._db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # releases the exclusive lock
                if str(mode).lower() != "delete":
                    raise sqlite3.OperationalError("database is locked (in WAL mode by another process)")
            if not readonly:
                self._db.execute("PRAGMA journal_mode=DELETE")
                self._db.executescript(_SCHEMA)
            else:
                self._db.execute("SELECT COUNT(*) FROM answers").fetchone()
        except (sqlite3.Error, OSError) as e:
            self._db.close()
            raise _wrap(self.path, e, "open") from None

    def log(self, *, query: str, outcome: str, retrieved: list[dict[str, Any]], version: str | None = None,
            filters: str | None = None, reason: str | None = None, latency_ms: float | None = None,
            source: str = "cli", ts: float | None = None) -> None:
        """Append one row now (raises :class:`TelemetryError` when it cannot)."""
        self.write_rows([make_row(query=query, outcome=outcome, retrieved=retrieved, version=version,
                                  filters=filters, reason=reason, latency_ms=latency_ms, source=source, ts=ts)])

    def write_rows(self, rows: list[tuple]) -> None:
        """Append rows made by :func:`make_row` in one transaction (all or none)."""
        deadline = time.monotonic() + self.busy_timeout
        attempt = 0
        while True:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany(_INSERT, rows)
                    self._db.execute("COMMIT")
                except BaseException:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise
                return
            except (sqlite3.Error, OSError) as e:
                # sqlite may answer "locked" at once (not through the busy handler): retry until the deadline
                if not _is_busy(e) or time.monotonic() >= deadline:
                    raise _wrap(self.path, e, "write") from None
                attempt += 1
                time.sleep(min(0.005 * attempt, 0.1, max(0.0, deadline - time.monotonic())))

    def rows(self, *, since: float | None = None, outcome: str | None = None,
             page: int = 1000) -> Iterator[dict[str, Any]]:
        """The rows, oldest first, read ``page`` at a time: between pages no lock is held, so writers proceed."""
        q = "SELECT id, ts, query, version, filters, outcome, reason, retrieved, latency_ms, source FROM answers WHERE id > ?"
        args: list[Any] = []
        if since is not None:
            q += " AND ts >= ?"
            args.append(since)
        if outcome is not None:
            q += " AND outcome = ?"
            args.append(outcome)
        keys = ("id", "ts", "query", "version", "filters", "outcome", "reason", "retrieved", "latency_ms", "source")
        last = -1
        while True:
            batch = self._db.execute(q + " ORDER BY id LIMIT ?", [last, *args, page]).fetchall()
            for row in batch:
                d = dict(zip(keys, row))
                d["retrieved"] = json.loads(d["retrieved"])
                yield d
            if len(batch) < page:
                return
            last = batch[-1][0]

    def count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def outcomes(self, *, since: float | None = None) -> dict[str, int]:
        """How many answers had each outcome (``answered``, ``not_found``), ``since`` a time when given."""
        q, args = "SELECT outcome, COUNT(*) FROM answers", []
        if since is not None:
            q, args = q + " WHERE ts >= ?", [since]
        return dict(self._db.execute(q + " GROUP BY outcome", args).fetchall())

    def close(self) -> None:
        self._db.close()


def make_row(*, query: str, outcome: str, retrieved: list[dict[str, Any]], version: str | None = None,
             filters: str | None = None, reason: str | None = None, latency_ms: float | None = None,
             source: str = "cli", ts: float | None = None) -> tuple:
    """One row, in column order; ``retrieved`` keeps only each hit's anchor and score."""
    hits = [{"anchor": r.get("anchor"), "score": r.get("score")} for r in retrieved]
    return (time.time() if ts is None else ts, query, version, filters, outcome, reason, json.dumps(hits),
            latency_ms, source)


def answer_log_fields(answer: Any, ranking: Any, filters: Any = None, version: str | None = None) -> dict[str, Any]:
    """What :func:`log_answer` records of an answer and the ranking it came from."""
    return {"query": ranking.query, "outcome": answer.outcome, "reason": answer.reason, "filters": filters,
            "version": version, "latency_ms": answer.latency_s * 1000,
            "retrieved": [{"anchor": h.chunk.anchor, "score": h.score} for h in ranking.hits]}


def log_answer(path: str | os.PathLike[str], *, stderr: TextIO | None = None, busy_timeout: float = 5.0,
               **fields: Any) -> bool:
    """Append one answer to the log at ``path``; on failure print one warning line and return False.

    For the command line, which prints the answer first and logs after: a log that
    cannot be opened or written (read-only, full disk, corrupt, locked) never turns
    an answer into an error.
    """
    try:
        log = TelemetryLog(path, busy_timeout=busy_timeout)
        try:
            log.log(**fields)
        finally:
            log.close()
        return True
    except TelemetryError as e:
        print(f"warning: answer not logged: {e}", file=stderr or sys.stderr)
        return False


class TelemetryWriter:
    """The server's log writer: a bounded queue drained by one thread; never blocks a request.

    ``submit`` returns at once: it enqueues the row, or counts it as ``dropped``
    when the queue is full or logging is disabled. The thread writes whatever is
    queued in one transaction. A lock held on the file (a retention ``DELETE``,
    another process) keeps rows queued and retried; any other failure (full disk,
    read-only or corrupt file) counts the batch as ``failed``. Problems and
    recoveries are printed on ``stderr``, at most one line per ``report_every``
    seconds for the same problem. A log that cannot be opened at all (corrupt,
    read-only, unwritable folder) disables logging with a warning; a locked one is
    opened by the thread once the lock goes.
    """

    def __init__(self, path: str | os.PathLike[str] | None, *, queue_size: int = 2000, busy_timeout: float = 0.25,
                 batch: int = 256, report_every: float = 30.0, stderr: TextIO | None = None, opener=None):
        self.path = Path(path) if path is not None else None
        self.busy_timeout = busy_timeout
        self.batch = batch
        self.report_every = report_every
        self._stderr = stderr
        self._open = opener or (lambda p: TelemetryLog(p, busy_timeout=busy_timeout))
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._log: Any = None
        self.written = self.failed = self.dropped = 0
        self._inflight = 0  # rows taken from the queue, not yet written or failed
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        self._healthy = True
        self._reported: dict[str, float] = {}
        self.disabled: str | None = None if path is not None else "logging is off"
        if path is not None:
            try:
                self._log = self._open(self.path)
            except TelemetryBusyError as e:  # a lock, not a broken file: the thread opens it later
                self._problem(str(e))
            except TelemetryError as e:
                self.disabled = str(e)
                self._say(f"warning: telemetry disabled: {e}; answers are served but not logged")
        self._thread: threading.Thread | None = None
        if self.disabled is None:
            self._thread = threading.Thread(target=self._run, name="ragtune-telemetry", daemon=True)
            self._thread.start()

    # --- request side ---------------------------------------------------------------------------
    def submit(self, **fields: Any) -> bool:
        """Queue one answer; False (and counted as dropped) when it cannot be queued."""
        if self.path is None:  # logging is off by choice: nothing is lost
            return False
        if self.disabled is not None or self._stop.is_set():
            with self._lock:
                self.dropped += 1
            return False
        try:
            self._queue.put_nowait(make_row(**fields))
            return True
        except queue.Full:
            with self._lock:
                self.dropped += 1
                first = self.dropped == 1
            self._problem(f"telemetry queue full ({self._queue.maxsize} rows waiting): answers are being dropped "
                          "from the log", key="full", force=first)
            return False

    def stats(self) -> dict[str, Any]:
        """Counters and state, as /health and /versions report them."""
        with self._lock:
            return {"enabled": self.disabled is None, "path": str(self.path) if self.path else None,
                    "written": self.written, "failed": self.failed, "dropped": self.dropped,
                    "queued": self._queue.qsize() + self._inflight, "ok": self.ok, "last_error": self.disabled or self.last_error}

    @property
    def ok(self) -> bool:
        """Logging is on, the last write attempt succeeded and the queue is not full."""
        return self.disabled is None and self._healthy and not self._queue.full()

    # --- writer thread --------------------------------------------------------------------------
    def _run(self) -> None:
        pending: list[tuple] = []
        delay = 0.0
        while True:
            if not pending:
                try:
                    row = self._queue.get(timeout=0.1)
                except queue.Empty:
                    if self._stop.is_set():
                        return
                    continue
                with self._lock:
                    pending.append(row)
                    self._inflight = len(pending)
            while len(pending) < self.batch:
                try:
                    row = self._queue.get_nowait()
                except queue.Empty:
                    break
                with self._lock:
                    pending.append(row)
                    self._inflight = len(pending)
            if delay and self._stop.wait(delay):
                with self._lock:
                    self.dropped += len(pending)
                    self._inflight = 0
                self._done(len(pending))
                return
            try:
                if self._log is None:
                    self._log = self._open(self.path)
                self._log.write_rows(pending)
            except TelemetryBusyError as e:  # keep the rows and retry: a lock is transient
                self._problem(str(e), key="busy")
                delay = min(max(delay * 2, 0.05), 1.0)
                continue
            except Exception as e:  # full disk, read-only, corrupt: count, report, move on
                with self._lock:
                    self.failed += len(pending)
                    self._inflight = 0
                self._done(len(pending))
                self._problem(str(e) if isinstance(e, TelemetryError) else f"{type(e).__name__}: {e}",
                              key=type(e).__name__ + str(e)[:80], rows=len(pending))
                pending = []
                delay = min(max(delay * 2, 0.05), 1.0)
                continue
            with self._lock:
                self.written += len(pending)
                self._inflight = 0
                recovered = not self._healthy
                self._healthy = True
            self._done(len(pending))
            pending = []
            delay = 0.0
            if recovered:
                self._reported.clear()
                self._say(f"telemetry: writing to {self.path} again ({self.failed} rows failed, "
                          f"{self.dropped} dropped so far)")

    def _done(self, n: int) -> None:
        for _ in range(n):
            self._queue.task_done()

    def _problem(self, message: str, *, key: str = "", force: bool = False, rows: int = 0) -> None:
        now = time.monotonic()
        with self._lock:
            self._healthy = False
            self.last_error, self.last_error_at = message, time.time()
            last = self._reported.get(key)
            if not force and last is not None and now - last < self.report_every:
                return
            self._reported[key] = now
            counts = f"{self.failed} rows failed, {self.dropped} dropped so far"
        lost = f"{rows} rows not logged; " if rows else ""
        self._say(f"warning: telemetry: {lost}{message} ({counts}); answers are still served")

    def _say(self, line: str) -> None:
        try:
            print(line, file=self._stderr or sys.stderr, flush=True)
        except Exception:  # a closed stderr must not stop the writer
            pass

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued row is written or failed (True), or ``timeout`` passes (False)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._queue.mutex:
                done = self._queue.unfinished_tasks == 0
            if done or self._thread is None or time.monotonic() >= deadline:
                return done
            time.sleep(0.01)

    def close(self, timeout: float = 2.0) -> None:
        """Write what is queued (for up to ``timeout`` seconds), stop, and count the rest as dropped."""
        with self._lock:
            before = self.dropped
        if self._thread is not None:
            self.flush(timeout)
            self._stop.set()
            self._thread.join(timeout=max(0.5, self.busy_timeout * 2))
        left = 0
        while True:
            try:
                self._queue.get_nowait()
                left += 1
            except queue.Empty:
                break
        if self._thread is not None and self._thread.is_alive():  # stuck on a lock: its batch is lost too
            with self._lock:
                left += self._inflight
                self._inflight = 0
        with self._lock:
            self.dropped += left
            lost = self.dropped - before
        if lost:
            self._say(f"warning: telemetry: {lost} queued rows not logged at shutdown")
        if self._log is not None and (self._thread is None or not self._thread.is_alive()):
            try:
                self._log.close()
            except Exception:
                pass


def not_found_share(path: str | os.PathLike[str], *, since: float | None = None) -> dict[str, Any]:
    """The share of a log's answers that came back ``not_found``: the production rate of questions the system
    could not answer, to calibrate the gate for (``calibrate --unanswerable-share-from``). It stands in for the
    share of unanswerable questions: it also counts answerable questions refused and misses unanswerable ones
    answered. Returns ``share``, ``not_found``, ``answers`` and ``log``; a missing log, or one with no answers or
    with only one outcome, gives no share: :class:`~ragtune.errors.ConfigError` saying so."""
    if not os.path.isfile(path):
        raise ConfigError(f"telemetry log {str(path)!r} does not exist (a server writes STORE/telemetry.sqlite "
                          "by default)")
    log = TelemetryLog(path, readonly=True)
    try:
        counts = log.outcomes(since=since)
    finally:
        log.close()
    total, missing = sum(counts.values()), counts.get("not_found", 0)
    if not 0 < missing < total:
        raise ConfigError(f"telemetry log {str(path)!r}: {missing} of {total} answers not found; a share of "
                          "unanswerable questions needs both outcomes in the log: give the share itself instead")
    return {"share": missing / total, "not_found": missing, "answers": total, "log": str(path)}
