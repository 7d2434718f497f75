"""A registry per pipeline stage: names -> (typed config class, factory).

Every stage of ragtune (chunkers, retrievers, rerankers, embedders,
generators, judges) is looked up here by name. An entry is::

    Entry(stage="retriever", name="bm25", config=BM25Config, factory=build_bm25)

- ``config`` is a frozen dataclass (a :class:`~ragtune.config.Config`): it
  validates itself on construction, lists valid options on a typo, and
  round-trips through ``to_dict``/``from_dict``;
- ``factory(config, *args, **context)`` builds the component (an entry that
  takes a ``:argument`` gets it after the config); constructors are cheap,
  models load on first use. :meth:`Registry.build` validates the options once,
  so a misspelt one is a ConfigError listing the valid options.

Each registry checks its stage's contract (:mod:`ragtune.stages`: one Protocol per stage): ``register`` refuses
a class that lacks a method of the protocol, and ``build`` refuses what a factory returns when it lacks a member,
both with a :class:`~ragtune.errors.StageContractError` naming the class, the stage and what is missing.

CLI flags, sweep grid keys, store manifests and the Python API all read the
registries, so a new retriever is one module that calls
``RETRIEVERS.register(...)`` (a built-in one is also named in its registry's
module list at the end of this file) — or, from another package, one entry point::

    [project.entry-points."ragtune.retrievers"]
    mine = "my_package.my_retriever"      # a module that registers on import

Registries load their built-in modules and entry points lazily, on first
lookup, so ``import ragtune`` stays cheap.
"""

from __future__ import annotations

import difflib
import importlib
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any

from . import stages
from .config import Config
from .errors import ConfigError

__all__ = ["Entry", "Registry", "CHUNKERS", "RETRIEVERS", "RERANKERS", "EMBEDDERS", "GENERATORS", "JUDGES",
           "LOADERS", "STRATEGIES", "REGISTRIES", "did_you_mean"]


