"""The server against hostile clients and an unlucky operator: idle sockets past the file limit, slow requests,
damaged pointer files, a FIFO as the log, DNS rebinding, long inputs echoed, a failing upstream generator, and
an OpenAPI schema that says all of it."""

from __future__ import annotations

import io
import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from ragtune import ConfigError
from ragtune.errors import APIError, TelemetryError
from tests.helpers import free_port
from tests.serve.test_server import call
from tests.serve.test_server_faults import KEY, Q, Served, store  # noqa: F401  (store is a fixture)

uvicorn = pytest.importorskip("uvicorn")
pytest.importorskip("fastapi")


class Guarded(Served):
    """The app under uvicorn with ragtune's protocol (as ``ragtune serve`` runs it), in a thread."""

    def __init__(self, app, monkeypatch, *, request_timeout: float = 10, max_connections: int | None = None):
        from ragtune.serve import guard

        monkeypatch.setenv(guard.LIMITS_ENV, json.dumps({"request_timeout": request_timeout,
                                                         "max_connections": max_connections}))
        guard._reset_limits()
        monkeypatch.setattr(guard, "_limits", None)  # and reset again after the test
        super().__init__(app, http="ragtune.serve.guard:GuardedH11Protocol", timeout_keep_alive=guard.KEEP_ALIVE_S,
                         backlog=guard.process_limits().backlog)


def guarded(store, monkeypatch, *, app_kwargs=None, **limits):
    from ragtune.serve.app import create_app

    return Guarded(create_app(str(store.root), **{"api_key": KEY, **(app_kwargs or {})}), monkeypatch, **limits)


def recv_all(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data
            data += chunk
    except (socket.timeout, ConnectionResetError):
        return data


# --- idle sockets and slow requests ---------------------------------------------------------------------------

def test_compute_limits_stays_under_the_open_file_limit():
    from ragtune.serve.guard import compute_limits

    for nofile in (256, 1024, 4096, 65536):
        lim = compute_limits(nofile=nofile)
        assert lim.max_connections + lim.reserve <= nofile and lim.reserve >= 64 + 2 * lim.backlog
        assert lim.max_connections >= 8
    assert compute_limits(100, nofile=1024).max_connections == 100  # the configured cap when it is lower
    assert compute_limits(nofile=1024).max_connections < 1024 - 100
    with pytest.raises(ConfigError, match="ulimit -n"):
        compute_limits(nofile=60)
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ConfigError, match="--max-connections"):
            compute_limits(bad, nofile=1024)
    with pytest.raises(ConfigError, match="--request-timeout"):
        compute_limits(request_timeout=0, nofile=1024)


def _serve_process(store_root: Path, nofile: int, *extra: str) -> tuple[subprocess.Popen, int, Path]:
    port = free_port()
    err = store_root.parent / "serve.err"

    def lower_limit():  # in the child only: the server gets the small file limit, the test keeps its own
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))

    env = {**os.environ}
    env.pop("RAGTUNE_API_KEY", None)
    proc = subprocess.Popen([sys.executable, "-m", "ragtune", "serve", "--store", str(store_root), "--port", str(port),
                             *extra], stdout=subprocess.DEVNULL, stderr=open(err, "wb"), env=env,
                            preexec_fn=lower_limit)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                if r.status == 200:
                    return proc, port, err
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("server did not start: " + err.read_text(errors="replace")[-2000:])


def test_idle_sockets_past_the_file_limit_leave_health_answering(store):
    """A slowloris: 300 connections that never finish their head, against a server whose open-file limit is 256.
    Before the guard, accept() failed with EMFILE, /health went unanswered and stderr filled with tracebacks."""
    proc, port, err = _serve_process(store.root, 256)
    idle: list[socket.socket] = []
    try:
        for i in range(300):
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
            except OSError:
                continue
            if i % 2:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # half a head, never finished
            idle.append(s)
        assert len(idle) >= 250
        for _ in range(20):  # every probe answered (the 60 s timeout is a hang guard, not a latency bound)
            code, body = call(f"http://127.0.0.1:{port}", "/health", timeout=60)
            assert code == 200 and body["status"] in ("ok", "degraded")
        code, body = call(f"http://127.0.0.1:{port}", "/search", {"query": "refunds", "k": 2}, timeout=60)
        assert code == 200 and body["hits"]
        fds = len(os.listdir(f"/proc/{proc.pid}/fd")) if os.path.isdir(f"/proc/{proc.pid}/fd") else 0
        assert fds < 256
        # the oldest idle connections were closed to make room for the probes
        closed = sum(1 for s in idle if recv_all(s, 0.01) == b"" and _is_closed(s))
        assert closed > 0
    finally:
        for s in idle:
            s.close()
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    text = err.read_text(errors="replace")
    assert len(text) < 5000, text[-2000:]  # a notice, not a traceback per connection
    assert "Traceback" not in text and "EMFILE" not in text and "Too many open files" not in text


