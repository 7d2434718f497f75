"""Issue 40 item 6: a learned abstention gate (several retrieval signals, logistic regression) against the score
threshold, held out; its file round-trips and eval --answers --gate FILE applies it."""

import json
import math

import numpy as np
import pytest

from ragtune import load_corpus, load_golden
from ragtune.answer.abstain import (LearnedGate, TermStats, compare_gates, cross_validate, load_gate,
                                    precision_at_recall, question_features, stratified_folds)
from ragtune.cli import main
from ragtune.errors import ConfigError
from ragtune.store import open_pipeline
from ragtune.types import Chunk, Hit, Ranking
from tests.helpers import write_files, write_jsonl


def _chunk(cid: str, doc: str, anchor: str, text: str) -> Chunk:
    return Chunk(id=cid, doc_id=doc, text=text, start=0, end=len(text), embed_text=text, anchors=(anchor,))


def test_term_statistics_count_sections_and_features_follow_their_definitions(tmp_path):
    root = write_files(tmp_path / "c", {"a.md": "# Alpha\n\nZebras graze here.\n\n## Beta\n\nLions hunt zebras.\n",
                                        "b.md": "# Gamma\n\nLions sleep.\n"})
    stats = TermStats.from_corpus(load_corpus(str(root)))
    assert stats.units == 3  # three sections, each counted on its own text
    assert stats.df["zebra"] == 2 and stats.df["lion"] == 2 and stats.df["graze"] == 1 and "penguin" not in stats.df

    c1 = _chunk("c1", "a.md", "a.md#alpha", "Zebras graze here.")
    c2 = _chunk("c2", "b.md", "b.md#gamma", "Lions sleep.")
    c3 = _chunk("c3", "a.md", "a.md#beta", "Lions hunt zebras.")
    ranking = Ranking("Where do zebras graze and hunt penguins?", (Hit(c1, 4.0), Hit(c2, 1.0)))
    pair = (Ranking("q", (Hit(c1, 2.0), Hit(c2, 1.0))), Ranking("q", (Hit(c1, 0.9), Hit(c3, 0.5))))
    f = question_features(ranking, stats, k=4, rare_share=0.34, agreement=pair)
    assert f["top_score"] == 4.0
    assert f["margin"] == pytest.approx((4.0 - 1.0) / 4.0)
    # rare (df <= 0.34 * 3): graze, hunt, penguin (absent from the corpus); only graze is in the top texts
    assert f["rare_terms"] == pytest.approx(1 / 3)
    idf = {t: math.log(4 / (df + 0.5)) for t, df in {"zebra": 2, "graze": 1, "hunt": 1, "penguin": 0}.items()}
    assert f["term_coverage"] == pytest.approx((idf["zebra"] + idf["graze"]) / sum(idf.values()))
    assert f["sections"] == 2 / 4 and f["documents"] == 2 / 4  # two distinct sections and documents, k = 4
    assert f["agreement"] == 1 / 2  # c1 in both top lists, out of two each
    none = question_features(Ranking("zebras", ()), stats, k=4)
    assert none["top_score"] == 0.0 and none["margin"] == 0.0 and "agreement" not in none