def did_you_mean(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(str(name), choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


@dataclass(frozen=True)
class Entry:
    """One registered component: its stage, name, typed config class and factory.

    ``argument`` says whether the name takes a ``:argument`` (``openai:<model>``,
    ``onnx:<folder>``): ``"none"``, ``"optional"`` or ``"required"``.
    ``uses_embedder`` marks retrievers and chunkers that need the pipeline's embedder.

    Capabilities, declared here so that no caller dispatches on a name:

    - ``load`` (retrievers that keep an index of their own): ``load(config, chunks, resources, folder)`` reopens
      what the retriever's ``save(folder)`` wrote, so a store version persists, reloads, refreshes and rolls back
      such an index like the built-in BM25 files and vectors (:attr:`stores_index`);
    - ``calls_llm``: building or using the component calls a language model (a dry run estimates the calls and
      the cost before any is made, and offline runs refuse it unless asked).
    """

    stage: str
    name: str
    config: type[Config] | None
    factory: Callable[..., Any]
    summary: str = ""
    argument: str = "none"
    uses_embedder: bool = False
    fixed: tuple[str, ...] = ()  # config fields that are not options to set (semantic chunks never overlap)
    load: Callable[..., Any] | None = None
    calls_llm: bool = False
    suffixes: tuple[str, ...] = ()  # loaders: the file name endings read (lower case, with the dot)

    @property
    def stores_index(self) -> bool:
        """The component keeps an index of its own, saved into and reloaded from a store version."""
        return self.load is not None

    def make_config(self, options: Mapping[str, Any] | Config | None = None) -> Config:
        """The validated config for ``options`` (unknown options list the valid ones); a config object is
        checked to be this entry's config class."""
        if self.config is None:
            if options:
                raise ConfigError(f"{self.stage} {self.name!r} takes no options, got {', '.join(options)}")
            raise ConfigError(f"{self.stage} {self.name!r} has no config class")
        if isinstance(options, Config):
            if not isinstance(options, self.config):
                raise ConfigError(f"{self.stage} {self.name!r} takes a {self.config.__name__}, "
                                  f"got a {type(options).__name__}")
            return options
        return self.config.from_dict(dict(options or {}))

    @property
    def options(self) -> tuple[str, ...]:
        """The options a user may set (flags, grid keys)."""
        if self.config is None:
            return ()
        return tuple(f.name for f in fields(self.config) if f.name not in self.fixed)  # type: ignore[arg-type]


class Registry:
    """Names of one stage. ``group`` is the entry-point group third-party packages register through; ``protocol``
    (default: the stage's in :data:`ragtune.stages.PROTOCOLS`) is the contract every entry satisfies."""

    def __init__(self, stage: str, group: str, builtins: tuple[str, ...] = (), aliases: Mapping[str, str] | None = None,
                 protocol: type | None = None):
        self.stage = stage
        self.protocol = protocol or stages.PROTOCOLS.get(stage)
        self.group = group
        self._builtins = builtins
        self._entries: dict[str, Entry] = {}
        self._aliases: dict[str, str] = dict(aliases or {})
        self._resolvers: list[Callable[[str], str | None]] = []
        self._loaded = False
        self._loading = False

    # -- registration ---------------------------------------------------------------------------------------------
    def register(self, name: str, config: type[Config] | None, factory: Callable[..., Any], *, summary: str = "",
                 argument: str = "none", uses_embedder: bool = False, fixed: tuple[str, ...] = (),
                 load: Callable[..., Any] | None = None, calls_llm: bool = False, suffixes: tuple[str, ...] = (),
                 replace: bool = False) -> Entry:
        if not isinstance(name, str) or not name or ":" in name:
            raise ConfigError(f"{self.stage} names are non-empty strings without ':', got {name!r}")
        if argument not in ("none", "optional", "required"):
            raise ConfigError(f"argument must be none, optional or required, got {argument!r}")
        if name in self._entries and not replace:
            raise ConfigError(f"a {self.stage} named {name!r} is already registered; pass replace=True to override it")
        if isinstance(factory, type) and self.protocol is not None:  # a class: its methods are checked now
            stages.check_class(self.stage, name, factory, self.protocol)
        entry = Entry(self.stage, name, config, factory, summary, argument, uses_embedder, tuple(fixed), load,
                      calls_llm, tuple(x.lower() for x in suffixes))
        self._entries[name] = entry
        return entry

    def alias(self, alias: str, name: str) -> None:
        """``alias`` (e.g. a Hugging Face id) means ``name``."""
        self._aliases[alias] = name

    def resolver(self, fn: Callable[[str], str | None]) -> None:
        """``fn(spec)`` may rewrite a spec that is no alias and names no entry (a bare Hugging Face id ->
        ``st:<id>``); None leaves it to the "unknown name" error."""
        self._resolvers.append(fn)

    def _resolve(self, spec: str) -> str:
        if spec in self._aliases:
            return self._aliases[spec]
        if spec.partition(":")[0] not in self._entries:
            for fn in self._resolvers:
                out = fn(spec)
                if out:
                    return out
        return spec

    def unregister(self, name: str) -> None:
        self._entries.pop(name, None)

    # -- loading --------------------------------------------------------------------------------------------------
    def _load(self) -> None:
        if self._loaded or self._loading:
            return
        self._loading = True
        try:
            for module in self._builtins:
                importlib.import_module(module)
            from importlib.metadata import entry_points

            for ep in entry_points(group=self.group):
                try:
                    obj = ep.load()
                except Exception as e:  # a broken plugin must not break ragtune
                    warnings.warn(f"ragtune: cannot load {self.stage} plugin {ep.name!r} ({ep.value}): {e}",
                                  stacklevel=2)
                    continue
                if callable(obj) and not isinstance(obj, type) and ep.name not in self._entries:
                    obj(self)  # a register(registry) function
            self._loaded = True
        finally:
            self._loading = False

    # -- lookup ---------------------------------------------------------------------------------------------------
    def names(self) -> list[str]:
        self._load()
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        self._load()
        return isinstance(name, str) and self._split(name)[0] in self._entries

    def __iter__(self) -> Iterator[Entry]:
        self._load()
        return iter(list(self._entries.values()))

    def _split(self, spec: str) -> tuple[str, str | None]:
        spec = self._resolve(spec)
        name, sep, arg = spec.partition(":")
        return name, (arg if sep else None)

    def spell(self) -> str:
        """The valid names, with ``:<argument>`` where an entry takes one."""
        out = []
        for e in self:
            out.append({"none": e.name, "optional": f"{e.name}[:<arg>]", "required": f"{e.name}:<arg>"}[e.argument])
        return ", ".join(out)

    def get(self, spec: str) -> Entry:
        """The entry for ``spec`` (``name`` or ``name:argument``); an unknown name lists the valid ones."""
        self._load()
        if not isinstance(spec, str):
            raise ConfigError(f"{self.stage} must be a name (a string), got {spec!r}; choose one of: {self.spell()}")
        name, arg = self._split(spec)
        entry = self._entries.get(name)
        if entry is None:
            raise ConfigError(f"unknown {self.stage} {spec!r}; choose one of: {self.spell()}"
                              f"{did_you_mean(spec, list(self._entries))}")
        if entry.argument == "required" and not arg:
            raise ConfigError(f"{self.stage} {name!r} needs an argument: {name}:<...>")
        if entry.argument == "none" and arg is not None:
            raise ConfigError(f"{self.stage} {name!r} takes no ':' argument, got {spec!r}")
        return entry

    def argument(self, spec: str) -> str | None:
        return self._split(spec)[1]

    def canonical(self, spec: str) -> str:
        """``spec`` with aliases and resolvers applied (``sentence-transformers/all-MiniLM-L6-v2`` -> ``minilm``)."""
        self.get(spec)
        return self._resolve(spec)

    def config(self, spec: str, options: Mapping[str, Any] | None = None) -> Config:
        return self.get(spec).make_config(options)

    def build(self, spec: str, *args: Any, options: Mapping[str, Any] | Config | None = None, **context: Any) -> Any:
        """Build the component: ``factory(config, *args, **context)``, with the ``:argument`` after the config
        (``factory(config, argument, *args, **context)``) for entries that take one. What it returns must satisfy
        the stage's protocol (:mod:`ragtune.stages`), else a :class:`~ragtune.errors.StageContractError`.

        ``options`` are validated here, once, by the entry's config class: a misspelt option is a
        :class:`~ragtune.errors.ConfigError` listing the valid ones, never passed on to be ignored. ``context``
        is what the caller provides (resources, chunks), not user options. An entry registered without a config
        class (``factory(argument, *args, **context)``) takes no options: giving any is a ConfigError."""
        entry = self.get(spec)
        if entry.config is None:
            if options:
                raise ConfigError(f"{self.stage} {entry.name!r} takes no options, got {', '.join(map(repr, options))}")
            built = entry.factory(self.argument(spec), *args, **context)
        else:
            config = entry.make_config(options)
            if entry.argument != "none":
                built = entry.factory(config, self.argument(spec), *args, **context)
            else:
                built = entry.factory(config, *args, **context)
        return self.check(entry.name, built)  # what a factory returns is known only now

    def check(self, name: str, component: Any) -> Any:
        """``component`` (built for the entry ``name``: by its factory, or reopened by its ``load``) when it has
        every method and attribute of the stage's protocol, else a :class:`~ragtune.errors.StageContractError`
        naming its class, the stage and what it lacks."""
        if self.protocol is not None:
            stages.check_component(self.stage, name, component, self.protocol)
        return component


# Each stage, with the modules that register its built-in entries (imported on first lookup).
CHUNKERS = Registry("chunker", "ragtune.chunkers", tuple(f"ragtune.chunking.{m}" for m in (
    "fixed", "recursive", "markdown", "semantic", "small_to_big", "section", "document")))
RETRIEVERS = Registry("retriever", "ragtune.retrievers",
                      ("ragtune.retrieve.bm25", "ragtune.retrieve.dense", "ragtune.retrieve.fusion",
                       "ragtune.engines.milvus"))
RERANKERS = Registry("reranker", "ragtune.rerankers", tuple(f"ragtune.rerank.{m}" for m in (
    "embedding", "cross_encoder", "llm")))
EMBEDDERS = Registry("embedder", "ragtune.embedders", ("ragtune.embed",))
GENERATORS = Registry("generator", "ragtune.generators", ("ragtune.answer",))
JUDGES = Registry("judge", "ragtune.judges", ("ragtune.answer",))
# file formats of a corpus folder: each entry reads files with its suffixes into Documents (ragtune.corpus.formats)
LOADERS = Registry("loader", "ragtune.loaders", tuple(f"ragtune.corpus.formats.{m}" for m in (
    "text", "docx", "rst", "html", "pdf", "notebook")))

# how a question becomes searches: one (single), a second hop along the corpus's links, a conversation's history
STRATEGIES = Registry("strategy", "ragtune.strategies", ("ragtune.retrieve.strategies",))

REGISTRIES = {"chunker": CHUNKERS, "retriever": RETRIEVERS, "reranker": RERANKERS, "embedder": EMBEDDERS,
              "generator": GENERATORS, "judge": JUDGES,
              "loader": LOADERS, "strategy": STRATEGIES}
