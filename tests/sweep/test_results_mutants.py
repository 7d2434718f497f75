"""Sweep results: the details mutation testing found untested (summarize on hand-made records, the intervals,
results.json, the table's cells, number formats)."""

import json
import math

import pytest

from ragtune.evaluate.compare import compare
from ragtune.evaluate.run import Run
from ragtune.evaluate.significance import bootstrap_ci
from ragtune.sweep import parse_grid, summarize
from ragtune.sweep.grid import GridError
from ragtune.sweep.results import SweepResult, _ms, ci_text
from tests.helpers import SWEEP_GRID

GRID = parse_grid(SWEEP_GRID)  # metric recall@1, k 1 and 5, 500 samples, seed 0
BASE = GRID.baseline.key


def record(key, r1, r5, label=None, p50=2.0, unanswerable=False, **extra):
    qs = [{"id": f"q{i}", "answerable": True, "first_hit_rank": 1 if a else None,
           "scores": {"recall@1": a, "recall@5": b, "mrr": a, "ndcg@10": b, "context_tokens@1": 10.0 * (i + 1)}}
          for i, (a, b) in enumerate(zip(r1, r5))]
    if unanswerable:
        qs.append({"id": "zz", "answerable": False, "first_hit_rank": None, "scores": {"recall@1": None}})
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    return {"key": key, "label": label or key, "spec": {"chunker": "fixed", "retriever": "bm25"},
            "stats": {"latency_ms": {"p50": p50, "p95": 2 * p50}},
            "result": {"metrics": {"recall@1": mean(r1), "recall@5": mean(r5), "mrr": mean(r1), "ndcg@10": mean(r5)},
                       "questions": qs}, **extra}


