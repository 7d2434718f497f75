"""Train a cross-encoder reranker on a BEIR folder's train split (or a corpus alone), refusing the eval split.

    python bench/train_reranker.py --data ../shared/datasets/scifact --train-split train --eval-split test \\
        --out out/reranker-scifact --epochs 1 --max-length 192

    python bench/train_reranker.py --data ../shared/datasets/fastapi_docs/md/docs/en/docs --pairs pseudo \\
        --eval-golden bench/golden/fastapi.jsonl --out out/reranker-fastapi-pseudo

Prints the held-out MRR per epoch and writes the model folder (with ragtune-train.json). Evaluate it with
bench/rerank.py.
"""

from __future__ import annotations

import argparse
import json
import sys

import ragtune as rt
from ragtune.train import TrainOptions, train_reranker


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="BEIR folder or markdown folder (the corpus)")
    ap.add_argument("--train-split", default="train", help="BEIR split to train on (pairs=golden)")
    ap.add_argument("--eval-split", default="test", help="BEIR split that must not overlap the training one")
    ap.add_argument("--golden", help="a training golden file instead of a BEIR split")
    ap.add_argument("--eval-golden", help="an evaluation golden file instead of a BEIR split")
    ap.add_argument("--out", required=True)
    ap.add_argument("--drop-overlap", action="store_true",
                    help="leave training questions that the evaluation set also asks out (SciFact: 2 shared texts)")
    defaults = TrainOptions()
    for name, value in defaults.to_dict().items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            ap.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes"), default=value)
        elif name in ("max_steps",):
            ap.add_argument(flag, type=int, default=None)
        elif name in ("max_minutes",):
            ap.add_argument(flag, type=float, default=None)
        else:
            ap.add_argument(flag, type=type(value), default=value)
    args = ap.parse_args(argv)
    options = TrainOptions.from_dict({k: getattr(args, k) for k in defaults.to_dict()})

    corpus = rt.load_corpus(args.data)
    is_beir = corpus.kind == "beir"
    golden = eval_golden = None
    if options.pairs == "golden":
        golden = rt.load_golden(args.golden) if args.golden else rt.load_golden(args.data, split=args.train_split)
    if args.eval_golden:
        eval_golden = rt.load_golden(args.eval_golden)
    elif is_beir:
        eval_golden = rt.load_golden(args.data, split=args.eval_split)
    result = train_reranker(corpus, golden, out_dir=args.out, options=options, eval_golden=eval_golden,
                            drop_overlap=args.drop_overlap)
    summary = {k: v for k, v in result.to_dict().items() if k != "losses"}
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
