"""What the serve, gaps and log commands do, as library calls."""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Any, TextIO

from ..errors import ConfigError, MissingDependencyError, TelemetryError
from ..config import Opt
from ..embed import DEFAULT_EMBEDDER

__all__ = ["run_server", "serving_config", "open_log", "find_gaps", "export_log"]


def run_server(
    store: str, *,
    host: Annotated[str, Opt("interface to listen on (default 127.0.0.1: this machine only)")] = "127.0.0.1",
    port: Annotated[int, Opt("port to listen on", lo=1, hi=65535)] = 8000,
    api_key: str | None = None,
    insecure_no_key: Annotated[bool, Opt("allow listening beyond this machine without a key")] = False,
    log_path: Annotated[str | None, Opt("telemetry log (default STORE/telemetry.sqlite)", flag="--log")] = None,
    generator: Annotated[str, Opt("extractive (offline), anthropic[:model], openai:<model>")] = "extractive",
    gate: Annotated[float | str | None, Opt("answer not_found below this top retrieval score (see calibrate), "
                                            "or by a learned gate: the JSON file calibrate --learned FILE wrote",
                                            metavar="T|FILE")] = None,
    docs: Annotated[bool, Opt("serve the OpenAPI page at /docs (its assets load from a CDN)")] = False,
    workers: Annotated[int, Opt("server processes sharing the port (each loads the current version; a Milvus "
                                "version is searched in Milvus, with no copy per process)", lo=1, hi=256)] = 1,
    max_connections: Annotated[int | None, Opt("most open connections per process (default 2048; never more than "
                                               "the open-file limit allows, less a reserve)", lo=1,
                                               hi=1_000_000)] = None,
    request_timeout: Annotated[float | None, Opt("seconds a connection has to send a whole request (head and body) "
                                                 "after it opens or after its last response (default 10)",
                                                 lo=0.1, hi=3600)] = None,
    config: Annotated[str | None, Opt("a pipeline file (TOML or YAML, as a sweep writes recommended.toml): its "
                                      "chunking, retrieval and embedder must be the store's; its reranker reranks "
                                      "every search", metavar="FILE")] = None,
) -> None:
    """Check the bind (no API key beyond loopback without ``insecure_no_key``) and serve until interrupted.

    With ``workers`` > 1, uvicorn runs that many processes accepting on one socket; each builds its app with
    :func:`ragtune.serve.app.app_from_env` from settings passed in the environment (the API key in a variable of
    its own, never on a command line) and appends to the same telemetry log.

    ``config``: a pipeline file (:func:`serving_config`), checked against the current version before the server
    starts; its reranker reranks every search.

    Each process caps its connections below its open-file limit and gives each connection ``request_timeout``
    seconds to send a request (:mod:`ragtune.serve.guard`); a ``log_path`` that exists and is not a regular file
    (a FIFO, a device, a folder) is refused before anything is opened.
    """
    from .app import KEY_ENV, SETTINGS_ENV, check_bind, check_port, create_app
    from .guard import KEEP_ALIVE_S, LIMITS_ENV, compute_limits
    from .telemetry import check_log_path

    try:
        import uvicorn
    except ImportError:
        raise MissingDependencyError("the server needs: pip install 'ragtune[serve]'") from None
    warning = check_bind(host, api_key, insecure_no_key)
    check_port(port)
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= 256:
        raise ConfigError(f"--workers {workers!r}: give a whole number of processes from 1 to 256, e.g. --workers 4")
    limits = compute_limits(max_connections, request_timeout)  # ConfigError for a bad value or a tiny ulimit
    if log_path is not None:
        try:
            check_log_path(log_path)  # a FIFO would block the server's start; a folder or device is no log either
        except TelemetryError as e:
            raise ConfigError(str(e)) from None
    pipeline = serving_config(store, config) if config else None
    gate = _gate_setting(gate)
    if warning:
        print(warning, file=sys.stderr)
    os.environ[LIMITS_ENV] = json.dumps({"max_connections": max_connections, "request_timeout": request_timeout})
    tail = (("  docs: /docs" if docs else "") + (f"; telemetry: {log_path}" if log_path else "; telemetry off")
            + ("; API key required" if api_key else "")
            + f"; at most {limits.max_connections} connections"
            + (f" (open-file limit {limits.nofile})" if limits.nofile else "")
            + f", {limits.request_timeout:g} s per request")
    guard = {"http": "ragtune.serve.guard:GuardedH11Protocol", "backlog": limits.backlog,
             "timeout_keep_alive": KEEP_ALIVE_S, "log_level": "warning"}
    if workers == 1:
        app = create_app(store, api_key=api_key, log_path=log_path, generator=generator, gate=gate, docs=docs,
                         host=host, pipeline=pipeline)
        print(f"serving {store} (version {app.state.holder.version}) on http://{host}:{port}{tail}", file=sys.stderr)
        uvicorn.run(app, host=host, port=port, workers=1, **guard)
        return
    from ..answer import make_generator
    from ..store import IndexStore

    current = IndexStore(store).current_id()  # fail here, once, rather than in every worker
    if current is None:
        raise ConfigError(f"{store} has no current version; build or promote one first")
    make_generator(generator)
    os.environ[SETTINGS_ENV] = json.dumps({"store": os.path.abspath(store), "generator": generator, "gate": gate,
                                           "docs": docs, "log_path": os.path.abspath(log_path) if log_path else None,
                                           "host": host, "pipeline": pipeline.to_dict() if pipeline else None})
    if api_key:
        os.environ[KEY_ENV] = api_key
    else:
        os.environ.pop(KEY_ENV, None)
    print(f"serving {store} (version {current}) on http://{host}:{port} with {workers} worker processes{tail}",
          file=sys.stderr)
    # a worker loading a model may not answer uvicorn's health ping for a while: give it a minute, not 5 s
    uvicorn.run("ragtune.serve.app:app_from_env", factory=True, host=host, port=port, workers=workers,
                timeout_worker_healthcheck=60, **guard)


