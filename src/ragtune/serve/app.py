"""The HTTP server: search and answers from an index store, hot-swapping versions.

``POST /search``, ``POST /answer``, ``GET /versions``, ``GET /health``; the
OpenAPI schema at ``/openapi.json`` and, with ``docs=True``, Swagger UI at
``/docs``. The store's current version is checked on every request; a newly
promoted (or rolled-back) version is loaded in the background while requests
keep being served by the loaded one, then swapped in one assignment, so no
request fails during a promote. A version that fails to load is reported on
standard error and retried with backoff, and at once when it is promoted
again; ``/health`` says ``degraded`` meanwhile. Snippets come from the index
only.

Answers never wait on the telemetry log: rows go through a bounded queue to
one writer thread (:class:`~ragtune.serve.telemetry.TelemetryWriter`), and
``/health`` runs on the event loop, needing no worker thread.

Several worker processes (``run_server(workers=N)``) each build their app with
:func:`app_from_env` from settings the parent puts in the environment. Each
worker's holder reads ``CURRENT`` itself, so a promote reaches every worker.
A version in Milvus is served by searching its collection, with no chunk or
vector kept in the worker (:func:`serving_loader`); a plain version is loaded
by every worker into its own memory. All workers append to one telemetry file
(SQLite with a busy timeout, one transaction per batch). ``/health`` and the
``X-Ragtune-Worker`` header of /search and /answer give the worker's pid.

At the edges: connections are capped under the open-file limit and given a
request deadline (:mod:`ragtune.serve.guard`); without an API key only local
Host names are answered (421 otherwise, against DNS rebinding); every error
body goes through :func:`clip_inputs`, which cuts any input it quotes; a
damaged store pointer leaves ``/health`` at 200 (degraded) and ``/versions``
at 503; a failing generator is a 502 that shows no upstream URL or text.
"""

import hmac
import ipaddress
import json
import os
import re
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

from ..errors import APIError, ConfigError, EngineError, MissingDependencyError, RagtuneError, StoreError
from ..http import redact_text, redact_urls
from .guard import body_limit, install_loop_guard, notice

__all__ = ["create_app", "app_from_env", "serving_loader", "check_serving_config", "PipelineHolder", "check_bind",
           "check_port",
           "MAX_BODY_BYTES", "MAX_QUERY_CHARS", "MAX_K", "SETTINGS_ENV", "KEY_ENV", "host_allowed", "clip_inputs",
           "MAX_ECHO_CHARS"]

SETTINGS_ENV = "RAGTUNE_SERVE_SETTINGS"  # JSON: what each worker process passes to create_app
KEY_ENV = "RAGTUNE_SERVE_WORKER_KEY"  # the API key, for the workers only: never in argv or in the settings

MAX_QUERY_CHARS = 2000
MAX_K = 100
MAX_BODY_BYTES = 64 * 1024
MAX_ECHO_CHARS = 24  # an input quoted back in an error body is cut to this many characters
_MAX_TOKEN = 120  # any other run of characters without a space longer than this is cut too
_MAX_MESSAGE = 800  # and no error message is longer than this


def _is_loopback(host: str) -> bool:
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost: it may resolve to any interface


def check_bind(host: str, api_key: str | None, insecure: bool = False) -> str | None:
    """Refuse to listen beyond this machine without an API key, unless ``insecure``.

    Returns a warning to print when ``insecure`` allows it, None when there is
    nothing to say; raises :class:`ConfigError` when the bind is refused.
    """
    if _is_loopback(host) or api_key:
        return None
    if not insecure:
        raise ConfigError(f"--host {host} accepts connections from other machines and no API key is set: set one "
                          "in the environment variable named by --api-key-env (default RAGTUNE_API_KEY), listen on "
                          "127.0.0.1, or pass --insecure-no-key to serve without a key")
    return (f"warning: listening on {host} without an API key (--insecure-no-key): anyone who can reach this "
            "port can search and read the index")


def check_port(port: int) -> int:
    """``port`` if it is a TCP port number (1 to 65535), else :class:`ConfigError`."""
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ConfigError(f"--port {port!r}: a TCP port is a whole number from 1 to 65535, e.g. --port 8000")
    return port


def warm_up(pipeline):
    """One search through the whole pipeline before it serves: model sessions, query embedding and BM25 arrays are
    loaded now, so the first request is as fast as the others (it took 1.4 s instead of 20 ms)."""
    pipeline.retriever.search("warm up", k=1)
    return pipeline


