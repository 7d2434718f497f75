"""select = significant: the held-out choice keeps the baseline unless a configuration is significantly better on
the selection questions (Holm-adjusted over every configuration compared), so noise is not promoted."""

import random

import pytest

from ragtune.sweep import parse_grid, summarize
from ragtune.sweep.grid import GridError
from ragtune.sweep.holdout import choose, folds_selection, holdout_selection
from tests.helpers import SWEEP_GRID
from tests.sweep.test_holdout import record


def per_question(scores):
    return {f"q{i:02d}": float(v) for i, v in enumerate(scores)}


def test_significant_keeps_the_baseline_among_noise_where_best_promotes_a_lucky_one():
    """30 coin-flip configurations on 60 questions: the best of them beats the baseline's mean on most draws, but
    Holm over 29 comparisons keeps the baseline on nearly all."""
    rng = random.Random(3)
    best_moved = sig_moved = 0
    for _ in range(20):
        per = {("base" if c == 0 else f"c{c}"): per_question(int(rng.random() < 0.5) for _ in range(60))
               for c in range(30)}
        sel = list(per["base"])
        best_moved += choose(per, list(per), sel, baseline_key="base", rule="best") != "base"
        sig_moved += choose(per, list(per), sel, baseline_key="base", rule="significant", samples=500) != "base"
    assert best_moved >= 18 and sig_moved <= 1


def test_significant_takes_the_best_of_the_configurations_that_beat_the_baseline():
    base = [1 if i % 2 else 0 for i in range(60)]                  # 0.50
    strong = [1 if i % 10 else 0 for i in range(60)]               # 0.90: p far below 0.05
    stronger = [1 if i % 20 else 0 for i in range(60)]             # 0.95
    lucky = [1 if (i % 2 or i in (0, 2, 4)) else 0 for i in range(60)]  # 0.55: not significant
    per = {"base": per_question(base), "strong": per_question(strong), "lucky": per_question(lucky)}
    sel = list(per["base"])
    assert choose(per, list(per), sel, baseline_key="base", rule="significant", samples=2000) == "strong"
    per["stronger"] = per_question(stronger)
    assert choose(per, list(per), sel, baseline_key="base", rule="significant", samples=2000) == "stronger"
    assert choose({"base": per["base"], "lucky": per["lucky"]}, ["lucky"], sel, baseline_key="base",
                  rule="significant", samples=2000) == "base"
    # lower-better metrics: the sign turns with the metric
    low = {k: {i: 1.0 - v for i, v in d.items()} for k, d in per.items()}
    assert choose(low, list(low), sel, baseline_key="base", rule="significant", lower_better=True,
                  samples=2000) == "stronger"


def test_holm_counts_every_configuration_compared():
    """A gain significant on its own (p about 0.04) is not once 40 configurations were tried."""
    rng = random.Random(0)
    base = [1 if i % 2 else 0 for i in range(80)]
    better = list(base)
    for i in range(0, 20, 2):
        better[i] = 1  # 10 questions gained
    better[1] = better[3] = 0  # 2 lost: +0.10 on 80 questions, two-sided p = 2 x 79/4096
    per = {"base": per_question(base), "better": per_question(better)}
    sel = list(per["base"])
    assert choose(per, list(per), sel, baseline_key="base", rule="significant", samples=4000) == "better"
    for c in range(40):
        per[f"n{c}"] = per_question(base[i] if rng.random() < 0.9 else 1 - base[i] for i in range(80))
    assert choose(per, list(per), sel, baseline_key="base", rule="significant", samples=4000) == "base"


def test_the_rule_reaches_the_holdout_figures_the_table_and_the_folds():
    n = 40
    grid = parse_grid({**SWEEP_GRID, "holdout": 0.25, "select": "significant"})
    base = grid.baseline.key
    recs = [record(base, [1 if i % 2 else 0 for i in range(n)]),
            record("lucky", [1 if (i % 2 or i < 6) else 0 for i in range(n)])]
    res = summarize(grid, recs)
    s = res.selection()
    assert s["rule"] == "significant" and s["chosen"] == base and s["optimism"] == pytest.approx(
        s["selection_score"] - s["held_out_score"])
    assert "baseline was kept" in res.table() and "select = significant" in res.table()
    best = holdout_selection(recs, metric="recall@1", share=0.25, seed=grid.seed, baseline_key=base, samples=500)
    assert best["rule"] == "best" and best["chosen"] == "lucky"
    f = folds_selection(recs, metric="recall@1", folds=4, seed=0, baseline_key=base, samples=500, rule="significant")
    assert f["rule"] == "significant" and f["chosen_counts"] == {base: 4} and f["p_vs_baseline"] is None
    assert summarize(parse_grid({**SWEEP_GRID, "folds": 4, "select": "significant"}), recs).selection()[
        "chosen_counts"] == {base: 4}


