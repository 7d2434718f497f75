"""The extractive answerer's abstention, by overlap threshold and gate, on the docs sets at hand.

    python bench/abstention.py --fastapi ../shared/datasets/fastapi_docs/md/docs/en/docs

For each set (the bundled docs/ with docs/golden.jsonl; the FastAPI docs with
bench/golden/fastapi.jsonl): the default pipeline retrieves the top 5
chunks per question; the extractive generator answers at each overlap
threshold, without a gate and behind a gate cross-validated on the golden set
(5 folds). Prints answered rate, abstention precision and recall, and the
share of answerable questions refused. docs/concepts/abstention.md quotes it.
"""

from __future__ import annotations

import argparse

from ragtune.answer import ExtractiveGenerator
from ragtune.answer.evaluate import evaluate_answers
from ragtune.golden import load_golden
from ragtune.store import open_pipeline


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fastapi", help="the FastAPI docs folder (docs/en/docs); left out when not given")
    ap.add_argument("--thresholds", default="0.2,0.25,0.3,0.34,0.4,0.5,0.6")
    args = ap.parse_args()
    sets = [("bundled docs", "docs", "docs/golden.jsonl")]
    if args.fastapi:
        sets.append(("FastAPI docs", args.fastapi, "bench/golden/fastapi.jsonl"))
    print("| set | min_overlap | gate | answered | abstention precision | abstention recall | answerable refused |")
    print("|---|---|---|---|---|---|---|")
    for name, corpus, golden_path in sets:
        pipeline = open_pipeline(corpus=corpus)
        golden = load_golden(golden_path)
        n_answerable = sum(i.answerable for i in golden)
        for gate in (None, "cv"):
            for t in (float(x) for x in args.thresholds.split(",")):
                out = evaluate_answers(pipeline.retriever, golden, pipeline.corpus, ExtractiveGenerator(min_overlap=t),
                                       gate=gate)
                m = out["metrics"]
                refused = sum(1 for r in out["answers"] if r["answerable"] and r["outcome"] == "not_found")
                fmt = lambda v: "n/a" if v is None else f"{v:.2f}"  # noqa: E731
                label = "cross-validated" if gate else "none"
                print(f"| {name} ({pipeline.config.label}) | {t:.2f} | {label} | {m['answered_rate']:.0%} | "
                      f"{fmt(m['abstention_precision'])} | {fmt(m['abstention_recall'])} | "
                      f"{refused / n_answerable:.0%} |", flush=True)


if __name__ == "__main__":
    main()
