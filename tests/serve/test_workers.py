"""`ragtune serve --workers N`: several processes on one port over one store, one telemetry log that loses
nothing, promotes seen by every worker; and a store in Milvus served by two workers through a `milvus-lite server`."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ragtune import ConfigError, load_corpus
from ragtune.pipeline import PipelineConfig
from ragtune.store import IndexStore, build_version
from tests.helpers import DOCS, free_port, milvus_lite_server, write_files

pytest.importorskip("uvicorn")
pytest.importorskip("fastapi")

QUESTIONS = ["How long do refunds take after a cancelled order?", "How do I reset a forgotten password?",
             "When do parcels ship?", "Where are older invoices?"]


def _call(url: str, path: str, body: dict | None = None, timeout: float = 30,
          key: str | None = None) -> tuple[int, dict, str | None]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method="POST" if body is not None else "GET",
                                 headers={"Content-Type": "application/json", **({"X-API-Key": key} if key else {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read()), r.headers.get("X-Ragtune-Worker")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}"), None


class Server:
    """`python -m ragtune serve --workers N` in a subprocess on a free loopback port."""

    def __init__(self, store: Path, workers: int, env: dict[str, str]):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.err = open(store.parent / "server.err", "w+")
        self.proc = subprocess.Popen([sys.executable, "-m", "ragtune", "serve", "--store", str(store), "--port",
                                      str(self.port), "--workers", str(workers)], env=env, stderr=self.err,
                                     stdout=subprocess.DEVNULL)

    def stderr(self) -> str:
        self.err.flush()
        self.err.seek(0)
        return self.err.read()[-3000:]

    def health_pids(self, n: int, *, version: str | None = None, timeout: float = 60) -> set[int]:
        """Poll /health (a new connection each time, so the kernel hands it to any worker) until ``n`` distinct
        pids answered (serving ``version`` when given)."""
        pids: set[int] = set()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail("the server exited: " + self.stderr())
            try:
                code, body, _ = _call(self.url, "/health", timeout=2)
                if code == 200 and (version is None or body["version"] == version):
                    pids.add(body["pid"])
                    if len(pids) >= n:
                        return pids
            except OSError:
                pass
            time.sleep(0.05)
        pytest.fail(f"{len(pids)} of {n} workers answered /health{' with ' + version if version else ''}: "
                    + self.stderr())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.err.close()


def _env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "RAGTUNE_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("RAGTUNE_API_KEY", None)
    return env


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def test_two_workers_share_the_port_the_log_and_the_current_pointer(tmp_path):
    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    store = IndexStore(tmp_path / "s")
    build_version(store, corpus, PipelineConfig.from_flags({"chunker": "section", "retriever": "bm25"}))
    key = "k3y-for-the-workers"
    server = Server(store.root, 2, {**_env(tmp_path), "RAGTUNE_API_KEY": key})
    try:
        pids = server.health_pids(2)
        assert len(pids) == 2
        # the key reached every worker, through the environment: no command line shows it
        assert _call(server.url, "/search", {"query": "refunds"})[0] == 401
        if os.path.isdir("/proc"):
            assert pids <= set(_children(server.proc.pid))
            for pid in [server.proc.pid, *pids]:
                assert key.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()

        def ask(i: int) -> tuple[int, str | None, str]:
            code, body, pid = _call(server.url, "/answer", {"query": QUESTIONS[i % len(QUESTIONS)], "k": 3}, key=key)
            return code, pid, body.get("outcome", "")

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(ask, range(200)))
        assert [code for code, _, _ in results] == [200] * 200
        assert {outcome for _, _, outcome in results} == {"answered"}
        served_by = {pid for _, pid, _ in results}
        assert len(served_by) == 2, f"one worker served everything: {served_by}"

        # a promote is seen by every worker: each holder reads CURRENT itself
        build_version(store, corpus, PipelineConfig.from_flags({"chunker": "fixed", "size": 12, "retriever": "bm25"}))
        assert store.current_id() == "v0001"
        store.promote("v0002")
        assert len(server.health_pids(2, version="v0002")) == 2
    finally:
        server.stop()
    assert server.proc.returncode == 0, server.stderr()
    from ragtune.serve.telemetry import TelemetryLog

    log = TelemetryLog(store.root / "telemetry.sqlite", readonly=True)
    try:
        rows = list(log.rows())
    finally:
        log.close()
    assert len(rows) == 200  # every answer of both workers, none lost or doubled
    assert sorted(r["query"] for r in rows) == sorted(QUESTIONS[i % len(QUESTIONS)] for i in range(200))
    assert {r["source"] for r in rows} == {"server"} and {r["version"] for r in rows} == {"v0001"}


def _write_rows(path: str, n: int, tag: str) -> None:
    from ragtune.serve.telemetry import TelemetryWriter

    writer = TelemetryWriter(path, batch=8)  # small batches: many transactions contend for the lock
    for i in range(n):
        while not writer.submit(query=f"{tag} {i}", outcome="answered", retrieved=[], source=tag):
            time.sleep(0.001)
    writer.close(timeout=30)
    assert writer.dropped == 0 and writer.failed == 0 and writer.written == n


def test_several_writer_processes_lose_no_row(tmp_path):
    """The telemetry log's claim, checked without a server: three processes append at once through the server's
    writer (short busy timeout, rows kept and retried while another process holds the lock)."""
    from ragtune.serve.telemetry import TelemetryLog

    path = str(tmp_path / "t.sqlite")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_write_rows, args=(path, 400, f"p{i}")) for i in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    log = TelemetryLog(path, readonly=True)
    try:
        rows = list(log.rows())
    finally:
        log.close()
    assert len(rows) == 1200
    for i in range(3):
        mine = [int(r["query"].split()[1]) for r in rows if r["source"] == f"p{i}"]
        assert mine == list(range(400))  # each process's rows, all of them, in the order it wrote them


def test_workers_must_be_a_positive_count(tmp_path):
    from ragtune.serve.run import run_server

    with pytest.raises(ConfigError, match="--workers 0"):
        run_server(str(tmp_path), workers=0)


def test_app_from_env_says_how_to_start_workers(monkeypatch):
    from ragtune.serve.app import SETTINGS_ENV, app_from_env

    monkeypatch.delenv(SETTINGS_ENV, raising=False)
    with pytest.raises(ConfigError, match="--workers"):
        app_from_env()


# --- a store in Milvus: two workers, one `milvus-lite server`, no copy of the index in either ----------------------
@pytest.fixture
def lite_server(tmp_path):
    with milvus_lite_server(tmp_path / "lite") as uri:
        try:
            yield uri
        finally:
            from ragtune.engines import milvus as m

            m.close_all()  # before the server goes


def test_a_milvus_store_is_served_by_two_workers_without_a_copy(tmp_path, lite_server):
    from ragtune.engines import engine_retriever
    from ragtune.serve.app import serving_loader

    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    store = IndexStore(tmp_path / "s")
    flags = {"chunker": "section", "retriever": engine_retriever("milvus", "bm25"), "milvus_uri": lite_server}
    build_version(store, corpus, PipelineConfig.from_flags(flags))

    # what each worker holds: a retriever over the version's collection, no chunk, vector or document
    pipeline = serving_loader(store)("v0001")
    assert pipeline.chunks == () and pipeline.base.chunks is None and len(pipeline.corpus) == 0
    hits = pipeline.retriever.search(QUESTIONS[0], k=3).hits
    assert hits and hits[0].chunk.doc_id == "billing/refunds.md" and "fourteen days" in hits[0].chunk.text

    server = Server(store.root, 2, _env(tmp_path))
    try:
        workers = server.health_pids(2)

        def search(i: int) -> tuple[int, str | None, str]:
            code, body, pid = _call(server.url, "/search", {"query": QUESTIONS[i % len(QUESTIONS)], "k": 3})
            return code, pid, body["hits"][0]["doc_id"] if code == 200 and body["hits"] else ""

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(search, range(60)))
        assert [code for code, _, _ in results] == [200] * 60
        assert {int(pid) for _, pid, _ in results} == workers  # both served, each searching Milvus
        assert {doc for i, (_, _, doc) in enumerate(results) if i % len(QUESTIONS) == 0} == {"billing/refunds.md"}
    finally:
        server.stop()
    assert server.proc.returncode == 0, server.stderr()
