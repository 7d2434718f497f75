"""sentence-transformers adapter: any Hugging Face model id or local folder.

Behind the ``st`` extra (torch CPU). Loading a hub id needs the network the
first time; a local folder or a model in the Hugging Face cache works offline.
A model that is none of these fails in about a second when the hub is
unreachable (see :mod:`ragtune.embed.hub`), not after a minute of retries.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ConfigError, MissingDependencyError
from .base import l2_normalize

__all__ = ["SentenceTransformerEmbedder"]


class SentenceTransformerEmbedder:
    def __init__(self, model: str, *, device: str = "cpu", batch_size: int = 32, query_prefix: str = "",
                 passage_prefix: str = ""):
        self.model_name = model
        self.model_id = f"st:{model}"
        self.device = device
        self.batch_size = batch_size
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self._model = None

    def warm_up(self) -> None:
        if self._model is not None:
            return
        import importlib.util

        from ..progress import status
        from .hub import require_model

        if importlib.util.find_spec("sentence_transformers") is None:
            raise MissingDependencyError("the sentence-transformers embedder needs: pip install 'ragtune[st]'")
        local_only = require_model(self.model_name, what="sentence-transformers model", flag="--embedder st:")
        try:
            with status(f"loading {self.model_name}"):
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(self.model_name, device=self.device, local_files_only=local_only)
        except OSError as e:
            raise ConfigError(f"cannot load sentence-transformers model {self.model_name!r}: {e}") from None

    @property
    def dim(self) -> int:
        self.warm_up()
        get = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension  # type: ignore[union-attr]
        return int(get())

    @property
    def max_tokens(self) -> int:
        self.warm_up()
        return int(self._model.max_seq_length)  # type: ignore[union-attr]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens the model would read for each passage before truncation (special tokens included)."""
        self.warm_up()
        tok = self._model.tokenizer  # type: ignore[union-attr]
        return [len(ids) for ids in tok([self.passage_prefix + t for t in texts], truncation=False)["input_ids"]]

    @property
    def cache_key(self) -> str:
        self.warm_up()
        import hashlib

        h = hashlib.sha256()
        for name, tensor in sorted(self._model.state_dict().items())[:4]:  # type: ignore[union-attr]
            h.update(name.encode())
            h.update(tensor.detach().cpu().numpy().tobytes()[:4096])
        return f"{self.model_id}:{h.hexdigest()[:16]}:{self.max_tokens}"

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        self.warm_up()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        v = self._model.encode(list(texts), batch_size=self.batch_size, show_progress_bar=False,  # type: ignore[union-attr]
                               convert_to_numpy=True, normalize_embeddings=True)
        return l2_normalize(np.asarray(v, dtype=np.float32))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode([self.passage_prefix + t for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode([self.query_prefix + t for t in texts])
