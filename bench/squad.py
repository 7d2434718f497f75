"""Abstention and citations on SQuAD 2.0 dev with the offline defaults.

    python bench/squad.py --data ../shared/datasets/squad2_dev --retriever bm25

1,204 Wikipedia paragraphs (one chunk each), 11,873 questions of which 5,945
have no answer in the text. The questions are shuffled (seed recorded) and
split in half: the confidence gate's threshold is calibrated on one half and
measured on the other. Then the extractive generator answers the held-out
half behind the gate, and the answers are scored: abstention precision and
recall, citation validity, and how often an answer cites the right paragraph.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time

import numpy as np

import ragtune as rt
from ragtune.answer import ConfidenceGate, ExtractiveGenerator, HeuristicJudge, calibrate_threshold, top_score
from ragtune.answer.evaluate import evaluate_answers
from ragtune.answer.gate import abstention_scores
from ragtune.golden import GoldenSet


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--split", default="dev")
    ap.add_argument("--retriever", default="bm25", choices=["bm25", "dense", "hybrid"])
    ap.add_argument("-k", type=int, default=5, help="contexts per answer")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the figures as JSON")
    args = ap.parse_args(argv)

    corpus = rt.load_corpus(args.data)
    golden = rt.load_golden(args.data, split=args.split)
    items = list(golden.items)
    random.Random(args.seed).shuffle(items)
    half = len(items) // 2
    calib, held = GoldenSet(items[:half], source="calibration half"), GoldenSet(items[half:], source="held-out half")
    t0 = time.perf_counter()
    pipeline = rt.Pipeline.build(corpus, retriever=args.retriever, show_progress=True)
    build_s = time.perf_counter() - t0
    retriever = pipeline.retriever

    def scores(gs):
        a, u = [], []
        for item in gs:
            s = top_score(retriever.search(item.q, k=args.k))
            (a if item.answerable else u).append(s)
        return np.asarray(a), np.asarray(u)

    t0 = time.perf_counter()
    ca, cu = scores(calib)
    cal = calibrate_threshold(ca, cu)
    ha, hu = scores(held)
    p, r, f = abstention_scores(cal.threshold, ha, hu)
    gate_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    ans = evaluate_answers(retriever, held, corpus, ExtractiveGenerator(), judge=HeuristicJudge(), k=args.k,
                           gate=ConfidenceGate(cal.threshold))
    answer_s = time.perf_counter() - t0
    m = ans["metrics"]
    figures = {
        "data": args.data, "retriever": args.retriever, "k": args.k, "seed": args.seed,
        "questions": len(items), "calibration_half": {"answerable": len(calib.answerable), "unanswerable": len(calib.unanswerable)},
        "held_out_half": {"answerable": len(held.answerable), "unanswerable": len(held.unanswerable)},
        "threshold": cal.threshold,
        "gate_calibration": {"precision": cal.precision, "recall": cal.recall, "f1": cal.f1,
                             "false_abstention": cal.false_abstention, "auc": cal.auc, "objective": cal.objective},
        "gate_held_out": {"precision": p, "recall": r, "f1": f, "false_abstention": float(np.mean(ha < cal.threshold))},
        "answers_held_out": {k: m[k] for k in ("answered_rate", "abstention_precision", "abstention_recall", "abstention_f1",
                                               "citation_validity", "answered_with_evidence_cited", "answered_unanswerable",
                                               "citation_coverage", "support")},
        "seconds": {"index": build_s, "gate": gate_s, "answers": answer_s},
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(figures, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
