"""K-fold selection, and the optimism figure right by construction: among configurations that differ only by
noise, the winner looks better where it was chosen and no better held out."""

import random

import numpy as np
import pytest

from ragtune import load_corpus, load_golden
from ragtune.sweep import parse_grid, run_grid, summarize
from ragtune.sweep.grid import GridError
from ragtune.sweep.holdout import fold_questions, folds_selection, holdout_selection
from tests.helpers import SWEEP_GRID
from tests.sweep.noise import noise_corpus, noise_retriever


def q(i, tag="a", answerable=True):
    return {"id": f"q{i:03d}", "tags": [tag], "answerable": answerable}


def test_folds_are_stratified_seeded_and_even():
    qs = [q(i, "a") for i in range(23)] + [q(100 + i, "b") for i in range(11)] + \
         [q(200 + i, "unanswerable", False) for i in range(5)]
    folds = fold_questions(qs, 4, seed=3)
    ids = [i for f in folds for i in f]
    assert sorted(ids) == sorted(x["id"] for x in qs) and len(set(ids)) == len(ids)
    assert max(map(len, folds)) - min(map(len, folds)) <= 1
    for tag, n in (("a", 23), ("b", 11), ("unanswerable", 5)):  # every stratum spread as evenly as it can be
        per = [sum(1 for i in f if next(x for x in qs if x["id"] == i)["tags"] == [tag]) for f in folds]
        assert max(per) - min(per) <= 1 and sum(per) == n, tag
    assert fold_questions(qs, 4, seed=3) == folds and fold_questions(qs, 4, seed=4) != folds


def record(key, scores):
    qs = [{"id": f"q{i:03d}", "tags": ["ab"[i % 2]], "answerable": True, "first_hit_rank": 1 if s else None,
           "scores": {"recall@1": float(s), "recall@5": float(s), "mrr": float(s), "ndcg@10": float(s),
                      "context_tokens@1": 1.0}} for i, s in enumerate(scores)]
    m = float(np.mean(scores))
    return {"key": key, "label": key, "spec": {"chunker": "fixed", "retriever": "bm25"},
            "stats": {"latency_ms": {"p50": 1.0, "p95": 2.0}},
            "result": {"metrics": {"recall@1": m, "recall@5": m, "mrr": m, "ndcg@10": m}, "questions": qs}}


def test_each_fold_is_scored_by_the_configuration_chosen_without_it():
    n, k = 40, 4
    folds = fold_questions(record("x", [0] * n)["result"]["questions"], k, seed=0)
    # "lucky-f" is perfect everywhere except on fold f: it wins the choice made without fold f, and fails there
    recs = [record("base", [1 if i % 2 else 0 for i in range(n)])]
    recs += [record(f"lucky-{f}", [0 if f"q{i:03d}" in folds[f] else 1 for i in range(n)]) for f in range(k)]
    s = folds_selection(recs, metric="recall@1", folds=k, seed=0, baseline_key="base", samples=500)
    assert [r["chosen"] for r in s["per_fold"]] == [f"lucky-{f}" for f in range(k)]
    assert all(r["selection_score"] == 1.0 and r["held_out_score"] == 0.0 for r in s["per_fold"])
    assert s["questions"] == n and s["selection_score"] == 1.0 and s["held_out_score"] == 0.0
    assert s["optimism"] == 1.0 and s["held_out_ci"] == [0.0, 0.0] and s["baseline_held_out"] == 0.5
    assert s["chosen_counts"] == {f"lucky-{f}": 1 for f in range(k)} and not s["beats_baseline"]
    # a search's folds choose among what each of them evaluated: without the lucky ones, the baseline is all there is
    only = folds_selection(recs, metric="recall@1", folds=k, seed=0, baseline_key="base", samples=500,
                           candidates=[[] for _ in range(k)])
    assert only["chosen_counts"] == {"base": k} and only["p_vs_baseline"] is None and only["delta_vs_baseline"] == 0