def test_summarize_compares_with_the_baseline_and_gives_every_mean_an_interval():
    r1b, r5b = [0.0, 1.0, 0.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    r1x, r5x = [1.0, 1.0, 1.0, 1.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0, 0.0, 1.0]
    recs = [record("x", r1x, r5x, unanswerable=True), record(BASE, r1b, r5b, unanswerable=True),
            record("y", r1b, r5b)]
    res = summarize(GRID, recs)
    assert res.baseline_key == BASE and res.baseline["vs_baseline"] is None
    runs = [Run.from_result(r["result"], name=r["key"]) for r in (recs[1], recs[0], recs[2])]
    rep = compare(runs, metrics=("recall@1",), correction="holm", samples=500, seed=0)
    c = rep.row("x", "recall@1")
    assert recs[0]["vs_baseline"] == {
        "delta": c.delta, "p": c.p_value, "p_holm": c.p_adjusted, "wins": 3, "ties": 3, "losses": 0, "fixed": list(c.fixed),
        "broken": [], "k": 1, "n": 6, "delta_ci": [c.delta_low, c.delta_high], "mde": c.mde, "needed": c.needed}
    assert c.delta == pytest.approx(0.5) and c.fixed == ("q0", "q2", "q5")
    ci = recs[0]["ci"]
    assert ci["recall@1"] == [c.ci_low, c.ci_high]
    assert ci["recall@5"] == list(bootstrap_ci(r5x, n=500, seed=0, confidence=0.95))
    assert ci["context_tokens@1"] == list(bootstrap_ci([10.0 * (i + 1) for i in range(6)], n=500, seed=0))
    assert ci["reranker_headroom"] == [0.0, 0.0]  # recall@5 = recall@1 on every question
    assert recs[1]["ci"]["reranker_headroom"] == list(bootstrap_ci([b - a for a, b in zip(r1b, r5b)], n=500, seed=0))
    assert set(ci) == {"recall@1", "recall@5", "mrr", "ndcg@10", "context_tokens@1", "reranker_headroom"}
    assert res.ci(recs[0]) == ci["recall@1"] and res.ci(recs[0], "mrr") == ci["mrr"] and res.ci({}) is None


def test_summarize_alone_and_without_its_baseline():
    only = summarize(GRID, [record(BASE, [1.0, 0.0], [1.0, 1.0])])
    assert only.baseline["vs_baseline"] is None and only.power_note() is None
    assert only.baseline["ci"]["recall@1"] == list(bootstrap_ci([1.0, 0.0], n=500, seed=0))
    with pytest.raises(GridError) as e:
        summarize(GRID, [record("other", [1.0], [1.0])])
    assert str(e.value) == ("the baseline configuration is not among the results; resolve the grid for the corpus "
                            "(grid.resolved(corpus.kind)) before running and summarising")


def test_numbers_and_intervals_as_text():
    assert [_ms(v) for v in (0.04, 0.999, 1.0, 8.94, 99.94, 100.0, 230.4, float("nan"))] == [
        "0.04", "1.00", "1.0", "8.9", "99.9", "100", "230", "-"]
    assert ci_text([0.4, 0.9], "recall@5") == "0.40-0.90"
    assert ci_text([120.4, 339.6], "context_tokens@5") == "120-340"
    assert ci_text(None, "mrr") == ci_text([], "mrr") == ci_text([None, None], "mrr") == ""
    assert ci_text([float("nan"), 0.5], "mrr") == ci_text([0.5, float("nan")], "mrr") == ""


def test_ranking_puts_undefined_values_last_and_fewer_tokens_first():
    recs = [{"key": k, "label": k, "stats": {}, "result": {"metrics": m}} for k, m in (
        ("nan", {"recall@1": None, "mrr": 0.9}), ("b", {"recall@1": 0.5, "mrr": None}), ("a", {"recall@1": 0.5, "mrr": 0.1}))]
    res = SweepResult(GRID, recs, "a")
    assert [r["key"] for r in res.ranked()] == ["a", "b", "nan"]
    assert math.isnan(res.value(recs[0])) and math.isnan(SweepResult.latency(recs[0]))
    assert SweepResult.latency({"stats": {"latency_ms": {"p95": 3}}}, "p95") == 3.0
    tokens = SweepResult(parse_grid({**SWEEP_GRID, "metric": "context_tokens@1"}), [
        {"key": "big", "label": "big", "stats": {}, "result": {"metrics": {"context_tokens@1": 300.0}}},
        {"key": "small", "label": "small", "stats": {}, "result": {"metrics": {"context_tokens@1": 100.0}}}], "big")
    assert [r["key"] for r in tokens.ranked()] == ["small", "big"]
    assert tokens.ranking_rule.startswith("ranked by context_tokens@1 (lower is better)")


def test_results_json(tmp_path):
    recs = [record(BASE, [0.0, 1.0], [1.0, 1.0], chunker_config={"size": 8}),
            record("x", [1.0, 1.0], [1.0, 1.0])]
    res = summarize(GRID, recs)
    path = res.write(tmp_path)
    assert path == tmp_path / "results.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data == json.loads(json.dumps(res.to_dict(), default=str))
    assert {k: data[k] for k in ("metric", "test", "samples", "seed", "correction", "ks", "baseline", "confidence")} == {
        "metric": "recall@1", "test": "randomization", "samples": 500, "seed": 0, "correction": "holm", "ks": [1, 5],
        "baseline": BASE, "confidence": 0.95}
    assert data["ranking"] == res.ranking_rule and data["power_note"] == res.power_note() and data["grid"] == SWEEP_GRID
    first = data["configs"][0]
    assert [c["key"] for c in data["configs"]] == ["x", BASE]
    assert set(first) == {"key", "label", "config", "chunker_config", "metrics", "metrics_ci", "by_tag", "stats",
                          "latency_ms", "vs_baseline", "questions"}
    assert first["chunker_config"] is None and data["configs"][1]["chunker_config"] == {"size": 8}
    assert first["by_tag"] == {} and first["latency_ms"] == {} and first["metrics_ci"] == recs[1]["ci"]
    assert first["questions"][0] == {"id": "q0", "answerable": True, "first_hit_rank": 1,
                                     "scores": recs[1]["result"]["questions"][0]["scores"]}


def test_table_cells():
    base = record(BASE, [0.0, 1.0], [1.0, 1.0], p50=0.5, chunker_config={"size": 8, "overlap": 2})
    other = record("x", [1.0, 1.0], [1.0, 1.0], p50=150.0)
    other["spec"] = {"chunker": "section", "retriever": "dense", "rerank": "embedding", "candidates": 20, "prefix": True}
    res = summarize(GRID, [base, other])
    base["stats"]["latency_ms"].update(questions=7, repeats=3)
    lines = res.table().splitlines()
    assert lines.pop(0).startswith("recommended: ")  # the one recommendation first, then the table
    assert lines[0] == f"{res.ranking_rule}; under each row, its 95% bootstrap interval"
    assert lines[1].split() == ["#", "strategy", "size", "overlap", "prefix", "retriever", "recall@1", "recall@5", "mrr",
                                "ndcg@10", "p50", "ms", "p95", "ms", "vs", "baseline", "(recall@1)"]
    vs = other["vs_baseline"]
    assert lines[2].split() == ["1", "section", "-", "-", "yes", "dense+embedding@20", "1.000", "1.000", "1.000",
                                "1.000", "150", "300", f"{vs['delta']:+.3f}", f"(p={vs['p_holm']:.3g})", "1/1/0"]
    assert lines[3].split()[-1] == f"{vs['delta_ci'][1]:+.3f}]" and lines[3].split()[-2] == f"[{vs['delta_ci'][0]:+.3f},"
    assert lines[4].split() == ["2", "fixed", "8", "2", "no", "bm25", "0.500", "1.000", "0.500", "1.000", "0.50",
                                "1.0", "(baseline)"]
    assert lines[5].split()[0] == ci_text(res.ci(base), "recall@1")
    assert lines[6] == ("latency: end to end per question, query embedding included; median of 3 timings of 7 "
                        "questions, then p50/p95 across them (stages in results.json)")
    assert res.table(limit=1).count("(baseline)") == 0


def test_results_carry_each_runs_tags_and_latency_and_the_grids_test(tmp_path):
    recs = [record(BASE, [0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 0.0, 1.0]), record("x", [1.0, 1.0, 1.0, 0.0], [1.0] * 4)]
    recs[1]["result"].update(by_tag={"keyword": {"recall@1": 0.75}}, latency_ms={"search": {"p50": 3.0}})
    data = json.loads(summarize(GRID, recs).write(tmp_path).read_text(encoding="utf-8"))
    x = next(c for c in data["configs"] if c["key"] == "x")
    assert x["by_tag"] == {"keyword": {"recall@1": 0.75}} and x["latency_ms"] == {"search": {"p50": 3.0}}
    t_grid = parse_grid({**SWEEP_GRID, "test": "t-test"})
    recs = [record(t_grid.baseline.key, [0.0, 1.0, 0.0, 1.0], [1.0] * 4), record("x", [1.0, 1.0, 1.0, 0.0], [1.0] * 4)]
    summarize(t_grid, recs)
    runs = [Run.from_result(r["result"], name=r["key"]) for r in recs]
    expected = compare(runs, metrics=("recall@1",), test="t-test", correction="holm", samples=500, seed=0)
    assert recs[1]["vs_baseline"]["p"] == expected.row("x", "recall@1").p_value


def test_labels_and_the_table_say_when_sizes_count_embedder_tokens():
    """Issue 25 item 10: markdown-256/bm25 counted regex tokens and markdown-256/hybrid MiniLM tokens, and the label
    and the table's size column looked the same. Regex stays unmarked (labels of unchanged configurations stay);
    the embedder's tokens are named."""
    from ragtune.pipeline import PipelineConfig

    label = lambda **f: PipelineConfig.from_flags({"chunker": "markdown", "size": 256, **f}).label  # noqa: E731
    assert label(retriever="bm25") == "markdown-256-o0/bm25"
    assert label(retriever="hybrid") == "markdown-256tok:minilm-o0/hybrid"
    assert label(retriever="dense") == "markdown-256tok:minilm-o0/dense"
    assert label(retriever="hybrid", tokenizer="minilm") == "markdown-256-o0-tokenizer=minilm/hybrid"
    assert label(retriever="hybrid", tokenizer="regex") == "markdown-256-o0-tokenizer=regex/hybrid"
    assert label(retriever="dense", embedder="e5-small") == "markdown-256-o0/dense-emb=e5-small"  # counts regex
    assert len({label(retriever=r, **t) for r in ("bm25", "hybrid") for t in ({}, {"tokenizer": "regex"},
                                                                              {"tokenizer": "minilm"})}) == 5
    regex = record(BASE, [1.0, 0.0], [1.0, 1.0], chunker_config={"size": 256, "overlap": 32, "tokenizer": "regex"})
    minilm = record("m", [1.0, 1.0], [1.0, 1.0], chunker_config={"size": 256, "overlap": 32, "tokenizer": "minilm"})
    table = summarize(GRID, [regex, minilm]).table()
    rows = {line.split()[0]: line for line in table.splitlines() if line[:3].strip().isdigit()}
    assert "   256*" in rows["1"] and "256*" not in rows["2"] and "   256" in rows["2"]
    assert "size*: size and overlap count minilm tokens" in table
    assert "size*" not in summarize(GRID, [regex]).table()
