"""Writers never undo each other, and the store lock never waits forever.

Every promote is a compare-and-swap on CURRENT (migrate, refresh, build --promote, rollback): a writer that
decided from what CURRENT named when it started refuses when another writer moved it meanwhile. The store
lock waits a bounded time and names its holder (a real child process holds it in these tests): running,
stopped, or gone with a process it started still holding the lock.
"""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading

import pytest

from ragtune import load_corpus, load_golden
from ragtune.cli import main
from ragtune.errors import CurrentMovedError, StoreLockedError
from ragtune.pipeline import PipelineConfig
from ragtune.store import IndexStore, build_version, migrate, refresh_version
from tests.helpers import DOCS, QUESTIONS, write_files, write_jsonl

SECTION = {"chunker": "section"}


@pytest.fixture
def corpus_dir(tmp_path):
    return write_files(tmp_path / "c", DOCS)


def _concurrently_before_promote(monkeypatch, writer):
    """The first promote of the calling thread first waits for ``writer()``, run in another thread on its own
    IndexStore: another writer moves CURRENT between the caller's start and its promote."""
    promote = IndexStore.promote
    mine = threading.get_ident()
    ran = []

    def hooked(self, *args, **kwargs):
        if threading.get_ident() == mine and not ran:
            ran.append(True)
            t = threading.Thread(target=lambda: ran.append(writer()))
            t.start()
            t.join(60)
        return promote(self, *args, **kwargs)

    monkeypatch.setattr(IndexStore, "promote", hooked)
    return ran


# --- compare-and-swap promotes -------------------------------------------------------------------------
def test_migrate_refuses_to_undo_a_refresh_made_while_it_ran(corpus_dir, tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    from tests.store.test_store import _onnx_copy

    store = IndexStore(tmp_path / "s")
    build_version(store, load_corpus(corpus_dir), PipelineConfig.from_flags({**SECTION, "retriever": "dense"}))
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [{"id": i, "q": q, "relevant": r} for i, q, r in QUESTIONS]))
    grown = write_files(tmp_path / "grown", {**DOCS, "new.md": "# New\n\nA page added while the migration ran.\n"})
    ran = _concurrently_before_promote(
        monkeypatch, lambda: refresh_version(IndexStore(store.root), load_corpus(grown))[0].id)
    with pytest.raises(CurrentMovedError) as e:
        migrate(store, "onnx:" + _onnx_copy(tmp_path), golden, max_drop=1.0, samples=50)
    refreshed = ran[-1]
    assert refreshed == "v0003"  # blue v0001, green v0002, then the refresh
    assert str(e.value).startswith(f"the current version moved from v0001 to {refreshed} while this migrate ran")
    assert "green v0002 was built and evaluated but not promoted" in str(e.value)
    assert "Run the migrate again" in str(e.value)
    assert store.current_id() == refreshed  # the concurrent change is kept
    assert "new.md" in {d.id for d in store.documents()}
    assert store.history() == ["v0001", refreshed]


def test_a_build_with_promote_refuses_to_undo_a_concurrent_promote(corpus_dir, tmp_path, monkeypatch):
    store = IndexStore(tmp_path / "s")
    corpus = load_corpus(corpus_dir)
    build_version(store, corpus, PipelineConfig.from_flags(SECTION))
    build_version(store, corpus, PipelineConfig.from_flags({"chunker": "fixed", "size": 8}))  # v0002, not promoted
    _concurrently_before_promote(monkeypatch, lambda: IndexStore(store.root).promote("v0002").id)
    with pytest.raises(CurrentMovedError, match=r"moved from v0001 to v0002 while this build ran.*v0003 was built but "
                                                r"not promoted.*ragtune index promote --store .* v0003"):
        build_version(store, corpus, PipelineConfig.from_flags({"chunker": "fixed", "size": 9}), promote=True)
    assert store.current_id() == "v0002" and [v.id for v in store.list()] == ["v0001", "v0002", "v0003"]