def _milvus_pipeline(store, vid: str):
    """A pipeline for version ``vid`` of a Milvus store that keeps no copy of the index: hits are rebuilt from the
    chunk records Milvus returns (parents, for small-to-big, are the only chunks read from the store)."""
    from ..corpus.corpus import Corpus
    from ..engines.milvus import MilvusRetriever, connect
    from ..pipeline import Pipeline, PipelineConfig, Resources
    from ..registry import RERANKERS

    v = store.get(vid)
    engine = v.manifest["engine"]
    config = PipelineConfig.from_dict(v.manifest["config"])
    emb = None
    if config.uses_vectors:
        emb = Resources(config.embedder_id).embedder()
        recorded = v.manifest.get("embedding") or {}
        if recorded.get("key") and recorded["key"] != emb.cache_key:
            raise StoreError(f"version {v.id} was embedded with {recorded.get('model')} ({recorded['key']}); the "
                             f"embedder {config.embedder_id!r} now resolves to {emb.cache_key}: query vectors would not "
                             "match the index. Rebuild or migrate the store.")
    base = MilvusRetriever(connect(engine["uri"]), engine["collection"], config.retriever_config(), embedder=emb,
                           uri=engine["uri"])
    parents = store.chunks(v.id)[1] if v.manifest.get("parents") else []
    reranker = RERANKERS.build(config.rerank, options=config.reranker_config()) if config.rerank else None
    return Pipeline(Corpus([], kind=v.manifest["corpus"]["kind"], root=f"{store.root}@{v.id}"), None, base, (),
                    tuple(parents), reranker, config.candidates, v.id, config)


def check_serving_config(pipeline: Any, version: Any) -> None:
    """A ConfigError unless ``pipeline`` describes the chunking, retrieval and embedder ``version`` was built with
    (the index is what it is: build a version from the same file with ``index build --config``). Filters are
    chosen per request, so a pipeline with one is refused too."""
    from ..pipeline import PipelineConfig

    if pipeline.filter:
        raise ConfigError(f"filter {pipeline.filter!r}: the server takes filters per request (the filter field of "
                          "/search and /answer); drop filter from the pipeline file")
    built = PipelineConfig.from_dict(version.manifest["config"])
    mine = pipeline.resolved(version.manifest["corpus"]["kind"])
    if mine.index_key != built.index_key:
        raise ConfigError(f"version {version.id} was built as {built.label}, the pipeline file describes "
                          f"{mine.label}: build a version from the file (ragtune index build --config FILE) or "
                          "serve another store")


def serving_loader(store, pipeline=None):
    """How a server loads (and warms) a version of ``store``: from Milvus with no local copy when the version
    lives in Milvus, else the whole index into this process's memory. ``pipeline`` (a
    :class:`~ragtune.pipeline.PipelineConfig`, from ``serve --config FILE``) must describe the version's chunking,
    retrieval and embedder (:func:`check_serving_config`); its reranker is added."""
    from ..store import load_pipeline

    def load(vid: str):
        v = store.get(vid)
        if pipeline is not None:
            check_serving_config(pipeline, v)
        if (v.manifest.get("engine") or {}).get("name") == "milvus":
            p = _milvus_pipeline(store, vid)
        else:
            p = load_pipeline(store, vid)
        if pipeline is not None and pipeline.rerank:
            from ..registry import RERANKERS

            p = p.with_reranker(RERANKERS.build(pipeline.rerank, options=pipeline.reranker_config()),
                                pipeline.candidates)
        return warm_up(p)

    return load


