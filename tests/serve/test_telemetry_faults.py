"""Fault injection: a telemetry log that is full, read-only, corrupt or locked never costs an answer."""

import io
import os
import sqlite3
import subprocess
import threading
import time

import pytest

from ragtune.serve.telemetry import TelemetryError, TelemetryLog, TelemetryWriter, log_answer, make_row

ROW = {"query": "q", "outcome": "answered", "retrieved": [{"anchor": "a.md", "score": 1.0}], "source": "server"}


class FailingConnection:
    """A sqlite connection whose writes fail with ``message``, as SQLite reports a full disk or a read-only file."""

    def __init__(self, real, message):
        self.real, self.message, self.fail = real, message, True

    def execute(self, sql, *args):
        return self.real.execute(sql, *args)

    def executemany(self, sql, rows):
        if self.fail:
            raise sqlite3.OperationalError(self.message)
        return self.real.executemany(sql, rows)

    @property
    def in_transaction(self):
        return self.real.in_transaction

    def close(self):
        self.real.close()


def failing_opener(message, made):
    def opener(path):
        log = TelemetryLog(path, busy_timeout=0.2)
        log._db = FailingConnection(log._db, message)
        made.append(log)
        return log
    return opener


def wait_for(cond, timeout=10):
    deadline = time.time() + timeout
    while not cond() and time.time() < deadline:
        time.sleep(0.01)
    return cond()


def returns_while_locked(fn):
    """``fn()`` run in a thread that must return while the caller still holds a lock (a hang guard of 60 s)."""
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(60)
    assert out, "it waited for the lock"
    return out[0]


@pytest.mark.parametrize("message", ["database or disk is full", "attempt to write a readonly database",
                                     "disk I/O error"])
def test_failed_writes_are_counted_reported_and_recovered_from(tmp_path, message):
    err, made = io.StringIO(), []
    w = TelemetryWriter(tmp_path / "t.sqlite", opener=failing_opener(message, made), stderr=err, report_every=60)
    for _ in range(5):
        assert w.submit(**ROW)
    assert wait_for(lambda: w.stats()["failed"] == 5)
    stats = w.stats()
    assert stats["written"] == 0 and not stats["ok"] and message in stats["last_error"]
    assert err.getvalue().count("warning: telemetry:") == 1  # reported once, not once per row
    assert message in err.getvalue() and "answers are still served" in err.getvalue()
    made[0]._db.fail = False  # space freed / permissions fixed
    w.submit(**ROW)
    assert w.flush(5) and w.stats()["written"] == 1 and w.stats()["ok"]
    assert "writing to" in err.getvalue() and "again" in err.getvalue()
    w.close()
    assert TelemetryLog(tmp_path / "t.sqlite").count() == 1


