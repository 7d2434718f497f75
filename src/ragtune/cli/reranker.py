"""ragtune reranker train, ragtune reranker export."""

from __future__ import annotations

import json

from ..corpus import load_corpus
from ..golden import load_golden
from .options import add_flags, kwargs
from ..rerank_export import ExportOptions, export_cross_encoder
from ..train.trainer import TrainOptions, train_reranker
from ._common import command


def cmd_train(args) -> int:
    golden = load_golden(args.golden, split=args.split) if args.golden else None
    held_out = load_golden(args.eval_golden, split=args.eval_split) if args.eval_golden else None
    r = train_reranker(load_corpus(args.corpus), golden, out_dir=args.out, eval_golden=held_out,
                       drop_overlap=args.drop_overlap, options=TrainOptions(**kwargs(TrainOptions, args)))
    best = f"{r.best_validation_mrr:.3f}" if r.best_validation_mrr is not None else "-"
    cut = (f" (cut by the {r.options.get('max_minutes'):g}-minute limit: {r.planned_steps - r.steps} steps not run; "
           "--max-steps bounds a run by steps instead)" if r.cut_by == "max_minutes" else "")
    return _show(args, r.to_dict(), f"trained {r.steps} of {r.planned_steps} planned steps{cut} on {r.train_groups} "
                f"questions in {r.seconds:.0f} s "
                f"({r.pairs_per_s:.1f} pairs/s); best epoch {r.best_epoch} (held-out MRR {best}); model in {r.out_dir}"
                f"\nuse it: --rerank cross-encoder --rerank-model {r.out_dir}")


def cmd_export(args) -> int:
    r = export_cross_encoder(args.source, args.out, options=ExportOptions(**kwargs(ExportOptions, args)))
    return _show(args, r.to_dict(), f"wrote {', '.join(r.files.values())} to {r.out_dir} in {r.seconds:.1f} s\n"
                f"use it: --rerank cross-encoder --rerank-model {r.out_dir}")


def _show(args, data, text: str) -> int:  # (--out names the model folder here, not a JSON file)
    print(json.dumps(data, indent=2, default=str) if args.json else text)
    return 0


def add(sub) -> None:
    rr = sub.add_parser("reranker", help="train and export cross-encoder rerankers").add_subparsers(
        dest="reranker_command", required=True)
    p = command(rr, "train", cmd_train, "train a cross-encoder for a corpus from a golden set's train split (or "
                "--pairs pseudo: from the corpus alone)", inputs="corpus golden? split")
    p.add_argument("--out", required=True, metavar="DIR", help="the model folder to write")
    p.add_argument("--eval-golden", dest="eval_golden", help="the set it will be evaluated on: shared questions are "
                   "refused (or dropped with --drop-overlap)")
    p.add_argument("--eval-split", dest="eval_split", help="BEIR split of --eval-golden (e.g. test)")
    p.add_argument("--drop-overlap", action="store_true", dest="drop_overlap",
                   help="leave out training questions shared with --eval-golden instead of refusing")
    p.add_argument("--json", action="store_true", help="print the training record as JSON")
    add_flags(p, TrainOptions)
    p = command(rr, "export", cmd_export, "write a cross-encoder as ONNX (fp32, and int8 with --int8)")
    p.add_argument("source", help="a cross-encoder folder (e.g. from reranker train) or a Hugging Face id")
    p.add_argument("--out", required=True, metavar="DIR", help="the ONNX folder to write")
    p.add_argument("--json", action="store_true", help="print what was written as JSON")
    add_flags(p, ExportOptions)
