"""ragtune label: the judging workbench."""

from __future__ import annotations

import os

from ..label.app import run_workbench
from .options import add_corpus_flags, add_flags, kwargs


def cmd_label(args) -> int:
    run_workbench(args.corpus, args.golden, **kwargs(run_workbench, args,
                                                     api_key=os.environ.get(args.api_key_env or "") or None))
    return 0


def add(sub) -> None:
    p = sub.add_parser("label", help="judge and grow a golden set in the browser (a local web app)")
    add_corpus_flags(p, required=True)
    p.add_argument("--golden", required=True, help="the golden set to judge into (.jsonl; created if missing)")
    add_flags(p, run_workbench)
    p.add_argument("--api-key-env", default="RAGTUNE_API_KEY", help="variable holding the API key (needed beyond "
                                                                     "loopback)")
    p.set_defaults(func=cmd_label)
