"""Prediction-powered inference: unbiased and covering under a biased judge, narrower with a better judge, the
formula by hand, and which questions count as judged by people."""

import math

import numpy as np
import pytest

from ragtune import GoldenItem, GoldenSet
from ragtune.errors import ConfigError
from ragtune.golden import Judgment
from ragtune.judgments.ppi import people_subset, ppi_mean, ppi_scores, t_quantile


def _truth(rng, questions=200, k=5):
    """Relevant or not for each of the top k hits of each question (the people's labels, all of them)."""
    return rng.random((questions, k)) < rng.beta(1.0, 3.0, questions)[:, None]


def _judge(rng, truth, false_positive, false_negative):
    """A judge that calls a non-relevant hit relevant with probability ``false_positive`` and misses a relevant
    one with probability ``false_negative``."""
    flip = np.where(truth, rng.random(truth.shape) < false_negative, rng.random(truth.shape) < false_positive)
    return truth ^ flip


def _draws(seed, truth, fp, fn, n, draws, lam=None):
    rng = np.random.default_rng(seed)
    y = truth.mean(axis=1)  # precision@k under the people's labels
    out = []
    for _ in range(draws):
        f = _judge(rng, truth, fp, fn).mean(axis=1)
        people = np.full(y.size, np.nan)
        subset = rng.choice(y.size, n, replace=False)
        people[subset] = y[subset]
        out.append(ppi_mean(f, people, metric="precision@5", lam=lam))
    return y.mean(), out


@pytest.mark.parametrize("lam", [None, 1.0], ids=["ppi++", "ppi"])
def test_ppi_is_unbiased_and_covers_where_a_judge_biased_toward_relevant_misses(lam):
    truth = _truth(np.random.default_rng(1))
    target, runs = _draws(2, truth, 0.25, 0.10, 40, 300, lam)
    estimates = np.array([r.estimate for r in runs])
    spread = estimates.std(ddof=1) / math.sqrt(len(estimates))
    assert abs(estimates.mean() - target) < 4 * spread  # unbiased: the judge's bias cancels
    assert np.mean([r.covers(target) for r in runs]) >= 0.92
    naive = np.array([r.naive for r in runs])
    assert naive.mean() - target > 0.1  # the judge calls too much relevant: its figure is far too high
    assert np.mean([r.naive_low <= target <= r.naive_high for r in runs]) < 0.05


def test_interval_narrows_as_the_judge_gets_better():
    truth = _truth(np.random.default_rng(3))
    widths = []
    for fp, fn in ((0.40, 0.30), (0.25, 0.10), (0.05, 0.02), (0.0, 0.0)):
        _, runs = _draws(4, truth, fp, fn, 40, 60)
        widths.append(np.mean([r.width for r in runs]))
    classical = np.mean([r.classical_high - r.classical_low for r in runs])
    assert widths == sorted(widths, reverse=True) and widths[0] > widths[-1] * 1.5, widths
    # a judge that agrees with the people on everything gives the precision of N people-judged questions
    assert widths[-1] < classical * 0.6
    assert all(r.lam == pytest.approx(1.0) for r in runs)


def test_the_formula_by_hand():
    f = np.array([0.2, 0.6, 0.4, 1.0, 0.0, 0.8, 0.4, 0.6])
    y = np.array([0.0, 0.6, 0.2, 1.0, np.nan, np.nan, np.nan, np.nan])
    e = ppi_mean(f, y, lam=1.0)
    fl, yl = f[:4], y[:4]
    assert e.estimate == pytest.approx(f.mean() + (yl - fl).mean())
    var = np.var(yl - fl, ddof=1) / 4 + (2 * np.cov(fl, yl)[0, 1] - np.var(fl, ddof=1)) / 8
    assert e.high - e.estimate == pytest.approx(t_quantile(0.95, 3) * math.sqrt(var))
    assert (e.n, e.N, e.naive, e.classical) == (4, 8, pytest.approx(f.mean()), pytest.approx(yl.mean()))
    tuned = ppi_mean(f, y)
    assert tuned.lam == pytest.approx(min(1.0, np.cov(fl, yl)[0, 1] / np.var(fl, ddof=1)))
    assert t_quantile(0.95, 19) == pytest.approx(2.093024, abs=1e-6)  # Student t, 19 degrees of freedom


