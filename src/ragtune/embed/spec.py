"""An embedder name, parsed once into a typed value.

An embedder is named by one string wherever it is recorded (flags, grids, store manifests, cache keys, labels):
``minilm``, ``e5-small``, ``onnx:<folder>``, ``st:<model id or folder>``, ``openai:<model>``, with query and
passage prefixes after ``|`` (``st:intfloat/e5-base-v2|query_prefix=query: |passage_prefix=passage: ``).
:class:`EmbedderSpec` is that string parsed, once, at the edge: code that needs the model or a prefix reads the
fields, and :attr:`EmbedderSpec.name` writes the one canonical string back.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError

__all__ = ["EmbedderSpec", "PREFIX_OPTIONS", "split_prefixes"]

PREFIX_OPTIONS = ("query_prefix", "passage_prefix")


def split_prefixes(arg: str) -> tuple[str, dict[str, str]]:
    """``"BAAI/bge-small-en-v1.5|query_prefix=Represent ...: "`` -> the model and its prefix options."""
    base, *parts = arg.split("|")
    opts: dict[str, str] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or key not in PREFIX_OPTIONS:
            raise ConfigError(f"embedder option {part!r} after '|': expected query_prefix=TEXT or passage_prefix=TEXT")
        opts[key] = value
    return base, opts


@dataclass(frozen=True)
class EmbedderSpec:
    """``kind`` is the registry entry (``minilm``, ``st``, ``onnx``, ``openai``...), ``model`` its argument (a
    model id, a folder), and the prefixes put before queries and passages."""

    kind: str
    model: str | None = None
    query_prefix: str | None = None
    passage_prefix: str | None = None

    @classmethod
    def parse(cls, name: str) -> "EmbedderSpec":
        """The spec of ``name`` after the registry's aliases and resolvers (a bare Hugging Face id is ``st:``);
        an unknown name lists the valid ones."""
        from ..registry import EMBEDDERS

        canonical = EMBEDDERS.canonical(name)
        kind, sep, arg = canonical.partition(":")
        if not sep:
            return cls(kind)
        model, opts = split_prefixes(arg)
        return cls(kind, model, opts.get("query_prefix"), opts.get("passage_prefix"))

    @property
    def prefixes(self) -> dict[str, str]:
        return {k: v for k, v in (("query_prefix", self.query_prefix), ("passage_prefix", self.passage_prefix)) if v}

    @property
    def name(self) -> str:
        """The canonical string: what flags, manifests, caches and labels record."""
        base = self.kind if self.model is None else f"{self.kind}:{self.model}"
        return base + "".join(f"|{k}={v}" for k, v in self.prefixes.items())
