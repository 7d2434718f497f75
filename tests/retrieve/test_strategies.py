"""The strategy stage (ragtune.retrieve.strategies): single is the pipeline exactly as before; links adds a second
search of the sections the top hits link to; history puts a conversation's earlier turns in the query, and
run_eval hands each turn its history; terms and decompose search again; strategies are flags and grid keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtune import load_corpus, load_golden
from ragtune.cli import main
from ragtune.errors import ConfigError
from ragtune.evaluate import evaluate
from ragtune.pipeline import PipelineConfig, build_pipeline, run_eval
from ragtune.retrieve.strategies import (DecomposeConfig, DecomposeStrategy, HistoryConfig, HistoryStrategy,
                                         RewriteConfig, RewriteStrategy, StrategyRetriever, history_query, rare_terms)
from ragtune.sweep import parse_grid, run_sweep
from ragtune.types import Chunk, Hit, Ranking
from tests.helpers import write_files, write_jsonl

REPO = Path(__file__).resolve().parents[2]

DOCS = {
    "errors.md": "# Errors\n\n## Handling exceptions\n\nUse try and except to catch an exception; what runs after "
                 "it either way is the [finally clause](cleanup.md#finally-clause).\n\n## Raising\n\nThe raise "
                 "statement makes an exception happen.\n",
    "cleanup.md": "# Cleanup\n\n## Finally clause\n\nThe finally block always runs at the end of the try "
                  "statement.\n\n## With statement\n\nObjects with a context manager are closed by with.\n",
    "files.md": "# Files\n\n## Opening files\n\nopen returns a file object; read it line by line.\n",
}
CONVERSATION = {"id": "c1", "turns": [
    {"q": "How do I open a file?", "relevant": ["files.md#opening-files"]},
    {"q": "and which function does that?", "relevant": ["files.md#opening-files"]}]}


@pytest.fixture
def corpus(tmp_path):
    return load_corpus(write_files(tmp_path / "docs", DOCS))


def bm25(**flags):
    return PipelineConfig.from_flags({"retriever": "bm25", "chunker": "section", **flags})


class Recorder:
    """A retriever that records the queries it is asked and returns one fixed chunk."""

    name = "recorder"

    def __init__(self):
        self.queries: list[str] = []
        self.chunk = Chunk("c0", "d.md", "text", 0, 4, "text")

    def search(self, query, k=10, filters=None):
        self.queries.append(query)
        return Ranking(query, (Hit(self.chunk, 1.0),), {"recorder": 0.001})


def stripped(result) -> dict:
    """An EvalResult as JSON without what the clock decides (latencies)."""
    d = result.to_dict()
    d.pop("latency_ms", None)
    for q in d["questions"]:
        q.pop("latency_ms", None)
    return d


# -- single -------------------------------------------------------------------------------------------------------
def test_single_scores_the_repository_golden_set_as_without_a_strategy():
    corpus, golden = load_corpus(REPO / "docs"), load_golden(REPO / "docs" / "golden.jsonl")
    plain = PipelineConfig.from_flags({"retriever": "bm25"})
    single = PipelineConfig.from_flags({"retriever": "bm25", "strategy": "single"})
    assert single == plain and single.key == plain.key and "strategy" not in single.to_dict()
    p_plain, p_single = build_pipeline(corpus, plain), build_pipeline(corpus, single)
    assert not isinstance(p_single.retriever, StrategyRetriever) and p_single.strategy is None
    a, b = run_eval(p_plain, golden), run_eval(p_single, golden)
    assert json.dumps(stripped(a), sort_keys=True) == json.dumps(stripped(b), sort_keys=True)
    # and as the first stage itself scores, searched one question at a time
    direct = evaluate(p_plain.base, golden, corpus)
    assert [q.to_dict()["retrieved"] for q in direct.questions] == [q["retrieved"] for q in stripped(b)["questions"]]


def test_single_ignores_a_turns_history(corpus, tmp_path):
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [CONVERSATION]))
    assert golden.items[1].history == ("How do I open a file?",)
    result = run_eval(build_pipeline(corpus, bm25()), golden)
    turn = {q.id: q for q in result.questions}["c1#2"]
    assert turn.scores["recall@5"] == 0.0  # "which function does that?" names nothing the corpus holds


# -- links --------------------------------------------------------------------------------------------------------
def test_links_adds_a_second_search_of_the_linked_sections(corpus):
    p = build_pipeline(corpus, bm25(strategy="links", strategy_keep=1))
    ranking = p.retriever.search("How do I catch an exception with try and except?", k=10)
    first, second = ranking.searches
    assert [h.chunk.anchor for h in first.hits] == ["errors.md#handling-exceptions", "errors.md#raising",
                                                   "cleanup.md#finally-clause"]
    assert [h.chunk.anchor for h in second.hits] == ["cleanup.md#finally-clause"]
    assert second.query == "links from errors.md#handling-exceptions" and "links" in second.timings
    # the first search's top hit (keep=1), the linked section, then the rest of the first search
    assert [h.chunk.anchor for h in ranking.hits] == ["errors.md#handling-exceptions", "cleanup.md#finally-clause",
                                                     "errors.md#raising"]
    assert ranking.timings["links"] == second.timings["links"] and ranking.timings["bm25"] == first.timings["bm25"]
    # a hit without links: one search, kept as such
    alone = p.retriever.search("What does the raise statement do?", k=10)
    assert len(alone.searches) == 1 and alone.hits == alone.searches[0].hits
    assert alone.hits[0].chunk.anchor == "errors.md#raising"


def test_links_leaves_out_a_linked_section_the_first_search_found(corpus):
    p = build_pipeline(corpus, bm25(strategy="links", strategy_keep=5))
    ranking = p.retriever.search("try except exception finally clause", k=10)
    anchors = [h.chunk.anchor for h in ranking.hits]
    assert "cleanup.md#finally-clause" in anchors and len(anchors) == len(set(anchors))
    assert len(ranking.searches) == 1  # its only link was found already: no second search


def test_links_stays_within_k(corpus):
    p = build_pipeline(corpus, bm25(strategy="links", strategy_keep=3))
    ranking = p.retriever.search("How do I catch an exception with try and except?", k=1)
    assert [h.chunk.anchor for h in ranking.hits] == ["errors.md#handling-exceptions"]


# -- history ------------------------------------------------------------------------------------------------------
def test_history_puts_the_earlier_turns_before_the_question():
    inner = Recorder()
    r = StrategyRetriever(inner, HistoryStrategy(HistoryConfig(window=2)))
    ranking = r.search("and then?", k=5, history=("first?", "second?", "third?"))
    assert inner.queries == ["second?\nthird?\nand then?"]
    assert ranking.query == "and then?" and ranking.searches[0].query == "second?\nthird?\nand then?"
    assert history_query("q", ["a", " ", "b"], 0) == "a\nb\nq"
    r.search("alone?", k=5)
    assert inner.queries[-1] == "alone?"


def test_run_eval_hands_each_turn_its_history(corpus, tmp_path):
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [CONVERSATION]))
    plain = {q.id: q for q in run_eval(build_pipeline(corpus, bm25()), golden).questions}
    with_history = {q.id: q for q in run_eval(build_pipeline(corpus, bm25(strategy="history")), golden).questions}
    assert plain["c1#2"].scores["recall@5"] == 0.0 and with_history["c1#2"].scores["recall@5"] == 1.0
    assert with_history["c1#1"].scores == plain["c1#1"].scores  # the first turn has no history: searched as is


# -- terms and the LLM strategies ---------------------------------------------------------------------------------
def test_rare_terms_are_the_question_words_the_top_hits_lack_rarest_first():
    df = {"finally": 1, "clause": 3, "close": 2, "file": 9}
    got = rare_terms("How does the finally clause close the file?", ["the file is open"], df, 5,
                     frozenset({"how", "does", "the"}))
    assert got == ["finally", "close", "clause"]  # "file" was found; stopwords and unknown words left out
    assert rare_terms("finally clause close", [], df, 2) == ["finally", "close"]


def test_terms_searches_the_missing_rare_terms_second(corpus):
    p = build_pipeline(corpus, bm25(strategy="terms", strategy_keep=1, strategy_words=1, strategy_look=1))
    ranking = p.retriever.search("which exception does the finally block raise", k=10)
    first, second = ranking.searches
    # the top hit (raising) holds "exception" and "raise"; of "finally" and "block", "block" is in one section only
    assert first.hits[0].chunk.anchor == "errors.md#raising"
    assert second.query == "block" and "terms" in second.timings
    assert [h.chunk.anchor for h in second.hits] == ["cleanup.md#finally-clause"]


class FakeLLM:
    def __init__(self, reply):
        self.reply, self.asked, self.usage = reply, [], {"calls": 0}

    def chat(self, system, user, **_):
        self.asked.append(user)
        self.usage["calls"] += 1
        return self.reply


def test_decompose_searches_the_question_then_each_sub_query():
    inner = Recorder()
    strategy = DecomposeStrategy(DecomposeConfig(llm="openai:m", queries=2))
    strategy._llm = FakeLLM('Here: ["open a file", "finally clause", "a third"]')
    ranking = StrategyRetriever(inner, strategy).search("How do files and finally meet?", k=10)
    assert inner.queries == ["How do files and finally meet?", "open a file", "finally clause"]
    assert [s.query for s in ranking.searches] == inner.queries and "llm" in ranking.timings
    assert strategy.usage == {"calls": 1}


def test_rewrite_searches_the_turn_the_llm_made_standalone():
    inner = Recorder()
    strategy = RewriteStrategy(RewriteConfig(llm="anthropic:m"))
    strategy._llm = FakeLLM('"Which function opens a file?"\n')
    ranking = StrategyRetriever(inner, strategy).search("and which one does that?", k=3, history=("open a file?",))
    assert inner.queries == ["Which function opens a file?"] and ranking.query == "and which one does that?"
    assert strategy._llm.asked == ["Q1: open a file?\nLast question: and which one does that?"]


def test_llm_strategies_without_an_llm_are_a_clear_error():
    with pytest.raises(ConfigError, match="the decompose strategy needs an LLM: set its llm option .*terms strategy"):
        PipelineConfig.from_flags({"strategy": "decompose"})
    with pytest.raises(ConfigError, match="unknown decompose strategy LLM 'gpt'"):
        PipelineConfig.from_flags({"strategy": "decompose", "strategy_llm": "gpt"})


# -- configuration, flags and grids -------------------------------------------------------------------------------
def test_strategy_options_belong_to_their_strategy():
    cfg = bm25(strategy="links", strategy_follow=2, strategy_linked=5)
    assert cfg.to_dict()["strategy"] == "links" and cfg.to_dict()["strategy_follow"] == 2
    assert "strategy_linked" not in cfg.to_dict()  # the default: dropped, one configuration one key
    assert cfg.label == "section/bm25>>links-follow=2"
    assert PipelineConfig.from_dict(cfg.to_dict()) == cfg and PipelineConfig.from_toml(cfg.to_toml()) == cfg
    assert cfg.index_config().to_dict() == bm25().to_dict()
    with pytest.raises(ConfigError, match="strategy_window does not apply to strategy links"):
        bm25(strategy="links", strategy_window=1)
    with pytest.raises(ConfigError, match="unknown strategy 'link'.*did you mean 'links'"):
        bm25(strategy="link")


def test_strategies_are_swept_in_a_grid(corpus, tmp_path):
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [
        {"id": "m1", "q": "How do I catch an exception with try and except?",
         "relevant": ["errors.md#handling-exceptions", "cleanup.md#finally-clause"]}, CONVERSATION]))
    grid = parse_grid({"metric": "recall@2", "k": [2, 5], "baseline": {"retriever": "bm25", "chunker": "section"},
                       "grid": {"retriever": ["bm25"], "chunker": ["section"], "strategy": ["single", "links", "history"],
                                "strategy_keep": [1]}})
    assert sorted(s.label for s in grid.specs) == ["section/bm25", "section/bm25>>history",
                                                  "section/bm25>>links-keep=1"]
    records = run_sweep(corpus, golden, grid, tmp_path / "out", show_progress=False)
    recall = {r["spec"].get("strategy", "single"): {q["id"]: q["scores"]["recall@2"] for q in r["result"]["questions"]}
              for r in records}  # single ranks errors.md#raising second; links puts the linked finally clause there
    assert recall["single"]["m1"] == 0.5 and recall["links"]["m1"] == 1.0
    assert recall["single"]["c1#2"] == 0.0 and recall["history"]["c1#2"] == 1.0
    assert {r["label"] for r in records} == {"section-prefix/bm25", "section-prefix/bm25>>history",
                                             "section-prefix/bm25>>links-keep=1"}


def test_eval_takes_the_strategy_flags(corpus, tmp_path, capsys):
    golden = write_jsonl(tmp_path / "g.jsonl", [{"id": "m1", "q": "How do I catch an exception with try and except?",
                                                 "relevant": ["cleanup.md#finally-clause"]}])
    args = ["eval", "--corpus", corpus.root, "--golden", str(golden), "--retriever", "bm25", "--chunker", "section"]
    assert main([*args, "--strategy", "links", "--strategy-keep", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["config"]["pipeline"]["strategy"] == "links" and out["config"]["strategy"]["keep"] == 1
    assert out["config"]["strategy"]["links"] == {"resolved": 1, "by_kind": {"markdown": 1}, "unresolved": 0,
                                                  "external": 0, "unread": []}
    assert out["metrics"]["recall@5"] == 1.0
    assert main([*args, "--strategy", "links", "--strategy-window", "1"]) == 2
    assert "strategy_window does not apply to strategy links" in capsys.readouterr().err


def test_a_store_version_is_searched_by_a_strategy(corpus, tmp_path):
    from ragtune.store import IndexStore, build_version, open_pipeline

    store = IndexStore(tmp_path / "store")
    build_version(store, corpus, bm25())
    p = open_pipeline(store=str(store.root), flags={"strategy": "links", "strategy_keep": 1})
    assert p.config.strategy == "links" and isinstance(p.retriever, StrategyRetriever)
    ranking = p.retriever.search("How do I catch an exception with try and except?", k=10)
    assert [h.chunk.anchor for h in ranking.searches[1].hits] == ["cleanup.md#finally-clause"]
    assert open_pipeline(store=str(store.root)).strategy is None


def test_a_search_space_takes_strategies_and_their_options_where_they_apply():
    from ragtune.errors import GridError
    from ragtune.sweep.space import parse_space

    base = {"metric": "recall@5", "baseline": {"retriever": "bm25", "chunker": "section"}}
    _, space = parse_space({**base, "space": {"retriever": ["bm25"], "chunker": ["section"],
                                              "strategy": ["single", "links", "history"],
                                              "strategy_keep": {"low": 1, "high": 5, "step": 2},
                                              "strategy_window": [1, 2]}})
    assert space.points == 1 + 3 + 2  # single takes neither option; links takes keep (1, 3, 5); history window
    assert space.applies("strategy_keep", {"strategy": "links"}) and not space.applies("strategy_keep", {})
    lines = dict(line.split(None, 1) for line in space.describe()[:-1])
    assert lines["strategy_keep"].endswith("(only with strategies links)")
    with pytest.raises(GridError, match="space.strategy_window applies only to strategies history, and the space"):
        parse_space({**base, "space": {"strategy": ["single", "links"], "strategy_window": [1, 2]}})
    with pytest.raises(GridError, match="unknown strategy 'link'"):
        parse_space({**base, "space": {"strategy": ["link"]}})
