"""Issue 40 item 2: the threshold calibrate prints reproduces the figures it prints; item 5: the gate at the
production share of unanswerable questions, read from a number or a serve telemetry log, and its
precision-recall curve."""

import json
import random
from pathlib import Path

import numpy as np
import pytest

from ragtune.answer.gate import abstention_scores, calibrate_threshold, place_threshold, threshold_text
from ragtune.cli import main
from tests.helpers import DOCS, write_files, write_jsonl

ROOT = Path(__file__).resolve().parents[2]


def _split(t: float, scores: list[float]) -> list[bool]:
    return [s < t for s in scores]


def test_the_printed_threshold_keeps_every_question_on_its_side_where_rounding_would_not():
    """The cut falls on an answerable question scored 0.0312571 with an unanswerable one at 0.03125 just under:
    the threshold used to be that score itself, printed to 4 significant digits as 0.03126, which refuses that
    answerable question too; eval with the printed gate then measured other figures than calibrate printed."""
    answerable = [0.0312571, 0.05, 0.06, 0.07, 0.04]
    unanswerable = [0.03125, 0.01, 0.02]
    naive = float(f"{0.0312571:.4g}")  # the old rule: the cut's own score, rounded for print
    assert _split(naive, answerable) != _split(0.0312571, answerable)  # rounding flips a question
    cal = calibrate_threshold(answerable, unanswerable, refused_answerable=[False] * 5,
                              refused_unanswerable=[False] * 3)
    assert cal.between == [0.03125, 0.0312571]
    assert 0.03125 < cal.threshold < 0.0312571
    printed = threshold_text(cal.threshold)
    assert printed == "0.031254"  # the fewest digits strictly between the two scores, nearest their midpoint
    assert float(printed) == cal.threshold
    again = float(printed)
    assert _split(again, answerable) == _split(cal.threshold, answerable) == [False] * 5
    assert _split(again, unanswerable) == [True] * 3
    a, u = np.array(answerable), np.array(unanswerable)
    assert abstention_scores(again, a, u) == (cal.precision, cal.recall, cal.f1) == (1.0, 1.0, 1.0)


def test_place_threshold_is_the_shortest_decimal_strictly_between():
    rng = random.Random(7)
    for _ in range(2000):
        lo = rng.uniform(-5, 5) * 10 ** rng.randint(-6, 3)
        hi = lo + abs(lo or 1.0) * 10 ** -rng.uniform(0.5, 12)
        if not lo < hi:
            continue
        t = place_threshold(lo, hi)
        assert lo < t < hi or t == hi
        text = threshold_text(t)
        assert float(text) == t
        digits = len(text.lstrip("-").split("e")[0].replace(".", "").lstrip("0"))
        mid = lo + (hi - lo) / 2
        assert not any(lo < float(f"{mid:.{d}g}") < hi for d in range(1, digits))  # none shorter fits
    assert place_threshold(3.0, 5.0) == 4.0 and place_threshold(2.0, 2.5) == 2.2
    assert place_threshold(float("-inf"), 1.5) == 1.5  # nothing under the cut: the score itself


def test_an_unanswerable_share_reweights_the_figures_and_moves_the_threshold():
    answerable = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.35, 0.3]
    unanswerable = [0.45, 0.32, 0.2, 0.1]
    golden = calibrate_threshold(answerable, unanswerable)
    rare = calibrate_threshold(answerable, unanswerable, unanswerable_share=0.05)
    common = calibrate_threshold(answerable, unanswerable, unanswerable_share=0.6)
    assert golden.at_share is None and rare.objective == common.objective == "f1"
    # rare unanswerable questions: refusing an answerable one costs more precision, so the gate refuses less
    assert rare.threshold < common.threshold
    for cal, p in ((rare, 0.05), (common, 0.6)):
        s = cal.at_share
        a_out = float(np.mean(np.array(answerable) < cal.threshold))
        u_out = float(np.mean(np.array(unanswerable) < cal.threshold))
        assert s["unanswerable_share"] == p and s["recall"] == pytest.approx(u_out)
        assert s["precision"] == pytest.approx(p * u_out / (p * u_out + (1 - p) * a_out))
        assert s["answered_rate"] == pytest.approx(1 - p * u_out - (1 - p) * a_out)
        # the top-level figures stay the golden set's own, what eval --answers --gate measures
        assert (cal.precision, cal.recall) == abstention_scores(cal.threshold, np.array(answerable),
                                                                np.array(unanswerable))[:2]
        chosen = [pt for pt in cal.pr_curve if pt["chosen"]]
        assert len(chosen) == 1 and chosen[0]["threshold"] == cal.threshold
        assert chosen[0]["precision"] == pytest.approx(s["precision"])
    # at the golden set's own share, the reweighted figures are the plain ones
    own = calibrate_threshold(answerable, unanswerable, unanswerable_share=4 / 12, objective="balanced")
    assert own.threshold == golden.threshold and own.at_share["precision"] == pytest.approx(golden.precision)
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="unanswerable_share"):
            calibrate_threshold(answerable, unanswerable, unanswerable_share=bad)