def test_a_real_full_disk(tmp_path):
    """A 64 kB tmpfs filled up: SQLite reports a full disk; the writer counts it. Needs root (else skipped)."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here; the wrapper test above covers a full disk")
    try:
        err = io.StringIO()
        w = TelemetryWriter(mnt / "t.sqlite", stderr=err)
        with open(mnt / "filler", "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"x" * 1024)
            except OSError:
                pass
        for _ in range(300):  # more than fits
            w.submit(**{**ROW, "query": "q" * 500})
        assert wait_for(lambda: w.stats()["failed"] > 0 and w.stats()["queued"] == 0)
        assert "full" in w.stats()["last_error"] and "disk is full" in err.getvalue()
        s = w.stats()
        assert s["written"] + s["failed"] + s["dropped"] == 300  # every row accounted for
        w.close()
        err = io.StringIO()
        late = TelemetryWriter(mnt / "new.sqlite", stderr=err)  # a server started on the full disk
        assert not late.stats()["enabled"] and "telemetry disabled" in err.getvalue() and "full" in err.getvalue()
        assert not late.submit(**ROW) and late.stats()["dropped"] == 1
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_corrupt_log_disables_logging_with_a_warning(tmp_path):
    path = tmp_path / "t.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    err = io.StringIO()
    w = TelemetryWriter(path, stderr=err)
    assert "warning: telemetry disabled" in err.getvalue() and "not a SQLite database" in err.getvalue()
    assert not w.submit(**ROW) and w.stats()["dropped"] == 1 and not w.stats()["enabled"]
    w.close()
    assert path.read_bytes().startswith(b"this is not")  # left alone


def test_a_truncated_sqlite_file_is_reported_not_raised(tmp_path):
    good = tmp_path / "good.sqlite"
    TelemetryLog(good).log(**ROW)
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(good.read_bytes()[:100] + b"\xff" * 3000)  # a valid header over garbage pages
    err = io.StringIO()
    w = TelemetryWriter(bad, stderr=err)
    w.submit(**ROW)
    w.flush(5)
    assert not w.stats()["ok"]  # disabled at open, or the write failed: either way reported
    assert "telemetry" in err.getvalue()
    w.close()


def test_an_unwritable_log(tmp_path):
    """A read-only file: by permissions for a normal user; root needs a read-only bind mount (else skipped)."""
    src, ro = tmp_path / "src", tmp_path / "ro"
    src.mkdir()
    ro.mkdir()
    TelemetryLog(src / "t.sqlite").log(**ROW)
    mounted = False
    if os.geteuid() == 0:
        if subprocess.run(["mount", "--bind", "-o", "ro", str(src), str(ro)], capture_output=True).returncode:
            pytest.skip("cannot make a read-only bind mount here; the wrapper test covers read-only writes")
        mounted = True
        target = ro / "t.sqlite"
    else:
        os.chmod(src / "t.sqlite", 0o444)
        os.chmod(src, 0o555)
        target = src / "t.sqlite"
    try:
        with pytest.raises(OSError):  # really unwritable
            open(target, "ab").close()
        err = io.StringIO()
        w = TelemetryWriter(target, stderr=err)
        w.submit(**ROW)
        w.flush(5)
        s = w.stats()
        assert s["written"] == 0 and s["failed"] + s["dropped"] == 1 and "telemetry" in err.getvalue()
        w.close()
        assert TelemetryLog(target, readonly=True).count() == 1  # still readable for gaps and export
        warn = io.StringIO()
        assert log_answer(target, stderr=warn, **ROW) is False and warn.getvalue().startswith("warning: answer not logged")
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(ro)], capture_output=True)
        else:
            os.chmod(src, 0o755)


def test_a_lock_keeps_rows_queued_then_writes_them_all(tmp_path):
    path = tmp_path / "t.sqlite"
    TelemetryLog(path).close()
    holder = sqlite3.connect(str(path), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    err = io.StringIO()
    w = TelemetryWriter(path, stderr=err, queue_size=10)
    # submit never waits for the lock: all 15 return while it is held (this thread holds it, so a submit that
    # waited would never return; the join's 60 s is a hang guard)
    results = returns_while_locked(lambda: [w.submit(**ROW) for _ in range(15)])
    assert wait_for(lambda: "locked" in err.getvalue() and "queue full" in err.getvalue(), 60)
    s = w.stats()
    assert s["written"] == 0 and s["queued"] == 10 and s["dropped"] == 5 and results.count(False) == 5
    assert not w.ok and "locked" in err.getvalue() and "queue full" in err.getvalue()
    holder.execute("COMMIT")
    assert w.flush(10)
    assert w.stats()["written"] == 10 and w.ok
    w.close()
    assert TelemetryLog(path).count() == 10


def test_a_lock_at_start_does_not_disable_logging(tmp_path):
    path = tmp_path / "t.sqlite"
    TelemetryLog(path).close()
    holder = sqlite3.connect(str(path), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    w = returns_while_locked(lambda: TelemetryWriter(path, stderr=io.StringIO()))  # start waits for no lock
    assert w.stats()["enabled"]
    w.submit(**ROW)
    holder.execute("COMMIT")
    assert w.flush(10) and w.stats()["written"] == 1
    w.close()


def test_no_wal_no_shm_and_an_old_wal_log_is_converted(tmp_path):
    path = tmp_path / "t.sqlite"
    log = TelemetryLog(path)
    log.log(**ROW)
    assert log._db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert not (tmp_path / "t.sqlite-shm").exists()  # nothing is memory-mapped, so nothing can SIGBUS
    log.close()
    old = sqlite3.connect(str(path), isolation_level=None)  # as an older ragtune left it: WAL mode
    old.execute("PRAGMA journal_mode=WAL")
    old.close()
    os.mkdir(str(path) + "-shm")  # and an unusable -shm next to it
    log = TelemetryLog(path)
    assert log._db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    log.log(**ROW)
    assert log.count() == 2


def test_close_counts_what_it_could_not_write(tmp_path):
    path = tmp_path / "t.sqlite"
    TelemetryLog(path).close()
    holder = sqlite3.connect(str(path), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    err = io.StringIO()
    w = TelemetryWriter(path, stderr=err)
    for _ in range(4):
        w.submit(**ROW)
    w.close(timeout=0.3)
    holder.execute("COMMIT")
    assert w.stats()["dropped"] == 4 and "4 queued rows not logged at shutdown" in err.getvalue()
    assert not w.submit(**ROW)  # closed: counted, not queued


def test_log_answer_warns_and_returns_false(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_text("garbage")
    err = io.StringIO()
    assert log_answer(bad, stderr=err, **ROW) is False
    assert err.getvalue().startswith("warning: answer not logged: telemetry log") and err.getvalue().count("\n") == 1
    assert log_answer(tmp_path / "ok.sqlite", stderr=err, **ROW) is True
    assert TelemetryLog(tmp_path / "ok.sqlite").count() == 1


def test_open_errors_say_what_to_do(tmp_path):
    (tmp_path / "dir.sqlite").mkdir()
    with pytest.raises(TelemetryError, match="telemetry log .*dir.sqlite.*cannot"):
        TelemetryLog(tmp_path / "dir.sqlite")
    (tmp_path / "junk").write_text("junk")
    with pytest.raises(TelemetryError, match="not a SQLite database; move it away"):
        TelemetryLog(tmp_path / "junk")


def test_many_threads_submitting_lose_nothing(tmp_path):
    w = TelemetryWriter(tmp_path / "t.sqlite", queue_size=100000)
    threads = [threading.Thread(target=lambda: [w.submit(**ROW) for _ in range(200)]) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert w.flush(20)
    w.close()
    assert w.stats()["written"] == 1600 and TelemetryLog(tmp_path / "t.sqlite").count() == 1600


def test_reading_pages_lets_writers_in(tmp_path):
    path = tmp_path / "t.sqlite"
    log = TelemetryLog(path)
    log.write_rows([make_row(**{**ROW, "query": str(i)}) for i in range(25)])
    reader = log.rows(page=10)
    first = [next(reader)["query"] for _ in range(10)]  # one page read, the reader paused
    other = TelemetryLog(path, busy_timeout=0.2)
    other.log(**{**ROW, "query": "during"})  # not blocked by the paused reader
    rest = [r["query"] for r in reader]
    assert first + rest == [str(i) for i in range(25)] + ["during"]
    assert [r["query"] for r in log.rows(outcome="answered", page=7)][-2:] == ["24", "during"]


def test_logging_off_by_choice_counts_nothing():
    w = TelemetryWriter(None)
    assert not w.submit(**ROW)
    assert w.stats() == {"enabled": False, "path": None, "written": 0, "failed": 0, "dropped": 0, "queued": 0,
                         "ok": False, "last_error": "logging is off"}
    w.close()