def recv_until_closed(sock: socket.socket, hang_guard: float = 60) -> bytes:
    """Everything the peer sends until it closes the connection; an AssertionError if it is still open after
    ``hang_guard`` seconds (a guard against a true hang, not a bound on how soon it closes)."""
    sock.settimeout(hang_guard)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    except socket.timeout:
        raise AssertionError(f"the server left the connection open; received {data[:200]!r}") from None
    return data


def read_response(sock: socket.socket, timeout: float = 5) -> bytes:
    """One HTTP response with a Content-Length, read whole."""
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":", 1)[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def _is_closed(s: socket.socket) -> bool:
    try:
        s.settimeout(0.01)
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


def test_a_request_that_never_finishes_is_closed_after_the_timeout(store, monkeypatch):
    with guarded(store, monkeypatch, request_timeout=0.5) as s:
        silent = socket.create_connection(("127.0.0.1", s.port))
        half = socket.create_connection(("127.0.0.1", s.port))
        half.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        body = socket.create_connection(("127.0.0.1", s.port))
        body.sendall(f"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: {KEY}\r\nContent-Type: application/json"
                     "\r\nContent-Length: 100\r\n\r\n{\"query\": ".encode())
        # each is closed by the server (recv_until_closed fails on a connection still open after 60 s)
        assert recv_until_closed(silent) == b""  # closed without a word: it asked nothing
        got_half, got_body = recv_until_closed(half), recv_until_closed(body)
        assert got_half.startswith(b"HTTP/1.1 408") and b"not received within 0.5 s" in got_half
        assert got_body.startswith(b"HTTP/1.1 408") and b"body" in got_body
        for sock in (silent, half, body):
            sock.close()
        # a connection that keeps sending requests in time is not cut
        with socket.create_connection(("127.0.0.1", s.port)) as live:
            for _ in range(3):
                live.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                assert read_response(live).startswith(b"HTTP/1.1 200")
                time.sleep(0.3)
        assert call(s.url, "/health")[0] == 200


def test_past_the_cap_the_longest_idle_connection_makes_room(store, monkeypatch):
    with guarded(store, monkeypatch, max_connections=8) as s:
        idle = []
        for _ in range(12):  # 4 over the cap: each closes the oldest idle one
            idle.append(socket.create_connection(("127.0.0.1", s.port)))
            time.sleep(0.05)
        time.sleep(0.2)
        assert call(s.url, "/health")[0] == 200  # and so does a probe, which is then answered
        time.sleep(0.2)
        assert [_is_closed(x) for x in idle] == [True] * 5 + [False] * 7
        for x in idle:
            x.close()


def test_the_kernel_accept_queue_is_raised_after_start(store, monkeypatch):
    """asyncio accepts `backlog` connections per tick (kept small); the kernel queue is raised to 2,048."""
    import shutil

    from ragtune.serve.guard import LISTEN_BACKLOG

    if shutil.which("ss") is None:
        pytest.skip("ss (iproute2) is not installed")
    with guarded(store, monkeypatch) as s:
        assert call(s.url, "/health")[0] == 200
        out = subprocess.run(["ss", "-ltn", f"sport = :{s.port}"], capture_output=True, text=True).stdout
        assert out.strip().splitlines()[-1].split()[2] == str(LISTEN_BACKLOG), out


# --- damaged pointer files -------------------------------------------------------------------------------------

@pytest.mark.parametrize("damage", ["bytes", "folder", "empty"])
def test_a_damaged_current_pointer_gives_health_200_and_versions_503(store, monkeypatch, damage):
    with guarded(store, monkeypatch) as s:
        assert call(s.url, "/search", {"query": "refunds", "k": 1}, key=KEY)[0] == 200
        pointer = store.root / "CURRENT"
        pointer.unlink()
        if damage == "bytes":
            pointer.write_bytes(b"\xff\xfe\x00v0001")
        elif damage == "folder":
            pointer.mkdir()
        else:
            pointer.write_bytes(b"")
        code, body = call(s.url, "/health")
        assert code == 200 and body["status"] == "degraded" and body["version"] == "v0001"
        assert any("current pointer" in p for p in body["problems"]), body
        code, body = call(s.url, "/versions", key=KEY)
        assert code == 503 and "cannot be read (still serving v0001)" in body["detail"] and "CURRENT" in body["detail"]
        code, body = call(s.url, "/search", {"query": "refunds", "k": 1}, key=KEY)
        assert code == 200 and body["version"] == "v0001"  # the loaded version keeps serving
        assert call(s.url, "/answer", Q, key=KEY)[0] == 200


def test_a_server_does_not_start_on_a_damaged_pointer_with_a_traceback(store):
    from ragtune.errors import StoreError
    from ragtune.serve.app import create_app

    (store.root / "CURRENT").unlink()
    (store.root / "CURRENT").mkdir()
    with pytest.raises(StoreError, match="CURRENT"):
        create_app(str(store.root))


# --- a FIFO as the telemetry log ------------------------------------------------------------------------------

def _bounded(fn, timeout: float, unblock: Path | None = None):
    """Run ``fn`` in a thread; a call still blocked after ``timeout`` fails the test (a writer opened on the FIFO
    lets the thread finish)."""
    out: dict = {}

    def target():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001
            out["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        if unblock is not None:
            fd = os.open(unblock, os.O_RDWR | os.O_NONBLOCK)
            os.close(fd)
        t.join(5)
        raise AssertionError(f"{fn} blocked on the FIFO")
    if "error" in out:
        raise out["error"]
    return out.get("value")


def test_a_fifo_or_a_folder_is_refused_as_the_log(store, tmp_path):
    from ragtune.serve.run import run_server
    from ragtune.serve.telemetry import TelemetryLog, TelemetryWriter, log_answer

    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "FIFO"), (tmp_path, "folder")):
        with pytest.raises(TelemetryError, match=f"it is a {kind}.*not a regular file"):
            _bounded(lambda: TelemetryLog(path), 5, fifo)
        err = io.StringIO()
        assert _bounded(lambda: log_answer(path, stderr=err, query="q", outcome="answered", retrieved=[]), 5,
                        fifo) is False
        assert "not a regular file" in err.getvalue()
        err = io.StringIO()
        writer = _bounded(lambda: TelemetryWriter(path, stderr=err), 5, fifo)
        assert not writer.stats()["enabled"] and "not a regular file" in err.getvalue()
        with pytest.raises(ConfigError, match="not a regular file"):  # serve refuses before it starts
            _bounded(lambda: run_server(str(store.root), log_path=str(path), port=free_port()), 5, fifo)
    if os.path.exists("/dev/zero"):
        with pytest.raises(TelemetryError, match="character device"):
            _bounded(lambda: TelemetryLog("/dev/zero"), 5)


