"""What one request to the workbench may carry (ragtune.label.limits): a body over the limit is answered 413 before
it is read, a field over its limit 422, each with one message in ``error`` (what the page shows), and the golden
file is left as it was. Peak memory of refusing an oversized body is measured against a bound stated here."""

import asyncio
import json
import tracemalloc

import pytest

from ragtune import load_corpus
from ragtune.label import limits
from ragtune.label.golden_file import GoldenFile
from tests.helpers import SWEEP_DOCS, write_files

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient as _TestClient  # noqa: E402

from ragtune.label.app import Workbench, create_app  # noqa: E402
from ragtune.label.candidates import Candidates  # noqa: E402

W = {"X-Ragtune-Workbench": "1"}
MiB = 1024 * 1024


@pytest.fixture
def setup(tmp_path):
    corpus = load_corpus(write_files(tmp_path / "c", SWEEP_DOCS))
    path = tmp_path / "g.jsonl"
    bench = Workbench(corpus, GoldenFile(path), Candidates(corpus, systems=["bm25"], depth=5), judge="ana")
    c = _TestClient(create_app(bench), base_url="http://127.0.0.1:8400")
    r = c.post("/api/questions", json={"questions": [{"q": "How do I descale the kettle?"}]}, headers=W)
    assert r.status_code == 200, r.text
    return c, bench, path


def _rev(c, qid="q1"):
    return c.get(f"/api/question/{qid}").json()["rev"]


def test_a_body_over_the_limit_is_413_with_one_message_and_the_file_is_unchanged(setup):
    c, _, path = setup
    before = path.read_bytes()
    body = json.dumps({"questions": [{"q": "x" * (limits.MAX_BODY_BYTES + 10)}]})
    r = c.post("/api/questions", content=body, headers={**W, "Content-Type": "application/json"})
    assert r.status_code == 413
    assert r.json()["error"].startswith(f"request body over {limits.MAX_BODY_BYTES:,} bytes")
    r = c.post("/api/question/q1/edit", content=json.dumps({"rev": _rev(c), "q": "y" * 30 * MiB}),
               headers={**W, "Content-Type": "application/json"})
    assert r.status_code == 413 and "import fewer questions" in r.json()["error"]
    assert path.read_bytes() == before


@pytest.mark.parametrize("path_, body, said", [
    ("/api/questions", {"questions": [{"q": "q" * (limits.MAX_QUESTION_CHARS + 1)}]},
     "question 1 to add is 2,001 characters long; the workbench takes at most 2,000"),
    ("/api/questions", {"questions": [{"q": "fine", "tags": ["t"] * (limits.MAX_TAGS + 1)}]}, "51 tags"),
    ("/api/questions", {"questions": [{"q": "fine", "draft": {"variants": ["v" * 1000] * 100}}]},
     "drafting notes ('draft') are"),
    ("/api/questions", {"questions": [{"q": "fine", "relevant": [f"kettle.md#a{i}" for i in range(1001)]}]},
     "'relevant' lists 1,001 anchors"),
    ("/api/questions", {"questions": [{"q": "fine", "id": "i" * 201}]}, "its id is 201 characters"),
    ("/api/questions", {"questions": [{"q": f"q{i}"} for i in range(limits.MAX_IMPORT + 1)]},
     "10,001 questions at once"),
    ("/api/question/q1/edit", {"q": "e" * 5000}, "the question is 5,000 characters long"),
    ("/api/question/q1/edit", {"tags": ["t" * 101]}, "a tag of the question is 101 characters long"),
    ("/api/question/q1/grade", {"anchor": "kettle.md#" + "a" * 1000, "grade": 0}, "anchor is 1,010 characters"),
    ("/api/question/q1/pool", {"anchor": "kettle.md#" + "a" * 1000}, "anchor is 1,010 characters"),
])
def test_a_field_over_its_limit_is_422_with_one_message_and_the_file_is_unchanged(setup, path_, body, said):
    c, _, path = setup
    before = path.read_bytes()
    if "/question/" in path_ and not path_.endswith("/pool"):
        body = {**body, "rev": _rev(c)}
    r = c.post(path_, json=body, headers=W)
    assert r.status_code == 422, r.text
    assert said in r.json()["error"] and len(r.json()["error"]) < 400
    assert path.read_bytes() == before


def test_a_bad_request_body_is_one_line_the_page_can_show(setup):
    c, _, _ = setup
    r = c.post("/api/question/q1/grade", json={"anchor": "kettle.md#kettle"}, headers=W)  # no rev
    assert r.status_code == 422 and r.json()["error"].startswith("bad request: rev: ")


def _post_asgi(app, chunks, content_length=None):
    """POST /api/questions straight through the ASGI app, the body received in ``chunks`` (made one at a time):
    (status, bytes handed to the app)."""
    handed = 0
    it = iter(chunks)
    sent = []

    async def receive():
        nonlocal handed
        chunk = next(it, None)
        if chunk is None:
            return {"type": "http.request", "body": b"", "more_body": False}
        handed += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def send(message):
        sent.append(message)

    headers = [(b"host", b"127.0.0.1:8400"), (b"content-type", b"application/json"), (b"x-ragtune-workbench", b"1")]
    if content_length is not None:
        headers.append((b"content-length", str(content_length).encode()))
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/api/questions", "raw_path": b"/api/questions", "query_string": b"", "headers": headers,
             "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8400), "root_path": ""}
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], handed


def test_an_oversized_body_is_refused_without_being_read_peak_memory_bounded(setup):
    """64 MiB sent in 1 MiB pieces without a Content-Length: the server stops reading past the 4 MiB limit, and
    the peak memory of handling it stays under twice the limit (reading it whole would take over 64 MiB). A
    400 MB body announced by its Content-Length is refused before one byte is read."""
    _, bench, path = setup
    app = create_app(bench)
    _post_asgi(app, [json.dumps({"questions": [{"q": "warm up"}]}).encode()])  # the app's stack is built once
    before = path.read_bytes()
    size, piece = 64 * MiB, MiB

    def pieces():
        for _ in range(size // piece):
            yield b"x" * piece

    tracemalloc.start()
    try:
        status, handed = _post_asgi(app, pieces())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert status == 413 and handed <= limits.MAX_BODY_BYTES + piece
    bound = 2 * limits.MAX_BODY_BYTES
    assert peak < bound, f"peak {peak / MiB:.1f} MiB handling a {size // MiB} MiB body; bound {bound // MiB} MiB"
    status, handed = _post_asgi(app, pieces(), content_length=400_000_000)
    assert status == 413 and handed == 0
    assert path.read_bytes() == before