def _margin_separates(n: int = 240, seed: int = 1):
    """The top score is the same for both kinds of question; the margin tells them apart."""
    rng = np.random.default_rng(seed)
    y = np.zeros(n, dtype=bool)
    y[: n // 5] = True  # unanswerable
    top = rng.normal(10.0, 2.0, n)
    margin = np.where(y, rng.normal(0.05, 0.05, n), rng.normal(0.3, 0.1, n))
    return np.column_stack([top, margin]), y


def test_the_fitted_gate_beats_the_score_threshold_where_the_top_score_cannot_tell():
    x, y = _margin_separates()
    cmp = compare_gates(x, y, ["top_score", "margin"], folds=5, seed=0)
    base, learned = cmp.baseline, cmp.learned
    assert base["auc"] < 0.65 and learned["auc"] > 0.9
    assert learned["precision_at_recall_0.7"] > base["precision_at_recall_0.7"] + 0.4
    assert learned["f1"] > base["f1"] + 0.3
    assert cmp.gate.weights[1] > 0  # a larger margin pushes toward answering
    text = cmp.to_text()
    assert "score threshold" in text and "learned" in text and "margin" in text and "held out" in text


def test_a_folds_held_out_scores_never_use_that_folds_labels():
    x, y = _margin_separates(n=150, seed=3)
    fold_of = stratified_folds(y, 5, seed=0)
    for f in range(5):  # stratified: every fold holds both kinds
        assert y[fold_of == f].any() and (~y[fold_of == f]).any()
    names = ["top_score", "margin"]
    s0, t0 = cross_validate(x, y, fold_of, names)
    in0 = np.flatnonzero(fold_of == 0)
    y2 = y.copy()
    y2[in0] = np.roll(y[in0], 1)  # the same fold, its labels moved around
    assert (y2 != y).any()
    s1, t1 = cross_validate(x, y2, fold_of, names)
    assert np.array_equal(s0[in0], s1[in0]) and np.array_equal(t0[in0], t1[in0])
    assert not np.array_equal(s0[fold_of != 0], s1[fold_of != 0])  # the other folds did learn from those labels


def test_precision_at_recall_refuses_the_lowest_scores_first():
    scores = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    unanswerable = np.array([True, False, True, True, False, False])
    assert precision_at_recall(scores, unanswerable, 0.7) == pytest.approx(3 / 4)  # recall 1.0 needs 0.4


def test_the_gate_file_round_trips_and_malformed_ones_are_one_clear_error(tmp_path):
    x, y = _margin_separates(n=60)
    gate = compare_gates(x, y, ["top_score", "margin"], folds=3).gate
    path = tmp_path / "gate.json"
    gate.save(path)
    again = load_gate(path)
    assert again == gate and again.score(x[:5]).tolist() == gate.score(x[:5]).tolist()
    good = json.loads(path.read_text())
    cases = [("{not json", "not readable JSON"),
             (json.dumps({"threshold": 1.0}), "not a learned gate file"),
             (json.dumps({**good, "version": 99}), "format version 99"),
             (json.dumps({**good, "features": ["top_score", "shoe_size"]}), "features must be"),
             (json.dumps({**good, "weights": [1.0]}), "weights must list one finite number per feature (2)"),
             (json.dumps({**good, "scale": [1.0, 0.0]}), "every scale must be > 0"),
             (json.dumps({**good, "threshold": "high"}), "threshold must be a number"),
             (json.dumps({**good, "colour": 1}), "unknown keys colour")]
    for text, message in cases:
        path.write_text(text)
        with pytest.raises(ConfigError, match=None) as err:
            load_gate(path)
        assert message in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="not found; fit one with calibrate"):
        load_gate(tmp_path / "missing.json")
    agreeing = LearnedGate(("top_score", "agreement"), (0.0, 0.0), (1.0, 1.0), (1.0, 1.0), 0.0, 0.0)
    p = open_pipeline(corpus=str(write_files(tmp_path / "c", DOCS)), flags={"retriever": "bm25"})
    with pytest.raises(ConfigError, match="agreement of BM25 and dense retrieval"):
        agreeing.bind(p.retriever, p.corpus)


DOCS = {
    "billing.md": "# Billing\n\nRefunds are issued within 14 days of the request.\n\n"
                  "Invoices are emailed on the first day of each month.\n",
    "shipping.md": "# Shipping\n\nParcels ship from Lyon by courier within two days.\n\n"
                   "International orders pay customs duties on delivery.\n",
    "account.md": "# Account\n\nPasswords are reset from the login page with an emailed link.\n",
}
QUESTIONS = [
    ("r1", "How many days until refunds are issued?", ["billing.md"]),
    ("r2", "When are invoices emailed each month?", ["billing.md"]),
    ("r3", "Where do parcels ship from?", ["shipping.md"]),
    ("r4", "Who pays customs duties on international orders?", ["shipping.md"]),
    ("r5", "How are passwords reset from the login page?", ["account.md"]),
    ("r6", "Refunds issued within how many days?", ["billing.md"]),
    ("u1", "What is the capital of Mongolia?", []),
    ("u2", "Which telescope observed the quasar?", []),
    ("u3", "How tall is the lighthouse keeper?", []),
    ("u4", "Which vaccine strain was sequenced?", []),
]


