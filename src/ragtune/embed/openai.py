"""OpenAI-compatible embeddings API (``POST {base_url}/embeddings``).

Works with OpenAI and with servers speaking the same wire format (vLLM,
llama.cpp, Ollama, TEI...). The key comes from an environment variable
(``OPENAI_API_KEY`` by default). Batches, timeouts, and retries with
exponential backoff on 429 and 5xx (honouring ``Retry-After``).
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Sequence

import numpy as np

from ..errors import ConfigError, RagtuneError
from .base import l2_normalize

__all__ = ["OpenAIEmbedder", "EmbeddingAPIError"]


class EmbeddingAPIError(RagtuneError, RuntimeError):
    """The embeddings API failed after retries, or answered something unusable."""


class OpenAIEmbedder:
    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 dim: int | None = None, batch_size: int = 64, timeout: float = 30.0, max_retries: int = 5,
                 backoff: float = 0.5, max_tokens: int = 8192):
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        self.api_key_env = api_key_env
        self.model_id = f"openai:{model}@{self.base_url}"
        self._dim = dim
        self.batch_size = batch_size
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_tokens = max_tokens
        self.requests = 0
        self.retries = 0

    @property
    def cache_key(self) -> str:
        return self.model_id  # a hosted model has no file to hash; its name and server pin it

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def _post(self, texts: list[str]) -> list[list[float]]:
        body = json.dumps({"model": self.model, "input": texts, "encoding_format": "float"}).encode()
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        url = f"{self.base_url}/embeddings"
        last = ""
        for attempt in range(self.max_retries + 1):
            self.requests += 1
            req = urllib.request.Request(url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    payload = json.loads(resp.read().decode("utf-8"))
                data = sorted(payload["data"], key=lambda d: d["index"])
                if len(data) != len(texts):
                    raise EmbeddingAPIError(f"{url} returned {len(data)} embeddings for {len(texts)} inputs")
                return [d["embedding"] for d in data]
            except urllib.error.HTTPError as e:
                detail = e.read().decode("utf-8", "replace")[:200]
                last = f"HTTP {e.code}: {detail}"
                if e.code == 401 or e.code == 403:
                    raise EmbeddingAPIError(f"{url}: {last}; set {self.api_key_env} to a valid key") from None
                if e.code != 429 and e.code < 500:
                    raise EmbeddingAPIError(f"{url}: {last}") from None
                wait = e.headers.get("Retry-After") if e.headers else None
                delay = float(wait) if wait and wait.replace(".", "", 1).isdigit() else self.backoff * 2 ** attempt
            except (urllib.error.URLError, TimeoutError, OSError) as e:
                last = f"{type(e).__name__}: {getattr(e, 'reason', e)}"
                delay = self.backoff * 2 ** attempt
            except (KeyError, TypeError, ValueError) as e:
                raise EmbeddingAPIError(f"{url}: unexpected response ({e}); is this an OpenAI-compatible server?") from None
            if attempt < self.max_retries:
                self.retries += 1
                time.sleep(min(delay, 30.0))
        raise EmbeddingAPIError(f"{url}: giving up after {self.max_retries + 1} attempts; last error {last}")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        out: list[list[float]] = []
        for i in range(0, len(texts), self.batch_size):
            out.extend(self._post(list(texts[i:i + self.batch_size])))
        arr = np.asarray(out, dtype=np.float32)
        if self._dim is not None and arr.shape[1] != self._dim:
            raise ConfigError(f"{self.model_id} returned dimension {arr.shape[1]}, expected {self._dim}")
        self._dim = arr.shape[1]
        return l2_normalize(arr)

    embed_queries = embed