def test_too_few_people_or_a_missing_judge_value_is_one_clear_error():
    with pytest.raises(ConfigError, match="at least 3 questions whose holes people judged, got 2"):
        ppi_mean([0.1, 0.2, 0.3], [0.1, 0.2, np.nan])
    with pytest.raises(ConfigError, match="every question needs the judge's value"):
        ppi_mean([0.1, np.nan, 0.3], [0.1, 0.2, 0.3])
    with pytest.raises(ConfigError, match="lam must lie in"):
        ppi_mean([0.1, 0.2, 0.3], [0.1, 0.2, 0.3], lam=2.0)
    with pytest.raises(ConfigError, match="metric 'ndcg@3' is not among the scores"):
        ppi_scores({"q1": {"recall@5": 1.0}}, {}, ["ndcg@3"])


def test_people_subset_counts_a_question_only_when_people_judged_every_hole_the_llm_labelled():
    llm = [Judgment("a.md#x", 1.0, "llm:m"), Judgment("a.md#y", 0.0, "llm:m")]
    judged = GoldenSet([
        GoldenItem("q1", "one", {"a.md#r": 1.0, "a.md#x": 1.0}, judged={"a.md#y": 0.0}, judgments=tuple(llm)),
        GoldenItem("q2", "two", {"a.md#r": 1.0, "a.md#x": 1.0}, judged={"a.md#y": 0.0}, judgments=tuple(llm)),
        GoldenItem("q3", "three", {"a.md#r": 1.0})])
    people = GoldenSet([
        GoldenItem("q1", "one", {"a.md#r": 1.0}, judged={"a.md#x": 0.0, "a.md#y": 0.0},
                   judgments=(Judgment("a.md#x", 0.0, "ana"), Judgment("a.md#y", 0.0, "ana"))),
        GoldenItem("q2", "two", {"a.md#r": 1.0}, judged={"a.md#x": 0.0}),  # a.md#y: no person judged it
        GoldenItem("q3", "three", {"a.md#r": 1.0})])
    assert people_subset(judged, people) == (["q1", "q3"], ["q2"])


def _files(tmp_path, people_by="ana"):
    """A run of 40 questions (top 5 each), the judge's labels on every hole (too many relevant), and a person's
    on the holes of 12 questions; a question's own relevant anchor ``g`` sits at rank 1 or outside the top 5."""
    import json

    rng = np.random.default_rng(5)
    run, judged, people, truth = {}, [], [], {}
    for i in range(40):
        qid = f"q{i}"
        hits = [f"d{i}.md#h{r}" for r in range(5)]
        if i % 2:
            hits[0] = f"d{i}.md#g"
        run[qid] = hits
        holes = [h for h in hits if not h.endswith("#g")]
        truth[qid] = {h: float(rng.random() < 0.2) for h in holes}
        judge = {h: float(g or rng.random() < 0.4) for h, g in truth[qid].items()}
        judged.append({"id": qid, "q": f"question {i}?",
                       "relevant": [f"d{i}.md#g", *[h for h, g in judge.items() if g]],
                       "judged": [h for h, g in judge.items() if not g],
                       "judgments": [{"anchor": h, "grade": g, "by": "llm:m"} for h, g in judge.items()]})
        if i < 12:
            people.append({"id": qid, "q": f"question {i}?",
                           "relevant": [f"d{i}.md#g", *[h for h, g in truth[qid].items() if g]],
                           "judged": [h for h, g in truth[qid].items() if not g],
                           "judgments": [{"anchor": h, "grade": g, "by": people_by} for h, g in truth[qid].items()]})
    paths = [tmp_path / n for n in ("run.json", "judged.jsonl", "people.jsonl")]
    paths[0].write_text(json.dumps(run))
    for p, rows in zip(paths[1:], (judged, people)):
        p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return paths, run, truth