def test_calibrate_writes_the_gate_and_eval_answers_applies_it(tmp_path, capsys):
    root = write_files(tmp_path / "docs", DOCS)
    golden = write_jsonl(tmp_path / "g.jsonl", [{"id": i, "q": q, "relevant": r} for i, q, r in QUESTIONS])
    gate_file, cal, res = tmp_path / "gate.json", tmp_path / "cal.json", tmp_path / "res.json"
    base = ["--corpus", str(root), "--golden", str(golden), "--retriever", "bm25"]
    assert main(["calibrate", *base, "--learned", str(gate_file), "--out", str(cal)]) == 0
    out = capsys.readouterr().out
    assert "learned gate vs score threshold, held out" in out and f"--gate {gate_file}" in out
    learned = json.loads(cal.read_text())["learned"]
    assert set(learned["baseline"]) == set(learned["learned"]) and learned["folds"] == 4
    gate = load_gate(gate_file)
    assert gate.pipeline == "section-prefix/bm25" and gate.fitted_on["unanswerable"] == 4
    assert main(["eval", *base, "--answers", "--gate", str(gate_file), "--out", str(res)]) == 0
    answers = json.loads(res.read_text())["answers"]
    assert answers["gate_info"]["mode"] == "learned" and answers["gate_info"]["text"].startswith("gate: learned (")
    p = open_pipeline(corpus=str(root), flags={"retriever": "bm25"})
    bound = gate.bind(p.retriever, p.corpus)
    by_id = {r["id"]: r for r in answers["answers"]}
    for qid, q, _ in QUESTIONS:  # every question the bound gate refuses is refused by the gate in eval
        refused = not bound.allows(p.retriever.search(q, k=5))
        assert (by_id[qid]["reason"] == "gate") == refused
    assert main(["eval", *base, "--answers", "--gate", "2.5", "--out", str(res)]) == 0  # a number: a threshold
    assert json.loads(res.read_text())["answers"]["gate_info"]["mode"] == "fixed"
    capsys.readouterr()
    assert main(["eval", *base, "--chunker", "document", "--answers", "--gate", str(gate_file)]) == 2
    err = capsys.readouterr().err
    assert "fitted on the pipeline section-prefix/bm25" in err and len(err.strip().splitlines()) == 1
    gate_file.write_text("[1, 2]")
    assert main(["eval", *base, "--answers", "--gate", str(gate_file)]) == 2
    assert "not a learned gate file" in capsys.readouterr().err