def test_serve_with_a_fifo_log_exits_2_at_once(store, tmp_path):
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    r = subprocess.run([sys.executable, "-m", "ragtune", "serve", "--store", str(store.root), "--log", str(fifo),
                        "--port", str(free_port())], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "FIFO" in r.stderr and "Traceback" not in r.stderr


# --- DNS rebinding --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("header, bound, ok", [
    ("localhost", None, True), ("localhost:8000", None, True), ("LOCALHOST:1", None, True),
    ("127.0.0.1:8000", None, True), ("[::1]:8000", None, True), ("[::1]", None, True), ("10.0.0.5:80", None, True),
    ("app.localhost:8000", None, True), (None, None, True),
    ("evil.example", None, False), ("evil.example:8000", None, False), ("127.0.0.1.nip.io", None, False),
    ("localhost.evil.example", None, False), ("", None, False),
    ("myhost.lan:8000", "myhost.lan", True), ("other.lan", "myhost.lan", False),
])
def test_host_allowed(header, bound, ok):
    from ragtune.serve.app import host_allowed

    assert host_allowed(header, bound) is ok


def raw_request(port: int, host: str, path: str = "/health") -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = recv_all(sock, 5)
    return int(data.split(b" ", 2)[1]), data


def test_without_a_key_only_local_host_names_are_answered(store, monkeypatch):
    with guarded(store, monkeypatch, app_kwargs={"api_key": None}) as s:
        for host in ("localhost", f"127.0.0.1:{s.port}", f"[::1]:{s.port}", f"localhost:{s.port}"):
            assert raw_request(s.port, host, "/versions")[0] == 200, host
        for host in ("attacker.example", f"rebind.attacker.example:{s.port}", "x" * 3000):
            code, data = raw_request(s.port, host, "/versions")
            assert code == 421 and b"DNS rebinding" in data and len(data) < 1000, host
    with guarded(store, monkeypatch) as s:  # with a key, the key is the guard
        assert raw_request(s.port, "attacker.example", "/health")[0] == 200


# --- error bodies ---------------------------------------------------------------------------------------------

