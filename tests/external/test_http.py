"""HTTP mode against real servers on 127.0.0.1: a plain stdlib server, and `ragtune serve` itself."""

import json
import re
import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ragtune import APIError, ConfigError, Pipeline, evaluate, load_corpus
from ragtune.external.http import HTTPRetriever, evaluate_endpoint
from tests.helpers import DOCS, QUESTIONS, write_files

pytest.importorskip("jmespath")

KS = (1, 3, 5)


class Search(BaseHTTPRequestHandler):
    """A search service: GET /q?text=...&n=... or POST /search {"q": ..., "size": ...}; answers nested JSON."""

    pipeline = None
    seen: list = []
    fail_first: dict = {}  # query -> how many 429/503s to answer before succeeding

    def log_message(self, *a):
        pass

    def _answer(self, query, k, headers):
        type(self).seen.append({"query": query, "k": k, "headers": dict(headers)})
        left = self.fail_first.get(query, 0)
        if left:
            self.fail_first[query] = left - 1
            self.send_response(429 if left % 2 else 503)
            self.send_header("Retry-After", "0")
            self.end_headers()
            return
        if headers.get("Authorization") != "Token s3cret":
            self.send_response(401)
            self.end_headers()
            self.wfile.write(b'{"error": "bad token"}')
            return
        hits = [{"source": {"file": h.chunk.doc_id, "from": h.chunk.start, "to": h.chunk.end}, "relevance": h.score,
                 "url": f"https://kb.example.com/{h.chunk.anchor}"}
                for h in self.pipeline.retriever.search(query, k=k).hits]
        body = json.dumps({"data": {"results": hits}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        qs = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        self._answer(qs["text"][0], int(qs["n"][0]), self.headers)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert isinstance(body["size"], int)
        self._answer(body["q"], body["size"], self.headers)


@pytest.fixture
def service(corpus, monkeypatch):
    Search.pipeline = Pipeline.build(corpus)
    Search.seen = []
    Search.fail_first = {}
    monkeypatch.setenv("KB_TOKEN", "Token s3cret")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Search)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", Search.pipeline
    server.shutdown()
    server.server_close()


SPAN = "{doc_id: source.file, start: source.from, end: source.to, score: relevance}"


def test_post_and_get_templates_score_like_the_native_retriever(service, corpus, golden):
    url, pipeline = service
    ref = evaluate(pipeline.retriever, golden, corpus, ks=KS)
    common = dict(corpus=corpus, ks=KS, hits_path="data.results", hit_field=SPAN,
                  headers={"Authorization": "KB_TOKEN"}, backoff=0.0)
    post = evaluate_endpoint(url + "/search", golden, body='{"q": "{query}", "size": "{k}"}', **common)
    get = evaluate_endpoint(url + "/q?text={query}&n={k}", golden, concurrency=4, **common)
    for got in (post, get):
        for a, b in zip(ref.questions, got.questions):
            assert {m: v for m, v in a.scores.items() if "context" not in m} == \
                pytest.approx({m: v for m, v in b.scores.items() if "context" not in m}), a.id
        assert got.matching["match_rate"] == 1.0
    assert post.config["method"] == "POST" and get.config["method"] == "GET"
    assert {s["query"] for s in Search.seen} == {i.q for i in golden}  # "&" and spaces survived the query string
    assert all(s["k"] == 100 for s in Search.seen)
    assert "s3cret" not in json.dumps(post.to_dict())  # headers are never recorded
    assert post.latency_ms["p50"] > 0 and post.latency_ms["p95"] >= post.latency_ms["p50"]


def test_urls_as_identifiers_with_a_base_url(service, corpus, golden):
    url, pipeline = service
    got = evaluate_endpoint(url + "/search", golden, corpus=corpus, ks=KS, hits_path="data.results", hit_field="url",
                            body={"q": "{query}", "size": "{k}"}, headers={"Authorization": "KB_TOKEN"},
                            base_url="https://kb.example.com/")
    assert got.matching["match_rate"] == 1.0 and set(got.matching["by_method"]) <= {"anchor", "doc"}
    assert got.metrics["recall@5"] > 0.5


def test_429_and_5xx_are_retried_with_backoff(service, corpus, golden):
    url, _ = service
    Search.fail_first = {golden.items[0].q: 2}
    got = evaluate_endpoint(url + "/search", golden, corpus=corpus, ks=KS, hits_path="data.results", hit_field=SPAN,
                            body={"q": "{query}", "size": "{k}"}, headers={"Authorization": "KB_TOKEN"}, backoff=0.0)
    assert got.config["http"] == {"requests": len(golden) + 2, "retries": 2}
    Search.fail_first = {golden.items[0].q: 5}
    opts = dict(corpus=corpus, hits_path="data.results", hit_field=SPAN, body={"q": "{query}", "size": "{k}"},
                headers={"Authorization": "KB_TOKEN"}, retries=1, backoff=0.0)
    got = evaluate_endpoint(url + "/search", golden, **opts)  # one failing question is reported, not fatal
    failed = got.config["failed"]
    assert failed["count"] == 1 and failed["questions"][0]["question"] == golden.items[0].id
    assert "giving up after 2 attempts" in failed["questions"][0]["error"]
    assert got.questions[0].scores["mrr"] == 0.0 and len(got.questions) == len(golden)
    Search.fail_first = {golden.items[0].q: 5}
    with pytest.raises(APIError, match="giving up after 2 attempts"):
        evaluate_endpoint(url + "/search", golden, fail_fast=True, **opts)


def test_http_errors_and_bad_options_say_what_to_fix(service, corpus, golden, monkeypatch):
    url, _ = service
    opts = dict(body={"q": "{query}", "size": "{k}"}, headers={"Authorization": "KB_TOKEN"}, backoff=0.0)
    with pytest.raises(ConfigError, match="hits path 'results' finds nothing in the answer \\(top-level keys: data\\)"):
        evaluate_endpoint(url + "/search", golden, corpus=corpus, hits_path="results", **opts)
    with pytest.raises(ConfigError, match="not a valid JMESPath"):
        HTTPRetriever(url, hits_path="data.[")
    with pytest.raises(ConfigError, match="has no \\{query\\}"):
        HTTPRetriever(url, body='{"q": "x"}')
    with pytest.raises(ConfigError, match="not JSON"):
        HTTPRetriever(url, body="{q: {query}}")
    with pytest.raises(ConfigError, match="http:// or https://"):
        HTTPRetriever("localhost:8000/search")
    monkeypatch.delenv("KB_TOKEN")
    with pytest.raises(ConfigError, match="environment variable KB_TOKEN is not set"):
        evaluate_endpoint(url + "/search", golden, corpus=corpus, hits_path="data.results", **opts)
    monkeypatch.setenv("KB_TOKEN", "wrong")
    with pytest.raises(APIError, match="HTTP 401") as e:
        evaluate_endpoint(url + "/search", golden, corpus=corpus, hits_path="data.results", **opts)
    assert "wrong" not in str(e.value)


uvicorn = pytest.importorskip("uvicorn")


def test_ragtune_serve_over_http_gives_the_metrics_of_the_store_itself(tmp_path, golden, monkeypatch):
    pytest.importorskip("fastapi")
    from ragtune.serve.app import create_app
    from ragtune.pipeline import PipelineConfig
    from ragtune.store import IndexStore, build_version, load_pipeline

    corpus = load_corpus(write_files(tmp_path / "c", DOCS))
    store = IndexStore(tmp_path / "s")
    build_version(store, corpus, PipelineConfig.from_flags({"chunker": "fixed", "size": 12}))
    app = create_app(str(store.root), api_key="k3y")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    try:
        pipeline = load_pipeline(store)
        direct = evaluate(pipeline.retriever, golden, pipeline.corpus, ks=KS)
        monkeypatch.setenv("RAGTUNE_TEST_KEY", "k3y")
        served = evaluate_endpoint(f"http://127.0.0.1:{port}/search", golden, corpus=pipeline.corpus, ks=KS,
                                   headers={"X-API-Key": "RAGTUNE_TEST_KEY"}, concurrency=3)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert served.matching["by_method"] == {"span": served.matching["hits"]}
    for a, b in zip(direct.questions, served.questions):
        assert {m: v for m, v in a.scores.items() if "context" not in m} == \
            pytest.approx({m: v for m, v in b.scores.items() if "context" not in m}), a.id
        assert [r["start"] for r in a.retrieved] == [r["start"] for r in b.retrieved]
    assert direct.metrics["recall@1"] == pytest.approx(served.metrics["recall@1"])
    assert 0 < direct.metrics["precision@3"] < 1  # fixed 12-word chunks: a ranking with misses, not a trivial one


class Hanging(BaseHTTPRequestHandler):
    """Answers ``{"hits": [doc]}`` at once, except for queries in ``hang``: those trickle a header line every
    0.2 s (for at most 10 s), so only a wall-clock deadline ends them."""

    hang: set = set()

    def log_message(self, *a):
        pass

    def do_POST(self):
        query = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["query"]
        if query in self.hang:
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            stop = time.monotonic() + 10
            try:
                while time.monotonic() < stop:
                    time.sleep(0.2)
                    self.wfile.write(b"X-Wait: 1\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        body = json.dumps({"hits": [DOCS_FIRST]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


DOCS_FIRST = sorted(DOCS)[0]


@pytest.fixture
def hanging():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hanging)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/search"
    server.shutdown()
    server.server_close()


def test_a_trickling_question_fails_alone_within_its_timeout(hanging, corpus, golden):
    Hanging.hang = {golden.items[1].q}
    got = evaluate_endpoint(hanging, golden, corpus=corpus, ks=KS, timeout=0.5, retries=0)
    assert got.config["failed"]["count"] == 1
    (failed,) = got.config["failed"]["questions"]
    assert failed["question"] == golden.items[1].id and "no complete answer within 0.5 s" in failed["error"]
    assert len(got.questions) == len(golden) and got.config["http"]["requests"] == len(golden)
    with pytest.raises(APIError, match="no complete answer within 0.5 s"):
        evaluate_endpoint(hanging, golden, corpus=corpus, ks=KS, timeout=0.5, retries=0, fail_fast=True)


@pytest.mark.parametrize("concurrency", [1, 3])
def test_the_whole_run_has_a_deadline(hanging, corpus, golden, concurrency):
    Hanging.hang = {i.q for i in golden.items[1:]}
    got = evaluate_endpoint(hanging, golden, corpus=corpus, ks=KS, timeout=30, retries=3, run_deadline=1.0,
                            concurrency=concurrency)
    assert got.config["deadline_s"] == 1.0 and got.config["failed"]["count"] == len(golden) - 1
    errors = [f["error"] for f in got.config["failed"]["questions"]]
    assert all("deadline" in e for e in errors), errors
    # a request in flight was given what was left of the run (at most 1 s), never its own 30 s and 3 retries
    asked = [float(x) for e in errors for x in re.findall(r"no complete answer within ([0-9.e-]+) s", e)]
    assert all(x <= 1.0 for x in asked) and not any("giving up after 4 attempts" in e for e in errors), errors


def test_eval_cli_reports_failed_questions_and_fail_fast_stops(hanging, tmp_path, golden, capsys):
    from ragtune.cli import main
    from tests.helpers import golden_rows, write_jsonl

    Hanging.hang = {golden.items[0].q}
    gold = write_jsonl(tmp_path / "golden.jsonl", golden_rows(QUESTIONS))
    docs = write_files(tmp_path / "docs", DOCS)
    args = ["eval", "--golden", str(gold), "--corpus", str(docs), "--endpoint", hanging, "--timeout", "0.3",
            "--retries", "0", "--deadline", "20"]
    assert main(args + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["config"]["failed"]["count"] == 1 and out["config"]["failed"]["questions"][0]["question"] == \
        golden.items[0].id
    assert main(args) == 0
    assert "FAILED 1 of" in capsys.readouterr().out
    assert main(args + ["--fail-fast"]) != 0
    assert "no complete answer within 0.3 s" in capsys.readouterr().err