def test_of_two_first_builds_only_one_becomes_current(corpus_dir, tmp_path, monkeypatch):
    store = IndexStore(tmp_path / "s")
    corpus = load_corpus(corpus_dir)
    _concurrently_before_promote(
        monkeypatch, lambda: build_version(IndexStore(store.root), corpus, PipelineConfig.from_flags(SECTION)).id)
    v = build_version(store, corpus, PipelineConfig.from_flags({"chunker": "fixed", "size": 8}))  # promote=None
    assert v.id == "v0001" and store.current_id() == "v0002" and store.history() == ["v0002"]


def test_promote_and_rollback_with_expect_are_compare_and_swap(corpus_dir, tmp_path):
    store = IndexStore(tmp_path / "s")
    corpus = load_corpus(corpus_dir)
    for size in (0, 8, 9):
        build_version(store, corpus, PipelineConfig.from_flags({"chunker": "fixed", "size": size} if size else SECTION))
    store.promote("v0002", expect="v0001")
    with pytest.raises(CurrentMovedError, match="moved from v0001 to v0002 while this promote ran"):
        store.promote("v0003", expect="v0001")
    with pytest.raises(CurrentMovedError, match="moved from v0003 to v0002 while this rollback ran"):
        store.rollback(expect="v0003")
    assert store.current_id() == "v0002" and store.history() == ["v0001", "v0002"]
    assert store.rollback(expect="v0002").id == "v0001"
    assert store.promote("v0003").id == "v0003"  # without expect: a promote by hand


# --- the lock ---------------------------------------------------------------------------------------------
HOLD = """
import os, sys, time
from ragtune.store import IndexStore
s = IndexStore(sys.argv[1])
with s.locked():
    if sys.argv[2] == "fork":  # a child inherits the locked descriptor; the process that took the lock exits
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        print(pid, flush=True)
        os._exit(0)
    print(os.getpid(), flush=True)
    time.sleep(60)
"""


@pytest.fixture
def hold_lock(tmp_path):
    """Start a real process holding the store lock; returns (store, holder pid, the pid whose lock it is)."""
    procs, extra = [], []

    def start(store, mode="hold"):
        p = subprocess.Popen([sys.executable, "-c", HOLD, str(store.root), mode], stdout=subprocess.PIPE, text=True)
        procs.append(p)
        line = p.stdout.readline().strip()  # printed once the lock is held
        assert line.isdigit(), line
        if mode == "fork":
            p.wait(10)
            extra.append(int(line))
        return p

    yield start
    for pid in extra:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for p in procs:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p.pid, signal.SIGCONT)
        p.kill()
        p.wait(10)


def _two_versions(tmp_path, corpus_dir):
    store = IndexStore(tmp_path / "s")
    corpus = load_corpus(corpus_dir)
    build_version(store, corpus, PipelineConfig.from_flags(SECTION))
    build_version(store, corpus, PipelineConfig.from_flags({"chunker": "fixed", "size": 8}), promote=True)
    return store


