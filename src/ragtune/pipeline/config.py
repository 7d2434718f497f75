"""The whole retrieval pipeline as one frozen, validated, hashable value: :class:`PipelineConfig`.

It names the chunker, the first-stage retriever, the embedder and the reranker, each in its stage registry
(:mod:`ragtune.registry`), with options checked by that entry's typed config class. It is what sweeps expand,
store versions record in their manifests, servers load, migrations compare and caches hash (:attr:`~PipelineConfig.key`,
the one hash of a configuration).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from pathlib import Path

from ..config import NONE_FLAG, Config, _hints, config_key
from ..embed import DEFAULT_EMBEDDER
from ..embed.spec import PREFIX_OPTIONS, split_prefixes
from ..errors import ConfigError
from ..registry import CHUNKERS, EMBEDDERS, RERANKERS, RETRIEVERS, STRATEGIES, did_you_mean

__all__ = ["PipelineConfig", "file_flags", "read_pipeline_flags", "option_owners", "option_types", "ALIASES",
           "PIPELINE_KEYS", "EMBEDDER_KEYS",
           "RERANK_PREFIX", "STRATEGY_PREFIX", "DEFAULT_RETRIEVER", "DEFAULT_STRATEGY", "token_unit"]

# names that older files used for today's options
ALIASES = {"depth_fuse": "fusion_depth", "depth": "fusion_depth", "parent_chunker": "parent"}
PIPELINE_KEYS = ("chunker", "prefix", "retriever", "engine", "embedder", "rerank", "candidates", "filter", "strategy")
RERANK_PREFIX = "rerank_"
STRATEGY_PREFIX = "strategy_"  # the strategy's options as flags and grid keys: strategy_follow, strategy_window
DEFAULT_STRATEGY = "single"  # one search per question: the pipeline as it was before strategies
# the embedder options that are part of a pipeline: they change the vectors (other embedder options, such as
# threads or batch sizes, change only how fast the same vectors are made)
EMBEDDER_KEYS = PREFIX_OPTIONS
DEFAULT_RETRIEVER = "hybrid"  # measured in docs/concepts/defaults.md


def _items(options: Mapping[str, Any] | Sequence[tuple[str, Any]] | None) -> tuple[tuple[str, Any], ...]:
    """Options as a sorted tuple of (name, value) pairs, lists made tuples: hashable and order-free."""
    d = dict(options or {})
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in d.items()))


def _minimal(entry, options: dict[str, Any], fixed: dict[str, Any]) -> dict[str, Any]:
    """Drop the options whose value changes nothing (an option set to its default and the option left out
    are the same configuration, with the same key). ``fixed`` options are passed but never returned."""
    full = entry.make_config({**options, **fixed}).to_dict()
    kept = {}
    for k, v in options.items():
        try:
            same = entry.make_config({**{o: w for o, w in options.items() if o != k}, **fixed}).to_dict() == full
        except ConfigError:
            same = False
        if not same:
            kept[k] = v
    return kept


def _embedder_options(name: str, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The embedder's canonical name and its non-default prefix options, validated by the entry's typed config;
    prefixes written after ``|`` in the name (the older spelling) are read into the options."""
    if not isinstance(name, str):
        raise ConfigError(f"embedder must be a name, got {name!r}; choose one of: {EMBEDDERS.spell()}")
    base, piped = split_prefixes(EMBEDDERS.canonical(name))
    options = {**piped, **options}
    entry = EMBEDDERS.get(base)
    other = sorted(set(options) - set(EMBEDDER_KEYS))
    if other:
        raise ConfigError(f"embedder option(s) {', '.join(map(repr, other))} are not part of a pipeline; a "
                          f"pipeline's embedder options are {' and '.join(EMBEDDER_KEYS)}")
    if options and not set(EMBEDDER_KEYS) <= set(entry.options):
        raise ConfigError(f"embedder {base!r} takes no query/passage prefixes (minilm was trained without them, "
                          "e5-small adds its own); prefixes apply to st:<model>, onnx:<folder> and Hugging Face ids")
    return base, _minimal(entry, options, {}) if options else {}


