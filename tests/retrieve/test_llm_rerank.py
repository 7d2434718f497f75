"""The ``llm`` reranker against a real local server speaking the OpenAI and Anthropic wire formats."""

import pytest

from ragtune import Chunk, Hit, Pipeline, Ranking, load_corpus
from ragtune.answer.llm import estimate_tokens
from ragtune.errors import APIError, ConfigError
from ragtune.pipeline import PipelineConfig
from ragtune.registry import RERANKERS
from ragtune.rerank.base import RerankedRetriever
from ragtune.retrieve.fusion import rrf
from ragtune.rerank.llm import (LLMReranker, LLMRerankerConfig, build_rerank_prompt, estimate_llm_rerank, parse_order,
                                windows)
from tests.answer.fake_llm import FakeLLM
from tests.helpers import write_files

TEXTS = {
    "c1": ("Billing", "Refunds"), "c2": ("Billing", "Invoices"), "c3": ("Deploy", "Rollback"),
    "c4": ("Deploy", "Images"), "c5": ("Accounts", "Deletion"),
}
USAGE = {"openai": (100, 20), "anthropic": (120, 30)}  # what the fake server reports per call


def chunk(cid, text=None):
    return Chunk(id=cid, doc_id=f"{cid}.md", text=text or f"text of {cid} about {' '.join(TEXTS[cid])}", start=0,
                 end=10, embed_text="", heading_path=TEXTS[cid], anchors=(f"{cid}.md#x",))


def shortlist(query="how do refunds work?", ids=("c1", "c2", "c3", "c4", "c5")):
    return Ranking(query, tuple(Hit(chunk(c), 10.0 - i) for i, c in enumerate(ids)), {"bm25": 0.01})


def ids(ranking):
    return [h.chunk.id for h in ranking.hits]


@pytest.fixture(scope="module")
def _server():
    s = FakeLLM([])  # one server for the module: closing one takes half a second
    yield s
    s.close()