def test_a_held_lock_is_waited_for_a_bounded_time_and_its_holder_named(corpus_dir, tmp_path, hold_lock, capfd,
                                                                       monkeypatch):
    import fcntl

    tries = []
    flock = fcntl.flock

    def counted(fd, op):
        if op & fcntl.LOCK_NB:
            tries.append(op)
        return flock(fd, op)

    store = _two_versions(tmp_path, corpus_dir)
    holder = hold_lock(store)
    record = json.loads((store.building_dir / ".lock").read_text())
    assert record["pid"] == holder.pid and record["host"] == socket.gethostname()
    assert record["command"] == "python -c" and record["started"].endswith("Z")
    waiting = IndexStore(store.root, lock_timeout=0.6)
    monkeypatch.setattr(fcntl, "flock", counted)
    for op in (lambda: waiting.promote("v0001"), waiting.rollback, lambda: waiting.gc(keep=1)):
        tries.clear()
        with pytest.raises(StoreLockedError) as e:
            op()
        assert len(tries) > 1  # it waited, trying again, before it gave up
        message = str(e.value)
        assert f"is held by pid {holder.pid} (" in message and "gave up after waiting 0.6 s" in message
        assert "Wait for it to finish" in message and "RAGTUNE_LOCK_TIMEOUT" in message
    assert f"waiting up to 0.6 s for the store lock {store.building_dir / '.lock'}, held by pid {holder.pid}" \
        in capfd.readouterr().err
    assert store.current_id() == "v0002" and len(store.list()) == 2  # nothing changed

    os.environ["RAGTUNE_LOCK_TIMEOUT"] = "0.3"  # the command line's setting
    try:
        assert main(["index", "gc", "--store", str(store.root), "--keep", "1"]) == 2
    finally:
        del os.environ["RAGTUNE_LOCK_TIMEOUT"]
    err = capfd.readouterr().err
    assert f"error: the store lock {store.building_dir / '.lock'} is held by pid {holder.pid}" in err
    assert "Traceback" not in err

    os.kill(holder.pid, signal.SIGSTOP)
    with pytest.raises(StoreLockedError, match=rf"pid {holder.pid} .*, stopped\).*resume it with `kill -CONT "
                                               rf"{holder.pid}`.*or end it with `kill -9 {holder.pid}`"):
        waiting.rollback()
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(10)
    assert waiting.rollback().id == "v0001"  # the lock went with its process


def test_a_stale_lock_is_reported_as_stale(corpus_dir, tmp_path, hold_lock):
    store = _two_versions(tmp_path, corpus_dir)
    taker = hold_lock(store, mode="fork")  # exited; the child it forked still holds the lock
    with pytest.raises(StoreLockedError, match=rf"pid {taker.pid} .*no longer running\).*It is a stale lock: pid "
                                               rf"{taker.pid} is no longer running, but a process it started still "
                                               r"holds the lock open; find it with `fuser -v .*\.lock`"):
        IndexStore(store.root, lock_timeout=0.2).promote("v0001")


def test_the_lock_file_never_records_options(monkeypatch):
    from ragtune.store.store import _command_name

    monkeypatch.setattr(sys, "argv", ["/x/bin/ragtune", "index", "build", "--milvus-uri", "http://u:secret@h"])
    assert _command_name() == "ragtune index build"
    monkeypatch.setattr(sys, "argv", ["ragtune", "http://u:secret@h"])
    assert _command_name() == "ragtune"
    monkeypatch.setattr(sys, "argv", ["/v/lib/ragtune/__main__.py", "index", "gc", "--keep", "1"])
    assert _command_name() == "python -m ragtune index gc"


def test_a_bad_lock_timeout_is_refused(tmp_path, monkeypatch):
    from ragtune.errors import ConfigError

    with pytest.raises(ConfigError, match="lock_timeout must be 0 or more"):
        IndexStore(tmp_path, lock_timeout=-1)
    monkeypatch.setenv("RAGTUNE_LOCK_TIMEOUT", "soon")
    with pytest.raises(ConfigError, match="RAGTUNE_LOCK_TIMEOUT='soon': expected a number of seconds"):
        IndexStore(tmp_path)


@pytest.mark.parametrize("form", ["folder", "fifo", "garbage"])
def test_a_damaged_lock_file_is_refused_or_rewritten_never_a_hang(corpus_dir, tmp_path, form):
    store = _two_versions(tmp_path, corpus_dir)
    lock = store.building_dir / ".lock"
    lock.unlink()
    if form == "folder":
        lock.mkdir()
    elif form == "fifo":
        os.mkfifo(lock)
    else:
        lock.write_bytes(b"\xff" * 100_000)
    if form == "garbage":  # not JSON: the next holder rewrites it
        assert store.promote("v0001").id == "v0001"
        assert json.loads(lock.read_text())["pid"] == os.getpid()
        return
    from ragtune.errors import StoreError

    with pytest.raises(StoreError, match=rf"the store lock {lock} is not a regular file; remove it"):
        store.promote("v0001")
    assert store.current_id() == "v0002"