def read_pipeline_flags(path: str | Path) -> dict[str, Any]:
    """The flags of a pipeline file (TOML or YAML, as :meth:`PipelineConfig.to_toml` writes it), through
    :func:`file_flags`; errors say what to fix."""
    from ..config import read_config_file

    return file_flags(read_config_file(str(path)))


def file_flags(data: Mapping[str, Any]) -> dict[str, Any]:
    """Flag names read from a pipeline file, with ``"none"`` made None where the option may be None (``stemmer =
    "none"``, as ``--stemmer none``): TOML has no null."""
    types = {**option_types("chunker"), **option_types("retriever"),
             **{RERANK_PREFIX + k: t for k, t in option_types("reranker").items()},
             **{STRATEGY_PREFIX + k: t for k, t in option_types("strategy").items()}}
    out = {}
    for k, v in data.items():
        name = ALIASES.get(str(k).replace("-", "_"), str(k).replace("-", "_"))
        hint = types.get(name)
        if v == "none" and hint is not None and type(None) in getattr(hint, "__args__", ()):
            v = None
        out[k] = v
    return out


def _toml_key(key: str) -> str:
    import re

    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_value(key)


def _toml_value(value: Any) -> str:
    """A TOML value for a flag: booleans, integers, finite floats (``repr`` reads back to the same float), strings
    (escaped as TOML basic strings) and lists of those."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ConfigError(f"a pipeline file holds finite numbers, got {value!r}")
        return repr(value)
    if isinstance(value, str):
        out = []
        for ch in value:
            if ch in '"\\':
                out.append("\\" + ch)
            elif ord(ch) < 0x20 or ord(ch) == 0x7F:
                out.append(f"\\u{ord(ch):04X}")
            else:
                out.append(ch)
        return '"' + "".join(out) + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise ConfigError(f"a pipeline file holds strings, numbers, booleans and lists, got {value!r}")


def option_owners(stage: str) -> dict[str, list[str]]:
    """For the chunker or retriever stage: option name -> the entries that take it (for flags and grid keys)."""
    registry = {"chunker": CHUNKERS, "retriever": RETRIEVERS}[stage]
    owners: dict[str, list[str]] = {}
    for entry in registry:
        for name in entry.options:
            if name not in ("prefix", "embedder"):  # pipeline-level: --prefix and --embedder
                owners.setdefault(name, []).append(entry.name)
    return owners


def option_types(stage: str) -> dict[str, Any]:
    """Option name -> annotation (the first entry that declares it)."""
    registry = {"chunker": CHUNKERS, "retriever": RETRIEVERS, "reranker": RERANKERS, "strategy": STRATEGIES}[stage]
    out: dict[str, Any] = {}
    for entry in registry:
        if entry.config is not None:
            for name, hint in _hints(entry.config).items():
                out.setdefault(name, hint)
    return out


def token_unit(tokenizer: str | None) -> str | None:
    """The short name of the tokens a chunker's sizes count, or None for regex tokens (the default):
    ``minilm``, or for a ``tokenizer.json`` path the model folder's name (``bge-small``)."""
    if not tokenizer or tokenizer == "regex":
        return None
    if "/" not in tokenizer and "\\" not in tokenizer:
        return tokenizer
    path = Path(tokenizer)
    return path.parent.name or path.stem


