"""JSON over HTTP for every outside server ragtune calls (stdlib only), and :func:`redact_url`.

One client, one policy, for the search endpoints of ``eval --endpoint``, the OpenAI-compatible servers
(generator, judge, golden-set drafting, the ``llm`` reranker, the ``openai`` embedder) and the Anthropic
Messages API:

- **Retries** with exponential backoff on 429, 5xx, timeouts and dropped connections, honouring
  ``Retry-After`` (seconds or an HTTP date) but never waiting more than ``max_wait`` at once; 401/403 and other
  4xx fail at once with the server's message (:class:`~ragtune.errors.APIError`, ``status`` set).
- **Time**: ``timeout`` is the wall clock of one attempt, connect, headers and body together (a server that
  trickles a byte now and then cannot stretch it); ``deadline`` bounds a whole call, retries and waits included
  (default ``2 * timeout + max_wait``): a retry that would end past it is not started.
- **Size**: an answer is read up to ``max_bytes`` (:data:`DEFAULT_MAX_BYTES`, 32 MiB), an error body up to
  64 KiB; a larger answer (announced by ``Content-Length`` or streamed, chunked or not) stops the call with an
  :class:`~ragtune.errors.APIError` before it is held in memory.
- **Credentials in the URL** (``https://user:password@host/...``) are sent as HTTP Basic authentication, never
  as part of the host name.
- **Redirects** carry the request's credentials, so they are followed only to the same origin (scheme, host and
  port), and a POST is never turned into a GET: 307/308 keep the method and the body, a 301/302/303 answer to a
  POST is refused, and so is a redirect to another origin or to any scheme but http(s) (``file://``...). The
  error names both origins; to trust the other server, point ragtune at it directly.

URLs in messages go through :func:`redact_url`: credentials in the userinfo (``user:pass@``) and the values of
query parameters that look secret (``key``, ``token``, ``api_key``, ``access_token``, ``sig``...) become
``***``. Header values are never printed. Text that may hold URLs ragtune did not put there (a library's
exception, the line the command line prints for any error) goes through :func:`redact_text`, which does the same
to every URL in it.
"""

from __future__ import annotations

import base64
import email.utils
import http.client
import json
import math
import re
import socket
import string
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from .errors import APIError

__all__ = ["APIError", "JSONClient", "redact_url", "redact_urls", "redact_text", "origin_of", "redirect_problem", "DEFAULT_MAX_BYTES"]

DEFAULT_MAX_BYTES = 32 * 2 ** 20  # the largest JSON answer read; configurable per client (max_bytes)
ERROR_BODY_BYTES = 64 * 1024  # how much of an error answer is read (200 characters of it are shown)
_READ = 64 * 1024

# query parameter names whose values are credentials (matched anywhere in the name, case-insensitive)
_SECRET_NAME = re.compile(r"key|token|secret|passw|pwd|sig|auth|credential|session|jwt|bearer|cookie", re.I)
_PLACEHOLDER = re.compile(r"\{[a-z_]+\}")