def test_holdout_and_folds_exclude_each_other_and_folds_are_checked():
    with pytest.raises(GridError, match="choose one way to hold questions out"):
        parse_grid({**SWEEP_GRID, "holdout": 0.3, "folds": 5})
    for bad in (1, -2, 2.5, True, "5"):
        with pytest.raises(GridError, match="folds: expected a number of folds >= 2"):
            parse_grid({**SWEEP_GRID, "folds": bad})
    assert parse_grid({**SWEEP_GRID, "folds": 3}).folds == 3


def noise_records(rng, configs, questions, p=0.5):
    return [record("base" if c == 0 else f"c{c}", [int(rng.random() < p) for _ in range(questions)])
            for c in range(configs)]


def test_among_noise_the_winner_gains_in_sample_and_nothing_held_out():
    """Configurations whose per-question scores are coin flips: the best of 60 on 40 selection questions looks
    about +0.2 better than chance; held out (one split, or 5 folds) it is chance. Averaged over 20 draws, so the
    bounds are a few standard errors wide."""
    rng = random.Random(7)
    opt_h, gain_h, opt_f, gain_f, in_sample = [], [], [], [], []
    for seed in range(20):
        recs = noise_records(rng, 60, 80)
        h = holdout_selection(recs, metric="recall@1", share=0.5, seed=seed, baseline_key="base", samples=200)
        f = folds_selection(recs, metric="recall@1", folds=5, seed=seed, baseline_key="base", samples=200)
        means = sorted(float(np.mean([x["scores"]["recall@1"] for x in r["result"]["questions"]])) for r in recs)
        in_sample.append(means[-1] - 0.5)
        opt_h.append(h["optimism"])
        gain_h.append(h["delta_vs_baseline"])
        opt_f.append(f["optimism"])
        gain_f.append(f["delta_vs_baseline"])
    assert np.mean(in_sample) > 0.1  # the winner's curse, all questions: best of 60 means of 80 coin flips
    assert np.mean(opt_h) > 0.15 and np.mean(opt_f) > 0.1  # in-sample gain that does not hold
    assert abs(np.mean(gain_h)) < 0.04 and abs(np.mean(gain_f)) < 0.04  # held out: no better than the baseline
    assert not any(h for h in gain_h if h > 0.25)


def test_a_noise_retriever_grid_with_folds_reports_the_optimism_end_to_end(tmp_path):
    """The same through the real code path: a retriever plugin that ranks at random, 25 salts of it as a grid, run
    and summarised as any grid. One draw of the noise: the in-sample gain of the winner over chance is large (the
    best of 25), and the fold figures are those of :func:`folds_selection` on the runs; how far the held-out figure
    falls is a matter of the draw, which the averaged test above pins down."""
    with noise_retriever():
        c, g = noise_corpus(tmp_path, questions=80)
        corpus, golden = load_corpus(c), load_golden(g)
        grid = parse_grid({"metric": "recall@5", "samples": 300, "folds": 4,
                           "baseline": {"chunker": "document", "retriever": "noise"},
                           "grid": {"chunker": ["document"], "retriever": ["noise"], "salt": list(range(1, 26))}})
        res = run_grid(corpus, golden, grid, tmp_path / "out", show_progress=False)
    s = res.selection()
    means = [r["result"]["metrics"]["recall@5"] for r in res.records]
    assert abs(np.mean(means) - 0.25) < 0.03  # chance: 5 of 20 documents; the configurations are noise around it
    assert max(means) - 0.25 > 0.08  # the winner's curse: the best of 25 looks clearly better than chance
    assert s["folds"] == 4 and s["questions"] == 80 and len(s["per_fold"]) == 4
    assert s["optimism"] == pytest.approx(s["selection_score"] - s["held_out_score"])
    direct = folds_selection(res.records, metric="recall@5", folds=4, seed=0, baseline_key=res.baseline_key,
                             samples=300)
    assert direct == s
    table = res.table()
    assert "4-fold selection: each fold chosen on the other folds' questions, scored on its own (80 questions" in table
    assert f"(optimism {s['optimism']:+.3f})" in table and "Quote the held-out figure." in table
    assert res.to_dict()["selection"]["per_fold"][0]["fold"] == 1
    assert "4-fold selection" in (tmp_path / "out" / "report.html").read_text()
