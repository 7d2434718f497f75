"""Agreement between label sets: kappa against scikit-learn, tau-b against scipy, the golden-file comparison,
its bootstrap, and a sweep's rankings rescored under two label sets."""

import json
import math
import warnings

import numpy as np
import pytest

from ragtune import GoldenItem, GoldenSet
from ragtune.golden import Judgment
from ragtune.cli import main
from ragtune.judgments.agreement import cohen_kappa, kendall_tau, label_agreement
from tests.helpers import write_jsonl

sklearn_metrics = pytest.importorskip("sklearn.metrics")
scipy_stats = pytest.importorskip("scipy.stats")


def _sk(a, b, weights=None):
    labels = sorted(set(a) | set(b))
    if weights == "linear":  # ragtune weighs by the grade distance: give sklearn every grade in between
        labels = list(range(int(min(labels)), int(max(labels)) + 1))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # scikit-learn warns where kappa is undefined (nan)
        return sklearn_metrics.cohen_kappa_score(a, b, labels=labels, weights=weights)


def test_kappa_and_weighted_kappa_match_scikit_learn_on_random_labels():
    rng = np.random.default_rng(7)
    worst = 0.0
    for trial in range(300):
        n = int(rng.integers(2, 60))
        classes = int(rng.integers(2, 5))
        a = rng.integers(0, classes, n)
        # some trials agree more than chance: b copies a with probability p
        p = rng.random()
        b = np.where(rng.random(n) < p, a, rng.integers(0, classes, n))
        for weights in (None, "linear"):
            ours, theirs = cohen_kappa(a, b, weights=weights), _sk(a.tolist(), b.tolist(), weights)
            if math.isnan(theirs):
                assert math.isnan(ours), (trial, a, b, weights)
                continue
            worst = max(worst, abs(ours - theirs))
    assert worst < 1e-12, worst


@pytest.mark.parametrize("weights", [None, "linear"])
def test_kappa_edge_cases_match_scikit_learn(weights):
    perfect = [0, 1, 2, 2, 1, 0]
    assert cohen_kappa(perfect, perfect, weights=weights) == pytest.approx(1.0)
    assert _sk(perfect, perfect, weights) == pytest.approx(1.0)
    # chance: the same margins, crossed so that agreement is exactly what chance gives
    a, b = [0, 0, 1, 1], [0, 1, 0, 1]
    assert cohen_kappa(a, b, weights=weights) == pytest.approx(0.0) == _sk(a, b, weights)
    # complete disagreement on two classes
    a, b = [0, 1, 0, 1], [1, 0, 1, 0]
    assert cohen_kappa(a, b, weights=weights) == pytest.approx(_sk(a, b, weights)) == pytest.approx(-1.0)
    # one class only, on both sides: no chance agreement to correct for, kappa undefined (nan), as scikit-learn
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1], weights=weights))
    assert math.isnan(_sk([1, 1, 1], [1, 1, 1], weights))
    # one side one class, the other not: defined, 0
    assert cohen_kappa([1, 1, 1, 1], [0, 1, 1, 1], weights=weights) == pytest.approx(_sk([1, 1, 1, 1], [0, 1, 1, 1], weights)) == 0.0
    assert math.isnan(cohen_kappa([], [], weights=weights))


def test_linear_weights_count_the_grade_distance():
    # 0 against 3 costs three times 0 against 1: with grades 0,1,3 (no 2) scikit-learn needs labels=0..3 to agree
    a, b = [0, 1, 3, 3, 0, 1], [0, 1, 3, 0, 1, 1]
    assert cohen_kappa(a, b, weights="linear") == pytest.approx(
        sklearn_metrics.cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights="linear"))
    with pytest.raises(Exception, match="weights"):
        cohen_kappa(a, b, weights="quadratic")


def test_kendall_tau_b_matches_scipy_with_ties():
    rng = np.random.default_rng(3)
    worst = 0.0
    for _ in range(300):
        n = int(rng.integers(2, 40))
        x = rng.integers(0, int(rng.integers(1, 8)), n).astype(float)  # many ties
        y = np.where(rng.random(n) < 0.5, x, rng.integers(0, 5, n)).astype(float)
        ours, theirs = kendall_tau(x, y), scipy_stats.kendalltau(x, y, variant="b").statistic
        if math.isnan(theirs):
            assert math.isnan(ours)
            continue
        worst = max(worst, abs(ours - theirs))
    assert worst < 1e-12, worst
    assert kendall_tau([1, 2, 3], [1, 2, 3]) == 1.0 and kendall_tau([1, 2, 3], [3, 2, 1]) == -1.0
    assert math.isnan(kendall_tau([1, 1, 1], [1, 2, 3]))  # all ties on one side


