"""What keeps idle or slow clients from taking the server down: a request deadline, a connection cap under the
open-file limit, and logs that do not flood.

Uvicorn's h11 protocol has no deadline for a request's head: a client that connects and sends nothing, or half a
header line, holds a socket (a file descriptor) forever. With the common limit of 1,024 open files, 1,100 such
clients made ``accept()`` fail with EMFILE, ``/health`` unreachable, and asyncio log a traceback for every
failed ``accept()`` (tens of MB in seconds). :class:`GuardedH11Protocol` adds:

- a **request deadline**: a connection must deliver a whole request (head and body) within
  ``request_timeout`` seconds of opening, or of its previous response; otherwise it gets 408 (when it sent
  part of a request) and is closed. Uvicorn's keep-alive timeout still closes a silent connection after a
  response sooner;
- a **connection cap** computed when the process starts, :func:`compute_limits`: at most
  ``min(--max-connections, soft RLIMIT_NOFILE - reserve)`` open connections. A connection beyond the cap
  closes the connection that has waited longest without a request in progress, so a new client (a ``/health``
  probe) is always served before idle sockets; when every connection has a request in progress, the new one
  gets 503 and is closed. asyncio accepts at most ``backlog`` connections in one event-loop tick (uvicorn's
  ``backlog``), kept small and counted in the reserve, so the process never reaches its file limit through
  connections; the kernel's queue of connections waiting to be accepted is then raised to
  :data:`LISTEN_BACKLOG` (``listen()`` again on the listening socket), so a burst of clients waits in the queue
  instead of having its SYNs dropped (a 1 s retransmit);
- **log dedupe**: the event loop's exception handler and the ``uvicorn.error`` logger print one line per kind
  of problem at most every ``report_every`` seconds, with the count of the ones left out (no traceback for a
  failed ``accept()``).

Settings travel to worker processes in the ``RAGTUNE_SERVE_LIMITS`` environment variable (JSON), read once
per process.
"""

from __future__ import annotations

import asyncio
import heapq
import json
import logging
import os
import socket
import sys
import threading
import time
import weakref
from dataclasses import asdict, dataclass
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import ConfigError

__all__ = ["Limits", "compute_limits", "process_limits", "GuardedH11Protocol", "RateLimitedLog", "LIMITS_ENV",
           "DEFAULT_REQUEST_TIMEOUT", "DEFAULT_MAX_CONNECTIONS", "KEEP_ALIVE_S", "install_loop_guard"]

LIMITS_ENV = "RAGTUNE_SERVE_LIMITS"
DEFAULT_REQUEST_TIMEOUT = 10.0
DEFAULT_MAX_CONNECTIONS = 2048
KEEP_ALIVE_S = 5  # uvicorn's timeout_keep_alive: a silent connection after a response is closed this soon
LISTEN_BACKLOG = 2048  # the kernel's accept queue (capped by net.core.somaxconn)
REPORT_EVERY_S = 30.0


@dataclass(frozen=True)
class Limits:
    """The connection limits of one server process (see :func:`compute_limits`)."""

    max_connections: int  # the cap in force: min(configured, nofile - reserve)
    configured: int  # what --max-connections asked for
    request_timeout: float  # seconds for a whole request after the connection opens or the last response
    nofile: int | None  # the soft RLIMIT_NOFILE seen (None: unlimited or unknown)
    reserve: int  # descriptors kept for the process's own files (store, log, models) and accept bursts
    backlog: int  # listen backlog, also the most connections asyncio accepts in one event-loop tick

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def _soft_nofile() -> int | None:
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):  # not POSIX
        return None
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return None
    return int(soft)


