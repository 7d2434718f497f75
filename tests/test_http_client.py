"""The one HTTP policy of every outside call (ragtune.http.JSONClient), against hostile servers on 127.0.0.1.

Redirects to another port or scheme, a POST made a GET, an endless chunked answer, a huge Content-Length, a
server trickling a header line at a time, Retry-After storms: each is bounded in time and memory and ends in
one clear APIError. Every client that sends a credential (endpoint headers, the OpenAI-compatible generator,
judge and embedder, the Anthropic Messages API) goes through the same client, so each is checked here.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ragtune import APIError, Chunk
from ragtune.answer.llm import AnthropicGenerator, ChatLLM, OpenAIChatGenerator
from ragtune.embed.openai import OpenAIEmbedder
from ragtune.http import JSONClient, redact_text, redact_url, redirect_problem

MAX_S = 10  # no handler of these servers runs longer than this, whatever the client does


class Server:
    """A local server whose every request runs ``behave(handler, body)``; requests are recorded."""

    def __init__(self, behave):
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _any(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                outer.requests.append({"method": self.command, "path": self.path, "body": body,
                                       "headers": {k.lower(): v for k, v in self.headers.items()}})
                try:
                    behave(self, body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up: what the tests want
                    pass

            do_GET = do_POST = do_PUT = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def servers():
    made = []

    def make(behave):
        s = Server(behave)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def reply(h, payload, code=200, headers=()):
    raw = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
    h.send_response(code)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(raw)))
    for k, v in headers:
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(raw)


def redirect(location, code=302):
    def behave(h, body):
        h.send_response(code)
        h.send_header("Location", location() if callable(location) else location)
        h.send_header("Content-Length", "0")
        h.end_headers()
    return behave


CHAT = {"choices": [{"message": {"role": "assistant", "content": "ok [1]"}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
MESSAGE = {"type": "message", "content": [{"type": "text", "text": "ok [1]"}], "stop_reason": "end_turn",
           "usage": {"input_tokens": 3, "output_tokens": 1}}
EMBEDDINGS = {"data": [{"index": 0, "embedding": [1.0, 0.0]}]}
CTX = [Chunk(id="c1", doc_id="a.md", text="Refunds take 14 days.", start=0, end=21, embed_text="",
             anchors=("a.md",))]


def _call(kind: str, url: str, monkeypatch):
    """Call ``url`` through one of ragtune's credential-carrying clients."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("SEARCH_KEY", "search-secret")
    if kind == "endpoint":
        pytest.importorskip("jmespath")
        from ragtune.external.http import HTTPRetriever
        return HTTPRetriever(url + "/search", headers={"X-API-Key": "SEARCH_KEY"}, retries=0, timeout=3)("q", 3)
    if kind == "openai-generator":
        return OpenAIChatGenerator("m", base_url=url + "/v1", max_retries=0, timeout=3).generate("q?", CTX)
    if kind == "anthropic-generator":
        return AnthropicGenerator("m", base_url=url, max_retries=0, timeout=3).generate("q?", CTX)
    if kind == "judge-llm":
        return ChatLLM("openai", "m", base_url=url + "/v1", max_retries=0, timeout=3).chat("s", "u")
    if kind == "embedder":
        return OpenAIEmbedder("e", base_url=url + "/v1", max_retries=0, timeout=3).embed(["x"])
    raise AssertionError(kind)


KINDS = ["endpoint", "openai-generator", "anthropic-generator", "judge-llm", "embedder"]


def _good(h, body):
    path = h.path
    reply(h, {"hits": ["a.md"]} if path.endswith("/search") else MESSAGE if path.endswith("/messages")
          else EMBEDDINGS if path.endswith("/embeddings") else CHAT)


@pytest.mark.parametrize("code", [302, 307])
@pytest.mark.parametrize("kind", KINDS)
def test_a_redirect_to_another_port_is_refused_and_the_credential_never_sent(kind, code, servers, monkeypatch):
    other = servers(_good)
    first = servers(redirect(lambda: other.url + "/elsewhere", code))
    with pytest.raises(APIError) as e:
        _call(kind, first.url, monkeypatch)
    msg = str(e.value)
    assert "another origin" in msg and f"127.0.0.1:{first.port}" in msg and f"127.0.0.1:{other.port}" in msg
    assert other.requests == []  # nothing (no key) reached the other server
    assert "secret" not in msg and len(first.requests) == 1  # refused at once, not retried