def _set(rows):
    return GoldenSet([GoldenItem(qid, "q?", relevant={a: g for a, g in labels.items() if g > 0},
                                 judged={a: 0.0 for a, g in labels.items() if g == 0}) for qid, labels in rows])


def test_label_agreement_on_the_pairs_both_judged():
    a = _set([("q1", {"x": 1, "y": 0, "z": 2}), ("q2", {"x": 1, "w": 0}), ("q3", {"x": 1}), ("q9", {"x": 1})])
    b = _set([("q1", {"x": 2, "y": 0, "only-b": 1}), ("q2", {"x": 0, "w": 0}), ("q3", {"x": 1})])
    r = label_agreement(a, b, samples=500, seed=1)
    # pairs: q1 x (1,2), q1 y (0,0), q2 x (1,0), q2 w (0,0), q3 x (1,1); z, only-b and q9 are judged on one side only
    assert (r.pairs, r.questions) == (5, 3)
    ga, gb = [1, 0, 1, 0, 1], [2, 0, 0, 0, 1]
    assert r.raw == pytest.approx(4 / 5)
    assert r.kappa == pytest.approx(sklearn_metrics.cohen_kappa_score([g > 0 for g in ga], [g > 0 for g in gb]))
    assert r.weighted_kappa == pytest.approx(sklearn_metrics.cohen_kappa_score(ga, gb, weights="linear"))
    assert r.grades == (0.0, 1.0, 2.0) and r.confusion == ((2, 0, 0), (1, 1, 1), (0, 0, 0))
    lo, hi = r.kappa_ci
    assert lo <= r.kappa <= hi or math.isnan(lo)
    assert label_agreement(a, b, samples=500, seed=1).kappa_ci == r.kappa_ci  # the seed fixes the interval
    only = label_agreement(a, b, only={("q2", "x"), ("q2", "w")})
    assert only.pairs == 2 and only.raw == 0.5
    d = r.to_dict()
    assert d["pairs"] == 5 and d["weights"] == "linear" and len(d["kappa_ci"]) == 2
    assert "Cohen's kappa" in r.summary() and "weighted kappa" in r.summary()


def test_the_bootstrap_resamples_questions():
    # q1 agrees on all its pairs, q2 disagrees on all: every resample's kappa lies between the two extremes
    rng = np.random.default_rng(0)
    rows_a, rows_b = [], []
    for n in range(30):
        la = {f"s{i}": int(v) for i, v in enumerate(rng.integers(0, 3, 4))}
        lb = {k: (v if n % 3 else int(rng.integers(0, 3))) for k, v in la.items()}
        rows_a.append((f"q{n}", la))
        rows_b.append((f"q{n}", lb))
    r = label_agreement(_set(rows_a), _set(rows_b), samples=1000, seed=0)
    assert r.kappa_ci[0] < r.kappa < r.kappa_ci[1] <= 1.0
    assert r.weighted_ci[0] < r.weighted_kappa < r.weighted_ci[1] <= 1.0


