"""OpenAI-compatible embeddings API (``POST {base_url}/embeddings``).

Works with OpenAI and with servers speaking the same wire format (vLLM,
llama.cpp, Ollama, TEI...). The key comes from an environment variable
(``OPENAI_API_KEY`` by default). Batches, timeouts, and retries with
exponential backoff on 429 and 5xx (honouring ``Retry-After``), under the
limits and redirect policy of :class:`ragtune.http.JSONClient`. The model id
(a cache key, recorded in store manifests) holds the server URL with any
credentials in it redacted.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ..errors import ConfigError
from ..http import APIError, JSONClient, redact_url
from .base import l2_normalize

__all__ = ["OpenAIEmbedder", "EmbeddingAPIError"]

EmbeddingAPIError = APIError  # the error an embeddings call raises after retries


class OpenAIEmbedder:
    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 dim: int | None = None, batch_size: int = 64, timeout: float = 30.0, max_retries: int = 5,
                 backoff: float = 0.5, max_tokens: int = 8192):
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        self.api_key_env = api_key_env
        self.model_id = f"openai:{model}@{redact_url(self.base_url)}"
        self._dim = dim
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self._client = JSONClient(self.base_url, api_key_env=api_key_env, timeout=timeout, max_retries=max_retries,
                                  backoff=backoff)

    @property
    def requests(self) -> int:
        return self._client.requests

    @property
    def retries(self) -> int:
        return self._client.retries

    @property
    def cache_key(self) -> str:
        return self.model_id  # a hosted model has no file to hash; its name and server pin it

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def _post(self, texts: list[str]) -> list[list[float]]:
        self._client.api_key = os.environ.get(self.api_key_env)
        payload = self._client.post("embeddings", {"model": self.model, "input": texts, "encoding_format": "float"})
        where = f"{redact_url(self.base_url)}/embeddings"
        try:
            data = payload["data"]
            if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
                raise TypeError(f"data is {type(data).__name__}, expected a list of objects")
            data = sorted(data, key=lambda d: int(d.get("index", 0)))
            vectors = [d["embedding"] for d in data]
        except (KeyError, TypeError, ValueError) as e:
            raise APIError(f"{where}: unexpected response ({type(e).__name__}: {e}); is this an OpenAI-compatible "
                           "server?") from None
        if len(vectors) != len(texts):
            raise APIError(f"{where} returned {len(vectors)} embeddings for {len(texts)} inputs")
        try:
            arr = np.asarray(vectors, dtype=np.float32)
        except (TypeError, ValueError):
            arr = None
        if arr is None or arr.ndim != 2 or arr.shape[1] == 0 or not np.isfinite(arr).all():
            raise APIError(f"{where}: the embeddings are not lists of finite numbers of one length; is this an "
                           "OpenAI-compatible server?")
        return vectors

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