@pytest.mark.parametrize("kind", KINDS)
def test_a_post_is_never_made_a_get_and_307_keeps_method_body_and_origin(kind, servers, monkeypatch):
    target = {}
    server = servers(lambda h, body: _good(h, body) if "moved" in h.path
                     else redirect(target["location"], target["code"])(h, body))
    suffix = {"endpoint": "/search", "openai-generator": "/chat/completions", "judge-llm": "/chat/completions",
              "anthropic-generator": "/messages", "embedder": "/embeddings"}[kind]
    target.update(location=server.url + "/moved" + suffix, code=302)  # the API path kept: the same answer format
    with pytest.raises(APIError, match="would turn the POST into a GET"):
        _call(kind, server.url, monkeypatch)
    assert [r["method"] for r in server.requests] == ["POST"]
    server.requests.clear()
    target["code"] = 307
    _call(kind, server.url, monkeypatch)  # same origin, method and body kept: followed
    first, second = server.requests
    assert second["method"] == "POST" and second["body"] == first["body"] and "moved" in second["path"]


def test_redirects_to_other_schemes_and_same_origin_gets(servers):
    for location in ("file:///etc/passwd", "ftp://127.0.0.1/x", "gopher://127.0.0.1:70/"):
        server = servers(redirect(location))
        with pytest.raises(APIError, match="only http:// and https:// redirects are followed") as e:
            JSONClient(server.url, max_retries=0, timeout=2).post("x", None, method="GET")
        assert location.split(":")[0] + " scheme" in str(e.value)
    # http -> https on the same host is another origin (the scheme differs)
    assert "another origin" in redirect_problem("http://h:80/a", "GET", 301, "https://h/a")
    assert redirect_problem("http://h/a", "GET", 302, "http://H:80/b") is None  # the default port is the same
    server = servers(lambda h, body: reply(h, {"ok": 1}) if h.path == "/b" else redirect("/b", 302)(h, body))
    assert JSONClient(server.url, max_retries=0, timeout=2).post("a", None, method="GET") == {"ok": 1}


def test_an_endless_chunked_answer_stops_at_the_size_cap(servers):
    stop = time.monotonic() + MAX_S

    def endless(h, body):
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        h.wfile.write(b"1\r\n[\r\n")
        piece = b"0," * 32768
        while time.monotonic() < stop:
            h.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))

    server = servers(endless)  # read to the cap, then refused (the server would go on for MAX_S)
    with pytest.raises(APIError, match="goes on past the 1 MiB a client reads"):
        JSONClient(server.url, max_retries=0, timeout=5, max_bytes=2 ** 20).post("x", {})


def test_a_huge_content_length_is_refused_before_reading(servers):
    def huge(h, body):
        h.send_response(200)
        h.send_header("Content-Length", str(200 * 2 ** 20))
        h.end_headers()
        h.wfile.write(b"[" * 1024)  # and never the rest

    server = servers(huge)  # a read of the body would end in the 5 s timeout, with another message
    with pytest.raises(APIError, match=r"the answer is 200 MiB \(Content-Length\), more than the 32 MiB"):
        JSONClient(server.url, max_retries=0, timeout=5).post("x", {})


