"""The server under faults: a broken or locked log, hostile requests, an unsafe bind."""

import io
import json
import socket
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from ragtune import ConfigError, load_corpus
from ragtune.pipeline import PipelineConfig
from ragtune.store import IndexStore, build_version
from tests.helpers import DOCS, write_files
from tests.serve.test_server import call
from tests.serve.test_telemetry_faults import failing_opener

uvicorn = pytest.importorskip("uvicorn")
pytest.importorskip("fastapi")

KEY = "s3cret"
Q = {"query": "How long do refunds take after a cancelled order?"}


@pytest.fixture
def store(tmp_path):
    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    s = IndexStore(tmp_path / "s")
    build_version(s, corpus, PipelineConfig.from_flags({"chunker": "section"}))
    return s


class Served:
    """The app under uvicorn on a free loopback port, in a thread (``config`` goes to ``uvicorn.Config``)."""

    def __init__(self, app, **config):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.app = app
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    **config))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started and time.time() < deadline:
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=10)


def serve(store, **kwargs):
    from ragtune.serve.app import create_app

    return Served(create_app(str(store.root), api_key=KEY, **kwargs))


def test_a_full_disk_costs_no_answer(store, tmp_path):
    from ragtune.serve.telemetry import TelemetryWriter

    err, made = io.StringIO(), []
    writer = TelemetryWriter(tmp_path / "t.sqlite", opener=failing_opener("database or disk is full", made), stderr=err)
    with serve(store, telemetry=writer) as s:
        for _ in range(5):
            code, body = call(s.url, "/answer", Q, key=KEY)
            assert code == 200 and body["outcome"] == "answered"
        assert writer.flush(5)
        code, health = call(s.url, "/health")
        assert code == 200 and health["status"] == "degraded" and health["telemetry"]["failed"] == 5
        assert any("telemetry" in p for p in health["problems"])
        code, versions = call(s.url, "/versions", key=KEY)
        assert versions["telemetry"]["failed"] == 5 and "disk is full" in versions["telemetry"]["last_error"]
        assert "disk is full" in err.getvalue()
        made[0]._db.fail = False  # space is back
        assert call(s.url, "/answer", Q, key=KEY)[0] == 200
        assert writer.flush(5)
        code, health = call(s.url, "/health")
        assert health["status"] == "ok" and health["telemetry"]["written"] == 1


def test_a_corrupt_log_leaves_the_server_up_with_logging_off(store, tmp_path, capsys):
    log = tmp_path / "t.sqlite"
    log.write_bytes(b"\x00garbage" * 1000)
    with serve(store, log_path=str(log)) as s:
        assert "warning: telemetry disabled" in capsys.readouterr().err
        code, body = call(s.url, "/answer", Q, key=KEY)
        assert code == 200 and body["outcome"] == "answered"
        code, health = call(s.url, "/health")
        assert health["status"] == "degraded" and health["telemetry"] == {
            "enabled": False, "written": 0, "failed": 0, "dropped": 1, "queued": 0}