def test_golden_ppi_corrects_the_judges_precision_with_the_peoples_sample(tmp_path, capsys):
    import json

    from ragtune.cli import main

    (run, judged, people), hits, truth = _files(tmp_path)
    assert main(["golden", "ppi", str(run), "--judged", str(judged), "--people", str(people), "--metric",
                 "precision@5", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    ((label, (e,)),) = [(r["label"], r["estimates"]) for r in data["runs"]]
    assert label == str(run)
    assert (e["people"], e["questions"], data["people"][:2]) == (12, 40, ["q0", "q1"])
    # by hand: precision@5 under the judge on all 40, under the people on the 12
    judge_p = []
    for line in judged.read_text().splitlines():
        item = json.loads(line)
        judge_p.append(sum(h in item["relevant"] for h in hits[item["id"]]) / 5)
    people_p = [np.nan] * 40
    for i in range(12):
        people_p[i] = sum(h.endswith("#g") or truth[f"q{i}"].get(h) == 1.0 for h in hits[f"q{i}"]) / 5
    expected = ppi_mean(judge_p, people_p)
    assert e["estimate"] == pytest.approx(expected.estimate) and e["ci"] == pytest.approx([expected.low, expected.high])
    assert e["naive"] > e["estimate"]  # the judge calls too much relevant
    assert data["agreement"]["base_rate_b"] > data["agreement"]["base_rate_a"]
    assert main(["golden", "ppi", str(run), "--judged", str(judged), "--people", str(people)]) == 0
    out = capsys.readouterr().out
    assert "people judged every hole of 12" in out and "precision@5" in out and "judge only" in out
    assert "relevant 0." in out and "by the judge" in out and "prevalence index" in out and "PABAK" in out


def test_golden_ppi_refuses_a_people_file_whose_labels_an_llm_gave(tmp_path, capsys):
    from ragtune.cli import main

    (run, judged, people), _, _ = _files(tmp_path, people_by="llm:other")
    assert main(["golden", "ppi", str(run), "--judged", str(judged), "--people", str(people)]) == 2
    assert "no question has every hole the judge labelled judged by a person" in capsys.readouterr().err


def test_eval_with_llm_labels_points_to_the_correction(tmp_path, capsys):
    from ragtune.cli import main

    (run, judged, _), _, _ = _files(tmp_path)
    assert main(["eval", "--golden", str(judged), "--run", str(run), "--labels", "all"]) == 0
    assert "LLM labels fill holes here and carry the judge's bias; `ragtune golden ppi`" in capsys.readouterr().out
    assert main(["eval", "--golden", str(judged), "--run", str(run)]) == 0
    assert "golden ppi" not in capsys.readouterr().out


def test_golden_ppi_estimates_every_configuration_of_a_sweep_by_its_metric(tmp_path, capsys):
    import json

    from ragtune.cli import main

    (run, judged, people), hits, _ = _files(tmp_path)
    sweep = tmp_path / "sweep"
    (sweep / "runs").mkdir(parents=True)
    configs = {"as-run": hits, "reversed": {q: h[::-1] for q, h in hits.items()}}
    for key, by_q in configs.items():
        result = {"config": {}, "metrics": {}, "questions": [
            {"id": q, "retrieved": [{"anchor": h} for h in hs]} for q, hs in by_q.items()]}
        (sweep / "runs" / f"{key}.json").write_text(json.dumps({"key": key, "label": key, "spec": {}, "result": result}))
    (sweep / "results.json").write_text(json.dumps({"metric": "recall@1", "ks": [1, 5],
                                                    "configs": [{"key": k, "label": k} for k in configs]}))
    assert main(["golden", "ppi", str(sweep), "--judged", str(judged), "--people", str(people), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    runs = {r["label"]: r["estimates"] for r in data["runs"]}
    assert list(runs) == ["as-run", "reversed"] and all([e["metric"] for e in v] == ["recall@1"] for v in runs.values())
    single = main(["golden", "ppi", str(sweep / "runs" / "reversed.json"), "--judged", str(judged), "--people",
                   str(people), "--metric", "recall@1", "--json"])
    assert single == 0 and json.loads(capsys.readouterr().out)["runs"][0]["estimates"] == runs["reversed"]
    assert main(["golden", "ppi", str(sweep), "--judged", str(judged), "--people", str(people)]) == 0
    out = capsys.readouterr().out
    assert "\n  as-run\n    recall@1  " in out and "\n  reversed\n    recall@1  " in out
