import json
import socket
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from ragtune import load_corpus
from ragtune.pipeline import PipelineConfig
from ragtune.store import IndexStore, build_version
from tests.helpers import DOCS, write_files

uvicorn = pytest.importorskip("uvicorn")
pytest.importorskip("fastapi")


def call(url, path, body=None, key=None, timeout=10):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method="POST" if body is not None else "GET",
                                 headers={"Content-Type": "application/json", **({"X-API-Key": key} if key else {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


@pytest.fixture
def served(tmp_path):
    from ragtune.serve.app import create_app

    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    store = IndexStore(tmp_path / "s")
    build_version(store, corpus, PipelineConfig.from_flags({"chunker": "section"}))
    build_version(store, corpus, PipelineConfig.from_flags({"chunker": "fixed", "size": 12}))
    log = tmp_path / "telemetry.sqlite"
    app = create_app(str(store.root), api_key="s3cret", log_path=str(log))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", store, log, app
    server.should_exit = True
    thread.join(timeout=10)


def test_endpoints_validation_and_key(served):
    url, store, log, app = served
    code, body = call(url, "/health")
    assert code == 200 and body["status"] == "ok" and body["version"] == "v0001" and body["problems"] == []
    assert call(url, "/search", {"query": "refunds"})[0] == 401
    code, body = call(url, "/search", {"query": "how long do refunds take", "k": 2}, key="s3cret")
    assert code == 200 and body["version"] == "v0001" and len(body["hits"]) == 2
    assert body["hits"][0]["anchor"].startswith("billing/refunds.md") and body["hits"][0]["snippet"]
    for bad, needle in [({"query": "   "}, "query is empty"), ({"query": "x", "k": 0}, "k must be between 1 and 100"),
                        ({"query": "x", "k": 500}, "k must be between"), ({"query": "y" * 3000}, "the limit is 2000")]:
        code, body = call(url, "/search", bad, key="s3cret")
        assert code == 422 and needle in json.dumps(body), (bad, body)
        assert "y" * 50 not in json.dumps(body)  # the input is never echoed back
    code, body = call(url, "/search", {"query": "x", "filters": "colour=red"}, key="s3cret")
    assert code == 400 and "unknown filter field(s) 'colour'" in body["detail"]
    code, body = call(url, "/answer", {"query": "How long do refunds take after a cancelled order?"}, key="s3cret")
    assert code == 200 and body["outcome"] == "answered"
    assert body["citations"][0]["anchor"].startswith("billing/refunds.md") and body["citations"][0]["end"] > 0
    cited = body["citations"][0]  # the source lines of the markdown file the span covers (issue 39 item 15)
    text = DOCS[cited["doc_id"]]
    assert cited["location"]["line"] == text.count("\n", 0, cited["start"]) + 1
    code, body = call(url, "/answer", {"query": "Do you sell gift cards?"}, key="s3cret")
    assert code == 200 and body["outcome"] == "not_found"
    code, body = call(url, "/versions", key="s3cret")
    assert body["current"] == "v0001" and [v["id"] for v in body["versions"]] == ["v0001", "v0002"]
    for path in ("/docs", "/redoc"):  # off by default: Swagger UI would load scripts from a CDN
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url + path)
        assert e.value.code == 404
    with urllib.request.urlopen(url + "/openapi.json") as r:
        assert "/search" in json.loads(r.read())["paths"]
    from ragtune.serve.telemetry import TelemetryLog

    assert app.state.telemetry.flush(5)

    rows = list(TelemetryLog(log).rows())
    assert [r["outcome"] for r in rows] == ["answered", "not_found"]
    assert rows[0]["version"] == "v0001" and rows[0]["retrieved"][0]["anchor"]
    assert "s3cret" not in log.read_bytes().decode("latin-1")


def test_promote_and_rollback_swap_without_failing_requests(served):
    url, store, _, app = served
    errors, versions = [], set()
    stop = threading.Event()

    def client():
        while not stop.is_set():
            code, body = call(url, "/search", {"query": "shipping times", "k": 3}, key="s3cret")
            if code != 200:
                errors.append((code, body))
            else:
                versions.add(body["version"])

    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(client) for _ in range(8)]
        time.sleep(0.5)
        store.promote("v0002")
        deadline = time.time() + 10
        while app.state.holder.version != "v0002" and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        store.rollback()
        deadline = time.time() + 10
        while app.state.holder.version != "v0001" and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        stop.set()
        for f in futures:
            f.result()
    assert errors == []
    assert versions == {"v0001", "v0002"} and app.state.holder.swaps == 2


def test_a_failed_load_is_reported_and_retried_on_promote_and_with_backoff(tmp_path, capsys):
    from ragtune.serve.app import PipelineHolder

    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    store = IndexStore(tmp_path / "s")
    build_version(store, corpus, PipelineConfig.from_flags({"chunker": "section"}))
    build_version(store, corpus, PipelineConfig.from_flags({"chunker": "section"}))
    calls = []
    broken = {"v0002"}

    def loader(vid):
        calls.append(vid)
        if vid in broken:
            raise RuntimeError("disk on fire")
        return f"pipeline-{vid}"

    def settle():
        deadline = time.time() + 5
        while holder._loading is not None and time.time() < deadline:
            time.sleep(0.01)

    holder = PipelineHolder(store, loader=loader, retry_base=60)
    store.promote("v0002")
    for _ in range(20):
        version, _ = holder.get()
        assert version == "v0001"  # still serving the loaded version
        settle()
    assert calls.count("v0002") == 1 and "disk on fire" in holder.failed["v0002"]  # backoff: not retried at once
    assert "could not load version v0002 (attempt 1): RuntimeError: disk on fire" in capsys.readouterr().err
    assert "failed to load" in holder.problems()[0]
    broken.clear()  # the files are restored...
    store.promote("v0002")  # ...and the version promoted again: retried at once
    holder.get()
    settle()
    assert holder.get()[0] == "v0002" and calls.count("v0002") == 2 and holder.failed == {}
    assert holder.problems() == []
    assert "loaded version v0002 after earlier failures" in capsys.readouterr().err


def test_a_failed_load_is_retried_after_the_backoff(tmp_path, monkeypatch):
    from ragtune.serve import app as app_module
    from ragtune.serve.app import PipelineHolder

    class Clock:  # the holder's clock, moved by the test: the backoff is checked without waiting for it
        now = 1000.0

        def monotonic(self):
            return self.now

        def __getattr__(self, name):
            return getattr(time, name)

    clock = Clock()
    monkeypatch.setattr(app_module, "time", clock)
    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    store = IndexStore(tmp_path / "s")
    build_version(store, corpus, PipelineConfig.from_flags({"chunker": "section"}))
    build_version(store, corpus, PipelineConfig.from_flags({"chunker": "section"}))
    attempts = []

    def loader(vid):
        attempts.append(vid)
        if vid == "v0002" and len(attempts) < 4:  # the first load is v0001's; two failures, then it loads
            raise RuntimeError("transient")
        return f"pipeline-{vid}"

    def after(seconds: float) -> int:
        """Move the clock on, ask for the pipeline, let any load it started finish; the attempts so far."""
        clock.now += seconds
        holder.get()
        deadline = time.monotonic() + 60  # a hang guard on the real clock
        while holder._loading is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        return len(attempts)

    holder = PipelineHolder(store, loader=loader, retry_base=0.25)  # binary fractions: the sums are exact
    store.promote("v0002")
    assert after(0) == 2  # v0002 failed once: the next attempt is due in 0.25 s
    assert after(0.125) == 2 and holder.version == "v0001"
    assert after(0.125) == 3  # failed again: the wait doubles to 0.5 s
    assert after(0.375) == 3
    assert after(0.125) == 4 and holder.version == "v0002"


def test_a_rollback_during_a_load_wins(tmp_path):
    from ragtune.serve.app import PipelineHolder

    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    store = IndexStore(tmp_path / "s")
    for _ in range(2):
        build_version(store, corpus, PipelineConfig.from_flags({"chunker": "section"}))
    release = threading.Event()

    def loader(vid):
        if vid == "v0002":
            release.wait(10)  # a slow load
        return f"pipeline-{vid}"

    holder = PipelineHolder(store, loader=loader)
    store.promote("v0002")
    holder.get()  # starts loading v0002
    store.rollback()  # back to v0001 while v0002 is still loading
    release.set()
    time.sleep(0.3)
    assert holder.get() == ("v0001", "pipeline-v0001") and holder.swaps == 0