@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_trickling_server_cannot_stretch_the_timeout(servers, where):
    stop = time.monotonic() + MAX_S

    def trickle(h, body):
        h.wfile.write(b"HTTP/1.1 200 OK\r\n")
        if where == "body":
            h.wfile.write(b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n[")
        n = 0
        while time.monotonic() < stop:
            time.sleep(0.2)
            h.wfile.write(b"X-Slow-%d: 1\r\n" % n if where == "headers" else b"0,")
            n += 1

    server = servers(trickle)
    # the attempt's watch stopped it (this message says so); a socket timeout that each trickled byte restarts
    # would have read on until the server stopped, and failed with another message
    with pytest.raises(APIError, match=r"giving up after 1 attempts; last error no complete answer within 1 s "
                                       r"\(timeout\)"):
        JSONClient(server.url, max_retries=0, timeout=1.0).post("x", {})


def test_retry_waits_are_capped_and_a_call_has_a_deadline(servers, monkeypatch):
    waits = []  # the client's sleeps between attempts (this thread's only; the servers sleep in theirs)
    sleep, main = time.sleep, threading.current_thread()

    def recorded(seconds):
        if threading.current_thread() is main:
            waits.append(seconds)
        sleep(seconds)

    monkeypatch.setattr(time, "sleep", recorded)
    server = servers(lambda h, body: reply(h, {"error": "busy"}, 429, [("Retry-After", "30")]))
    client = JSONClient(server.url, max_retries=3, timeout=1, max_wait=0.2, deadline=30)
    with pytest.raises(APIError, match="giving up after 4 attempts"):
        client.post("x", {})
    assert waits == [0.2, 0.2, 0.2] and client.retries == 3  # three waits of 0.2 s, not of 30 s
    waits.clear()
    client = JSONClient(server.url, max_retries=3, timeout=1, max_wait=10, deadline=2)
    with pytest.raises(APIError, match="would start past the call's deadline of 2 s"):
        client.post("x", {})
    assert waits == [] and client.requests == 1  # a wait past the deadline is not waited
    stop = time.monotonic() + MAX_S

    def hang(h, body):
        while time.monotonic() < stop:
            time.sleep(0.05)

    hung = servers(hang)
    client = JSONClient(hung.url, max_retries=5, timeout=0.5, backoff=0.0, deadline=1.3)
    with pytest.raises(APIError, match="within the call's deadline of 1.3 s"):
        client.post("x", {})
    assert client.requests in (2, 3)  # 0.5 + 0.5 (+ what is left), not the 6 attempts allowed
    client = JSONClient(hung.url, max_retries=5, timeout=1.0, backoff=0.0, deadline=0.4)
    with pytest.raises(APIError, match=r"giving up after 1 attempts within the call's deadline of 0.4 s; "
                                       r"last error no complete answer within 0\.[34]\d* s"):
        client.post("x", {})  # the attempt is given what is left of the deadline, not its full 1 s


def test_answers_that_are_not_utf8_or_too_deep_are_clear_errors(servers):
    for raw, message in ((b'{"a": "\xff\xfe"}', "not UTF-8 text"), (b"[" * 100_000, "nested too deeply"),
                         (b"<html>", "not JSON")):
        server = servers(lambda h, body, raw=raw: reply(h, raw))
        with pytest.raises(APIError, match=message):
            JSONClient(server.url, max_retries=0, timeout=2).post("x", {})


def test_status_codes_carry_on_the_error(servers):
    server = servers(lambda h, body: reply(h, {"error": "no"}, 401))
    with pytest.raises(APIError, match="HTTP 401") as e:
        JSONClient(server.url, max_retries=3, timeout=2).post("x", {})
    assert e.value.status == 401 and len(server.requests) == 1  # not retried


def test_redact_url():
    assert redact_url("http://user:pa55@milvus:19530") == "http://***@milvus:19530"
    assert redact_url("https://tok@host/x?q={query}&api_key=s3&k=5&access_token=t&sig=abc&Key=") == \
        "https://***@host/x?q={query}&api_key=***&k=5&access_token=***&sig=***&Key="
    assert redact_url("https://h/s?token={k}&apiKey=a%20b#frag") == "https://h/s?token={k}&apiKey=***#frag"
    assert redact_url("./index.db") == "./index.db" and redact_url(None) == ""
    assert redact_url("http://[::1]:bad@x") == "http://***@x"  # unparsable: still no userinfo
    url = "http://h/search?q=x&X-Amz-Signature=abc&X-Amz-Credential=AKIA&password=p&session=s"
    assert set(redact_url(url).split("&")[1:]) == {"X-Amz-Signature=***", "X-Amz-Credential=***",
                                                    "password=***", "session=***"}


def test_redact_text_hides_the_credentials_of_every_url_in_a_text():
    # MLflow's own exception text, as ragtune wraps it: two URLs, each with a password
    text = ("MLflow at http://alice:s3cr3tPW@127.0.0.1:9/ refused or failed: API request to "
            "http://alice:s3cr3tPW@127.0.0.1:9/api/2.0/mlflow/experiments/get-by-name failed with exception "
            "HTTPConnectionPool(host='127.0.0.1', port=9): Max retries exceeded with url: "
            "/api/2.0/mlflow/experiments/get-by-name?experiment_name=ragtune&access_token=t0k3n (Caused by ...)")
    out = redact_text(text)
    assert "s3cr3tPW" not in out and "alice" not in out and "t0k3n" not in out
    assert out.count("http://***@127.0.0.1:9/") == 2 and "?experiment_name=ragtune&access_token=***" in out
    # query tokens in several URLs of one text, the sentence's punctuation kept, harmless parameters kept
    out = redact_text("tried https://h/x?token=abc&k=5, then (https://u:p4ss@h2:19530?api_key=xyz). "
                      "and 'milvus://root:Milvus9@m/db?password=pw1' last")
    assert out == ("tried https://h/x?token=***&k=5, then (https://***@h2:19530?api_key=***). "
                   "and 'milvus://***@m/db?password=***' last")
    # a password holding a quote or an @ is still hidden whole
    assert redact_text("at 'http://bob:it's@a@h:5/x' now") == "at 'http://***@h:5/x' now"
    # a URL that went through a path (pathlib keeps one slash of two)
    assert redact_text("corpus path https:/alice:pw@h/docs?token=t does not exist") == \
        "corpus path https:/***@h/docs?token=*** does not exist"
    # text without a URL, and URLs without credentials, come back unchanged
    for plain in ("plain text: a@b.c wrote 50% & more ?x=1 = y", "sqlite:///out/mlruns/mlflow.db",
                  "C:/Users/me@corp/docs and note:/x", "ratio 3:1, at 10:/30",
                  "http://127.0.0.1:5000/api?q={query}&k=10", "", "error: --top must be at least 1"):
        assert redact_text(plain) == plain
    assert redact_text(None) == "" and redact_text(ValueError("https://k:v@h")) == "https://***@h"


def test_messages_and_recorded_configs_never_hold_url_credentials(servers, corpus, golden, monkeypatch):
    pytest.importorskip("jmespath")
    from ragtune.external.http import evaluate_endpoint

    server = servers(lambda h, body: reply(h, {"error": "down"}, 500))
    url = server.url.replace("http://", "http://admin:hunter2@") + "/search?api_key=s3cr3t"
    with pytest.raises(APIError) as e:  # every question failed: the first failure is raised
        evaluate_endpoint(url, golden, corpus=corpus, retries=0, timeout=1, body='{"q": "{query}"}')
    assert "hunter2" not in str(e.value) and "s3cr3t" not in str(e.value) and "api_key=***" in str(e.value)
    ok = servers(lambda h, body: reply(h, {"hits": ["a.md"]}) if h.headers.get("Authorization") ==
                 "Basic YWRtaW46aHVudGVyMg==" else reply(h, {}, 401))  # the userinfo is sent as Basic auth
    url = ok.url.replace("http://", "http://admin:hunter2@") + "/search?token=s3cr3t"
    result = evaluate_endpoint(url, golden, corpus=corpus, retries=0, timeout=2, body='{"q": "{query}"}')
    text = result.to_json()
    assert "hunter2" not in text and "s3cr3t" not in text and "token=***" in result.config["endpoint"]
    assert result.config["retriever"] == f"127.0.0.1:{ok.port}"
    emb = OpenAIEmbedder("e", base_url="https://k:v@h/v1?key=abc")
    assert "abc" not in emb.model_id and ":v@" not in emb.model_id


@pytest.fixture
def corpus(tmp_path):
    from ragtune import load_corpus
    from tests.helpers import DOCS, write_files
    return load_corpus(write_files(tmp_path / "docs", DOCS))


@pytest.fixture
def golden():
    from ragtune import GoldenSet
    from ragtune.golden import GoldenItem
    from tests.helpers import QUESTIONS
    return GoldenSet([GoldenItem(i, q, {a: 1.0 for a in rel}) for i, q, rel in QUESTIONS], source="questions")


def test_milvus_uri_messages_are_redacted():
    from ragtune import ConfigError
    from ragtune.engines.milvus import check_uri

    with pytest.raises(ConfigError) as e:
        check_uri("ftp://admin:pw123@milvus:19530?token=t0k")
    assert "pw123" not in str(e.value) and "t0k" not in str(e.value) and "***@milvus" in str(e.value)
