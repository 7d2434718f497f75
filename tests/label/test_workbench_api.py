"""The workbench's golden file and JSON API: judgments saved at once and atomically, conflicts instead of silent
overwrites, drafts never scored, the server's security rules, pools in an order that hides who found what,
telemetry questions grouped. The page itself is tested in a real browser (test_workbench_browser.py)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ragtune import load_corpus, load_golden
from ragtune.golden import check_golden
from ragtune.cli import main
from ragtune.errors import ConfigError, GoldenSetError
from ragtune.label import golden_file as gf
from ragtune.label.golden_file import Conflict, GoldenFile, revision
from tests.helpers import SWEEP_DOCS, write_files, write_jsonl

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient as _TestClient  # noqa: E402

from ragtune.label.app import Workbench, create_app  # noqa: E402
from ragtune.label.candidates import Candidates  # noqa: E402

W = {"X-Ragtune-Workbench": "1"}


def TestClient(app):  # noqa: N802 - addressed as a browser on this machine would
    return _TestClient(app, base_url="http://127.0.0.1:8400")


@pytest.fixture
def corpus(tmp_path):
    return load_corpus(write_files(tmp_path / "c", SWEEP_DOCS))


def _bench(corpus, path, **kw):
    pool = kw.pop("pool", None)
    return Workbench(corpus, GoldenFile(path), Candidates(corpus, systems=["bm25"], depth=5, pool=pool), judge="ana",
                     pool_name="p.jsonl" if pool else None, **kw)


@pytest.fixture
def client(corpus, tmp_path):
    bench = _bench(corpus, tmp_path / "g.jsonl")
    return TestClient(create_app(bench)), bench


def _add(c, q):
    r = c.post("/api/questions", json={"questions": [{"q": q}]}, headers=W)
    assert r.status_code == 200, r.text
    return r.json()["added"][0]


def _grade(c, qid, anchor, grade, rev=None):
    rev = rev or c.get(f"/api/question/{qid}").json()["rev"]
    return c.post(f"/api/question/{qid}/grade", json={"rev": rev, "anchor": anchor, "grade": grade}, headers=W)


def test_from_no_file_to_judged_questions_every_change_on_disk_at_once(client, tmp_path):
    c, _ = client
    path = tmp_path / "g.jsonl"
    assert not path.exists() and c.get("/api/state").json()["questions"] == []
    qid = _add(c, "How do I descale the kettle?")
    row = json.loads(path.read_text())
    assert row["status"] == "draft" and row["relevant"] == []  # a new question is never scored as unanswerable
    q = c.get(f"/api/question/{qid}").json()
    assert q["status"] == "to judge" and "kettle.md#kettle" in [x["anchor"] for x in q["candidates"]]
    assert _grade(c, qid, "kettle.md#kettle", 2).status_code == 200
    row = json.loads(path.read_text())
    assert "status" not in row and row["relevant"] == ["kettle.md#kettle"]  # grade 2, the top: a list
    assert row["judgments"][0]["by"] == "ana" and row["judgments"][0]["pool"] == "workbench"
    _grade(c, qid, "oven.md#oven", 0)
    item = load_golden(path).items[0]  # strict: the accepted question scores
    assert item.relevant == {"kettle.md#kettle": 2.0} and item.not_relevant == ("oven.md#oven",)
    assert main(["golden", "check", "--corpus", str(tmp_path / "c"), "--golden", str(path)]) == 0
    # withdrawing the only relevant grade sends it back to judging, never to "unanswerable"
    _grade(c, qid, "kettle.md#kettle", None)
    assert json.loads(path.read_text())["status"] == "draft"
    summary = check_golden(load_golden(path, strict=False), load_corpus(tmp_path / "c")).summary
    assert (summary["answerable"], summary["unanswerable"], summary["drafts"]) == (0, 0, 1)


def test_a_stale_revision_is_a_conflict_that_shows_the_current_question_and_overwrites_nothing(client, tmp_path):
    c, _ = client
    qid = _add(c, "Which rack for glasses?")
    stale = c.get(f"/api/question/{qid}").json()["rev"]  # two tabs loaded the same question
    assert _grade(c, qid, "dishwasher.md#loading", 2, rev=stale).status_code == 200  # tab one
    r = _grade(c, qid, "dishwasher.md#loading", 0, rev=stale)  # tab two, on what it loaded
    assert r.status_code == 409 and r.json()["conflict"]
    assert "changed elsewhere" in r.json()["error"] and r.json()["current"]["status"] == "judged"
    assert load_golden(tmp_path / "g.jsonl").items[0].relevant == {"dishwasher.md#loading": 2.0}
    # a deleted question conflicts too
    rev = c.get(f"/api/question/{qid}").json()["rev"]
    assert c.post(f"/api/question/{qid}/delete", json={"rev": rev}, headers=W).status_code == 200
    r = _grade(c, qid, "dishwasher.md#loading", 1, rev=rev)
    assert r.status_code == 409 and r.json()["current"] is None
    assert (tmp_path / "g.jsonl").read_text() == ""


def test_unanswerable_edit_tags_and_export(client, tmp_path):
    c, bench = client
    a, b = _add(c, "Do you sell televisions?"), _add(c, "How long do gift cards last?")
    rev = c.get(f"/api/question/{a}").json()["rev"]
    r = c.post(f"/api/question/{a}/unanswerable", json={"rev": rev, "value": True}, headers=W)
    assert r.json()["status"] == "unanswerable" and r.json()["complete"]
    _grade(c, b, "gifts.md#gift-cards", 2)
    rev = c.get(f"/api/question/{b}").json()["rev"]
    r = c.post(f"/api/question/{b}/unanswerable", json={"rev": rev, "value": True}, headers=W)
    assert r.status_code == 400 and "grade them 0" in r.json()["error"]
    r = c.post(f"/api/question/{b}/edit", json={"rev": rev, "q": "Do gift cards expire?", "tags": ["faq", " faq", ""]},
               headers=W)
    assert r.json()["q"] == "Do gift cards expire?" and r.json()["tags"] == ["faq"]
    golden = load_golden(tmp_path / "g.jsonl")
    assert [i.answerable for i in golden] == [False, True]
    exported = [json.loads(x) for x in c.get("/api/export").text.splitlines()]
    assert [x["id"] for x in exported] == [a, b] and exported[1]["q"] == "Do gift cards expire?"
    # progress: two complete? b has a 5-section pool with one graded: not complete
    st = c.get("/api/state").json()["progress"]
    assert st["questions"] == 2 and st["complete"] == 1 and st["to_go"] == 1


def test_drafts_keep_their_proposal_until_a_person_grades(client, tmp_path):
    c, _ = client
    drafted = {"id": "d1", "q": "How often should the kettle be descaled?", "relevant": ["kettle.md#kettle"],
               "status": "draft", "draft": {"section": "kettle.md#kettle"}}
    r = c.post("/api/questions", json={"questions": [drafted, {"q": "how often should the KETTLE be descaled"}]},
               headers=W).json()
    assert r == {"added": ["d1"], "skipped": 1}  # the same question again (case, punctuation) is left out
    q = c.get("/api/question/d1").json()
    assert q["status"] == "draft" and [x["anchor"] for x in q["candidates"] if x["proposed"]] == ["kettle.md#kettle"]
    assert load_golden(tmp_path / "g.jsonl", strict=False).items[0].relevant == {}  # a proposal is no label
    _grade(c, "d1", "kettle.md#kettle", 2)
    item = load_golden(tmp_path / "g.jsonl").items[0]
    assert item.relevant == {"kettle.md#kettle": 2.0} and "proposed" not in item.draft


def test_pool_file_holes_in_corpus_order_not_rank_order(corpus, tmp_path):
    golden = write_jsonl(tmp_path / "g.jsonl", [{"id": "q1", "q": "tablets", "relevant": ["dishwasher.md#detergent"]}])
    pool = {"q1": ["washing-machine.md#washing-machine", "dishwasher.md#loading"]}  # best rank first
    bench = _bench(corpus, golden, pool=pool)
    c = TestClient(create_app(bench))
    q = c.get("/api/question/q1").json()
    assert [x["anchor"] for x in q["candidates"]] == ["dishwasher.md#loading", "dishwasher.md#detergent",
                                                       "washing-machine.md#washing-machine"]
    assert q["pool"] == 3 and q["candidates"][1]["grade"] == 2  # a listed anchor: the top grade
    _grade(c, "q1", "dishwasher.md#loading", 0)
    item = load_golden(golden).items[0]
    assert item.judgments[0].pool == "p.jsonl"  # a hole of the pool file says so in its provenance
    # a section the pool missed, found by search and added
    found = c.get("/api/search", params={"q": "popcorn turntable", "qid": "q1"}).json()["results"]
    assert found[0]["anchor"] == "microwave.md#snacks"
    r = c.post("/api/question/q1/pool", json={"anchor": "microwave.md#snacks"}, headers=W).json()
    assert "microwave.md#snacks" in [x["anchor"] for x in r["candidates"]]
    r = c.post("/api/question/q1/pool", json={"anchor": "microwave.md#nope"}, headers=W)
    assert r.status_code == 400 and "unknown anchor" in r.json()["error"]


def test_security_writes_need_the_header_foreign_hosts_refused_and_a_key_when_set(corpus, tmp_path):
    bench = _bench(corpus, tmp_path / "g.jsonl")
    c = TestClient(create_app(bench))
    r = c.post("/api/questions", json={"questions": [{"q": "x"}]})  # what a cross-site form or fetch would send
    assert r.status_code == 403 and not (tmp_path / "g.jsonl").exists()
    r = c.post("/api/questions", content="questions=x", headers={**W, "Content-Type": "text/plain"})
    assert r.status_code == 403
    assert c.get("/api/state", headers={"Host": "evil.example:8400"}).status_code == 421
    page = c.get("/")
    assert page.status_code == 200 and "default-src 'self'" in page.headers["content-security-policy"]
    keyed = TestClient(create_app(bench, api_key="s3cret", host="0.0.0.0"))
    assert keyed.get("/api/state").status_code == 401
    assert keyed.get("/api/state", headers={"X-API-Key": "s3cret"}).status_code == 200
    assert keyed.get("/").status_code == 200  # the page holds no data; it asks for the key


def test_bad_files_are_refused_with_what_to_do(tmp_path, corpus):
    (tmp_path / "g.yaml").write_text("- id: q1\n  q: x\n  relevant: []\n")
    with pytest.raises(ConfigError, match="JSON Lines"):
        GoldenFile(tmp_path / "g.yaml")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "q1", "q": "x", "relevant": []}\n{"id": "q1", "q": "y", "relevant": []}\n')
    with pytest.raises(GoldenSetError, match="duplicate question id 'q1'.*line 1"):
        GoldenFile(bad)
    bad.write_text('{"id": "q1", "q": "x", "relevant": []\n')
    with pytest.raises(GoldenSetError, match="bad.jsonl:1: not valid JSON"):
        GoldenFile(bad)
    with pytest.raises(GoldenSetError, match="give 0"):
        gf.grade(load_golden(write_jsonl(tmp_path / "ok.jsonl", [{"id": "a", "q": "x", "relevant": []}])).items[0],
                 "kettle.md", 3, by="ana")


def test_two_processes_on_one_file_lose_no_judgment(tmp_path):
    path = write_jsonl(tmp_path / "g.jsonl", [{"id": f"q{i}", "q": f"question {i}", "relevant": [],
                                               "status": "draft"} for i in range(2)])
    code = ("import sys; from ragtune.label.golden_file import GoldenFile, grade\n"
            "f = GoldenFile(sys.argv[1]); qid = sys.argv[2]\n"
            "for n in range(40): f.change(qid, None, lambda it: grade(it, f'doc{n}.md', 0, by=qid))\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), f"q{i}"]) for i in range(2)]
    assert [p.wait(60) for p in procs] == [0, 0]
    items = load_golden(path, strict=False).items
    assert [len(i.judged) for i in items] == [40, 40]


def test_kill_9_in_the_middle_of_saving_leaves_a_valid_file(tmp_path):
    path = write_jsonl(tmp_path / "g.jsonl", [{"id": f"q{i}", "q": f"question {i}", "relevant": [],
                                               "status": "draft"} for i in range(200)])
    code = ("import os, sys; from ragtune.label.golden_file import GoldenFile, grade\n"
            "f = GoldenFile(sys.argv[1])\n"
            "n = 0\n"
            "while True:\n"
            "    n += 1; f.change(f'q{n % 200}', None, lambda it: grade(it, f'doc{os.getpid()}-{n}.md', 0, by='ana'))\n"
            "    n == 1 and print('ready', flush=True)\n")
    for delay in (0.0, 0.013, 0.031, 0.047):  # writes follow each other: a kill lands mid-write or between
        before = path.read_bytes()
        p = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE)
        assert p.stdout.readline().strip() == b"ready"
        time.sleep(delay)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        golden = load_golden(path, strict=False)  # parses: the old file or a whole new one, never half
        assert len(golden) == 200 and path.read_bytes() != before
    GoldenFile(path)  # opening again cleans what the killed writer left
    assert not list(tmp_path.glob(".g.jsonl.tmp-*"))


def test_revision_changes_with_every_field(tmp_path):
    item = load_golden(write_jsonl(tmp_path / "g.jsonl", [{"id": "a", "q": "x", "relevant": []}])).items[0]
    revs = {revision(item), revision(gf.edit(item, q="y")), revision(gf.edit(item, tags=["t"])),
            revision(gf.grade(item, "a.md", 0, by="ana"))}
    assert len(revs) == 4
    with pytest.raises(Conflict):
        GoldenFile(tmp_path / "g.jsonl").change("a", "0" * 16, lambda it: it)


def test_telemetry_questions_grouped_not_found_first_near_duplicates_merged(tmp_path):
    pytest.importorskip("sklearn")
    from ragtune.embed import get_embedder
    from ragtune.label.traffic import traffic_questions

    rows = ([{"query": "How do I descale my kettle?", "outcome": "answered"}] * 3
            + [{"query": "how do i descale my kettle", "outcome": "answered"}]
            + [{"query": "How do I descale the kettle?", "outcome": "answered"}]
            + [{"query": "Can I pay with bitcoin?", "outcome": "not_found"}] * 2
            + [{"query": "Which cryptocurrencies can I pay with?", "outcome": "not_found"}])
    groups = traffic_questions(rows, get_embedder("minilm"), known={"can i pay with bitcoin"})
    assert groups[0]["not_found"] == 3  # what the corpus could not answer comes first
    first = groups[0]["questions"][0]
    assert first["q"] == "Can I pay with bitcoin?" and first["asked"] == 2 and first["known"]
    kettle = next(q for g in groups for q in g["questions"] if "kettle" in q["q"])
    assert kettle["q"] == "How do I descale my kettle?" and kettle["asked"] == 5  # spelling and wording merged
    assert kettle["variants"] == ["How do I descale the kettle?"]


def test_kill_9_of_the_server_during_saves_leaves_a_valid_golden_set(tmp_path):
    """The real `ragtune label` server, saving judgments as fast as two clients send them, killed with SIGKILL."""
    import threading
    import urllib.request

    from tests.helpers import free_port

    corpus = write_files(tmp_path / "c", SWEEP_DOCS)
    path = write_jsonl(tmp_path / "g.jsonl", [{"id": f"q{i}", "q": f"question {i}", "relevant": [], "status": "draft"}
                                              for i in range(50)])
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "ragtune", "label", "--corpus", str(corpus), "--golden", str(path),
                             "--pool-systems", "bm25", "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    anchors = load_corpus(corpus).anchors()
    saved = []

    def judge(offset):
        n = offset
        while proc.poll() is None:
            n += 2
            qid = f"q{n % 50}"
            try:
                with urllib.request.urlopen(url + f"/api/question/{qid}", timeout=10) as r:
                    rev = json.loads(r.read())["rev"]
                body = json.dumps({"rev": rev, "anchor": anchors[n % len(anchors)], "grade": 0}).encode()
                req = urllib.request.Request(url + f"/api/question/{qid}/grade", data=body,
                                             headers={**W, "Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=10):
                    saved.append(n)
            except OSError:
                time.sleep(0.05)

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            urllib.request.urlopen(url + "/api/state", timeout=5).close()
            break
        except OSError:
            time.sleep(0.2)
    threads = [threading.Thread(target=judge, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    while len(saved) < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)  # mid-stream: saves were being written
    proc.wait()
    for t in threads:
        t.join(30)
    assert len(saved) >= 20
    golden = load_golden(path, strict=False)
    assert len(golden) == 50 and sum(len(i.judged) for i in golden) >= len(saved)  # every answered save is on disk
    assert main(["golden", "check", "--corpus", str(corpus), "--golden", str(path)]) == 0


def test_a_question_opened_while_dense_is_still_building_is_pooled_by_what_is_built(corpus, tmp_path):
    cands = Candidates(corpus, systems=["bm25", "dense"], depth=2)
    bench = Workbench(corpus, GoldenFile(tmp_path / "g.jsonl"), cands, judge="ana")
    c = TestClient(create_app(bench))
    qid = _add(c, "How do I descale the kettle?")
    q = c.get(f"/api/question/{qid}").json()  # nothing warmed: BM25 alone, built now; dense not waited for
    assert "dense" not in cands._pipelines and "kettle.md#kettle" in [x["anchor"] for x in q["candidates"]]
    first = len(q["candidates"])
    assert c.get("/api/state").json()["questions"][0]["pool"] is None  # not the question's whole pool yet
    cands.warm()
    q = c.get(f"/api/question/{qid}").json()
    assert "dense" in cands._pipelines and len(q["candidates"]) > first and q["pool"] == len(q["candidates"])
