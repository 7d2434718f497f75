"""eval --answers without --gate: a gate cross-validated on the golden set; the extractive default threshold."""

import pytest

from ragtune import load_corpus, load_golden
from ragtune.answer import ConfidenceGate, ExtractiveGenerator
from ragtune.answer.evaluate import evaluate_answers
from ragtune.answer.extractive import DEFAULT_MIN_OVERLAP
from ragtune.answer.gate import calibrate_threshold, cross_validated_gates
from ragtune.store import open_pipeline
from tests.helpers import write_files, write_jsonl


def test_each_fold_is_judged_by_a_threshold_calibrated_without_it():
    answerable = [True, True, True, True, False, False, True, False, True, False]
    scores = [9.0, 8.0, 7.0, 6.0, 1.0, 2.0, 5.0, 3.0, 4.0, 0.5]
    thresholds, info = cross_validated_gates(answerable, scores, [False] * 10, folds=2)
    assert info["mode"] == "cross-validated" and info["folds"] == 2
    # stratified round-robin: answerable 0,2,6 and unanswerable 4,7 fall in fold 0
    fold0 = [0, 2, 6, 4, 7]
    train = [i for i in range(10) if i not in fold0]
    expected = calibrate_threshold([scores[i] for i in train if answerable[i]],
                                   [scores[i] for i in train if not answerable[i]]).threshold
    assert info["thresholds"][0] == expected
    assert all(thresholds[i] == expected for i in fold0)
    assert len(set(info["thresholds"])) == 2  # the folds did not see the same questions, nor give one threshold


def test_too_few_unanswerable_questions_means_no_gate_and_says_why():
    thresholds, info = cross_validated_gates([True, True, False], [3.0, 2.0, 1.0], [False] * 3)
    assert thresholds == [None] * 3 and info["mode"] == "none"
    assert "2 unanswerable" in info["reason"] and "got 2 and 1" in info["reason"]


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


@pytest.fixture
def qa(tmp_path):
    root = write_files(tmp_path / "docs", DOCS)
    golden = load_golden(write_jsonl(tmp_path / "g.jsonl", [{"id": i, "q": q, "relevant": r} for i, q, r in QUESTIONS]))
    return open_pipeline(corpus=str(root)), golden, tmp_path


def test_cv_gate_is_reported_and_refuses_off_topic_questions(qa):
    p, golden, _ = qa
    out = evaluate_answers(p.retriever, golden, p.corpus, ExtractiveGenerator(), gate="cv")
    info = out["gate_info"]
    assert info["mode"] == "cross-validated" and info["folds"] == 4  # at most one per unanswerable question
    assert info["text"].startswith("gate: cross-validated, 4 folds")
    assert out["gate"] is None  # no single threshold
    by_id = {r["id"]: r for r in out["answers"]}
    assert sum(by_id[u]["reason"] == "gate" for u in ("u1", "u2", "u3", "u4")) >= 3
    assert out["metrics"]["abstention_recall"] >= 0.75


def test_given_gate_and_no_gate_are_reported_too(qa):
    p, golden, _ = qa
    fixed = evaluate_answers(p.retriever, golden, p.corpus, ExtractiveGenerator(), gate=ConfidenceGate(1e9))
    assert fixed["gate_info"]["text"] == "gate: 1e+09 (given)" and fixed["metrics"]["answered_rate"] == 0.0
    none = evaluate_answers(p.retriever, golden, p.corpus, ExtractiveGenerator())
    assert none["gate_info"]["text"] == "gate: none"
    from ragtune.errors import ConfigError

    with pytest.raises(ConfigError, match="'cv'"):
        evaluate_answers(p.retriever, golden, p.corpus, ExtractiveGenerator(), gate="auto")


def test_eval_answers_cli_cross_validates_by_default(qa, capsys):
    from ragtune.cli import main

    _, _, tmp = qa
    assert main(["eval", "--corpus", str(tmp / "docs"), "--golden", str(tmp / "g.jsonl"), "--answers"]) == 0
    assert "gate: cross-validated, 4 folds" in capsys.readouterr().out


def test_extractive_default_threshold_answers_a_partly_matching_question():
    from ragtune import Chunk

    text = "Refunds are issued within 14 days."
    ctx = [Chunk(id="c", doc_id="d", text=text, start=0, end=len(text), embed_text=text)]
    q = "How long do refunds take to be issued for damaged furniture?"  # 2 of its 6 content words match
    assert DEFAULT_MIN_OVERLAP < 0.5
    assert ExtractiveGenerator().generate(q, ctx).outcome == "answered"
    assert ExtractiveGenerator(min_overlap=0.5).generate(q, ctx).outcome == "not_found"