class PipelineHolder:
    """The loaded pipeline of the store's current version, swapped when CURRENT changes.

    ``(version, pipeline)`` is one tuple assigned in one step, so a reader never pairs one
    version's label with another's pipeline. A version that fails to load is reported on
    ``stderr`` with its cause and retried: after ``retry_base`` seconds, doubling per failure
    up to ``retry_max``, and at once when ``CURRENT`` is written again (a new promote).
    """

    def __init__(self, store, *, loader=None, retry_base: float = 2.0, retry_max: float = 300.0):
        self.store = store
        self._load = loader or serving_loader(store)
        self.retry_base, self.retry_max = retry_base, retry_max
        self._lock = threading.Lock()
        self._loading: str | None = None
        try:
            vid = store.current_id()
        except StoreError:
            raise
        except (OSError, ValueError) as e:  # a damaged pointer the store did not name: say which file
            raise StoreError(f"{store.root}/CURRENT cannot be read ({type(e).__name__}: {e}); promote a version "
                             "again to rewrite it (ragtune index promote --store DIR VERSION)") from None
        if vid is None:
            raise ConfigError(f"{store.root} has no current version; build or promote one first")
        self._current = (vid, self._load(vid))
        self.swaps = 0
        self.failed: dict[str, str] = {}  # version id -> the last load error (cleared when it loads)
        self._failures: dict[str, dict[str, Any]] = {}  # version id -> attempts, next retry, pointer seen

    @property
    def version(self) -> str:
        return self._current[0]

    @property
    def pipeline(self):
        return self._current[1]

    def _pointer(self) -> tuple[str | None, tuple | None]:
        """CURRENT's version id and a signature of the file: a promote replaces the file, changing it."""
        try:
            st = os.stat(self.store.root / "CURRENT")
            sig: tuple | None = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)
        except OSError:
            sig = None
        return self.store.current_id(), sig

    def _swap_in(self, vid: str, sig: tuple | None) -> None:
        try:
            try:
                pipeline = self._load(vid)
            except Exception as e:  # keep serving the loaded version; report, retry later
                message = f"{type(e).__name__}: {e}"
                with self._lock:
                    prev = self._failures.get(vid)
                    attempts = prev["attempts"] + 1 if prev and prev["pointer"] == sig else 1
                    wait = min(self.retry_max, self.retry_base * 2 ** (attempts - 1))
                    self._failures[vid] = {"attempts": attempts, "next": time.monotonic() + wait, "pointer": sig}
                    self.failed[vid] = message
                print(f"ragtune serve: could not load version {vid} (attempt {attempts}): {message}; still serving "
                      f"{self.version}; retrying in {wait:g} s, or at once when {vid} is promoted again",
                      file=sys.stderr, flush=True)
                return
            with self._lock:
                swapped = self.store.current_id() == vid  # a rollback during the load wins: drop this one
                if swapped:
                    self._current = (vid, pipeline)
                    self.swaps += 1
                    recovered = self.failed.pop(vid, None) is not None
                    self._failures.pop(vid, None)
            if swapped and recovered:
                print(f"ragtune serve: loaded version {vid} after earlier failures; serving it now",
                      file=sys.stderr, flush=True)
        finally:
            with self._lock:
                self._loading = None

    def get(self) -> tuple[str, Any]:
        """The (version, pipeline) to serve now; starts loading a newer current version if one is due."""
        try:
            current, sig = self._pointer()
        except (OSError, ValueError):  # an unreadable or damaged pointer (StoreError is a ValueError): keep serving
            return self._current  # what is loaded; /health says what is wrong
        if current and current != self._current[0]:
            with self._lock:
                f = self._failures.get(current)
                due = f is None or f["pointer"] != sig or time.monotonic() >= f["next"]
                start = due and self._loading is None and current != self._current[0]
                if start:
                    self._loading = current
            if start:
                threading.Thread(target=self._swap_in, args=(current, sig), daemon=True,
                                 name=f"ragtune-load-{current}").start()
        return self._current

    def load_errors(self) -> dict[str, str]:
        """The last load error of each version that failed and has not loaded since."""
        with self._lock:
            return dict(self.failed)

    def problems(self) -> list[str]:
        """Why the served version is not the current one (empty when it is)."""
        try:
            current = self.store.current_id()
        except (OSError, ValueError) as e:  # StoreError (damaged CURRENT) is a ValueError
            return [f"cannot read the current pointer: {type(e).__name__}: {e}; still serving {self.version}"]
        serving = self.version
        if current is None:
            return [f"the store has no current version; serving {serving}"]
        if current == serving:
            return []
        with self._lock:
            f, error, loading = self._failures.get(current), self.failed.get(current), self._loading
        if loading == current:
            return [f"loading version {current}; serving {serving} until it has loaded"]
        if f is not None and error is not None:
            left = max(0.0, f["next"] - time.monotonic())
            return [f"version {current} failed to load ({f['attempts']} attempts): {error}; serving {serving}; "
                    f"next attempt in {left:.0f} s or when it is promoted again"]
        return [f"version {current} is current but {serving} is served; the next request starts loading it"]


