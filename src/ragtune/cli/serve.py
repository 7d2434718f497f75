"""ragtune serve, ragtune gaps, ragtune log export."""

from __future__ import annotations

import json
import os
import sys

from ._common import add_output, emit, float_in, int_in
from ..errors import ConfigError


def cmd_serve(args) -> int:
    from ..serve.app import check_bind, check_port, create_app

    try:
        import uvicorn
    except ImportError:
        from ..errors import MissingDependencyError

        raise MissingDependencyError("the server needs: pip install 'ragtune[serve]'") from None
    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    warning = check_bind(args.host, key, args.insecure_no_key)
    check_port(args.port)
    if warning:
        print(warning, file=sys.stderr)
    log = None if args.no_log else (args.log or os.path.join(args.store, "telemetry.sqlite"))
    app = create_app(args.store, api_key=key, log_path=log, generator=args.generator, gate=args.gate, docs=args.docs)
    print(f"serving {args.store} (version {app.state.holder.version}) on http://{args.host}:{args.port}"
          + ("  docs: /docs" if args.docs else "") + (f"; telemetry: {log}" if log else "; telemetry off")
          + ("; API key required" if key else ""), file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", workers=1)
    return 0


def _existing_log(path: str):
    """A telemetry log to read: a missing file is a mistake, not an empty log."""
    from ..serve.telemetry import TelemetryLog

    if not os.path.isfile(path):
        raise ConfigError(f"telemetry log {path!r} does not exist (a server writes STORE/telemetry.sqlite by default)")
    return TelemetryLog(path)


def cmd_gaps(args) -> int:
    from ..embed import get_embedder
    from ..render import render_gaps
    from ..serve.gaps import cluster_gaps
    from ..serve.telemetry import parse_since

    rows = list(_existing_log(args.log).rows(since=parse_since(args.since), outcome="not_found"))
    retriever = None
    if args.store:
        from ..store import IndexStore, load_pipeline

        retriever = load_pipeline(IndexStore(args.store)).retriever
    clusters = cluster_gaps([r["query"] for r in rows], get_embedder(args.embedder), distance=args.distance,
                            retriever=retriever)
    emit(args, {"not_found": len(rows), "clusters": clusters}, render_gaps(len(rows), clusters, args.since))
    return 0


def cmd_log_export(args) -> int:
    from ..serve.telemetry import parse_since

    log = _existing_log(args.log)
    try:
        out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    except OSError as e:
        raise ConfigError(f"cannot write {args.out}: {e.strerror or e}") from None
    n = 0
    try:
        for row in log.rows(since=parse_since(args.since)):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    finally:
        if args.out:
            out.close()
    if args.out:
        print(f"wrote {n} rows to {args.out}", file=sys.stderr)
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
                   help="environment variable holding the API key clients must send as X-API-Key (unset: no key)")
    p.add_argument("--insecure-no-key", action="store_true", dest="insecure_no_key",
                   help="allow listening beyond this machine without an API key")
    p.add_argument("--docs", action="store_true", help="serve the OpenAPI page at /docs (its assets load from a CDN)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("gaps", help="cluster the questions answered 'not found': what the corpus is missing")
    p.add_argument("--log", required=True)
    p.add_argument("--since", help="only answers this recent, e.g. 7d, 12h")
    p.add_argument("--store", help="show the nearest existing anchors from this store")
    p.add_argument("--embedder", default="minilm")
    p.add_argument("--distance", type=float_in(1e-9, 2.0), default=0.5,
                   help="cosine distance that joins clusters, in (0, 2] (default 0.5)")
    add_output(p, "the clusters")
    p.set_defaults(func=cmd_gaps)

    p = sub.add_parser("log", help="telemetry log tools").add_subparsers(dest="log_command", required=True)
    p = p.add_parser("export", help="write the telemetry log as JSON Lines")
    p.add_argument("--log", required=True)
    p.add_argument("--since")
    p.add_argument("--out", help="file to write (default: standard output)")
    p.set_defaults(func=cmd_log_export)