def test_a_locked_log_stalls_nothing(store, tmp_path):
    """A lock held (as a retention DELETE would) while 48 clients ask for answers and a prober asks for /health
    and /search: every request is answered while the lock is still held, which the test releases only after
    the last answer came back. No request waits for the lock: one that did would never be answered (the
    request timeouts are hang guards, far above a normal answer)."""
    log = tmp_path / "t.sqlite"
    with serve(store, log_path=str(log)) as s:
        assert call(s.url, "/answer", Q, key=KEY)[0] == 200  # the log exists
        assert s.app.state.telemetry.flush(5)
        holder = sqlite3.connect(str(log), isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN EXCLUSIVE")
        released = threading.Event()
        codes, probes = [], []

        def answer(_):
            codes.append((call(s.url, "/answer", Q, key=KEY, timeout=60)[0], released.is_set()))

        def probe():
            for _ in range(10):
                for path, body in (("/health", None), ("/search", {"query": "refunds", "k": 3})):
                    code, _ = call(s.url, path, body, key=KEY, timeout=60)
                    probes.append((path, code, released.is_set()))
                time.sleep(0.05)

        prober = threading.Thread(target=probe)
        prober.start()
        with ThreadPoolExecutor(48) as pool:
            list(pool.map(answer, range(96)))
        prober.join()
        stats = s.app.state.telemetry.stats()  # still under the lock
        released.set()
        holder.execute("COMMIT")
        assert codes == [(200, False)] * 96  # every answer came back while the lock was still held
        assert len(probes) == 20 and all(code == 200 and not late for _, code, late in probes)
        assert stats["written"] == 1 and stats["queued"] + stats["dropped"] == 96
        assert s.app.state.telemetry.flush(10)
        assert s.app.state.telemetry.stats()["written"] == 97  # queued rows were written after the lock


def raw(port, head: bytes, body: bytes = b"", timeout=60) -> tuple[int, bytes]:
    """Send a request and read the answer's head; ``timeout`` is a hang guard (an answer that waits for
    a body never sent ends in socket.timeout, failing the test)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head + body)
        data = b""
        while b"\r\n\r\n" not in data or len(data) < data.find(b"\r\n\r\n") + 4 + 10:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return int(data.split(b" ", 2)[1]), data


def test_a_large_body_is_refused_before_it_is_read(store):
    with serve(store) as s:
        head = (f"POST /search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-API-Key: {KEY}\r\n"
                f"Content-Length: {10_000_000}\r\n\r\n").encode()
        code, data = raw(s.port, head, b'{"query": "')  # 10 MB announced, a few bytes sent: never read
        assert code == 413 and b"over 65536 bytes" in data
        chunk = b"x" * 70000
        head = (f"POST /search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-API-Key: {KEY}\r\n"
                "Transfer-Encoding: chunked\r\n\r\n").encode()
        code, _ = raw(s.port, head, f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")  # no length, too long
        assert code == 413
        assert call(s.url, "/search", {"query": "refunds", "k": 1}, key=KEY)[0] == 200  # still serving


def test_request_validation_rejects_what_it_would_silently_ignore(store):
    with serve(store) as s:
        for bad, needle in [({"query": "refunds", "filter": "dir=billing"}, "unknown field 'filter'"),
                            ({"query": "refunds", "k": "5"}, "valid integer"),
                            ({"query": "refunds", "k": True}, "valid integer"),
                            ({"query": "refunds", "k": 2.0}, "valid integer"),
                            ({"query": 42}, "valid string")]:
            code, body = call(s.url, "/search", bad, key=KEY)
            assert code == 422 and needle in json.dumps(body), (bad, body)
        req = urllib.request.Request(
            s.url + "/search", data=b'{"query": "refunds \\ud800"}', method="POST",
            headers={"Content-Type": "application/json", "X-API-Key": KEY})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        assert e.value.code == 422 and b"lone UTF-16 surrogate" in e.value.read()
        for flt, needle in [("(" * 2000 + "dir=billing" + ")" * 2000, "nest more than 32 deep"),
                            ("dir in [" + ",".join(["x"] * 3000) + "]", "the limit is 4096"),
                            ("dir in [" + ",".join(["x"] * 300) + "]", "at most 256 values"),
                            ("dir=" + "y" * 2000 + " z", "unexpected 'z'")]:
            code, body = call(s.url, "/search", {"query": "refunds", "filters": flt}, key=KEY)
            assert code == 400 and needle in body["detail"] and len(json.dumps(body)) < 300, body
        code, body = call(s.url, "/answer", {"query": "refunds", "filters": "(" * 2000}, key=KEY)
        assert code == 400


@pytest.mark.parametrize("host, key, insecure, ok", [
    ("127.0.0.1", None, False, True), ("localhost", None, False, True), ("::1", None, False, True),
    ("127.0.0.2", None, False, True), ("0.0.0.0", None, False, False), ("::", None, False, False),
    ("192.168.1.5", None, False, False), ("example.org", None, False, False),
    ("0.0.0.0", "k", False, True), ("0.0.0.0", None, True, True),
])
def test_check_bind(host, key, insecure, ok):
    from ragtune.serve.app import check_bind

    if ok:
        warning = check_bind(host, key, insecure)
        assert (warning is not None) == (insecure and not key)
    else:
        with pytest.raises(ConfigError, match="no API key is set.*--insecure-no-key"):
            check_bind(host, key, insecure)


@pytest.mark.parametrize("port, ok", [(1, True), (8000, True), (65535, True), (0, False), (65536, False),
                                      (-1, False), (True, False)])
def test_check_port(port, ok):
    from ragtune.serve.app import check_port

    if ok:
        assert check_port(port) == port
    else:
        with pytest.raises(ConfigError, match="1 to 65535"):
            check_port(port)


def test_docs_can_be_turned_on(store):
    with serve(store, docs=True) as s:
        with urllib.request.urlopen(s.url + "/docs") as r:
            assert r.status == 200


def test_health_is_degraded_while_a_promoted_version_fails_to_load(store, tmp_path, capsys):
    from ragtune.serve.app import PipelineHolder
    from ragtune.store import load_pipeline

    build_version(store, load_corpus(write_files(tmp_path / "c2", DOCS)), PipelineConfig.from_flags({"chunker": "section"}))
    broken = {"v0002"}

    def loader(vid):
        if vid in broken:
            raise FileNotFoundError(f"{vid}/chunks.jsonl is missing")
        return load_pipeline(store, vid)

    holder = PipelineHolder(store, loader=loader, retry_base=60)
    with serve(store, holder=holder) as s:
        store.promote("v0002")
        call(s.url, "/search", {"query": "refunds"}, key=KEY)  # starts the load, which fails
        assert wait_for_health(s.url, "degraded", "failed to load")
        code, body = call(s.url, "/health")
        assert code == 200 and body["version"] == "v0001" and "v0002 failed to load" in body["problems"][0]
        assert "chunks.jsonl is missing" in body["problems"][0]
        assert "could not load version v0002" in capsys.readouterr().err
        assert "v0002" in call(s.url, "/versions", key=KEY)[1]["load_errors"]
        broken.clear()  # files restored
        store.promote("v0002")  # promoted again: retried at once, despite the 60 s backoff
        assert wait_for_health(s.url, "ok")
        code, body = call(s.url, "/health")
        assert body["version"] == "v0002" and call(s.url, "/versions", key=KEY)[1]["load_errors"] == {}


def wait_for_health(url, status, problem="", timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        body = call(url, "/health")[1]
        if body["status"] == status and problem in " ".join(body["problems"]):
            return True
        time.sleep(0.05)
    return False
