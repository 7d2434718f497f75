"""The OpenAI-compatible client against a local server speaking the real wire format."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from ragtune.embed.openai import EmbeddingAPIError, OpenAIEmbedder


class Server:
    def __init__(self, script):
        self.script = list(script)  # one action per request: "ok", 429, 500, "slow", "garbage", 401
        self.requests = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                action = outer.script.pop(0) if outer.script else "ok"
                if action == "slow":
                    time.sleep(1.0)
                    action = "ok"
                if isinstance(action, int):
                    self.send_response(action)
                    if action == 429:
                        self.send_header("Retry-After", "0")
                    self.end_headers()
                    self.wfile.write(b'{"error": {"message": "nope"}}')
                    return
                if action == "garbage":
                    payload = b"<html>not json</html>"
                else:
                    data = [{"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, float(i)]}
                            for i, t in enumerate(body["input"])]
                    data.reverse()  # servers may return out of order: the client sorts by index
                    payload = json.dumps({"object": "list", "data": data, "model": body["model"],
                                          "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


@pytest.fixture
def server(request):
    s = Server(getattr(request, "param", []))
    yield s
    s.close()


def embedder(server, **kw):
    return OpenAIEmbedder("text-embedding-3-small", base_url=server.url, backoff=0.01, **kw)


def test_batches_order_and_key(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    e = embedder(server, batch_size=2)
    v = e.embed(["a", "bbb", "cc"])
    assert v.shape == (3, 3)
    raw = np.array([[1, 1, 0], [3, 1, 1], [2, 1, 0]], dtype=np.float32)
    assert np.allclose(v, raw / np.linalg.norm(raw, axis=1, keepdims=True))
    assert [r["body"]["input"] for r in server.requests] == [["a", "bbb"], ["cc"]]
    assert server.requests[0]["path"] == "/v1/embeddings" and server.requests[0]["auth"] == "Bearer sk-test"
    assert e.dim == 3


@pytest.mark.parametrize("server", [[429, 500, "ok"]], indirect=True)
def test_retries_on_429_and_5xx(server):
    e = embedder(server)
    assert e.embed(["x"]).shape == (1, 3)
    assert e.retries == 2 and len(server.requests) == 3


@pytest.mark.parametrize("server", [["slow", "ok"]], indirect=True)
def test_timeout_is_retried(server):
    e = embedder(server, timeout=0.2)
    assert e.embed(["x"]).shape == (1, 3)
    assert e.retries == 1


@pytest.mark.parametrize("server", [[500, 500, 500]], indirect=True)
def test_gives_up_with_the_last_error(server):
    with pytest.raises(EmbeddingAPIError, match="giving up after 3 attempts; last error HTTP 500"):
        embedder(server, max_retries=2).embed(["x"])


@pytest.mark.parametrize("server", [[401]], indirect=True)
def test_auth_error_is_not_retried(server):
    with pytest.raises(EmbeddingAPIError, match="set OPENAI_API_KEY"):
        embedder(server).embed(["x"])
    assert len(server.requests) == 1


@pytest.mark.parametrize("server", [["garbage"]], indirect=True)
def test_non_json_answer_is_explained(server):
    with pytest.raises(EmbeddingAPIError, match="OpenAI-compatible"):
        embedder(server).embed(["x"])
