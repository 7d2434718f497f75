"""A small JSON-over-HTTP client with retries, for OpenAI-compatible APIs (stdlib only).

Retries with exponential backoff on 429, 5xx, timeouts and connection
errors, honouring ``Retry-After``; 401/403 and other 4xx fail at once with
the server's message.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from .errors import APIError

__all__ = ["APIError", "JSONClient"]


@dataclass
class JSONClient:
    base_url: str
    api_key: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 30.0
    max_retries: int = 5
    backoff: float = 0.5
    requests: int = 0
    retries: int = 0
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # sent with every request, never logged

    def post(self, path: str, body: dict[str, Any] | None, *, method: str = "POST", any_json: bool = False) -> Any:
        """``method`` the URL ``base_url/path`` (``path`` empty: ``base_url`` itself) with a JSON ``body``;
        the answer must be a JSON object unless ``any_json``."""
        url = f"{self.base_url.rstrip('/')}/{path.lstrip('/')}" if path else self.base_url
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json", **self.headers}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last = ""
        for attempt in range(self.max_retries + 1):
            self.requests += 1
            req = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    raw = resp.read().decode("utf-8")
                try:
                    payload = json.loads(raw)
                except json.JSONDecodeError:
                    raise APIError(f"{url}: answer is not JSON ({raw[:80]!r}); is this an OpenAI-compatible server?") from None
                if not isinstance(payload, dict) and not any_json:
                    raise APIError(f"{url}: expected a JSON object, got {type(payload).__name__}")
                return payload
            except urllib.error.HTTPError as e:
                detail = e.read().decode("utf-8", "replace")[:200]
                last = f"HTTP {e.code}: {detail}"
                if e.code in (401, 403):
                    raise APIError(f"{url}: {last}; set {self.api_key_env} to a valid key") from None
                if e.code != 429 and e.code < 500:
                    raise APIError(f"{url}: {last}") from None
                wait = e.headers.get("Retry-After") if e.headers else None
                delay = float(wait) if wait and wait.replace(".", "", 1).isdigit() else self.backoff * 2 ** attempt
            except APIError:  # a ConnectionError too, but the server answered: no retry
                raise
            except (urllib.error.URLError, TimeoutError, OSError) as e:
                last = f"{type(e).__name__}: {getattr(e, 'reason', e)}"
                delay = self.backoff * 2 ** attempt
            if attempt < self.max_retries:
                self.retries += 1
                time.sleep(min(delay, 30.0))
        raise APIError(f"{url}: giving up after {self.max_retries + 1} attempts; last error {last}")