def test_answer_takes_the_learned_gate_file_as_eval_does(tmp_path, capsys):
    """answer --gate FILE refused a learned gate file (a number only) while eval --answers --gate FILE took it: now
    answer reads it, binds it to its pipeline and refuses exactly the questions the bound gate refuses."""
    root = write_files(tmp_path / "docs", DOCS)
    golden = write_jsonl(tmp_path / "g.jsonl", [{"id": i, "q": q, "relevant": r} for i, q, r in QUESTIONS])
    gate_file = tmp_path / "gate.json"
    base = ["--corpus", str(root), "--retriever", "bm25"]
    assert main(["calibrate", *base, "--golden", str(golden), "--learned", str(gate_file)]) == 0
    gate = load_gate(gate_file)
    p = open_pipeline(corpus=str(root), flags={"retriever": "bm25"})
    bound = gate.bind(p.retriever, p.corpus)
    refused_by_gate = {q: not bound.allows(p.retriever.search(q, k=5)) for _, q, _ in QUESTIONS}
    assert any(refused_by_gate.values()) and not all(refused_by_gate.values())  # the test can tell both ways
    capsys.readouterr()
    for q, refused in refused_by_gate.items():
        assert main(["answer", *base, q, "--gate", str(gate_file), "--json", "--no-log"]) == 0
        ans = json.loads(capsys.readouterr().out)
        assert (ans["reason"] == "gate") == refused, q
    # the same one-line refusals as eval: other contexts, another pipeline, a file that is no gate
    assert main(["answer", *base, "-k", "3", QUESTIONS[0][1], "--gate", str(gate_file), "--no-log"]) == 2
    err = capsys.readouterr().err
    assert "fitted on the top 5 contexts, answers use 3" in err and len(err.strip().splitlines()) == 1
    assert main(["answer", *base, "--chunker", "document", QUESTIONS[0][1], "--gate", str(gate_file), "--no-log"]) == 2
    assert "fitted on the pipeline section-prefix/bm25" in capsys.readouterr().err
    assert main(["answer", *base, QUESTIONS[0][1], "--gate", str(tmp_path / "none.json"), "--no-log"]) == 2
    assert "not found; fit one with calibrate" in capsys.readouterr().err
    assert main(["answer", *base, QUESTIONS[6][1], "--gate", "1e9", "--json", "--no-log"]) == 0  # still a number
    assert json.loads(capsys.readouterr().out)["reason"] == "gate"


def test_serve_takes_the_learned_gate_file_and_binds_it_to_the_version_served(tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from ragtune.serve.app import create_app
    from ragtune.serve.run import _gate_setting

    root = write_files(tmp_path / "docs", DOCS)
    golden = write_jsonl(tmp_path / "g.jsonl", [{"id": i, "q": q, "relevant": r} for i, q, r in QUESTIONS])
    store, gate_file = tmp_path / "store", tmp_path / "gate.json"
    assert main(["index", "build", "--store", str(store), "--corpus", str(root), "--retriever", "bm25"]) == 0
    assert main(["calibrate", "--store", str(store), "--golden", str(golden), "--learned", str(gate_file)]) == 0
    p = open_pipeline(store=str(store))
    bound = load_gate(gate_file).bind(p.retriever, p.corpus)
    client = TestClient(create_app(str(store), gate=str(gate_file)), base_url="http://127.0.0.1")
    seen = set()
    for _, q, _ in QUESTIONS:
        r = client.post("/answer", json={"query": q})
        assert r.status_code == 200
        refused = not bound.allows(p.retriever.search(q, k=5))
        assert (r.json()["reason"] == "gate") == refused, q
        seen.add(refused)
    assert seen == {True, False}
    r = client.post("/answer", json={"query": QUESTIONS[0][1], "k": 3})  # the gate was fitted on the top 5
    assert r.status_code == 400 and "fitted on the top 5 contexts, answers use 3" in r.json()["detail"]
    assert _gate_setting("2.5") == 2.5 and _gate_setting(str(gate_file)) == str(gate_file.resolve())
    with pytest.raises(ConfigError, match="not found; fit one with calibrate"):
        _gate_setting(str(tmp_path / "missing.json"))  # before the server starts


def test_where_the_other_signals_are_noise_the_gate_keeps_the_top_score_alone():
    rng = np.random.default_rng(5)
    y = np.zeros(120, dtype=bool)
    y[:8] = True  # few unanswerable questions, as in a docs golden set
    top = np.where(y, rng.normal(5.0, 1.0, 120), rng.normal(8.0, 1.0, 120))
    x = np.column_stack([top, rng.normal(size=(120, 5))])
    cmp = compare_gates(x, y, ["top_score", "margin", "rare_terms", "term_coverage", "sections", "documents"])
    assert cmp.gate.features == ("top_score",) and cmp.gate.selection["chosen"] == "top score alone"
    assert "kept: top score alone" in cmp.to_text()
    forced = compare_gates(x, y, ["top_score", "margin", "rare_terms", "term_coverage", "sections", "documents"],
                           select=False)
    assert len(forced.gate.features) == 6 and forced.gate.selection == {}
