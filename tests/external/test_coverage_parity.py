"""One rule for what a hit covers: the same rankings give the same figures by every path they come in.

A generated corpus with sections nested three deep; BM25 over section chunks, evaluated natively, then the same
rankings handed back as anchors by a Python callable, by a search service over HTTP (a real server on 127.0.0.1),
and as a TREC run of anchors read by ``eval --run``, ``compare`` and the gate. An anchor hit for section X covers
X's own text, as ragtune's section chunk of X does, so every path gives the native figures; the other rule
(``anchor_span="subsections"``) is named in the output and gives other figures on this corpus.
"""

import json
import random
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ragtune import GoldenSet, Pipeline, evaluate, load_corpus
from ragtune.cli import main
from ragtune.evaluate import compare, regression_gate
from ragtune.evaluate.run import Run, score_run_file
from ragtune.external import evaluate_retriever
from ragtune.external.files import write_trec_run
from ragtune.golden import GoldenItem
from tests.helpers import write_files

KS = (1, 3, 5, 10)
WORDS = [f"w{i}" for i in range(400)]


def nested_docs(seed: int = 3, n_docs: int = 8) -> dict[str, str]:
    """Markdown files: an h1 with text, h2s with text, some h2s with h3s below, some h3s with h4s."""
    rng = random.Random(seed)
    docs = {}
    for d in range(n_docs):
        lines = [f"# Topic {d}", "", " ".join(rng.choices(WORDS, k=25)), ""]
        for s in range(rng.randint(2, 4)):
            lines += [f"## Part {d} {s}", "", " ".join(rng.choices(WORDS, k=30)), ""]
            for t in range(rng.randint(0, 3)):
                lines += [f"### Item {d} {s} {t}", "", " ".join(rng.choices(WORDS, k=30)), ""]
                for u in range(rng.randint(0, 2)):
                    lines += [f"#### Detail {d} {s} {t} {u}", "", " ".join(rng.choices(WORDS, k=20)), ""]
        docs[f"doc{d}.md"] = "\n".join(lines)
    return docs


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("nested")
    corpus = load_corpus(write_files(root / "docs", nested_docs()))
    rng = random.Random(5)
    sections = [s for doc in corpus for s in doc.sections]
    assert {s.level for s in sections} >= {1, 2, 3, 4}
    items = []
    for i in range(60):
        target = rng.choice(sections)
        doc = corpus[target.doc_id]
        words = doc.text[target.start:target.own_end].split()[3:]
        question = " ".join(rng.sample(words, min(6, len(words))))
        # relevant: the section itself, its parent (covered by the child's hits) or a child (covered by a parent's
        # anchor only under anchor_span="subsections"): where the two rules differ
        pick = rng.random()
        kids = [s for s in doc.sections if s.parent == target.anchor]
        parent = next((s for s in doc.sections if s.anchor == target.parent), None)
        rel = (kids[0] if pick < 0.35 and kids else parent if pick < 0.6 and parent else target).anchor
        items.append(GoldenItem(f"q{i:02d}", question, {rel: 1.0}))
    golden = GoldenSet(items, source="nested")
    golden.to_jsonl(root / "golden.jsonl")
    pipeline = Pipeline.build(corpus, chunker="section", retriever="bm25")
    native = evaluate(pipeline.retriever, golden, corpus, ks=KS)
    return root, corpus, golden, pipeline, native


def write_anchor_run(path, pipeline, golden, depth=100):
    """The pipeline's rankings, to ``depth``, as a TREC run of anchors (what ``export --ids anchor`` writes, deeper:
    the export keeps the top max(ks) of an eval result, and MRR looks deeper)."""
    lines = []
    for item in golden:
        anchors = anchors_of(pipeline, item.q, depth)
        assert len(set(anchors)) == len(anchors)  # one chunk per section
        lines += [f"{item.id} Q0 {a} {r} {len(anchors) - r + 1} bm25" for r, a in enumerate(anchors, start=1)]
    path.write_text("\n".join(lines) + "\n")
    return path


def figures(result):
    return {m: v for m, v in result.metrics.items() if not m.startswith("context_tokens")}


def anchors_of(pipeline, query, k):
    return [h.chunk.anchor for h in pipeline.retriever.search(query, k=k).hits]