def _gate_setting(gate: float | str | None) -> float | str | None:
    """``--gate``: a number (a top-score threshold, within +-1e12), or a learned gate file, read now so that a bad
    one stops the server before it starts, and passed on by its absolute path (workers read it again)."""
    from ..answer.abstain import load_gate
    from ..config import parse_number

    if gate is None or isinstance(gate, (int, float)):
        return gate
    try:
        float(gate)
    except ValueError:
        load_gate(gate)
        return os.path.abspath(gate)
    return parse_number(gate, float, -1e12, 1e12)


def serving_config(store: str, path: str):
    """The pipeline file ``path`` (TOML or YAML of flag names, as a sweep writes ``recommended.toml`` and ``eval`` and
    ``index build`` take it) as a :class:`~ragtune.pipeline.PipelineConfig`, checked against the current version
    of ``store`` (:func:`~ragtune.serve.app.check_serving_config`): what ``serve --config FILE`` loads."""
    from ..pipeline import PipelineConfig
    from ..store import IndexStore

    from .app import check_serving_config

    pipeline = PipelineConfig.from_file(path)
    check_serving_config(pipeline, IndexStore(store).get())
    return pipeline


def open_log(path: str):
    """A telemetry log to read: a missing file is a mistake, not an empty log."""
    from .telemetry import TelemetryLog

    if not os.path.isfile(path):
        raise ConfigError(f"telemetry log {path!r} does not exist (a server writes STORE/telemetry.sqlite by default)")
    return TelemetryLog(path)


def find_gaps(
    log_path: str, *, since: Annotated[str | None, Opt("only answers this recent, e.g. 7d, 12h")] = None,
    store: Annotated[str | None, Opt("show the nearest existing anchors from this store")] = None,
    embedder: Annotated[str, Opt("embedder that clusters the questions")] = DEFAULT_EMBEDDER,
    distance: Annotated[float, Opt("cosine distance joining clusters", lo=1e-9, hi=2.0)] = 0.5,
) -> dict[str, Any]:
    """The not-found questions of a log, clustered (with the nearest anchors of ``store`` when given)."""
    from ..embed import get_embedder
    from .gaps import cluster_gaps
    from .telemetry import parse_since

    rows = list(open_log(log_path).rows(since=parse_since(since), outcome="not_found"))
    retriever = None
    if store:
        from ..store import IndexStore, load_pipeline

        retriever = load_pipeline(IndexStore(store)).retriever
    clusters = cluster_gaps([r["query"] for r in rows], get_embedder(embedder), distance=distance, retriever=retriever)
    return {"not_found": len(rows), "clusters": clusters}


def export_log(log_path: str, out: str | None = None, *, since: str | None = None, stdout: TextIO | None = None) -> int:
    """Write the log as JSON Lines to ``out`` (or standard output); returns the number of rows."""
    from .telemetry import parse_since

    log = open_log(log_path)
    try:
        f = open(out, "w", encoding="utf-8") if out else (stdout or sys.stdout)
    except OSError as e:
        raise ConfigError(f"cannot write {out}: {e.strerror or e}") from None
    n = 0
    try:
        for row in log.rows(since=parse_since(since)):
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    finally:
        if out:
            f.close()
    return n