def _inputs(value: Any, out: list[str], budget: list[int]) -> None:
    """The strings a client sent (keys, values, numbers as text), to find them in an error message."""
    if budget[0] <= 0:
        return
    budget[0] -= 1
    if isinstance(value, dict):
        for k, v in value.items():
            _inputs(k, out, budget)
            _inputs(v, out, budget)
    elif isinstance(value, list):
        for v in value:
            _inputs(v, out, budget)
    elif isinstance(value, str):
        out.append(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            out.append(str(value))
        except ValueError:  # an int too long for str(): nothing would quote it
            pass


def _scope_inputs(scope) -> list[str]:
    """What the client sent in this request: the JSON body (kept by the body limit), the query string and
    the Host header."""
    out: list[str] = []
    body = scope.get("ragtune.body") if scope else None
    if body:
        try:
            _inputs(json.loads(body), out, [512])
        except (ValueError, RecursionError):
            out.append(body.decode("utf-8", "replace"))
    for name, value in (scope.get("headers", []) if scope else []):
        if name == b"host":
            out.append(value.decode("latin-1"))
    if scope and scope.get("query_string"):
        out.append(scope["query_string"].decode("latin-1"))
    return out


_LONG_TOKEN = re.compile(r"\S{%d,}" % (_MAX_TOKEN + 1))
_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else f"{text[:n]}...({len(text)} characters)"


def clip_inputs(content: Any, inputs: list[str]) -> Any:
    """An error body with every echoed input cut to :data:`MAX_ECHO_CHARS` characters.

    Applied to every error body the server sends (the one place): each string in it has the client's own long
    inputs (``inputs``, as sent or as Python quotes them) cut, then any other run of over 120 characters without
    a space, and is at most 800 characters long."""
    long = sorted({t for t in inputs if len(t) > MAX_ECHO_CHARS}, key=len, reverse=True)

    def clip(text: str) -> str:
        for t in long:
            for form in (t, repr(t)[1:-1]):
                if form in text:
                    text = text.replace(form, _cut(t, MAX_ECHO_CHARS))
        text = _LONG_TOKEN.sub(lambda m: _cut(m.group(0), _MAX_TOKEN // 2), text)
        return _cut(text, _MAX_MESSAGE)

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return clip(v)
        if isinstance(v, dict):
            return {walk(k): walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(content)


def redact(text: str) -> str:
    """``text`` without the user:password part (:func:`ragtune.http.redact_text`, the one rule for credentials),
    and, stricter for the server's log, without the query or the fragment of any URL in it."""
    def one(m: re.Match) -> str:
        url = m.group(0)
        for mark in ("?", "#"):
            if mark in url:
                url = url.split(mark, 1)[0] + mark + "***"
        return url

    return _URL.sub(one, redact_text(text))


async def _send_error(scope, send, status: int, detail: Any, headers: list[tuple[bytes, bytes]] = ()) -> None:
    """An error response from the ASGI layer (413, 421), through the same clipping as the app's errors."""
    body = json.dumps({"detail": clip_inputs(detail, _scope_inputs(scope))}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close"), *headers]})
    await send({"type": "http.response.body", "body": body})


def _body_limit(app, limit: int):
    """A body over ``limit`` bytes gets 413 before the rest of it is read (:func:`guard.body_limit`)."""

    async def too_large(scope, send) -> None:
        await _send_error(scope, send, 413, f"request body over {limit} bytes; send a shorter query or filter")

    return body_limit(app, limit, too_large)


_LOOPBACK_NAMES = {"localhost", "localhost."}


def _host_name(header: str) -> str:
    """The host of a Host header, without its port: ``[::1]:8000`` -> ``::1``, ``Example.org:80`` -> ``example.org``."""
    h = header.strip().lower()
    if h.startswith("["):
        return h[1:h.find("]")] if "]" in h else h
    if h.count(":") == 1:
        h = h.split(":", 1)[0]
    return h


def host_allowed(header: str | None, bound: str | None) -> bool:
    """Whether a request addressed to ``header`` (the Host header) is for this keyless server: ``localhost``,
    an IP address (a DNS-rebinding page reaches the server only under a name of its own), or the name it was
    bound to (``--host``). A request without a Host header (HTTP/1.0) is allowed: browsers always send one."""
    if header is None:
        return True
    name = _host_name(header)
    if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    return bool(bound) and name == _host_name(bound)


def _host_check(app, bound: str | None):
    """ASGI middleware for a server without an API key: refuse (421) a request addressed to another host name,
    as a page that rebinds its own DNS name to 127.0.0.1 would send."""

    async def middleware(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        header = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), None)
        if host_allowed(header, bound):
            return await app(scope, receive, send)
        await _send_error(scope, send, 421, (
            f"Host {header!r} is not this server: without an API key it answers only requests addressed to "
            "localhost, an IP address or its --host name (a guard against DNS rebinding); use one of those, or set "
            "an API key (--api-key-env) to serve other names"))

    return middleware


class _GuardedGenerator:
    """A generator whose failures are logged on the server (redacted, rate limited) and become an
    :class:`APIError` marked ``upstream_generator``, without the upstream's URL or text: the client gets 502."""

    def __init__(self, gen):
        self._gen = gen
        self.name = gen.name

    def __getattr__(self, name: str):
        return getattr(self._gen, name)

    def generate(self, question, contexts):
        try:
            return self._gen.generate(question, contexts)
        except Exception as e:  # APIError, the upstream HTTP error class, a malformed reply: all the upstream's
            notice(f"generator|{type(e).__name__}",
                   f"/answer: the generator {self.name} failed: {type(e).__name__}: {_cut(redact(str(e)), 600)}")
            failed = APIError(f"upstream generator failed ({type(e).__name__})")
            failed.upstream_generator = True  # type: ignore[attr-defined]
            raise failed from e


def _valid_text(name: str, v: str) -> None:
    try:
        v.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{name} has an invalid character at position {e.start} (a lone UTF-16 surrogate); "
                         "send valid Unicode text") from None


def create_app(store_dir: str, *, api_key: str | None = None, log_path: str | None = None, generator: str = "extractive",
               gate: Any = None, docs: bool = False, max_body_bytes: int = MAX_BODY_BYTES,
               telemetry=None, holder: PipelineHolder | None = None, host: str | None = "127.0.0.1",
               pipeline: Any = None):
    """The FastAPI app over the store at ``store_dir``.

    ``gate``: the gate of /answer: a top-score threshold, or a learned gate (a
    :class:`~ragtune.answer.abstain.LearnedGate` or the path of the file calibrate wrote), bound to each version
    served (its term statistics computed once per version); a request whose ``k`` is not the gate's is a 400.
    ``pipeline``: the :class:`~ragtune.pipeline.PipelineConfig` of ``serve --config FILE`` (a mapping of flag
    names, as in the workers' settings, is read with ``from_dict``): it must describe each version served, and
    its reranker reranks every search.
    ``log_path``: the telemetry log (None: no logging); a log that cannot be opened
    leaves logging off with a warning on stderr, and the app starts anyway.
    ``telemetry``: a ready :class:`~ragtune.serve.telemetry.TelemetryWriter` instead.
    ``docs``: serve Swagger UI at ``/docs`` (its scripts come from a CDN, so the
    browser needs internet access); off by default.
    ``host``: the name the server is bound to; without ``api_key``, only requests whose
    Host header is ``localhost``, an IP address or this name are answered (421 otherwise).

    Built in steps: the request and error models (:func:`_request_models`), the documented error answers
    (:func:`_error_docs`), the API key check (:func:`_key_check`), then the app with its middleware, its
    error handlers (:func:`_add_error_handlers`) and its routes (:func:`_add_status_routes`,
    :func:`_add_query_routes`), which share one :class:`_ServeState`.
    """
    try:
        from contextlib import asynccontextmanager

        from fastapi import FastAPI
    except ImportError:
        raise MissingDependencyError("the server needs: pip install 'ragtune[serve]'") from None
    models = _request_models()

    from ..answer import answer_question, make_generator
    from ..store import IndexStore
    from .telemetry import TelemetryWriter

    store = IndexStore(store_dir)
    if isinstance(pipeline, Mapping):
        from ..pipeline import PipelineConfig

        pipeline = PipelineConfig.from_dict(pipeline)
    holder = holder or PipelineHolder(store, loader=serving_loader(store, pipeline) if pipeline is not None else None)
    gen = _GuardedGenerator(make_generator(generator))
    gate_ = serve_gate(gate)
    writer = telemetry if telemetry is not None else TelemetryWriter(log_path)
    state = _ServeState(store=store, holder=holder, writer=writer, log_path=log_path, models=models,
                        errors=_error_docs(models, max_body_bytes, api_key), check_key=_key_check(api_key),
                        gen=gen, gate=gate_, answer_question=answer_question)

    @asynccontextmanager
    async def lifespan(app):
        install_loop_guard()  # a failed accept() is one line on stderr, not a traceback each time
        yield
        writer.close()

    app = FastAPI(title="ragtune", description="Search and cited answers over a versioned ragtune index store.",
                  docs_url="/docs" if docs else None, redoc_url=None, lifespan=lifespan)
    app.state.holder = holder
    app.state.telemetry = writer
    app.add_middleware(lambda inner: _body_limit(inner, max_body_bytes))
    if not api_key:
        app.add_middleware(lambda inner: _host_check(inner, host))  # outermost: before the body is read
    _add_error_handlers(app, ", ".join(models.SearchRequest.model_fields))
    _add_status_routes(app, state)
    _add_query_routes(app, state)
    return app


class _Models:
    """The pydantic models of the API: the two request bodies and the two error bodies."""

    def __init__(self, SearchRequest, AnswerRequest, ValidationErrorBody, ErrorBody) -> None:
        self.SearchRequest, self.AnswerRequest = SearchRequest, AnswerRequest
        self.ValidationErrorBody, self.ErrorBody = ValidationErrorBody, ErrorBody


def _request_models() -> _Models:
    """Define the request models (strict, unknown fields refused, each limit checked with a message saying what to
    send) and the error bodies the OpenAPI schema documents."""
    try:
        from pydantic import BaseModel, ConfigDict, Field, field_validator
    except ImportError:
        raise MissingDependencyError("the server needs: pip install 'ragtune[serve]'") from None
    from ..retrieve.filters import MAX_FILTER_CHARS

    class SearchRequest(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        query: str = Field(..., description=f"the question or keywords, 1 to {MAX_QUERY_CHARS} characters, not only "
                                            "spaces", json_schema_extra={"minLength": 1, "maxLength": MAX_QUERY_CHARS,
                                                                         "pattern": r"\S"})
        k: int = Field(10, description=f"results to return, 1 to {MAX_K} (a JSON integer, not a string)",
                       json_schema_extra={"minimum": 1, "maximum": MAX_K})
        filters: str | None = Field(None, description="metadata filter expression, e.g. \"dir=tutorial\", at most "
                                                      f"{MAX_FILTER_CHARS} characters",
                                    json_schema_extra={"maxLength": MAX_FILTER_CHARS})

        @field_validator("query")
        @classmethod
        def _query(cls, v: str) -> str:
            if not v.strip():
                raise ValueError("query is empty: send the question to search for")
            if len(v) > MAX_QUERY_CHARS:
                raise ValueError(f"query has {len(v)} characters; the limit is {MAX_QUERY_CHARS}")
            _valid_text("query", v)
            return v

        @field_validator("filters")
        @classmethod
        def _filters(cls, v: str | None) -> str | None:
            if v is not None:
                _valid_text("filters", v)
            return v

        @field_validator("k")
        @classmethod
        def _k(cls, v: int) -> int:
            if not 1 <= v <= MAX_K:
                raise ValueError(f"k must be between 1 and {MAX_K}, got {v}")
            return v

    class AnswerRequest(SearchRequest):
        k: int = Field(5, description=f"contexts given to the generator, 1 to {MAX_K} (a JSON integer)",
                       json_schema_extra={"minimum": 1, "maximum": MAX_K})

    class Problem(BaseModel):
        field: str = Field(..., description="the field at fault, e.g. query, k (empty for the body as a whole)")
        message: str = Field(..., description="what is wrong and what to send instead")

    class ValidationErrorBody(BaseModel):
        detail: list[Problem]

    class ErrorBody(BaseModel):
        detail: str = Field(..., description="what is wrong and how to fix it; inputs are quoted cut to "
                                             f"{MAX_ECHO_CHARS} characters")

    return _Models(SearchRequest, AnswerRequest, ValidationErrorBody, ErrorBody)


class _ErrorDocs:
    """The error answers each route documents in the OpenAPI schema, by status code."""

    def __init__(self, common: dict, query: dict, answer: dict, read: dict) -> None:
        self.common, self.query, self.answer, self.read = common, query, answer, read


def _error_docs(models: _Models, max_body_bytes: int, api_key: str | None) -> _ErrorDocs:
    """The documented errors: those of every route (413, 422, 503, and 401 with a key or 421 without), plus 400 and
    502 for /search and /answer; /versions and /health take no body, so no 422."""
    def doc(description: str, model=models.ErrorBody) -> dict[str, Any]:
        return {"model": model, "description": description}

    common: dict[int | str, dict[str, Any]] = {
        413: doc(f"the body is over {max_body_bytes} bytes (refused before it is read)"),
        422: doc("the body is not valid JSON or breaks a rule: every problem with its field", models.ValidationErrorBody),
        503: doc("the index store cannot be read (a damaged CURRENT or version file), or the server is at its "
                 "connection limit"),
    }
    if api_key:
        common[401] = doc("the X-API-Key header is missing or wrong")
    else:
        common[421] = doc("the Host header names another server (without a key, only localhost, an IP address or "
                          "the --host name are answered: a guard against DNS rebinding)")
    query_errors = {**common, 400: doc("filters is malformed, over a limit, or names a field the corpus lacks"),
                    502: doc("an upstream API (a remote embedder or reranker) failed; the server log has the cause")}
    answer_errors = {**query_errors, 502: doc("upstream generator failed (the LLM API or another upstream); the "
                                              "server log has the cause")}
    read_errors = {k: v for k, v in common.items() if k != 422}
    return _ErrorDocs(common, query_errors, answer_errors, read_errors)


def _key_check(api_key: str | None):
    """The dependency every route but /health runs: a 401 unless the X-API-Key header holds ``api_key`` (compared
    in constant time); with no key, a check that passes."""
    from fastapi import Depends
    from fastapi.security import APIKeyHeader
    from starlette.exceptions import HTTPException

    if not api_key:
        def check_key() -> None:
            return None

        return check_key
    key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="the server's API key")

    def check_key(x_api_key: str | None = Depends(key_header)) -> None:
        if not hmac.compare_digest((x_api_key or "").encode(), api_key.encode()):
            raise HTTPException(status_code=401, detail="missing or wrong X-API-Key header")

    return check_key


def serve_gate(gate: Any) -> Any:
    """The gate ``serve --gate`` gives: None; a number (or its text), a top-score threshold (a ConfidenceGate);
    a :class:`~ragtune.answer.abstain.LearnedGate`, or the path of its file (read now: a missing or malformed
    file is a ConfigError before the server starts)."""
    from ..answer.abstain import LearnedGate, answer_gate, load_gate

    if isinstance(gate, (str, os.PathLike)):
        try:
            float(gate)
        except ValueError:
            return load_gate(gate)  # bound per version served, by _ServeState.gate_for
    return gate if isinstance(gate, LearnedGate) else answer_gate(gate, None, None, k=0)


class _ServeState:
    """What the routes of one app share: the store and its holder, the telemetry writer, the models, the
    documented errors, the key check, and the generator and gate of /answer."""

    def __init__(self, *, store, holder: PipelineHolder, writer, log_path: str | None, models: _Models,
                 errors: _ErrorDocs, check_key, gen, gate, answer_question) -> None:
        self.store, self.holder, self.writer, self.log_path = store, holder, writer, log_path
        self.models, self.errors, self.check_key = models, errors, check_key
        self.gen, self.gate, self.answer_question = gen, gate, answer_question
        self._stats: dict[str, Any] = {}  # version -> the learned gate's term statistics of its corpus

    def gate_for(self, version: str, pipeline: Any, k: int, filters: Any) -> Any:
        """The gate of one /answer request: the threshold as it is; a learned gate bound to the version served
        (refused, as a ConfigError, for a version of another pipeline than it was fitted on or another ``k``)."""
        from ..answer.abstain import LearnedGate, TermStats, answer_gate

        if not isinstance(self.gate, LearnedGate):
            return self.gate
        stats = self._stats.get(version)
        if stats is None:
            stats = TermStats.from_corpus(pipeline.corpus)
            self._stats = {version: stats}  # the version served now; an earlier one is dropped
        return answer_gate(self.gate, pipeline.retriever, pipeline.corpus, k=k, filters=filters, stats=stats,
                           pipeline=getattr(getattr(pipeline, "config", None), "label", None))


def _add_error_handlers(app, fields: str) -> None:
    """Answer every error as ``{"detail": ...}`` with its echoed inputs cut (:func:`clip_inputs`): a 422 lists each
    problem with its field (unknown fields named against ``fields``), and an unexpected error is a 500 with no
    traceback text (uvicorn logs it)."""
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException

    def error(request: Request, status: int, detail: Any, headers: dict[str, str] | None = None):
        """Every error body of the app goes out here, its echoed inputs cut (:func:`clip_inputs`)."""
        return JSONResponse(status_code=status, content={"detail": clip_inputs(detail, _scope_inputs(request.scope))},
                            headers=headers)

    @app.exception_handler(RequestValidationError)
    def invalid(request: Request, exc: RequestValidationError):  # say what to fix; never echo the input back
        problems = []
        for e in exc.errors():
            field = ".".join(str(p) for p in e.get("loc", ()) if p != "body")
            message = str(e.get("msg", "")).removeprefix("Value error, ")
            if e.get("type") == "extra_forbidden":
                message = f"unknown field {field!r}; the fields are {fields}"
            problems.append({"field": field, "message": message})
        return error(request, 422, problems)

    @app.exception_handler(HTTPException)
    def http_error(request: Request, exc: HTTPException):
        return error(request, exc.status_code, exc.detail, getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    def internal(request: Request, exc: Exception):  # no traceback text to the client; uvicorn logs it (deduped)
        return error(request, 500, "internal error; the server's standard error has the cause")


def _run_request(fn):
    """Call ``fn``, turning a library error into its HTTP answer: 400 for a bad request, 502 for an upstream API
    (no URL or upstream text to the client), 503 when the store or engine cannot be read, 500 otherwise."""
    from starlette.exceptions import HTTPException

    try:
        return fn()
    except ConfigError as e:
        raise HTTPException(status_code=400, detail=str(e)) from None
    except APIError as e:  # the generator, a remote embedder or reranker: no URL or upstream text to the client
        if getattr(e, "upstream_generator", False):  # already logged by _GuardedGenerator
            raise HTTPException(status_code=502, detail="upstream generator failed; the server's log has the "
                                                        "cause") from None
        notice(f"api|{type(e).__name__}", f"an upstream API failed: {type(e).__name__}: {_cut(redact(str(e)), 600)}")
        raise HTTPException(status_code=502, detail="an upstream API (embedder or reranker) failed; the "
                                                    "server's log has the cause") from None
    except (StoreError, EngineError, OSError) as e:  # the store or engine cannot be read now
        notice(f"store|{type(e).__name__}", f"a request failed: {type(e).__name__}: {_cut(redact(str(e)), 600)}")
        raise HTTPException(status_code=503, detail=f"the index cannot be read: {redact(str(e))}") from None
    except RagtuneError as e:
        raise HTTPException(status_code=500, detail=redact(str(e))) from None


def _add_status_routes(app, st: _ServeState) -> None:
    """``GET /health`` (always 200, ``degraded`` with the problems; on the event loop, never waiting) and
    ``GET /versions`` (the store's versions, which one is served, load errors and telemetry; 503 when the store
    cannot be read)."""
    from fastapi import Depends
    from starlette.exceptions import HTTPException

    holder, writer, store = st.holder, st.writer, st.store

    @app.get("/health", responses={k: v for k, v in st.errors.common.items() if k == 421})
    async def health() -> dict[str, Any]:  # on the event loop: never waits for a worker thread or the log
        try:
            holder.get()  # a due (re)load starts in the background; nothing here waits for it
            problems = holder.problems()
        except Exception as e:  # always 200: a status that says what is wrong
            problems = [f"cannot check the store: {type(e).__name__}: {e}"]
        stats = writer.stats()
        if stats["enabled"] and not stats["ok"]:
            problems.append("telemetry: rows are failing or waiting to be written; answers are still served")
        elif not stats["enabled"] and st.log_path is not None:
            problems.append("telemetry: the log could not be opened; answers are served but not logged")
        return {"status": "degraded" if problems else "ok", "version": holder.version, "pid": os.getpid(),
                "problems": problems,
                "telemetry": {k: stats[k] for k in ("enabled", "written", "failed", "dropped", "queued")}}

    @app.get("/versions", dependencies=[Depends(st.check_key)], responses=st.errors.read)
    def versions() -> dict[str, Any]:
        def listing():
            cur = store.current_id()
            return cur, [{"id": v.id, "created": v.created, "chunks": v.manifest["chunks"],
                          "config": redact_urls(v.manifest["config"]), "current": v.id == cur} for v in store.list()]

        try:
            cur, listed = listing()
        except (RagtuneError, OSError, ValueError) as e:  # a damaged CURRENT or history: 503, saying which
            notice(f"versions|{type(e).__name__}", f"/versions: {type(e).__name__}: {_cut(redact(str(e)), 600)}")
            raise HTTPException(status_code=503, detail=f"the index store cannot be read (still serving "
                                                        f"{holder.version}): {redact(str(e))}") from None
        return {"current": cur, "serving": holder.version, "load_errors": holder.load_errors(),
                "telemetry": writer.stats(), "versions": listed}


def _add_query_routes(app, st: _ServeState) -> None:
    """``POST /search`` (the hits of the served version) and ``POST /answer`` (a cited answer, its row submitted to
    the telemetry log without waiting); both name the worker's pid in ``X-Ragtune-Worker``."""
    from fastapi import Depends, Response

    holder = st.holder
    SearchRequest, AnswerRequest = st.models.SearchRequest, st.models.AnswerRequest

    @app.post("/search", dependencies=[Depends(st.check_key)], responses=st.errors.query)
    def search(req: SearchRequest, response: Response) -> dict[str, Any]:
        response.headers["X-Ragtune-Worker"] = str(os.getpid())
        version, pipeline = holder.get()
        ranking = _run_request(lambda: pipeline.retriever.search(req.query, k=req.k, filters=req.filters))
        return {"version": version, "query": req.query, "timings_ms": {k: v * 1000 for k, v in ranking.timings.items()},
                "hits": [{"rank": i, "anchor": h.chunk.anchor, "doc_id": h.chunk.doc_id, "chunk_id": h.chunk.id,
                          "score": h.score, "start": h.chunk.start, "end": h.chunk.end,
                          **({"location": dict(h.chunk.metadata["location"])} if "location" in h.chunk.metadata
                             else {}),
                          "snippet": h.chunk.text[:400]} for i, h in enumerate(ranking.hits, start=1)]}

    @app.post("/answer", dependencies=[Depends(st.check_key)], responses=st.errors.answer)
    def answer(req: AnswerRequest, response: Response) -> dict[str, Any]:
        response.headers["X-Ragtune-Worker"] = str(os.getpid())
        version, pipeline = holder.get()
        t0 = time.perf_counter()
        ans, ranking = _run_request(lambda: st.answer_question(
            pipeline.retriever, req.query, st.gen, k=req.k, gate=st.gate_for(version, pipeline, req.k, req.filters),
            filters=req.filters, documents=pipeline.corpus))
        latency = (time.perf_counter() - t0) * 1000
        st.writer.submit(query=req.query, outcome=ans.outcome, reason=ans.reason, version=version,  # never blocks
                         filters=req.filters, latency_ms=latency, source="server",
                         retrieved=[{"anchor": h.chunk.anchor, "score": h.score} for h in ranking.hits])
        return {"version": version, **ans.to_dict()}


def app_from_env():
    """The app of one worker process: ``create_app`` with the settings in ``RAGTUNE_SERVE_SETTINGS`` (JSON, set by
    :func:`~ragtune.serve.run.run_server`) and the API key in ``RAGTUNE_SERVE_WORKER_KEY``. Uvicorn calls it in
    each worker (``ragtune.serve.app:app_from_env``, ``factory=True``)."""
    raw = os.environ.get(SETTINGS_ENV)
    if not raw:
        raise ConfigError(f"{SETTINGS_ENV} is not set: start workers with `ragtune serve --workers N` "
                          "(ragtune.serve.run.run_server), which sets it")
    try:
        settings = json.loads(raw)
        store = settings.pop("store")
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ConfigError(f"{SETTINGS_ENV} is not the JSON object run_server writes (with a 'store' key)") from None
    return create_app(store, api_key=os.environ.get(KEY_ENV) or None, **settings)
