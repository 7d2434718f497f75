"""An outside retriever that searches several times per question: a callable returning its searches, an HTTP
service answering with them (searches_path), and a JSONL trace through `ragtune eval --run`, each scored as the
same searches made by ragtune's own retriever and merged by Ranking.from_searches."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ragtune import Pipeline, Ranking
from ragtune.cli import main
from ragtune.errors import ConfigError
from ragtune.evaluate.evaluate import evaluate_rankings
from ragtune.evaluate.formats import write_trace
from ragtune.external.adapter import as_searches, evaluate_retriever
from ragtune.external.http import evaluate_endpoint
from tests.helpers import write_jsonl

KS = (1, 3, 5)


def follow_up(question):
    """The agent's second query: the question's last two words."""
    return " ".join(question.split()[-2:])


@pytest.fixture
def bm25(corpus):
    return Pipeline.build(corpus, retriever="bm25").retriever


def reference(bm25, golden, corpus, k=5):
    """What the agent below retrieves, made by ragtune itself and scored as rankings."""
    rankings = {i.id: Ranking.from_searches(i.q, [bm25.search(i.q, k=k), bm25.search(follow_up(i.q), k=k)])
                for i in golden}
    return evaluate_rankings(rankings, golden, corpus, ks=KS)


def span(hit):
    return {"doc_id": hit.chunk.doc_id, "start": hit.chunk.start, "end": hit.chunk.end, "score": hit.score}


def same_scores(a, b):
    for x, y in zip(a.questions, b.questions):
        assert {m: v for m, v in x.scores.items() if "context" not in m} == \
            pytest.approx({m: v for m, v in y.scores.items() if "context" not in m}), x.id


def test_a_callable_returning_its_searches_scores_as_the_merged_searches(bm25, corpus, golden):
    def agent(query, k):
        first = [span(h) for h in bm25.search(query, k=5).hits]
        second = [span(h) for h in bm25.search(follow_up(query), k=5).hits]
        return [(query, first), {"query": follow_up(query), "hits": second}]

    ref = reference(bm25, golden, corpus)
    got = evaluate_retriever(agent, golden, corpus=corpus, ks=KS)
    same_scores(ref, got)
    for a, b in zip(got.searches["by_search"], ref.searches["by_search"]):
        assert (a["recall"], a["new_relevant"], a["redundant"]) == pytest.approx((b["recall"], b["new_relevant"],
                                                                                 b["redundant"]))
    q = got.questions[0].searches
    assert [s["query"] for s in q["searches"]] == [golden.items[0].q, follow_up(golden.items[0].q)]
    assert got.searches["questions"] == sum(i.answerable for i in golden)
    assert got.matching["match_rate"] == 1.0


def test_what_counts_as_a_list_of_searches():
    assert as_searches([("a", ["x.md"]), {"query": "b", "hits": []}]) == [("a", ["x.md"]), ("b", [])]
    assert as_searches(["x.md", "y.md"]) is None  # plain hits
    assert as_searches([("x.md", 2.5)]) is None  # an (identifier, score) hit
    assert as_searches([{"anchor": "x.md#a"}]) is None
    assert as_searches([]) is None


class Agent(BaseHTTPRequestHandler):
    """An agent service: POST {"question": ...} answers {"answer": "...", "trace": {"calls": [{"query", "docs"}]}}."""

    retriever = None

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        q = body["question"]
        calls = [{"query": x, "docs": [{"location": span(h)} for h in self.retriever.search(x, k=5).hits]}
                 for x in (q, follow_up(q))]
        data = json.dumps({"answer": "...", "trace": {"calls": calls}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def agent_service(bm25):
    pytest.importorskip("jmespath")
    Agent.retriever = bm25
    server = ThreadingHTTPServer(("127.0.0.1", 0), Agent)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/agent"
    server.shutdown()
    server.server_close()


def test_an_http_service_answering_with_its_searches(agent_service, bm25, corpus, golden):
    common = dict(corpus=corpus, ks=KS, body='{"question": "{query}"}', hits_path="docs", hit_field="location")
    got = evaluate_endpoint(agent_service, golden, searches_path="trace.calls", **common)
    same_scores(reference(bm25, golden, corpus), got)
    assert got.config["searches_path"] == "trace.calls" and got.searches["mean_searches"] == 2.0
    with pytest.raises(ConfigError, match="the searches path 'trace.missing' gives nothing, not a list of searches"):
        evaluate_endpoint(agent_service, golden, searches_path="trace.missing", fail_fast=True, **common)


def test_eval_run_reads_a_jsonl_trace(bm25, corpus, golden, tmp_path, capsys):
    ref = reference(bm25, golden, corpus)
    trace = tmp_path / "trace.jsonl"
    write_trace({i.id: Ranking.from_searches(i.q, [bm25.search(i.q, k=5), bm25.search(follow_up(i.q), k=5)])
                 for i in golden}, trace)
    gold = write_jsonl(tmp_path / "g.jsonl", [{"id": i.id, "q": i.q, "relevant": list(i.relevant)} for i in golden])
    out = tmp_path / "eval.json"
    code = main(["eval", "--run", str(trace), "--golden", str(gold), "--corpus", str(corpus.root), "-k", "1,3,5",
                 "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    n = sum(i.answerable for i in golden)
    assert f"searches: {n} questions, 2.0 searches each on average" in text
    assert "relevant anchors first found by: search 1" in text
    data = json.loads(out.read_text())
    assert data["matching"]["format"] == "trace" and len(data["searches"]["by_search"]) == 2
    for q in (q for q in data["questions"] if q["answerable"]):
        mine = next(x for x in ref.questions if x.id == q["id"])
        assert q["scores"]["recall@5"] == pytest.approx(mine.scores["recall@5"])