def test_the_cli_prints_the_table_and_json(tmp_path, capsys):
    a = write_jsonl(tmp_path / "a.jsonl", [{"id": "q1", "q": "refunds?", "relevant": ["m.md#x"], "judged": ["m.md#y"]},
                                           {"id": "q2", "q": "fees?", "relevant": ["m.md#y"]}])
    b = write_jsonl(tmp_path / "b.jsonl", [{"id": "q1", "q": "refunds?", "relevant": ["m.md#x", "m.md#y"]},
                                           {"id": "q2", "q": "fees?", "relevant": ["m.md#y"], "judged": ["m.md#x"]}])
    assert main(["golden", "agreement", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "3 (question, anchor) pairs both judged, 2 questions" in out and "raw agreement" in out
    assert main(["golden", "agreement", str(a), str(b), "--json", "--out", str(tmp_path / "agree.json")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["pairs"] == 3 and data["raw_agreement"] == pytest.approx(2 / 3)
    assert json.loads((tmp_path / "agree.json").read_text()) == data


def test_a_sweep_rescored_under_two_label_sets(tmp_path, md_corpus, capsys):
    """Three configurations' stored rankings; under B one more section is relevant, which reorders them."""
    B = "guide/billing.md"
    golden_a = [{"id": "q1", "q": "refunds?", "relevant": [f"{B}#refunds"]},
                {"id": "q2", "q": "accounts?", "relevant": ["faq.md#accounts"]}]
    golden_b = [golden_a[0], {"id": "q2", "q": "accounts?", "relevant": ["faq.md#accounts", f"{B}#invoices"]}]
    a, b = write_jsonl(tmp_path / "a.jsonl", golden_a), write_jsonl(tmp_path / "b.jsonl", golden_b)
    sweep = tmp_path / "sweep"
    (sweep / "runs").mkdir(parents=True)
    rankings = {"one": {"q1": [f"{B}#refunds"], "q2": [f"{B}#invoices", "faq.md#accounts"]},
                "two": {"q1": ["notes.txt", f"{B}#refunds"], "q2": ["faq.md#accounts"]},
                "three": {"q1": ["notes.txt", "faq.md"], "q2": ["notes.txt", f"{B}#invoices"]}}
    for key, by_q in rankings.items():
        result = {"config": {}, "metrics": {}, "questions": [
            {"id": q, "retrieved": [{"anchor": h} for h in hits]} for q, hits in by_q.items()]}
        (sweep / "runs" / f"{key}.json").write_text(json.dumps({"key": key, "label": key, "spec": {}, "result": result}))
    (sweep / "results.json").write_text(json.dumps({"metric": "mrr", "ks": [1, 2],
                                                    "configs": [{"key": k, "label": k} for k in rankings]}))
    assert main(["golden", "agreement", str(a), str(b), "--sweep", str(sweep), "--corpus", str(md_corpus),
                 "--json"]) == 0
    s = json.loads(capsys.readouterr().out)["sweep"]
    mrr = {c["key"]: (c["a"], c["b"]) for c in s["configs"]}
    # A: one (1 + 1/2)/2, two (1/2 + 1)/2, three 0; B: one 1, two 0.75, three (0 + 1/2)/2
    assert mrr == {"one": pytest.approx((0.75, 1.0)), "two": pytest.approx((0.75, 0.75)),
                   "three": pytest.approx((0.0, 0.25))}
    assert s["kendall_tau"] == pytest.approx(scipy_stats.kendalltau([0.75, 0.75, 0.0], [1.0, 0.75, 0.25]).statistic)
    assert main(["golden", "agreement", str(a), str(b), "--sweep", str(sweep)]) != 0  # needs the corpus
    assert "needs the corpus" in capsys.readouterr().err


def _pairs(counts, by_a="ana"):
    """Golden sets A and B over one pair per question, from counts of (A's grade, B's grade); A's labels carry
    a judgment record by ``by_a``."""
    rows_a, rows_b = [], []
    for (ga, gb), n in counts.items():
        for _ in range(n):
            qid = f"q{len(rows_a)}"
            rows_a.append(GoldenItem(qid, "q?", relevant={"s": 1.0} if ga else {}, judged={} if ga else {"s": 0.0},
                                     judgments=(Judgment("s", float(ga), by_a),)))
            rows_b.append(GoldenItem(qid, "q?", relevant={"s": 1.0} if gb else {}, judged={} if gb else {"s": 0.0}))
    return GoldenSet(rows_a), GoldenSet(rows_b)


def test_kappa_comes_with_base_rates_prevalence_bias_and_pabak():
    a, b = _pairs({(1, 1): 4, (0, 0): 30, (0, 1): 5, (1, 0): 1})
    r = label_agreement(a, b, samples=300, seed=0)
    assert (r.base_rate_a, r.base_rate_b) == (pytest.approx(5 / 40), pytest.approx(9 / 40))
    assert r.prevalence_index == pytest.approx((4 - 30) / 40) and r.bias_index == pytest.approx((5 - 1) / 40)
    assert r.pabak == pytest.approx(2 * 34 / 40 - 1)
    assert r.base_rate_a_ci[0] <= r.base_rate_a <= r.base_rate_a_ci[1]
    text = r.summary()
    assert "relevant: A  0.12" in text and "B  0.23" in text and "PABAK 0.70" in text
    assert "prevalence index -0.65, bias index 0.10" in text
    d = r.to_dict()
    assert d["pabak"] == pytest.approx(0.7) and d["base_rate_b"] == pytest.approx(9 / 40)
    assert d["calibrated"] is False and "kappa's interval" in d["verdict"]  # kappa 0.53: not substantial


def test_a_judge_is_never_called_calibrated_against_an_llms_labels():
    counts = {(1, 1): 20, (0, 0): 38, (0, 1): 1, (1, 0): 1}
    people = label_agreement(*_pairs(counts, by_a="ana"), samples=300)
    assert people.calibrated and people.verdict.startswith("B is calibrated against A")
    llm = label_agreement(*_pairs(counts, by_a="llm:gpt-4o-mini"), samples=300)
    assert not llm.calibrated and llm.reference_llm == 60 and llm.kappa == people.kappa
    assert "60 of 60 of A's labels on the pairs came from an LLM" in llm.verdict and llm.verdict in llm.summary()


def test_a_judge_that_calls_too_much_relevant_is_not_calibrated():
    r = label_agreement(*_pairs({(1, 1): 60, (0, 0): 120, (0, 1): 15, (1, 0): 0}), samples=500)
    assert r.kappa_ci[0] >= 0.6 and r.difference_ci[0] > 0
    assert not r.calibrated and "biased toward relevant" in r.verdict
