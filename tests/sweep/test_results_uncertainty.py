"""Sweep results: ties broken by a second metric then latency, intervals on every mean and delta,
the line on questions needed when nothing is significant, and end-to-end latency timing."""

import json

import pytest

from ragtune import load_corpus, load_golden
from ragtune.sweep import parse_grid, run_sweep, summarize
from ragtune.sweep.results import SweepResult
from ragtune.sweep.runner import LATENCY_METHOD, latency_sample, time_searches
from ragtune.types import Ranking
from tests.helpers import SWEEP_DOCS, SWEEP_GRID, SWEEP_QUESTIONS, golden_rows, write_files, write_jsonl


def _record(key, recall, mrr, p50, vs=None, label=None):
    return {"key": key, "label": label or key, "spec": {"chunker": "fixed", "retriever": "bm25"},
            "stats": {"latency_ms": {"p50": p50, "p95": p50 * 2}}, "vs_baseline": vs,
            "result": {"metrics": {"recall@1": recall, "recall@5": recall, "mrr": mrr, "ndcg@10": mrr}}}


def _vs(delta, p, needed, n=10):
    return {"delta": delta, "p": p, "p_holm": p, "wins": 1, "ties": 8, "losses": 1, "fixed": [], "broken": [],
            "k": 1, "n": n, "delta_ci": [delta - 0.1, delta + 0.1], "mde": 0.3, "needed": needed}


GRID = parse_grid(SWEEP_GRID)


def test_ties_are_broken_by_mrr_then_by_lower_latency():
    recs = [_record("base", 0.5, 0.6, 1.0), _record("slow", 0.8, 0.9, 9.0, _vs(0.3, 1.0, 30)),
            _record("fast", 0.8, 0.9, 2.0, _vs(0.3, 1.0, 30)), _record("mrr", 0.8, 0.95, 50.0, _vs(0.3, 1.0, 30)),
            _record("top", 0.9, 0.1, 99.0, _vs(0.4, 1.0, 20))]
    result = SweepResult(GRID, recs, "base")
    assert [r["key"] for r in result.ranked()] == ["top", "mrr", "fast", "slow", "base"]
    assert result.ranking_rule == "ranked by recall@1 (higher is better); ties broken by mrr, then by lower p50 latency"
    assert result.ranking_rule in result.table()
    by_mrr = SweepResult(parse_grid({**SWEEP_GRID, "metric": "mrr"}), recs, "base")
    assert by_mrr.tie_metric == "ndcg@10"


def test_power_note_names_the_questions_needed_for_the_largest_gain():
    recs = [_record("base", 0.5, 0.6, 1.0), _record("a", 0.6, 0.6, 1.0, _vs(0.1, 1.0, 90)),
            _record("b", 0.7, 0.6, 1.0, _vs(0.2, 1.0, 40)), _record("c", 0.4, 0.6, 1.0, _vs(-0.1, 1.0, 80))]
    note = SweepResult(GRID, recs, "base").power_note()
    assert note.startswith("No configuration differs significantly from the baseline on recall@1 (every p-value is 1")
    assert "+0.200 (b), would take about 40 questions" in note
    assert note in SweepResult(GRID, recs, "base").table()
    # p below 1 but not significant: said so
    recs[2]["vs_baseline"] = _vs(0.2, 0.2, 40)
    assert "every Holm-corrected p >= 0.05" in SweepResult(GRID, recs, "base").power_note()
    # one significant configuration: no line
    recs[2]["vs_baseline"] = _vs(0.2, 0.01, 40)
    assert SweepResult(GRID, recs, "base").power_note() is None
    assert "would take" not in SweepResult(GRID, recs, "base").table()
    # nobody changed anything: more questions cannot help
    flat = [_record("base", 0.5, 0.6, 1.0), _record("a", 0.5, 0.6, 1.0, _vs(0.0, 1.0, None))]
    assert "more questions cannot separate them" in SweepResult(GRID, flat, "base").power_note()


def test_the_table_and_report_say_the_delta_intervals_are_not_holm_corrected():
    """Issue 39 item 15: an interval that excludes 0 beside a Holm p above 0.05 is explained where both are shown
    (the terminal table, the report's legend), and only when p is corrected over more than one comparison."""
    from ragtune.sweep.report import render_report

    recs = [_record("base", 0.5, 0.6, 1.0), _record("a", 0.6, 0.6, 1.0, _vs(0.105, 0.407, 90)),
            _record("b", 0.55, 0.6, 1.0, _vs(0.05, 1.0, 200)), _record("c", 0.4, 0.6, 1.0, _vs(-0.1, 1.0, 80))]
    for r in recs:
        r["result"]["questions"] = []
    result = SweepResult(GRID, recs, "base")
    note = result.interval_note()
    assert note == ("the delta's 95% interval is per comparison, not adjusted for the 3 comparisons as the "
                    "Holm-corrected p is: it can exclude 0 while the Holm-corrected p is above 0.05")
    assert f"vs baseline: delta (Holm-corrected p) wins/ties/losses; {note}" in result.table().splitlines()
    assert json.dumps(note)[1:-1] in render_report(result) and 'id="interval-note"' in render_report(result)
    one = SweepResult(GRID, recs[:2], "base")  # a single comparison: Holm changes nothing, no line
    assert one.interval_note() is None and "per comparison" not in one.table()


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sweep")
    corpus = load_corpus(write_files(tmp / "c", SWEEP_DOCS))
    golden = load_golden(write_jsonl(tmp / "g.jsonl", golden_rows(SWEEP_QUESTIONS)))
    grid = parse_grid({**SWEEP_GRID, "grid": {"chunker": ["fixed"], "size": [8, 40], "overlap": [0],
                                             "retriever": ["bm25", "dense"]}}).resolved(corpus.kind)
    records = run_sweep(corpus, golden, grid, tmp / "out", show_progress=False)
    return corpus, golden, grid, tmp / "out", summarize(grid, records)