def test_a_bad_select_is_refused_with_what_to_write(tmp_path):
    with pytest.raises(GridError, match="select: expected one of 'best', 'significant'"):
        parse_grid({**SWEEP_GRID, "holdout": 0.3, "select": "luckiest"})
    with pytest.raises(GridError, match="needs holdout .* or folds"):
        parse_grid({**SWEEP_GRID, "select": "significant"})
    assert parse_grid({**SWEEP_GRID, "holdout": 0.3}).select == "best"


def test_the_command_line_select_overrides_the_file(tmp_path):
    from ragtune.cli import build_parser
    from ragtune.sweep.search import load_plan

    path = tmp_path / "g.toml"
    path.write_text('metric = "recall@5"\nholdout = 0.2\n[baseline]\nretriever = "bm25"\n'
                    '[grid]\nchunker = ["section"]\n')
    assert load_plan(path).select == "best" and load_plan(path, select="significant").select == "significant"
    space = tmp_path / "s.toml"
    space.write_text('metric = "recall@5"\nholdout = 0.2\nselect = "significant"\n[baseline]\nretriever = "bm25"\n'
                     '[space]\nchunker = ["section"]\nretriever = ["bm25"]\nk1 = [0.9, 1.2]\n')
    assert load_plan(space, search="tpe").grid.select == "significant"
    assert load_plan(space, search="tpe", select="best").grid.select == "best"
    args = build_parser().parse_args(["sweep", "--corpus", "c", "--golden", "g", "--grid", str(path), "--out", "o",
                                      "--select", "significant"])
    assert args.select == "significant"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["sweep", "--corpus", "c", "--golden", "g", "--grid", str(path), "--out", "o",
                                   "--select", "luckiest"])


def test_choose_refuses_an_unknown_rule():
    per = {"base": per_question([1, 0]), "x": per_question([1, 1])}
    with pytest.raises(ValueError, match="select: expected one of"):
        choose(per, ["x"], ["q00", "q01"], baseline_key="base", rule="luckiest")


def test_bench_selection_over_many_splits_of_a_noise_grid(tmp_path):
    """bench/selection.py on a real grid folder of configurations that differ only by noise: with best, the choice
    is flattered where chosen; with significant the baseline is kept, and its held-out figure is its own."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from ragtune import load_corpus, load_golden
    from ragtune.sweep import run_grid
    from tests.sweep.noise import noise_corpus, noise_retriever

    with noise_retriever():
        c, g = noise_corpus(tmp_path, questions=80)
        grid = parse_grid({"metric": "recall@5", "samples": 200, "holdout": 0.3,
                           "baseline": {"chunker": "document", "retriever": "noise"},
                           "grid": {"chunker": ["document"], "retriever": ["noise"], "salt": list(range(1, 21))}})
        run_grid(load_corpus(c), load_golden(g), grid, tmp_path / "grid", show_progress=False)
    script = Path(__file__).resolve().parents[2] / "bench" / "selection.py"
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "grid"), "--metric", "recall@5", "--splits",
                          "30", "--samples", "200", "--out", str(tmp_path / "sel.json")],
                         capture_output=True, text=True, check=True)
    report = json.loads(out.stdout)
    assert report == json.loads((tmp_path / "sel.json").read_text())
    folder = report["folders"][str(tmp_path / "grid")]
    best, sig = folder["rules"]["best"], folder["rules"]["significant"]
    assert folder["configurations"] == 21 and best["baseline_kept"] < 0.2
    assert best["optimism_mean"] > 0.05  # chosen on 56 questions among 21, flattered there
    assert sig["baseline_kept"] >= 0.9 and abs(sig["held_out_mean"] - folder["baseline_all"]) < 0.03
    assert abs(sig["optimism_mean"]) < 0.06  # the baseline is not chosen for its score: nothing to flatter
