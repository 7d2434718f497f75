"""ragtune export: golden sets and eval results in standard formats (TREC, BEIR, ranx)."""

from __future__ import annotations

import json

from ..external.files import export_to
from .options import add_flags, kwargs


def cmd_export(args) -> int:
    written = export_to(**kwargs(export_to, args))  # (--out is the export's target here)
    print(json.dumps(written, indent=2) if args.json else
          "\n".join(f"wrote {w['path']} ({w['what']}, {w['lines']} lines)" for w in written))
    return 0


def add(sub) -> None:
    p = sub.add_parser("export", help="write a golden set (qrels) or an eval result (a run) as TREC, BEIR or ranx")
    add_flags(p, export_to)
    p.add_argument("--json", action="store_true", help="print what was written as JSON")
    p.set_defaults(func=cmd_export)