@pytest.fixture
def server(_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    _server.script, _server.requests = [], []
    return _server


def reranker(server, kind="openai", **options):
    base = server.url + ("/v1" if kind == "openai" else "")
    return RERANKERS.build("llm", options={"model": f"{kind}:rank-m", "base_url": base, **options})


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_the_order_the_model_returns_is_applied_and_usage_adds_up(server, kind):
    server.script = ["Sure. Ranking: [3] > [1] > [5] > [2] > [4]\nPassage 3 covers rollbacks.",
                     "```json\n[2, 1, 3, 4, 5]\n```"]
    r = reranker(server, kind, price_in=3.0, price_out=15.0)
    got = r.rerank("how do I roll back?", shortlist("how do I roll back?"))
    assert ids(got) == ["c3", "c1", "c5", "c2", "c4"]
    assert [h.score for h in got.hits] == sorted((h.score for h in got.hits), reverse=True)
    assert got.timings["bm25"] == 0.01 and got.timings["rerank"] > 0
    assert ids(r.rerank("q2", shortlist("q2"))) == ["c2", "c1", "c3", "c4", "c5"]  # a JSON list is read too
    req = server.requests[0]
    assert req["path"] == ("/v1/chat/completions" if kind == "openai" else "/v1/messages")
    body = req["body"]
    assert body["model"] == "rank-m" and 5 * 2 < body["max_tokens"] < 512  # room for "[n] >" per candidate
    user = body["messages"][-1]["content"]
    assert "Query: how do I roll back?" in user
    assert "[1] Billing > Refunds\ntext of c1" in user and "[5] Accounts > Deletion" in user
    system = body["messages"][0]["content"] if kind == "openai" else body["system"]
    assert "[3] > [1] > [2]" in system
    n_in, n_out = USAGE[kind]
    assert r.usage == {"model": f"{kind}:rank-m", "queries": 2, "windows": 2, "malformed": 0, "repaired": 0,
                       "fallbacks": 0, "calls": 2, "input_tokens": 2 * n_in, "output_tokens": 2 * n_out,
                       "cost": pytest.approx((2 * n_in * 3.0 + 2 * n_out * 15.0) / 1e6)}
    assert r.cost == r.usage["cost"] > 0


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_unreadable_answers_are_asked_again_then_fall_back_and_are_counted(server, kind):
    server.script = ["I cannot rank these passages.", "Passage [2] is the best one.",  # no order: twice
                     "[1] > [4]"]  # the next question: an order that leaves passages out
    r = reranker(server, kind, attempts=2)
    first = shortlist("which plan?")
    assert ids(r.rerank("which plan?", first)) == ids(first)
    assert ids(r.rerank("refunds?", shortlist("refunds?"))) == ["c1", "c4", "c2", "c3", "c5"]
    u = r.usage
    assert (u["calls"], u["malformed"], u["fallbacks"], u["repaired"], u["queries"]) == (3, 2, 1, 1, 2)
    assert r.failed_queries == ["which plan?"]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_429_and_5xx_are_retried(server, kind):
    server.script = [429, 503, "[5] > [4] > [3] > [2] > [1]"]
    r = reranker(server, kind, max_retries=3)
    assert ids(r.rerank("q", shortlist("q"))) == ["c5", "c4", "c3", "c2", "c1"]
    assert len(server.requests) == 3 and r.usage["calls"] == 1 and r.usage["fallbacks"] == 0


def test_other_api_errors_stop_the_run(server):
    server.script = [400]
    with pytest.raises(APIError, match="HTTP 400"):
        reranker(server, max_retries=3).rerank("q", shortlist("q"))
    assert len(server.requests) == 1


@pytest.mark.parametrize("text,n,want", [
    ("[3] > [1] > [2]", 3, ((2, 0, 1), False)),
    ("My answer:\n2 > 3 > 1\nbecause [1] is off topic", 3, ((1, 2, 0), False)),
    ("Passage 3 > Passage 1 > Passage 2", 3, ((2, 0, 1), False)),
    ("[1] > [2]. Final: [3] > [2] > [1]", 3, ((2, 1, 0), False)),  # the longest chain wins
    ("[2] > [9] > [2] > [0]", 3, ((1, 0, 2), True)),  # out of range and repeats dropped, the rest appended
    ('{"order": [3, 2, 1]}', 3, ((2, 1, 0), False)),
    ("Passage [2] is the best", 3, None), ("[7] > [8]", 3, None), ("no idea", 3, None), ("[1]", 3, None),
])
def test_parse_order_is_lenient_but_never_guesses(text, n, want):
    got = parse_order(text, n)
    assert (got if got is None else (got.order, got.repaired)) == want


def test_long_candidates_are_cut_and_long_shortlists_go_in_windows_from_the_bottom(server):
    long = "alpha " * 30 + "OMEGA-TAIL"
    server.script = ["[3] > [1] > [2]", "[2] > [1] > [3]", "[2] > [1] > [3]"]
    r = reranker(server, max_candidates=3, max_chars=60)
    sl = Ranking("q", tuple(Hit(chunk(c, long if c == "c5" else None), 1.0) for c in TEXTS), {})
    got = r.rerank("q", sl)
    assert windows(5, 3) == [(2, 5), (1, 4), (0, 3)] and len(server.requests) == 3
    assert ids(got) == ["c5", "c1", "c2", "c3", "c4"]  # found last, climbed to the top in three calls
    sent = [q["body"]["messages"][-1]["content"] for q in server.requests]
    assert "[3] Accounts > Deletion\nalpha alpha" in sent[0] and "[2] Accounts > Deletion" in sent[2]
    assert "OMEGA-TAIL" not in "".join(sent) and "alpha ..." in sent[0]
    passage = sent[0].split("[3] Accounts > Deletion\n")[1].split("\n")[0]
    assert len(passage) <= 60 + len(" ...")
    assert windows(20, 20) == [(0, 20)] and windows(50, 20) == [(30, 50), (20, 40), (10, 30), (0, 20)]


DOCS = {"billing.md": "# Billing\n\n## Refunds\n\nRefunds are paid back within fourteen days of a cancelled order.\n\n"
                      "## Invoices\n\nInvoices are emailed on the first day of each month.\n",
        "deploy.md": "# Deploy\n\n## Rollback\n\nA failed release is rolled back with the previous image tag.\n\n"
                     "## Images\n\nThe pipeline keeps the last five images for rollbacks and refunds of time.\n"}


def test_dry_run_estimate_matches_what_is_then_sent(server, tmp_path):
    corpus = load_corpus(write_files(tmp_path / "docs", DOCS))
    base = server.url + "/v1"
    pipe = Pipeline.build(corpus, retriever="bm25", rerank="llm", rerank_model="openai:m", rerank_base_url=base,
                          rerank_price_in=2.0, rerank_price_out=10.0, candidates=4)
    questions = ["How long do refunds take?", "How do I roll back a release?", "When are invoices sent?"]
    est = estimate_llm_rerank(pipe, questions)
    assert server.requests == []  # nothing sent
    for q in questions:
        pipe.retriever.search(q, k=4)  # the fake answers "ok [1]": no order, asked again, then fallback
    sent = [(r["body"]["messages"][0]["content"], r["body"]["messages"][1]["content"]) for r in server.requests]
    first_asks = sent[::2]  # attempts=2: every question was asked twice with the same prompt
    ranked = sum(len(pipe.base.search(q, k=4).hits) >= 2 for q in questions)  # a shortlist of one needs no call
    assert sent[1::2] == first_asks and len(first_asks) == est.calls == ranked >= 2 and est.questions == 3
    assert est.input_tokens == estimate_tokens(*(t for pair in first_asks for t in pair)) > 0
    assert est.cost == pytest.approx((est.input_tokens * 2.0 + est.output_tokens * 10.0) / 1e6)
    assert pipe.reranker.usage["fallbacks"] == ranked and f"{ranked} calls for 3 questions" in est.summary()
    with pytest.raises(ConfigError, match="needs the llm reranker"):
        estimate_llm_rerank(pipe.with_reranker(None), questions)


def test_config_is_checked_once_with_one_clear_line():
    with pytest.raises(ConfigError, match="needs a model: --rerank-model anthropic:<model>"):
        LLMRerankerConfig()
    with pytest.raises(ConfigError, match="provider:model, got 'gpt-4o'"):
        LLMRerankerConfig(model="gpt-4o")
    with pytest.raises(ConfigError, match="unknown reranker model 'azure:x'"):
        LLMRerankerConfig(model="azure:x")
    with pytest.raises(ConfigError, match="max_candidates=1 must be >= 2"):
        LLMRerankerConfig(model="openai:m", max_candidates=1)
    cfg = PipelineConfig.from_flags({"rerank": "llm", "rerank_model": "anthropic:claude-x", "rerank_max_chars": 300,
                                     "rerank_max_candidates": 20, "candidates": 20})
    assert dict(cfg.rerank_options) == {"model": "anthropic:claude-x", "max_chars": 300}  # 20 is the default
    r = LLMReranker(cfg.reranker_config())  # cheap: no client, nothing sent
    assert r.llm._client is None and r.name == "llm" and r.config["model"] == "anthropic:claude-x"


def test_prompt_numbers_candidates_with_their_heading_paths():
    system, user = build_rerank_prompt("  refunds\n please ", [chunk("c1"), chunk("c3")], max_chars=800)
    assert user.startswith("Query: refunds please\n") and user.index("[1] Billing > Refunds") < user.index(
        "[2] Deploy > Rollback") and user.rstrip().endswith("Ranking:")
    nameless = Chunk(id="z", doc_id="faq.md", text="x", start=0, end=1, embed_text="", anchors=("faq.md#top",))
    assert "[1] faq.md#top\nx" in build_rerank_prompt("q", [nameless])[1]


class FirstStage:
    name = "fixed"

    def search(self, query, k=10, filters=None):
        return shortlist(query)


def test_mode_replace_keeps_the_model_order_and_fuse_blends_it_with_the_first_stage(server):
    server.script = ["[5] > [3] > [4] > [1] > [2]"] * 2
    replaced = RerankedRetriever(FirstStage(), reranker(server, mode="replace"), candidates=5).search("q", k=5)
    assert ids(replaced) == ["c5", "c3", "c4", "c1", "c2"]
    fuse = reranker(server, mode="fuse", fuse_k=1)
    assert (fuse.mode, fuse.fuse_k) == ("fuse", 1) and fuse.config["mode"] == "fuse"
    fused = RerankedRetriever(FirstStage(), fuse, candidates=5).search("q", k=5)
    assert ids(fused) == ids(rrf([replaced, shortlist("q")], k=1)) != ids(replaced)
