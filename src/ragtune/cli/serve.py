"""ragtune serve, ragtune gaps, ragtune log export."""

from __future__ import annotations

import os
import sys

from .options import add_flags, kwargs
from ..serve.run import export_log, find_gaps, run_server
from ._common import add_output, emit


def cmd_serve(args) -> int:
    log = None if args.no_log else (args.log_path or os.path.join(args.store, "telemetry.sqlite"))
    run_server(args.store, **kwargs(run_server, args, log_path=log,
                                    api_key=os.environ.get(args.api_key_env or "") or None))
    return 0


def cmd_gaps(args) -> int:
    from .render import render_gaps

    gaps = find_gaps(args.log, **kwargs(find_gaps, args))
    emit(args, gaps, render_gaps(gaps["not_found"], gaps["clusters"], args.since))
    return 0


def cmd_log_export(args) -> int:
    n = export_log(args.log, args.out, since=args.since)
    print(f"wrote {n} rows to {args.out}" if args.out else "", file=sys.stderr, end="\n" if args.out else "")
    return 0


def add(sub) -> None:
    p = sub.add_parser("serve", help="HTTP server over an index store")
    p.add_argument("--store", required=True)
    add_flags(p, run_server)
    p.add_argument("--no-log", action="store_true", dest="no_log", help="do not log answers")
    p.add_argument("--api-key-env", dest="api_key_env", default="RAGTUNE_API_KEY",
                   help="environment variable holding the API key clients send as X-API-Key (unset: no key)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("gaps", help="cluster the questions answered 'not found': what the corpus is missing")
    p.add_argument("--log", required=True)
    add_flags(p, find_gaps)
    add_output(p, "the clusters")
    p.set_defaults(func=cmd_gaps)

    p = sub.add_parser("log", help="telemetry log tools").add_subparsers(dest="log_command", required=True)
    p = p.add_parser("export", help="write the telemetry log as JSON Lines")
    p.add_argument("--log", required=True)
    p.add_argument("--since")
    p.add_argument("--out", help="file to write (default: standard output)")
    p.set_defaults(func=cmd_log_export)