class Search(BaseHTTPRequestHandler):
    pipeline = None

    def log_message(self, *a):
        pass

    def do_GET(self):
        qs = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        body = json.dumps({"hits": [{"url": f"https://docs.example.com/{a.replace('.md#', '/#')}"}
                                    for a in anchors_of(self.pipeline, qs["q"][0], int(qs["k"][0]))]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)


def test_native_callable_http_and_trec_paths_give_identical_figures(setup):
    pytest.importorskip("jmespath")
    from ragtune.external.http import evaluate_endpoint

    root, corpus, golden, pipeline, native = setup
    want = figures(native)
    assert 0 < want["recall@5"] < 1  # a real ranking: the rule decides figures

    # a Python callable returning anchors
    via_callable = evaluate_retriever(lambda q, k: anchors_of(pipeline, q, k), golden, corpus=corpus, ks=KS)
    assert figures(via_callable) == pytest.approx(want)
    assert via_callable.matching["coverage"] == {"anchor_span": "own", "doc_hits": "credit"}

    # a search service over HTTP on 127.0.0.1, answering page URLs with #fragments
    Search.pipeline = pipeline
    server = ThreadingHTTPServer(("127.0.0.1", 0), Search)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        via_http = evaluate_endpoint(f"http://127.0.0.1:{server.server_address[1]}/s?q={{query}}&k={{k}}", golden,
                                     corpus=corpus, ks=KS, base_url="https://docs.example.com/", timeout=10,
                                     retries=0)
    finally:
        server.shutdown()
        server.server_close()
    assert via_http.matching["match_rate"] == 1.0
    assert figures(via_http) == pytest.approx(want)

    # a TREC run of anchors (ragtune export --ids anchor), read by eval --run, Run.from_file, compare and the gate
    run_path = write_anchor_run(root / "anchors.run", pipeline, golden)
    via_trec = score_run_file(run_path, golden, corpus=corpus, ks=KS)
    assert figures(via_trec) == pytest.approx(want)
    run = Run.from_file(run_path, golden, corpus=corpus, ks=KS)
    assert {m: run.mean(m) for m in ("recall@5", "mrr", "ndcg@10")} == \
        pytest.approx({m: want[m] for m in ("recall@5", "mrr", "ndcg@10")})
    report = compare([native, run_path], golden, metrics=("recall@5", "mrr"), corpus=corpus, samples=200)
    assert all(r.delta == pytest.approx(0.0) for r in report.comparisons)
    gate = regression_gate(native, run_path, golden=golden, corpus=corpus, samples=200)
    assert gate.passed and all(c.delta == pytest.approx(0.0) for c in gate.checks)

    # the other rule is an option, named in the output, and differs here (a parent's anchor covers its children)
    wide = score_run_file(run_path, golden, corpus=corpus, ks=KS, anchor_span="subsections")
    assert wide.matching["coverage"]["anchor_span"] == "subsections"
    assert wide.metrics["recall@5"] > want["recall@5"]


def test_eval_run_prints_the_rule_and_matches_native(setup, capsys):
    root, corpus, golden, pipeline, native = setup
    run_path = write_anchor_run(root / "anchors-cli.run", pipeline, golden)
    common = ["--golden", str(root / "golden.jsonl"), "--corpus", str(corpus.root), "-k", "1,3,5,10"]
    assert main(["eval", "--run", str(run_path), *common, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {m: v for m, v in data["metrics"].items() if not m.startswith("context")} == pytest.approx(figures(native))
    assert main(["eval", "--run", str(run_path), *common, "--anchor-span", "subsections"]) == 0
    out = capsys.readouterr().out
    assert "--anchor-span subsections" in out and "--doc-hits credit" in out
    # ragtune's own export (top max(ks) of an eval result) agrees on every cut-off it keeps
    exported = root / "exported.run"
    write_trec_run(native, exported)
    got = score_run_file(exported, golden, corpus=corpus, ks=KS).metrics
    assert {m: got[m] for m in ("recall@5", "recall@10", "ndcg@10", "precision@3")} == \
        pytest.approx({m: native.metrics[m] for m in ("recall@5", "recall@10", "ndcg@10", "precision@3")})
