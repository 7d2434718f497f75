"""ragtune serve, ragtune gaps, ragtune log export."""

from __future__ import annotations

import os
import sys

from ._common import add_output, emit, float_in, int_in


def cmd_serve(args) -> int:
    from ..serve.run import run_server

    run_server(args.store, host=args.host, port=args.port, api_key=os.environ.get(args.api_key_env or "") or None,
               insecure_no_key=args.insecure_no_key, generator=args.generator, gate=args.gate, docs=args.docs,
               log_path=None if args.no_log else (args.log or os.path.join(args.store, "telemetry.sqlite")))
    return 0


def cmd_gaps(args) -> int:
    from ..render import render_gaps
    from ..serve.run import find_gaps

    gaps = find_gaps(args.log, since=args.since, store=args.store, embedder=args.embedder, distance=args.distance)
    emit(args, gaps, render_gaps(gaps["not_found"], gaps["clusters"], args.since))
    return 0


def cmd_log_export(args) -> int:
    from ..serve.run import export_log

    n = export_log(args.log, args.out, since=args.since)
    print(f"wrote {n} rows to {args.out}" if args.out else "", file=sys.stderr, end="\n" if args.out else "")
    return 0


def add(sub) -> None:
    p = sub.add_parser("serve", help="HTTP server over an index store")
    p.add_argument("--store", required=True)
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int_in(1, 65535), default=8000)
    p.add_argument("--generator", default="extractive")
    p.add_argument("--gate", type=float_in(-1e12, 1e12))
    p.add_argument("--log", help="telemetry log (default STORE/telemetry.sqlite)")
    p.add_argument("--no-log", action="store_true", dest="no_log", help="do not log answers")
    p.add_argument("--api-key-env", dest="api_key_env", default="RAGTUNE_API_KEY",
                   help="environment variable holding the API key clients send as X-API-Key (unset: no key)")
    p.add_argument("--insecure-no-key", action="store_true", help="allow listening beyond this machine without a key")
    p.add_argument("--docs", action="store_true", help="serve the OpenAPI page at /docs (its assets load from a CDN)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("gaps", help="cluster the questions answered 'not found': what the corpus is missing")
    p.add_argument("--log", required=True)
    p.add_argument("--since", help="only answers this recent, e.g. 7d, 12h")
    p.add_argument("--store", help="show the nearest existing anchors from this store")
    p.add_argument("--embedder", default="minilm")
    p.add_argument("--distance", type=float_in(1e-9, 2.0), default=0.5, help="cosine distance joining clusters (0.5)")
    add_output(p, "the clusters")
    p.set_defaults(func=cmd_gaps)

    p = sub.add_parser("log", help="telemetry log tools").add_subparsers(dest="log_command", required=True)
    p = p.add_parser("export", help="write the telemetry log as JSON Lines")
    p.add_argument("--log", required=True)
    p.add_argument("--since")
    p.add_argument("--out", help="file to write (default: standard output)")
    p.set_defaults(func=cmd_log_export)