def compute_limits(max_connections: int | None = None, request_timeout: float | None = None,
                   nofile: int | None = None) -> Limits:
    """The cap for this process: ``min(max_connections, nofile - reserve)``.

    ``reserve`` is an eighth of the soft open-file limit (at least 64) for the process's own files, plus twice
    the listen backlog (connections accepted in one tick before the cap is applied to them). ``nofile``
    defaults to the soft RLIMIT_NOFILE now. A limit too low to leave room for 8 connections is a
    :class:`ConfigError` naming ``ulimit -n``.
    """
    configured = DEFAULT_MAX_CONNECTIONS if max_connections is None else max_connections
    if isinstance(configured, bool) or not isinstance(configured, int) or configured < 1:
        raise ConfigError(f"--max-connections {max_connections!r}: give a whole number of connections, at least 1, "
                          "e.g. --max-connections 1000")
    timeout = DEFAULT_REQUEST_TIMEOUT if request_timeout is None else request_timeout
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0.1 <= timeout <= 3600:
        raise ConfigError(f"--request-timeout {request_timeout!r}: give seconds from 0.1 to 3600, e.g. "
                          "--request-timeout 10")
    soft = _soft_nofile() if nofile is None else nofile
    if soft is None:
        return Limits(configured, configured, float(timeout), None, 0, 128)
    backlog = max(8, min(128, soft // 32))
    reserve = max(64, soft // 8) + 2 * backlog
    room = soft - reserve
    if room < 8:
        raise ConfigError(f"the open-file limit is {soft}: too low to serve (ragtune keeps {reserve} descriptors for "
                          "its own files and needs room for at least 8 connections); raise it, e.g. `ulimit -n 1024`")
    return Limits(min(configured, room), configured, float(timeout), soft, reserve, backlog)


_limits: Limits | None = None
_limits_lock = threading.Lock()


def process_limits() -> Limits:
    """This process's limits: from ``RAGTUNE_SERVE_LIMITS`` (set by ``run_server``) and its own file limit,
    computed once."""
    global _limits
    with _limits_lock:
        if _limits is None:
            settings: dict[str, Any] = {}
            raw = os.environ.get(LIMITS_ENV)
            if raw:
                try:
                    settings = {k: v for k, v in json.loads(raw).items()
                                if k in ("max_connections", "request_timeout")}
                except (ValueError, AttributeError):
                    settings = {}
            _limits = compute_limits(settings.get("max_connections"), settings.get("request_timeout"))
        return _limits


def _reset_limits() -> None:  # tests
    global _limits
    with _limits_lock:
        _limits = None


class RateLimitedLog:
    """Say each kind of problem at most once per ``every`` seconds, with how many were left out since."""

    def __init__(self, every: float = REPORT_EVERY_S):
        self.every = every
        self._lock = threading.Lock()
        self._seen: dict[str, list[float]] = {}  # key -> [last said, left out since]

    def allow(self, key: str) -> tuple[bool, int]:
        """(say it now, how many of this kind were left out since it was last said)."""
        now = time.monotonic()
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None and now - seen[0] < self.every:
                seen[1] += 1
                return False, 0
            left_out = int(seen[1]) if seen else 0
            self._seen[key] = [now, 0]
            if len(self._seen) > 256:  # many distinct problems: forget the oldest
                for k in sorted(self._seen, key=lambda k: self._seen[k][0])[:128]:
                    self._seen.pop(k, None)
            return True, left_out


_notices = RateLimitedLog()


def notice(key: str, line: str) -> None:
    """One line on stderr, at most once per 30 s for ``key``."""
    say, left_out = _notices.allow(key)
    if say:
        more = f" ({left_out} more like this in the last {REPORT_EVERY_S:g} s)" if left_out else ""
        try:
            print(f"ragtune serve: {line}{more}", file=sys.stderr, flush=True)
        except Exception:
            pass


class _DedupeFilter(logging.Filter):
    """A logging filter: one record per (message, exception type) per 30 s; repeats are counted, not printed."""

    def __init__(self, every: float = REPORT_EVERY_S):
        super().__init__("ragtune-dedupe")
        self.rate = RateLimitedLog(every)

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        key = f"{record.name}|{record.msg}|{type(exc).__name__ if exc else ''}|{getattr(exc, 'errno', '')}"
        say, left_out = self.rate.allow(key)
        if say and left_out:
            record.msg = f"{record.msg} ({left_out} more like this in the last {self.rate.every:g} s)"
        return say


_filter_installed: set[str] = set()


def _install_log_dedupe() -> None:
    for name in ("uvicorn.error", "asyncio"):
        if name not in _filter_installed:
            _filter_installed.add(name)
            logging.getLogger(name).addFilter(_DedupeFilter())


def _loop_exception_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    exc = context.get("exception")
    message = str(context.get("message") or "event loop error")
    key = f"loop|{message}|{type(exc).__name__ if exc else ''}|{getattr(exc, 'errno', '')}"
    if message.startswith("socket.accept() out of system resource"):
        limits = _limits
        notice(key, f"cannot accept connections: {exc}; {len(_open_protocols)} open; the cap is "
                    f"{limits.max_connections if limits else '?'} (open-file limit "
                    f"{limits.nofile if limits else '?'}): close other files or raise `ulimit -n`")
        return
    say, left_out = _notices.allow(key)
    if say:
        if left_out:
            context = {**context, "message": f"{message} ({left_out} more like this in the last "
                                             f"{REPORT_EVERY_S:g} s)"}
        loop.default_exception_handler(context)


def install_loop_guard(loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Deduplicate the event loop's error reports (a failed ``accept()`` is one line, not a traceback each time)
    and the ``uvicorn.error`` log. Safe to call more than once."""
    _install_log_dedupe()
    try:
        loop = loop or asyncio.get_running_loop()
    except RuntimeError:
        return
    if loop.get_exception_handler() is not _loop_exception_handler:
        loop.set_exception_handler(_loop_exception_handler)


_open_protocols: set = set()  # weak enough: every protocol removes itself in connection_lost
_relistened: weakref.WeakSet = weakref.WeakSet()  # the asyncio servers whose sockets were listen()ed again


def _raise_listen_backlog(transport: asyncio.BaseTransport) -> None:
    """``listen(LISTEN_BACKLOG)`` again on the socket ``transport`` was accepted from, once per listening socket:
    asyncio used uvicorn's small backlog both for the kernel queue and for its accepts per tick; only the
    second needs to be small. Nothing happens where the transport does not name its server."""
    server = getattr(transport, "_server", None)
    if server is None:
        return
    try:
        if server in _relistened:
            return
        _relistened.add(server)
    except TypeError:  # not weakly referenceable
        return
    for ts in (getattr(server, "sockets", None) or ()):
        try:
            fd = ts.fileno()
            if fd < 0:
                continue
            dup = socket.socket(fileno=os.dup(fd))
            try:
                dup.listen(LISTEN_BACKLOG)
            finally:
                dup.close()
        except OSError:
            pass


def _raw_response(status: int, reason: str, detail: str, extra: bytes = b"") -> bytes:
    body = json.dumps({"detail": detail}).encode()
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n").encode() + extra + b"\r\n" + body


try:
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol
except ImportError:  # the serve extra is not installed: run_server says so before using this
    H11Protocol = object  # type: ignore[assignment,misc]
    h11 = None  # type: ignore[assignment]


class GuardedH11Protocol(H11Protocol):  # type: ignore[misc,valid-type]
    """Uvicorn's h11 protocol with a request deadline and a connection cap (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._limits = process_limits()
        self._deadline: asyncio.TimerHandle | None = None
        self._idle_since = 0.0
        install_loop_guard(self.loop)

    # --- state -------------------------------------------------------------------------------------
    def _waiting_for_request(self) -> bool:
        """No request in progress: nothing received yet, part of a head, or between requests."""
        return ((self.cycle is None or self.cycle.response_complete) and self.conn.their_state is h11.IDLE)

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._idle_since = self.loop.time()
        self._deadline = self.loop.call_later(self._limits.request_timeout, self._on_deadline)

    # --- protocol ----------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        _open_protocols.add(self)
        _raise_listen_backlog(transport)
        self._arm()
        over = len(self.connections) - self._limits.max_connections
        if over > 0:
            self._make_room(over)

    def connection_lost(self, exc: Exception | None) -> None:
        _open_protocols.discard(self)
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request has its own deadline

    def _make_room(self, over: int) -> None:
        idle = heapq.nsmallest(over, (p for p in self.connections
                                      if p is not self and isinstance(p, GuardedH11Protocol) and p.transport is not None
                                      and not p.transport.is_closing() and p._waiting_for_request()),
                               key=lambda p: p._idle_since)  # one pass: `over` is 1 but for a burst
        closed = 0
        for p in idle:
            p._close(None)
            closed += 1
        cap = self._limits.max_connections
        if closed:
            notice("evict", f"{len(self.connections)} connections open, over the cap of {cap} (from "
                            f"--max-connections and the open-file limit {self._limits.nofile}): closing the ones "
                            "idle longest")
        if closed < over:  # every other connection has a request in progress: refuse this one
            notice("busy", f"{len(self.connections)} connections open, all busy; the cap is {cap}: refusing new "
                           "connections with 503")
            self._close(_raw_response(503, "Service Unavailable",
                                      f"the server is at its limit of {cap} connections; retry shortly",
                                      b"retry-after: 1\r\n"))

    def _close(self, response: bytes | None) -> None:
        if self.transport.is_closing():
            return
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if response:
            try:
                self.transport.write(response)
            except Exception:
                pass
        self.transport.close()

    def _on_deadline(self) -> None:
        self._deadline = None
        if self.transport is None or self.transport.is_closing():
            return
        t = self._limits.request_timeout
        if self._waiting_for_request():
            partial = bool(self.conn.trailing_data[0])
            self._close(_raw_response(408, "Request Timeout", f"the request was not received within {t:g} s")
                        if partial else None)
        elif (self.conn.their_state is h11.SEND_BODY and self.cycle is not None
              and not self.cycle.response_started):  # the head came, the body trickles
            self.cycle.keep_alive = False
            self._close(_raw_response(408, "Request Timeout", f"the request body was not received within {t:g} s"))


def body_limit(app: Any, limit: int, too_large: Callable[[Any, Any], Awaitable[None]]) -> Any:
    """ASGI middleware: a request body over ``limit`` bytes is answered by ``too_large(scope, send)`` before it is
    read: at once when its ``Content-Length`` says so, else as soon as the bytes received pass ``limit`` (a chunked
    body, or a false length). What was read, at most ``limit`` bytes, is handed on whole and kept in the scope
    (``ragtune.body``) so that an error message can be cut where it quotes it. The server's and the workbench's."""

    async def middleware(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared > limit:
                    return await too_large(scope, send)
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away (or its request timed out): no answer
                return None
            size += len(message.get("body", b""))
            if size > limit:
                chunks.clear()
                return await too_large(scope, send)
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        chunks.clear()
        scope["ragtune.body"] = body
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await app(scope, replay, send)

    return middleware
