"""The learned abstention gate against the score threshold, held out, on SQuAD 2.0 dev and the docs sets at hand.

    python bench/gate.py --retriever default --seeds 10 \\
        docs=docs:docs/golden.jsonl \\
        fastapi=../shared/datasets/fastapi_docs/md/docs/en/docs:bench/golden/fastapi.jsonl \\
        rust-book=../shared/datasets/rust_book/md:bench/golden/rust-book.jsonl \\
        python-tutorial=../shared/datasets/formats/rst/tutorial:bench/golden/python-tutorial.jsonl \\
        squad2=../shared/datasets/squad2_dev:../shared/datasets/squad2_dev

Each set is NAME=CORPUS:GOLDEN (GOLDEN a JSONL file, or a BEIR folder read with --split, as SQuAD 2.0 dev whose
labels.jsonl marks the unanswerable questions). ``--retriever default`` is the default pipeline; ``bm25``,
``dense`` or ``hybrid`` change only the retriever. ``--sample N`` keeps N questions of a larger set (stratified,
seed 0: the share of unanswerable questions is kept). For every set, ragtune.answer.abstain.golden_features
computes each question's features from its top k hits, and compare_gates reports the learned gate and the plain
score threshold held out by the same stratified folds: abstention precision at recall 0.7, precision, recall and
F1 at the threshold each gate chose on the training folds, answered rate, AUC. The gate alone (no generator).
With --seeds N the cross-validation is repeated with N fold seeds (the features once) and the means reported: a
docs set's 3-8 unanswerable questions make one split's figures move in large steps.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

import ragtune as rt
from ragtune.answer.abstain import compare_gates, golden_features
from ragtune.golden import GoldenSet


def _sample(golden: GoldenSet, n: int, seed: int) -> GoldenSet:
    items = list(golden.items)
    if n <= 0 or n >= len(items):
        return golden
    rng = np.random.default_rng(seed)
    u = [i for i in items if not i.answerable]
    a = [i for i in items if i.answerable]
    n_u = round(n * len(u) / len(items))
    keep = {id(x) for x in [u[j] for j in rng.choice(len(u), n_u, replace=False)] +
            [a[j] for j in rng.choice(len(a), n - n_u, replace=False)]}
    return GoldenSet([i for i in items if id(i) in keep], source=f"{golden.source} (sample of {n}, seed {seed})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sets", nargs="+", metavar="NAME=CORPUS:GOLDEN")
    ap.add_argument("--retriever", default="default", choices=["default", "bm25", "dense", "hybrid"])
    ap.add_argument("--split", default="dev", help="the split of a BEIR golden folder (default dev)")
    ap.add_argument("--sample", type=int, default=0, help="questions kept of a larger set (0: all)")
    ap.add_argument("-k", type=int, default=5, help="contexts per answer (default 5)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0, help="the seed of --sample, and the first fold seed")
    ap.add_argument("--seeds", type=int, default=1,
                    help="repeat the cross-validation with this many fold seeds and report the means (default 1)")
    ap.add_argument("--json", help="write the figures as JSON")
    args = ap.parse_args(argv)
    rows, out = [], {}
    for spec in args.sets:
        name, _, rest = spec.partition("=")
        corpus_path, _, golden_path = rest.rpartition(":")
        corpus = rt.load_corpus(corpus_path)
        golden = rt.load_golden(golden_path, split=args.split)
        golden = _sample(golden, args.sample, args.seed)
        flags = {} if args.retriever == "default" else {"retriever": args.retriever}
        pipeline = rt.Pipeline.build(corpus, **flags)
        f = golden_features(pipeline.retriever, golden, pipeline.corpus, k=args.k)
        runs = [compare_gates(f.x, f.unanswerable, f.names, folds=args.folds, seed=args.seed + i, l2=args.l2,
                              k=args.k, empty=f.empty) for i in range(args.seeds)]
        cmp = runs[0]
        out[name] = {"pipeline": pipeline.config.label, "runs": [r.to_dict() for r in runs]}
        print(f"## {name} ({pipeline.config.label})\n{cmp.to_text()}\n", file=sys.stderr, flush=True)
        for label, key in (("score threshold", "baseline"), ("learned", "learned")):
            figs = [getattr(r, key) for r in runs]

            def mean(field: str) -> str:
                values = [g[field] for g in figs if g[field] is not None]
                return format(float(np.mean(values)), ".3f") if values else "n/a"

            f1 = [g["f1"] for g in figs]
            spread = f" ({min(f1):.3f}-{max(f1):.3f})" if len(f1) > 1 else ""
            kept = cmp.gate.selection.get("chosen", "all features") if key == "learned" else ""
            rows.append(f"| {name} | {pipeline.config.label} | {cmp.n_answerable}/{cmp.n_unanswerable} | {label} | "
                        f"{mean('precision_at_recall_0.7')} | {mean('precision')} | {mean('recall')} | "
                        f"{mean('f1')}{spread} | {mean('answered_rate')} | {mean('auc')} | "
                        f"{kept} |")
    print(f"means over {args.seeds} fold seed(s); F1 (min-max over seeds); kept: the features of the gate fitted "
          "on every question")
    print("| set | pipeline | answerable/unanswerable | gate | precision at recall 0.7 | precision | recall | F1 | "
          "answered | AUC | kept |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