def test_calibrate_on_the_manual_prints_a_gate_eval_reproduces():
    """End to end on the bundled docs golden set: the threshold calibrate prints, read back from its printed
    text and given to eval --answers as its gate, measures the printed precision, recall and answered rate
    exactly. BM25 keeps it fast (no embedding); bench/calibrate_reproduces.py runs the commands with the
    default hybrid pipeline on every golden set at hand."""
    from ragtune import load_golden
    from ragtune.answer import ConfidenceGate, ExtractiveGenerator
    from ragtune.answer.evaluate import evaluate_answers
    from ragtune.answer.gate import calibrate_retriever
    from ragtune.cli.render import render_calibration
    from ragtune.store import open_pipeline

    p = open_pipeline(corpus=str(ROOT / "docs"), flags={"retriever": "bm25", "chunker": "section"})
    golden = load_golden(str(ROOT / "docs" / "golden.jsonl"))
    out = render_calibration(calibrate_retriever(p.retriever, golden, p.corpus, k=5), "bm25")
    printed = next(line for line in out.splitlines() if line.startswith("use it:")).split("--gate ")[1].split(",")[0]
    figures = next(line for line in out.splitlines() if line.startswith("abstention precision")).split()
    answered = out.split("; answered ")[1].split(")")[0]
    m = evaluate_answers(p.retriever, golden, p.corpus, ExtractiveGenerator(), k=5,
                         gate=ConfidenceGate(float(printed)))["metrics"]
    assert (f"{m['abstention_precision']:.3f}", f"{m['abstention_recall']:.3f}", f"{m['answered_rate']:.3f}") == (
        figures[2], figures[4], answered)


@pytest.fixture
def small(tmp_path):
    rows = [{"id": i, "q": q, "relevant": r} for i, q, r in [
        ("a1", "How long until refunds are paid for a cancelled order?", ["billing/refunds.md#refunds"]),
        ("a2", "Are invoices emailed monthly?", ["billing/invoices.md"]),
        ("a3", "Is account deletion permanent?", ["account/delete.md"]),
        ("a4", "When do parcels ship?", ["shipping.md"]),
        ("u1", "Do you sell gift cards?", []),
        ("u2", "What is the warranty on laptops?", []),
        ("u3", "Can I pay by invoice in shipping?", []),
    ]]
    return ["--corpus", str(write_files(tmp_path / "docs", DOCS)), "--golden", str(write_jsonl(tmp_path / "g.jsonl", rows)),
            "--retriever", "bm25"]


def test_the_share_read_from_a_telemetry_log_and_the_report_with_its_curve(small, tmp_path, capsys):
    from ragtune.serve.telemetry import TelemetryLog

    log = TelemetryLog(tmp_path / "telemetry.sqlite")
    for i in range(20):
        log.log(query=f"q{i}", outcome="not_found" if i % 4 == 0 else "answered", retrieved=[])
    log.close()
    report = tmp_path / "gate.html"
    assert main(["calibrate", *small, "--unanswerable-share-from", str(tmp_path / "telemetry.sqlite"),
                 "--report", str(report), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["unanswerable_share_from"]["not_found"] == 5 and data["unanswerable_share_from"]["answers"] == 20
    assert data["at_share"]["unanswerable_share"] == 0.25 and data["objective"] == "f1"
    assert sum(p["chosen"] for p in data["pr_curve"]) == 1
    page = report.read_text()
    t = threshold_text(data["threshold"])
    assert "<svg" in page and 'class="chosen"' in page and f"--gate {t}" in page
    assert "expected at unanswerable share 0.25" in page and "5 of 20 answers" in page
    assert main(["calibrate", *small, "--unanswerable-share", "0.25"]) == 0
    out = capsys.readouterr().out
    assert "at an unanswerable share of 0.25: abstention precision" in out
    assert "on this golden set: abstention precision" in out


def test_a_share_the_log_cannot_give_is_one_clear_error(small, tmp_path, capsys):
    from ragtune.serve.telemetry import TelemetryLog

    path = tmp_path / "all-found.sqlite"
    log = TelemetryLog(path)
    log.log(query="q", outcome="answered", retrieved=[])
    log.close()
    assert main(["calibrate", *small, "--unanswerable-share-from", str(path)]) == 2
    assert "0 of 1 answers not found" in capsys.readouterr().err
    assert main(["calibrate", *small, "--unanswerable-share-from", str(tmp_path / "none.sqlite")]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["calibrate", *small, "--unanswerable-share", "0.2", "--unanswerable-share-from", str(path)])
    assert "not allowed with argument" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["calibrate", *small, "--unanswerable-share", "1"])
    assert "argument --unanswerable-share: 1 is out of range" in capsys.readouterr().err
