"""ragtune export: golden sets and eval results in standard formats (TREC, BEIR, ranx)."""

from __future__ import annotations

from ._common import emit


def cmd_export(args) -> int:
    from ..external.files import export_to

    written = export_to(args.format, args.target, golden=args.golden, split=args.split, result=args.result,
                        tag=args.tag, ids=args.ids)
    emit(args, written, "\n".join(f"wrote {w['path']} ({w['what']}, {w['lines']} lines)" for w in written))
    return 0


def add(sub) -> None:
    p = sub.add_parser("export", help="write a golden set (qrels) or an eval result (a run) as TREC, BEIR or ranx")
    p.add_argument("--format", required=True, choices=["trec", "beir", "ranx"],
                   help="trec: qrels and/or run files; beir: a golden-set folder; ranx: JSON dicts for ranx")
    p.add_argument("--golden", help="golden set to export (.jsonl, .yaml, BEIR folder with --split, or TREC qrels)")
    p.add_argument("--split", default=None, help="BEIR qrels split (e.g. test)")
    p.add_argument("--result", metavar="EVAL_JSON", help="an `eval --json` result to export as a run")
    p.add_argument("--out", required=True, dest="target", metavar="PATH",
                   help="file stem or folder: trec writes PATH.qrels / PATH.run, ranx PATH.qrels.json / "
                        "PATH.run.json, beir the folder PATH")
    p.add_argument("--tag", default="ragtune", help="run tag in TREC's sixth column (default ragtune)")
    p.add_argument("--ids", choices=["anchor", "span"], default="anchor",
                   help="run ids: anchor (one line per anchor, for anchor qrels) or span (doc@start-end, exact)")
    p.add_argument("--json", action="store_true", help="print what was written as JSON")
    p.set_defaults(func=cmd_export)