def redact_urls(value: Any) -> Any:
    """``value`` (nested dicts, lists, tuples) with every string that looks like a URL passed through
    :func:`redact_url`: what a record shown to a person or a client (eval JSON, ``/versions``, ``index list``)
    holds of a configuration whose options name servers."""
    if isinstance(value, dict):
        return {k: redact_urls(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_urls(v) for v in value)
    if isinstance(value, str) and _URL_LIKE.match(value):
        return redact_url(value)
    return value


_URL_LIKE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://\S+$")  # a whole string that is a URL, never prose holding one


def redact_url(url: Any) -> str:
    """``url`` with its userinfo and the values of secret-looking query parameters replaced by ``***``.

    ``http://user:pass@host/x?q=a&api_key=s3 -> http://***@host/x?q=a&api_key=***``. Anything that is not a URL
    (a Milvus Lite path) comes back unchanged; a template placeholder (``{query}``) is kept. Never raises.
    """
    text = "" if url is None else str(url)
    try:
        parts = urllib.parse.urlsplit(text)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = "***@" + netloc.rpartition("@")[2]
        query = parts.query
        if query:
            kept = []
            for pair in query.split("&"):
                name, eq, value = pair.partition("=")
                secret = eq and value and not _PLACEHOLDER.fullmatch(value) and \
                    _SECRET_NAME.search(urllib.parse.unquote_plus(name))
                kept.append(f"{name}=***" if secret else pair)
            query = "&".join(kept)
        if netloc == parts.netloc and query == parts.query:
            return text
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except (ValueError, TypeError):  # an unparsable URL: still hide what looks like userinfo
        return re.sub(r"//[^/@?#]*@", "//***@", text)


# a URL inside prose: a scheme, one or two slashes (a URL taken for a path comes back as ``https:/host``), then a
# userinfo that may hold any character but a space or a slash (a password with a quote in it is still caught
# whole), then everything up to a space, a quote or an angle bracket
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/{1,2}(?:[^\s/?#]*@)?[^\s'\"<>`]*")
# a secret-looking query parameter outside a whole URL (``Max retries exceeded with url: /x?token=...``)
_QUERY_PAIR = re.compile(r"(?<=[?&])([A-Za-z0-9_.%\-]+)=([^&\s#'\"<>`]+)")


def redact_text(text: Any) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`, and the value of every secret-looking query
    parameter (``?token=...``, ``&api_key=...``) replaced by ``***`` even where the URL's start was cut off.

    For text ragtune does not control before it is shown or stored: a library's exception message (MLflow's
    ``API request to http://user:pass@host/... failed``), the command line's ``error:`` line. Text without a URL
    comes back unchanged. Never raises."""
    s = "" if text is None else str(text)
    def url(m: re.Match) -> str:
        whole = m.group(0)
        core = whole.rstrip(".,;:!?)]}")  # the sentence's punctuation after a URL is kept as it was
        scheme, _, rest = core.partition(":")
        if not rest.startswith("//"):  # one slash: redacted as the URL it was, shown as it is
            return f"{scheme}:" + redact_url(f"{scheme}:/{rest}")[len(scheme) + 2:] + whole[len(core):]
        return redact_url(core) + whole[len(core):]

    s = _URL_IN_TEXT.sub(url, s)

    def pair(m: re.Match) -> str:
        name, value = m.group(1), m.group(2).rstrip(".,;:!?)]}")
        if value in ("", "***") or _PLACEHOLDER.fullmatch(value) or \
                not _SECRET_NAME.search(urllib.parse.unquote_plus(name)):
            return m.group(0)
        return f"{name}=***" + m.group(2)[len(value):]

    return _QUERY_PAIR.sub(pair, s)


def _origin_key(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme)


def origin_of(url: str) -> str:
    """``scheme://host:port`` of ``url`` (the default port written out), for messages."""
    scheme, host, port = _origin_key(url)
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}" + (f":{port}" if port else "")


def redirect_problem(url: str, method: str, code: int, location: str) -> str | None:
    """Why a ``code`` redirect of a ``method`` request to ``url`` towards ``location`` must not be followed
    (None: same origin, and the method and body survive). The one redirect policy of every client."""
    target = urllib.parse.urljoin(url, location)
    scheme = urllib.parse.urlsplit(target).scheme.lower()
    where = f"{redact_url(url)} answered {code} (redirect) to {redact_url(target)}"
    if scheme not in ("http", "https"):
        return (f"{where}: refused, only http:// and https:// redirects are followed (got {scheme or 'no'} "
                "scheme); point ragtune at the server's real URL")
    if _origin_key(target) != _origin_key(url):
        return (f"{where}: refused, the redirect leaves {origin_of(url)} for another origin, {origin_of(target)}, "
                "and the request carries credentials; if you trust that server, use its URL directly")
    if method.upper() not in ("GET", "HEAD") and code in (301, 302, 303):
        return (f"{where}: refused, following a {code} would turn the {method.upper()} into a GET without its "
                "body; use the URL it points to directly (a server that moved a POST answers 307 or 308)")
    return None


def _split_userinfo(url: str) -> tuple[str, str | None]:
    """``url`` without its ``user:password@``, and the Basic ``Authorization`` value they stand for."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    token = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}".encode()
    return urllib.parse.urlunsplit(parts._replace(netloc=host)), "Basic " + base64.b64encode(token).decode()


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Same-origin redirects only; 307/308 keep the method and the body; the rest is refused."""

    def _check(self, req, fp, code, msg, headers):
        location = headers.get("location") or headers.get("uri")
        if not location:
            return None  # the default handler raises HTTPError: "HTTP 302" without a Location
        parts = list(urllib.parse.urlparse(location))
        if not parts[2] and parts[1]:
            parts[2] = "/"
        newurl = urllib.parse.quote(urllib.parse.urlunparse(parts), encoding="iso-8859-1", safe=string.punctuation)
        newurl = urllib.parse.urljoin(req.full_url, newurl)
        problem = redirect_problem(req.full_url, req.get_method(), code, newurl)
        if problem:
            fp.close()
            raise APIError(problem)  # not an HTTPError: urllib lets it through to the client
        new = self.redirect_request(req, fp, code, msg, headers, newurl)
        visited = new.redirect_dict = req.redirect_dict = getattr(req, "redirect_dict", {})
        if visited.get(newurl, 0) >= self.max_repeats or len(visited) >= self.max_redirections:
            raise urllib.error.HTTPError(req.full_url, code, self.inf_msg + msg, headers, fp)
        visited[newurl] = visited.get(newurl, 0) + 1
        fp.close()  # the redirect's own body is never read (it could be endless)
        return self.parent.open(new, timeout=req.timeout)

    http_error_301 = http_error_302 = http_error_303 = http_error_307 = http_error_308 = _check

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        # only reached for a redirect _check allowed: same origin, and not a POST made a GET
        return urllib.request.Request(newurl.replace(" ", "%20"), data=req.data, headers=dict(req.headers),
                                      method=req.get_method(), origin_req_host=req.origin_req_host,
                                      unverifiable=True)


class _Watch:
    """The wall clock of one attempt: bounds connecting, then shuts the socket down when time is up, which
    unblocks a read that a trickling server keeps alive."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.fired = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def left(self) -> float:
        return max(1e-3, self.end - time.monotonic())

    def attach(self, sock: socket.socket | None) -> None:
        with self._lock:
            self._sock = sock
            if self.fired:
                self._shutdown()

    def _shutdown(self) -> None:
        if self._sock is not None:
            try:
                socket.socket.shutdown(self._sock, socket.SHUT_RDWR)  # the OS socket, under any TLS layer
            except OSError:
                pass

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            self._shutdown()

    def stop(self) -> None:
        self._timer.cancel()


def _connection(base: type, watch: _Watch):
    class Connection(base):  # type: ignore[misc, valid-type]
        def connect(self):
            self.timeout = watch.left()  # connect and every later socket operation within the attempt's time
            super().connect()
            watch.attach(self.sock)

    return Connection


class _HTTP(urllib.request.HTTPHandler):
    def __init__(self, watch: _Watch):
        super().__init__()
        self._watch = watch

    def http_open(self, req):
        return self.do_open(_connection(http.client.HTTPConnection, self._watch), req)


class _HTTPS(urllib.request.HTTPSHandler):
    def __init__(self, watch: _Watch):
        super().__init__()
        self._watch = watch

    def https_open(self, req):
        return self.do_open(_connection(http.client.HTTPSConnection, self._watch), req, context=self._context)


def _retry_after(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` value asks for (a number or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _mib(n: float) -> str:
    return f"{n / 2 ** 20:.3g} MiB"


def _read_capped(resp: Any, cap: int, where: str) -> bytes:
    """The body of ``resp``, refusing (before holding it) more than ``cap`` bytes."""
    length = resp.headers.get("Content-Length") if resp.headers else None
    if length and length.strip().isdigit() and int(length) > cap:
        raise APIError(f"{where}: the answer is {_mib(int(length))} (Content-Length), more than the "
                       f"{_mib(cap)} a client reads (max_bytes); ask for fewer results or raise the limit")
    buf = bytearray()
    while True:
        chunk = resp.read(min(_READ, cap + 1 - len(buf)))
        if not chunk:
            return bytes(buf)
        buf += chunk
        if len(buf) > cap:
            raise APIError(f"{where}: the answer goes on past the {_mib(cap)} a client reads (max_bytes), and "
                           "was cut off there; ask for fewer results or raise the limit")


def _decode_json(raw: bytes, where: str, kind: str) -> Any:
    try:
        text = raw.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as e:
        raise APIError(f"{where}: the answer is not UTF-8 text (byte {raw[e.start]:#04x} at offset {e.start}), "
                       f"which JSON must be; is this {kind}?") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise APIError(f"{where}: answer is not JSON ({text[:80]!r}); is this {kind}?") from None
    except RecursionError:
        raise APIError(f"{where}: the JSON answer is nested too deeply to read; is this {kind}?") from None


@dataclass
class JSONClient:
    """POST (or GET) JSON to ``base_url``, with the retries, limits and redirect policy of the module docstring.

    ``api_key`` goes in ``key_header`` (``Authorization: Bearer <key>`` by default; ``x-api-key`` for
    Anthropic); ``headers`` are sent with every request and never logged. ``requests`` and ``retries`` count
    what was sent. ``kind`` names the server in hints ("an OpenAI-compatible server").
    """

    base_url: str
    api_key: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 30.0
    max_retries: int = 5
    backoff: float = 0.5
    requests: int = 0
    retries: int = 0
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # sent with every request, never logged
    max_bytes: int = DEFAULT_MAX_BYTES
    max_wait: float = 10.0
    deadline: float | None = None
    key_header: str = "Authorization"
    kind: str = "an OpenAI-compatible server"

    def _deadline(self) -> float:
        return float(self.deadline) if self.deadline is not None else 2 * float(self.timeout) + float(self.max_wait)

    def post(self, path: str, body: dict[str, Any] | None, *, method: str = "POST", any_json: bool = False) -> Any:
        """``method`` the URL ``base_url/path`` (``path`` empty: ``base_url`` itself) with a JSON ``body``;
        the answer must be a JSON object unless ``any_json``."""
        url = f"{self.base_url.rstrip('/')}/{path.lstrip('/')}" if path else self.base_url
        where = redact_url(url)
        url, basic = _split_userinfo(url)
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json", "Accept": "application/json", **self.headers}
        if basic and not any(k.lower() == "authorization" for k in headers):
            headers["Authorization"] = basic
        if self.api_key:
            bearer = self.key_header.lower() == "authorization"
            headers[self.key_header] = f"Bearer {self.api_key}" if bearer else self.api_key
        start = time.monotonic()
        budget = self._deadline()
        end = start + budget
        last, attempts = "", 0
        for attempt in range(self.max_retries + 1):
            left = end - time.monotonic()
            if left <= 0:
                break
            attempts += 1
            self.requests += 1
            ok, payload, wait = self._once(url, where, method, data, headers, min(float(self.timeout), left))
            if not ok:
                last = payload
                delay = wait if wait is not None else self.backoff * 2 ** attempt
            else:
                if not isinstance(payload, dict) and not any_json:
                    raise APIError(f"{where}: expected a JSON object, got {type(payload).__name__}; is this "
                                   f"{self.kind}?")
                return payload
            if attempt < self.max_retries:
                delay = min(max(0.0, delay), float(self.max_wait))
                now = time.monotonic()
                if now >= end:
                    break
                if now + delay >= end:
                    raise APIError(f"{where}: giving up after {attempts} attempts: the next one (in {delay:.3g} s) "
                                   f"would start past the call's deadline of {budget:.3g} s; last error {last}")
                self.retries += 1
                time.sleep(delay)
        elapsed = time.monotonic() - start
        why = f" within the call's deadline of {budget:.3g} s" if elapsed >= budget else ""
        raise APIError(f"{where}: giving up after {attempts} attempts{why}; last error {last}")

    def _once(self, url: str, where: str, method: str, data: bytes | None, headers: dict[str, str],
              seconds: float) -> tuple[bool, Any, float | None]:
        """One attempt within ``seconds`` of wall clock: (True, the answer's JSON, None), (False, why it is worth
        retrying, the wait the server asks for or None), or an APIError."""
        timed_out = (False, f"no complete answer within {seconds:.3g} s (timeout)", None)
        watch = _Watch(seconds)
        opener = urllib.request.build_opener(_Redirects(), _HTTP(watch), _HTTPS(watch))
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with opener.open(req, timeout=seconds) as resp:
                raw = _read_capped(resp, int(self.max_bytes), where)
            if watch.fired:
                return timed_out
            return True, _decode_json(raw, where, self.kind), None
        except urllib.error.HTTPError as e:
            try:
                detail = e.read(ERROR_BODY_BYTES).decode("utf-8", "replace")[:200]
            except (OSError, http.client.HTTPException, ValueError):
                detail = ""
            finally:
                e.close()
            status = f"HTTP {e.code}: {detail}"
            if e.code in (401, 403):
                err = APIError(f"{where}: {status}; set {self.api_key_env} to a valid key")
                err.status = e.code  # type: ignore[attr-defined]
                raise err from None
            if e.code != 429 and e.code < 500:
                err = APIError(f"{where}: {status}")
                err.status = e.code  # type: ignore[attr-defined]
                raise err from None
            return False, status, _retry_after(e.headers.get("Retry-After") if e.headers else None)
        except APIError:  # a ConnectionError too, but the server answered (or a redirect was refused): no retry
            raise
        except (urllib.error.URLError, TimeoutError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            if watch.fired or isinstance(reason, TimeoutError):  # the watch, or the socket's timeout before it
                return timed_out
            if isinstance(reason, ValueError) or (isinstance(e, urllib.error.URLError)
                                                  and "unknown url type" in str(reason)):
                raise APIError(f"{where}: cannot be requested ({redact_text(reason)})") from None
            return False, f"{type(e).__name__}: {redact_text(reason)}", None
        except ValueError as e:  # a malformed URL or header value: no retry helps
            raise APIError(f"{where}: cannot be requested ({redact_text(e)})") from None
        finally:
            watch.stop()