def test_no_error_body_echoes_a_long_input(store, monkeypatch):
    long = "a" * 4000
    with guarded(store, monkeypatch) as s:
        cases = [
            ("/search", {"query": "refunds", long: 1}, 422),
            ("/search", {"query": "refunds", "filters": f"{long}=x"}, 400),
            ("/search", {"query": "refunds", "filters": f"dir={long} zz"}, 400),
            ("/search", {"query": "refunds", "k": int("9" * 4000)}, 422),
            ("/answer", {"query": "refunds", "k": -int("9" * 4000)}, 422),
            ("/search", {"query": long}, 422),
            ("/search", {"query": "refunds", "k": long}, 422),
            ("/search", {"query": "refunds", "filters": "(" * 3000}, 400),
        ]
        for path, body, status in cases:
            code, got = call(s.url, path, body, key=KEY)
            text = json.dumps(got)
            assert code == status, (path, code, text[:300])
            assert len(text) < 1200 and "a" * 60 not in text and "9" * 60 not in text, text[:400]
        code, got = call(s.url, "/search", {"query": "refunds", "filters": "colour=red"}, key=KEY)
        assert code == 400 and "colour" in got["detail"]  # short inputs are still quoted, to say what was wrong


def test_clip_inputs_cuts_every_echo():
    from ragtune.serve.app import MAX_ECHO_CHARS, clip_inputs

    secret = "b" * 500
    out = clip_inputs({"x": [f"unknown field {secret!r}", {"k": f"got {secret}"}], "n": 3},
                      [secret])
    assert secret not in json.dumps(out) and "b" * (MAX_ECHO_CHARS + 1) not in json.dumps(out)
    assert out["n"] == 3 and "(500 characters)" in out["x"][0]
    assert len(clip_inputs("word " * 1000, [])) < 900  # no message over 800 characters


# --- the upstream generator -----------------------------------------------------------------------------------

def test_an_upstream_failure_is_a_502_without_its_url_or_text(store, monkeypatch, capsys):
    import ragtune.answer as answer_mod

    class Failing:
        name = "openai:fake"

        def generate(self, question, contexts):
            raise APIError("POST http://user:pa55@llm.internal:9999/v1/chat?api_key=abc123 failed after 3 "
                           "attempts: HTTP 500: upstream secret stack trace")

    monkeypatch.setattr(answer_mod, "make_generator", lambda name="extractive": Failing())
    with guarded(store, monkeypatch) as s:
        code, body = call(s.url, "/answer", Q, key=KEY)
        assert code == 502 and body == {"detail": "upstream generator failed; the server's log has the cause"}
        assert call(s.url, "/search", {"query": "refunds", "k": 1}, key=KEY)[0] == 200
    err = capsys.readouterr().err
    assert "the generator openai:fake failed" in err and "llm.internal:9999" in err
    assert "pa55" not in err and "abc123" not in err


def test_redact():
    from ragtune.serve.app import redact

    assert redact("GET https://u:p@h.example:1/x?key=s#f failed") == "GET https://***@h.example:1/x?*** failed"
    assert redact("what is this? no url") == "what is this? no url"
    assert redact("at 'http://u:it's@h/x' and https:/v:pw@h2") == "at 'http://***@h/x' and https:/***@h2"


# --- the OpenAPI schema ---------------------------------------------------------------------------------------

def test_openapi_describes_errors_limits_and_the_key(store, monkeypatch):
    with guarded(store, monkeypatch) as s:
        with urllib.request.urlopen(s.url + "/openapi.json", timeout=10) as r:
            spec = json.loads(r.read())
    comps = spec["components"]["schemas"]
    search = spec["paths"]["/search"]["post"]
    for status in ("400", "401", "413", "422", "502", "503"):
        assert status in search["responses"], status
    ref = search["responses"]["422"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    problem = comps[comps[ref]["properties"]["detail"]["items"]["$ref"].rsplit("/", 1)[1]]
    assert set(problem["properties"]) == {"field", "message"}
    assert "HTTPValidationError" not in comps
    props = comps["SearchRequest"]["properties"]
    assert props["query"]["maxLength"] == 2000 and props["query"]["minLength"] == 1
    assert props["k"]["minimum"] == 1 and props["k"]["maximum"] == 100 and props["filters"]["maxLength"] == 4096
    schemes = spec["components"]["securitySchemes"]
    assert any(v == {"type": "apiKey", "in": "header", "name": "X-API-Key", "description": "the server's API key"}
               for v in schemes.values())
    assert search.get("security") and spec["paths"]["/versions"]["get"].get("security")
    assert not spec["paths"]["/health"]["get"].get("security")
    assert "502" in spec["paths"]["/answer"]["post"]["responses"]