@dataclass(frozen=True)
class PipelineConfig(Config):
    """The whole retrieval pipeline as one validated, hashable value: a :class:`~ragtune.config.Config` whose
    :meth:`to_dict`/:meth:`from_dict` use flat flag names (what grids, flags, manifests and pipeline files hold,
    each option checked by its stage's typed config) and which round-trips exactly through TOML
    (:meth:`to_toml`, :meth:`from_toml`, :meth:`from_file`).

    Options are stored as sorted ``(name, value)`` tuples and normalised: an option equal to its
    default is dropped, so two spellings of one configuration share one :attr:`key`. Each stage's options are
    validated by its registry entry's typed config (a misspelt one lists the valid ones).
    ``embedder_options`` are the embedder's query and passage prefixes (:data:`EMBEDDER_KEYS`); the older
    spelling inside the name (``st:MODEL|query_prefix=query: ``) is read into them.
    ``chunker="auto"`` is resolved per corpus by :meth:`resolved` (sections for markdown, whole
    documents otherwise). ``filter`` is a query-time metadata filter (sweeps may vary it; stores refuse it).
    ``strategy`` (with ``strategy_options``) is how a question becomes searches (:data:`ragtune.registry.STRATEGIES`:
    ``single``, the default, is one search and adds nothing to :meth:`to_dict`, so keys made before strategies
    existed are unchanged); it applies at query time, like the reranker.
    """

    chunker: str = "auto"
    prefix: bool | None = None
    chunker_options: tuple[tuple[str, Any], ...] = ()
    retriever: str = DEFAULT_RETRIEVER
    retriever_options: tuple[tuple[str, Any], ...] = ()
    embedder: str = DEFAULT_EMBEDDER
    embedder_options: tuple[tuple[str, Any], ...] = ()
    rerank: str | None = None
    rerank_options: tuple[tuple[str, Any], ...] = ()
    candidates: int = 50
    filter: str | None = None
    strategy: str = DEFAULT_STRATEGY
    strategy_options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731 - frozen dataclass normalisation
        if not isinstance(self.chunker, str):
            raise ConfigError(f"chunker must be a name, got {self.chunker!r}; choose one of: auto, {CHUNKERS.spell()}")
        if self.prefix is not None and not isinstance(self.prefix, bool):
            raise ConfigError(f"prefix must be true or false, got {self.prefix!r}")
        if not isinstance(self.embedder, str):
            raise ConfigError(f"embedder must be a name, got {self.embedder!r}; choose one of: {EMBEDDERS.spell()}")
        if self.filter is not None and not isinstance(self.filter, str):
            raise ConfigError(f"filter must be an expression string like 'dir=billing', got {self.filter!r}")
        if isinstance(self.candidates, bool) or not isinstance(self.candidates, int) or self.candidates < 1:
            raise ConfigError(f"candidates must be an integer >= 1, got {self.candidates!r}")
        for name in ("chunker_options", "retriever_options", "rerank_options", "embedder_options", "strategy_options"):
            set_(name, _items(getattr(self, name)))

        retriever = RETRIEVERS.get(self.retriever)
        chunker = CHUNKERS.get(self.chunker) if self.chunker != "auto" else None
        uses_embedder = retriever.uses_embedder or bool(chunker and chunker.uses_embedder)
        embedder, eopts = _embedder_options(self.embedder, dict(self.embedder_options))
        set_("embedder", embedder if uses_embedder else DEFAULT_EMBEDDER)
        set_("embedder_options", _items(eopts if uses_embedder else {}))

        copts = dict(self.chunker_options)
        if chunker is None:
            if copts:
                raise ConfigError(f"chunker 'auto' takes no options (got {', '.join(copts)}); name a chunker, "
                                  f"e.g. chunker=fixed: {CHUNKERS.spell()}")
        else:
            if "embedder" in chunker.options and self.embedder_id != DEFAULT_EMBEDDER:
                copts["embedder"] = self.embedder_id  # the semantic chunker embeds with the pipeline's model
            kept = _minimal(chunker, copts, {"prefix": bool(self.prefix)})
            if "tokenizer" in copts and retriever.uses_embedder:  # explicit, even "regex": overrides the embedder's
                kept["tokenizer"] = copts["tokenizer"]
            set_("chunker_options", _items(kept))
        set_("retriever_options", _items(_minimal(retriever, dict(self.retriever_options), {})))
        if self.rerank is None:
            if self.rerank_options:
                raise ConfigError("reranker options need a reranker: set rerank (embedding or cross-encoder)")
            set_("candidates", 50)
        else:
            set_("rerank_options", _items(_minimal(RERANKERS.get(self.rerank), dict(self.rerank_options), {})))
        if self.filter is not None:
            from ..retrieve.filters import parse_filter

            parse_filter(self.filter)
        set_("strategy_options", _items(_minimal(STRATEGIES.get(self.strategy), dict(self.strategy_options), {})))

    # -- typed stage configs ------------------------------------------------------------------------------------
    def chunker_config(self, corpus_kind: str | None = None):
        """The chunker's typed config (``auto`` needs ``corpus_kind``)."""
        c = self.resolved(corpus_kind) if corpus_kind else self
        if c.chunker == "auto":
            raise ConfigError("chunker 'auto' is resolved per corpus: pass the corpus kind")
        options = {**dict(c.chunker_options), "prefix": bool(c.prefix)}
        if "tokenizer" not in options and c.uses_vectors and "tokenizer" in CHUNKERS.get(c.chunker).options:
            from ..embed.window import embedder_tokenizer

            # sizes count the tokens the embedder sees (regex stays the default for BM25 and when the
            # embedder's tokenizer is not available offline); an explicit tokenizer option wins
            tokenizer = embedder_tokenizer(c.embedder)
            if tokenizer:
                options["tokenizer"] = tokenizer
        return CHUNKERS.config(c.chunker, options)

    def retriever_config(self):
        return RETRIEVERS.config(self.retriever, dict(self.retriever_options))

    def reranker_config(self):
        return RERANKERS.config(self.rerank, dict(self.rerank_options)) if self.rerank else None

    def strategy_config(self):
        return STRATEGIES.config(self.strategy, dict(self.strategy_options))

    @property
    def multi_step(self) -> bool:
        """A strategy other than one search of the question (:data:`DEFAULT_STRATEGY`)."""
        return self.strategy != DEFAULT_STRATEGY

    @property
    def uses_embedder(self) -> bool:
        chunker = CHUNKERS.get(self.chunker) if self.chunker != "auto" else None
        return RETRIEVERS.get(self.retriever).uses_embedder or bool(chunker and chunker.uses_embedder)

    uses_vectors = property(lambda self: RETRIEVERS.get(self.retriever).uses_embedder)

    @property
    def embedder_id(self) -> str:
        """The embedder with its prefixes as one string (``st:MODEL|query_prefix=query: ``): the name the
        embedding cache, :class:`~ragtune.pipeline.Resources` and :func:`ragtune.embed.get_embedder` know it by,
        so vectors made with other prefixes are never mixed. Configs and files keep the options apart."""
        opts = dict(self.embedder_options)
        return self.embedder + "".join(f"|{k}={opts[k]}" for k in PREFIX_OPTIONS if opts.get(k))

    @property
    def embedder_spec(self):
        """The embedder as a typed :class:`~ragtune.embed.EmbedderSpec` (kind, model, query/passage prefixes)."""
        from ..embed.spec import EmbedderSpec

        return EmbedderSpec.parse(self.embedder_id)

    def resolved(self, corpus_kind: str) -> "PipelineConfig":
        """``auto`` and an unset prefix replaced by what they mean for this kind of corpus.

        ``auto`` is ``document`` for BEIR and text corpora; for documents with headings it is ``section`` when the
        retriever only counts words (BM25), and when it embeds (dense, hybrid) with an embedder whose window is
        known (the default MiniLM's 256 tokens), ``small_to_big`` with section parents: sections cut at block
        boundaries into pieces that fit the window (prefix included) are searched, their whole sections
        returned. Whole sections were cut by the window for 29-68% of chunks on the three docs corpora measured,
        and the pieces scored higher on two of the three (bench/window.py, docs/concepts/defaults.md)."""
        prefix = self.prefix if self.prefix is not None else True
        if self.chunker != "auto":
            return replace(self, prefix=prefix)
        if corpus_kind not in ("markdown", "documents"):
            return replace(self, chunker="document", prefix=prefix)
        if self.uses_vectors:
            from ..embed.window import embedder_window

            window = embedder_window(self.embedder)
            if window:
                options = {"parent": "section", "size": window, "overlap": 0, **dict(self.chunker_options)}
                return replace(self, chunker="small_to_big", prefix=prefix, chunker_options=options)
        return replace(self, chunker="section", prefix=prefix)

    @property
    def index_key(self) -> tuple:
        """What the first-stage index depends on (rerankers and filters reuse it)."""
        return (self.chunker, self.prefix, self.chunker_options, self.retriever, self.retriever_options,
                self.embedder_id)

    # -- flags (CLI, grids, manifests) ----------------------------------------------------------------------------
    @classmethod
    def from_flags(cls, flags: Mapping[str, Any], *, strict: bool = True) -> "PipelineConfig":
        """From flat flag names (``chunker``, ``size``, ``retriever``, ``k1``, ``rerank``, ``rerank_model``...).

        Each option goes to the stage whose chosen entry takes it. An option another entry of that stage
        takes is an error when ``strict`` (CLI flags, index configs) and dropped otherwise (sweep grids,
        where ``size`` means nothing to the section chunker). Unknown names list the valid ones."""
        f: dict[str, Any] = {}
        for k, v in flags.items():
            if not isinstance(k, str):
                raise ConfigError(f"option names are strings, got {k!r}")
            k = k.strip().replace("-", "_")
            f[ALIASES.get(k, k)] = None if v is NONE_FLAG else v
        chunker = f.pop("chunker", "auto")
        retriever = f.pop("retriever", DEFAULT_RETRIEVER)
        if f.get("engine") is not None:  # engine=milvus + retriever=hybrid names the entry milvus-hybrid
            from ..engines import engine_retriever

            retriever = engine_retriever(f.pop("engine"), retriever)
        f.pop("engine", None)
        rerank = f.pop("rerank", None) or None
        strategy = f.pop("strategy", None) or DEFAULT_STRATEGY
        s_entry, s_types = STRATEGIES.get(strategy), option_types("strategy")
        top = {k: f.pop(k) for k in ("prefix", "embedder", "candidates", "filter") if k in f}
        eopts = {k: f.pop(k) for k in EMBEDDER_KEYS if k in f}
        if "rerank_model" in f:
            f["rerank_model"] = f.pop("rerank_model")
        c_owners, r_owners = option_owners("chunker"), option_owners("retriever")
        r_types = option_types("reranker")
        c_entry = CHUNKERS.get(chunker) if chunker != "auto" and isinstance(chunker, str) else None
        r_entry = RETRIEVERS.get(retriever)
        copts, ropts, xopts, sopts, problems = {}, {}, {}, {}, []
        for k, v in f.items():
            if c_entry is not None and k in c_entry.options and k not in ("prefix", "embedder"):
                copts[k] = v
            elif k in r_entry.options:
                ropts[k] = v
            elif k.startswith(RERANK_PREFIX) and k[len(RERANK_PREFIX):] in r_types:
                if rerank is None:
                    if strict:
                        problems.append(f"{k} needs a reranker (rerank = embedding or cross-encoder)")
                    continue
                xopts[k[len(RERANK_PREFIX):]] = v
            elif k.startswith(STRATEGY_PREFIX) and k[len(STRATEGY_PREFIX):] in s_types:
                if k[len(STRATEGY_PREFIX):] in s_entry.options:
                    sopts[k[len(STRATEGY_PREFIX):]] = v
                elif strict:
                    takers = [e.name for e in STRATEGIES if k[len(STRATEGY_PREFIX):] in e.options]
                    problems.append(f"{k} does not apply to strategy {s_entry.name} (it applies to strategies "
                                    f"{', '.join(takers)})")
            elif k in c_owners or k in r_owners:
                if strict:
                    which = (f"chunkers {', '.join(c_owners[k])}" if k in c_owners
                             else f"retrievers {', '.join(r_owners[k])}")
                    mine = f"chunker {chunker}" if k in c_owners else f"retriever {retriever}"
                    if k in c_owners and chunker == "auto":  # the default, which takes no options: say what it is
                        mine = ("the default chunker, auto (for documents with headings: section under bm25, "
                                "small_to_big with section parents fitted to the embedder's window under dense and "
                                "hybrid; document for BEIR and text)")
                        which += f"; name one to set {k}, e.g. chunker=markdown"
                    problems.append(f"{k} does not apply to {mine} (it applies to {which})")
            else:
                valid = sorted({*PIPELINE_KEYS, *EMBEDDER_KEYS, *c_owners, *r_owners,
                                *(RERANK_PREFIX + t for t in r_types), *(STRATEGY_PREFIX + t for t in s_types)})
                problems.append(f"unknown option {k!r}{did_you_mean(k, valid)}; valid: {', '.join(valid)}")
        if problems:
            raise ConfigError("; ".join(problems))
        return cls(chunker=chunker, prefix=top.get("prefix"), chunker_options=_items(copts), retriever=retriever,
                   retriever_options=_items(ropts), embedder=top.get("embedder", DEFAULT_EMBEDDER),
                   embedder_options=_items({k: v for k, v in eopts.items() if v is not None}), rerank=rerank,
                   rerank_options=_items(xopts), candidates=top.get("candidates", 50), filter=top.get("filter") or None,
                   strategy=strategy, strategy_options=_items(sopts))

    def to_dict(self) -> dict[str, Any]:
        """Flat flag names: what grids, CLI flags and manifests use; :meth:`from_dict` reads it back."""
        d: dict[str, Any] = {"chunker": self.chunker, "prefix": self.prefix, **dict(self.chunker_options),
                             "retriever": self.retriever, **dict(self.retriever_options)}
        if self.uses_embedder:
            d["embedder"] = self.embedder
            d.update(self.embedder_options)
        if self.rerank:
            d.update(rerank=self.rerank, **{RERANK_PREFIX + k: v for k, v in self.rerank_options},
                     candidates=self.candidates)
        if self.filter:
            d["filter"] = self.filter
        if self.multi_step or self.strategy_options:  # one search (the default) adds nothing: keys stay as they were
            d.update(strategy=self.strategy, **{STRATEGY_PREFIX + k: v for k, v in self.strategy_options})
        return d


    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PipelineConfig":
        """Read :meth:`to_dict` output; also the nested form of older store manifests."""
        if "chunker_options" in data or "retriever_options" in data:  # manifests written before PipelineConfig
            flat = {k: v for k, v in data.items() if k not in ("chunker_options", "retriever_options")}
            flat.update(data.get("chunker_options") or {})
            flat.update(data.get("retriever_options") or {})
            if flat.get("embedder") is None:
                flat.pop("embedder", None)
            # they were written when every size counted regex tokens and prefix/retriever defaults differed:
            # say so, so that a refresh chunks changed documents exactly as the rest of the version was chunked
            chunker = flat.get("chunker", "auto")
            if chunker != "auto" and "tokenizer" in CHUNKERS.get(chunker).options:
                flat.setdefault("tokenizer", "regex")
            flat.setdefault("retriever", "bm25")
            return cls.from_flags(flat)
        return cls.from_flags(data)

    # -- files (what a sweep recommends; eval, index build and serve take it with --config) ----------------------
    def to_toml(self) -> str:
        """The configuration as a TOML file of flat flag names (:meth:`to_dict`), which :meth:`from_toml` and
        :meth:`from_file` read back into an equal configuration (same :attr:`key`). An option set to None where its
        default is not None (``stemmer``) is written ``"none"``, as on the command line."""
        lines = [f"# ragtune pipeline {' '.join(self.label.split())}",
                 "# ragtune eval / index build / serve --config FILE (flags given on the command line override it)"]
        for k, v in self.to_dict().items():
            if v is None and k == "prefix":
                continue  # unset: resolved per corpus
            lines.append(f"{_toml_key(k)} = {_toml_value('none' if v is None else v)}")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_toml(cls, text: str) -> "PipelineConfig":
        """Read :meth:`to_toml` output (or any TOML table of flag names)."""
        import tomllib

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"cannot parse the pipeline TOML: {str(e).splitlines()[0]}") from None
        return cls.from_flags(file_flags(data))

    @classmethod
    def from_file(cls, path: str | Path) -> "PipelineConfig":
        """A TOML (or YAML) pipeline file, as :meth:`to_toml` writes and ``--config`` takes."""
        return cls.from_flags(read_pipeline_flags(path))

    def index_config(self) -> "PipelineConfig":
        """This configuration without what applies at query time (reranker, candidates, filter, strategy): what an
        index store version holds."""
        return replace(self, rerank=None, rerank_options=(), candidates=50, filter=None, strategy=DEFAULT_STRATEGY,
                       strategy_options=())

    @property
    def key(self) -> str:
        """The one hash of a configuration (:func:`ragtune.config.config_key` of :meth:`to_dict`): sweep run files,
        store manifests and caches are keyed by it; equal configurations, however spelled, share it."""
        return config_key(self.to_dict())

    @property
    def label(self) -> str:
        """Readable and unique per configuration: ``markdown-512-o64-prefix/bm25``,
        ``fixed-256-o0/bm25-k1=1.2+cross-encoder@50``, ``section/bm25``. Sizes count regex tokens unless the
        label says otherwise: under a dense or hybrid retriever they count the embedder's tokens, and the size
        says so (``markdown-256tok:minilm-o32-prefix/hybrid``); an explicit tokenizer shows as ``tokenizer=...``."""
        def ordered(registry, name, options):  # in the order the config class declares them
            order = registry.get(name).options if name != "auto" else ()
            return sorted(options, key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))

        def value(v):
            return ",".join(map(str, v)) if isinstance(v, tuple) else str(v)

        chunk = [self.chunker]
        effective = self.chunker_config().to_dict() if self.chunker != "auto" else {}
        # the tokens sizes count when the embedder chose them (not regex, not an explicit tokenizer option)
        implicit = token_unit(effective.get("tokenizer")) if "tokenizer" not in dict(self.chunker_options) else None
        unit = f"tok:{implicit}" if implicit else ""
        for k in ("size", "overlap"):  # always shown where the chunker has them: sizes are what sweeps vary
            if k == "overlap" and effective.get("parent") == "section":
                continue  # pieces of a section are cut at block boundaries: no overlap to show
            if k in effective and k in (CHUNKERS.get(self.chunker).options):
                chunk.append(f"{effective[k]}{unit}" if k == "size" else f"o{effective[k]}")
        for k, v in ordered(CHUNKERS, self.chunker, self.chunker_options):
            if k not in ("size", "overlap", "embedder"):
                chunk.append(f"{k}={value(v)}")
        if self.prefix:
            chunk.append("prefix")
        first = [self.retriever, *(f"{k}={value(v)}" for k, v in ordered(RETRIEVERS, self.retriever,
                                                                         self.retriever_options))]
        if self.uses_embedder and self.embedder_id != DEFAULT_EMBEDDER:
            first.append(f"emb={self.embedder_id}")
        label = "-".join(chunk) + "/" + "-".join(first)
        if self.rerank:
            label += f"+{self.rerank}@{self.candidates}"
        if self.multi_step or self.strategy_options:
            label += ">>" + "-".join([self.strategy, *(f"{k}={value(v)}" for k, v in ordered(
                STRATEGIES, self.strategy, self.strategy_options))])
        return label + (f" [{self.filter}]" if self.filter else "")