def test_every_mean_and_delta_has_an_interval_that_holds_it(swept):
    *_, result = swept
    data = result.to_dict()
    assert data["ranking"] == result.ranking_rule and data["confidence"] == 0.95
    for c in data["configs"]:
        assert {"recall@1", "recall@5", "mrr", "ndcg@10", "context_tokens@1", "reranker_headroom"} <= set(c["metrics_ci"])
        for m, (lo, hi) in c["metrics_ci"].items():
            assert lo <= c["metrics"][m] + 1e-9 and c["metrics"][m] <= hi + 1e-9, m
        if c["vs_baseline"]:
            lo, hi = c["vs_baseline"]["delta_ci"]
            assert lo <= c["vs_baseline"]["delta"] <= hi
    lines = result.table().splitlines()
    row = next(i for i, line in enumerate(lines) if line.lstrip().startswith("1 "))
    assert lines[row + 1].strip().split()[0] == "{:.2f}-{:.2f}".format(*result.ci(result.ranked()[0], "recall@1"))


def test_latency_is_end_to_end_with_the_query_embedding(swept):
    *_, out, result = swept
    for r in result.records:
        lat = r["stats"]["latency_ms"]
        assert lat["method"] == LATENCY_METHOD and lat["questions"] == len(SWEEP_QUESTIONS) and lat["repeats"] == 3
        assert lat["p50"] <= lat["p95"]
        if r["spec"]["retriever"] == "dense":
            emb = lat["stages"]["embed_query"]
            assert list(lat["stages"])[0] == "embed_query" and lat["p50"] >= emb["p50"]
            assert r["stats"]["query_embedding_ms"]["p50"] > 0
        else:
            assert "embed_query" not in lat["stages"] and r["stats"]["query_embedding_ms"] is None
    dense = [r["stats"]["latency_ms"]["p50"] for r in result.records if r["spec"]["retriever"] == "dense"]
    bm25 = [r["stats"]["latency_ms"]["p50"] for r in result.records if r["spec"]["retriever"] == "bm25"]
    assert min(dense) > max(bm25)


def test_a_run_timed_the_old_way_is_recomputed(swept, monkeypatch):
    corpus, golden, grid, out, _ = swept
    victim = next((out / "runs").glob("*.json"))
    record = json.loads(victim.read_text())
    record["stats"]["latency_ms"] = {"p50": 0.1, "p95": 0.2}  # as written by earlier releases
    victim.write_text(json.dumps(record))
    built = []
    from ragtune.registry import RETRIEVERS

    real = RETRIEVERS.build
    monkeypatch.setattr(RETRIEVERS, "build", lambda *a, **k: built.append(1) or real(*a, **k))
    records = run_sweep(corpus, golden, grid, out, show_progress=False)
    assert len(built) == 1
    assert all(r["stats"]["latency_ms"]["method"] == LATENCY_METHOD for r in records)


def test_latency_sample_is_fixed_and_evenly_spread(swept):
    golden = swept[1]
    qs = [item.q for item in golden]
    assert latency_sample(golden) == qs
    assert latency_sample(golden, 3) == [qs[0], qs[3], qs[7]] == latency_sample(golden, 3)


class _Noisy:
    """A retriever whose stage timings are, per query, 1 ms, 100 ms, 2 ms in turn (one outlier)."""

    name = "noisy"

    def __init__(self):
        self.calls = 0

    def search(self, query, k=10):
        t = (0.001, 0.100, 0.002)[self.calls % 3]
        self.calls += 1
        return Ranking(query, (), {"embed_query": 0.0, "dense": t})


def test_time_searches_keeps_the_median_and_puts_the_model_time_back():
    r = _Noisy()
    lat = time_searches(r, ["a", "b"], depth=5, query_embedding={"a": 0.004, "b": 0.006})
    assert r.calls == 6
    assert lat["stages"]["dense"] == {"p50": pytest.approx(2.0), "p95": pytest.approx(2.0)}
    assert lat["stages"]["embed_query"]["p50"] == pytest.approx(5.0)
    assert lat["p95"] >= lat["p50"] >= 5.0  # the model's time is in (the outlier is out: the dense stage above)
    plain = time_searches(_Noisy(), ["a"], depth=5)
    assert plain["stages"]["embed_query"]["p50"] == 0.0 and plain["p95"] >= plain["p50"] >= 0
