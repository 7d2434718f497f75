"""One configuration, one builder: corpus -> chunks -> first stage (-> rerank) (-> parents).

:class:`PipelineConfig` is the whole pipeline in one frozen value: the
chunker, the first-stage retriever, the embedder and the reranker, each
named in its stage registry (:mod:`ragtune.registry`) with options checked by
that entry's typed config class. It is what sweeps expand, stores record in
their manifests, servers load, migrations compare and caches hash.
:func:`build_pipeline` turns it into an immutable :class:`Pipeline`; eval,
sweeps, store build/load, migrate and serve all go through it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .config import NONE_FLAG, _hints
from .corpus.corpus import Corpus
from .errors import ConfigError
from .evaluate.evaluate import DEFAULT_KS, EvalResult, evaluate
from .golden import GoldenSet
from .registry import CHUNKERS, EMBEDDERS, RERANKERS, RETRIEVERS
from .retrieve.base import Retriever
from .retrieve.parents import ParentRetriever
from .retrieve.rerank import RerankedRetriever, Reranker
from .types import Chunk

__all__ = ["PipelineConfig", "Pipeline", "Resources", "StoredIndex", "build_pipeline", "run_eval", "default_chunker",
           "build_retriever", "build_reranker", "option_owners", "open_pipeline", "compare_candidates",
           "first_stage_check"]

# names that older files used for today's options
ALIASES = {"depth_fuse": "fusion_depth", "depth": "fusion_depth", "parent_chunker": "parent"}
PIPELINE_KEYS = ("chunker", "prefix", "retriever", "engine", "embedder", "rerank", "candidates", "filter")
RERANK_PREFIX = "rerank_"
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


def option_owners(stage: str) -> dict[str, list[str]]:
    """For the chunker or retriever stage: option name -> the entries that take it (for flags and grid keys)."""
    registry = {"chunker": CHUNKERS, "retriever": RETRIEVERS}[stage]
    owners: dict[str, list[str]] = {}
    for entry in registry:
        for name in entry.options:
            if name not in ("prefix", "embedder"):  # pipeline-level: --prefix and --embedder
                owners.setdefault(name, []).append(entry.name)
    return owners


def _option_types(stage: str) -> dict[str, Any]:
    """Option name -> annotation (the first entry that declares it)."""
    registry = {"chunker": CHUNKERS, "retriever": RETRIEVERS, "reranker": RERANKERS}[stage]
    out: dict[str, Any] = {}
    for entry in registry:
        if entry.config is not None:
            for name, hint in _hints(entry.config).items():
                out.setdefault(name, hint)
    return out


@dataclass(frozen=True)
class PipelineConfig:
    """The whole retrieval pipeline as one validated, hashable value.

    Options are stored as sorted ``(name, value)`` tuples and normalised: an option equal to its
    default is dropped, so two spellings of one configuration share one :attr:`key`.
    ``chunker="auto"`` is resolved per corpus by :meth:`resolved` (sections for markdown, whole
    documents otherwise). ``filter`` is a query-time metadata filter (sweeps may vary it; stores refuse it).
    """

    chunker: str = "auto"
    prefix: bool | None = None
    chunker_options: tuple[tuple[str, Any], ...] = ()
    retriever: str = DEFAULT_RETRIEVER
    retriever_options: tuple[tuple[str, Any], ...] = ()
    embedder: str = "minilm"
    rerank: str | None = None
    rerank_options: tuple[tuple[str, Any], ...] = ()
    candidates: int = 50
    filter: str | None = None

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
        for name in ("chunker_options", "retriever_options", "rerank_options"):
            set_(name, _items(getattr(self, name)))

        retriever = RETRIEVERS.get(self.retriever)
        chunker = CHUNKERS.get(self.chunker) if self.chunker != "auto" else None
        uses_embedder = retriever.uses_embedder or bool(chunker and chunker.uses_embedder)
        EMBEDDERS.get(self.embedder)
        set_("embedder", EMBEDDERS.canonical(self.embedder) if uses_embedder else "minilm")

        copts = dict(self.chunker_options)
        if chunker is None:
            if copts:
                raise ConfigError(f"chunker 'auto' takes no options (got {', '.join(copts)}); name a chunker, "
                                  f"e.g. chunker=fixed: {CHUNKERS.spell()}")
        else:
            if "embedder" in chunker.options and self.embedder != "minilm":
                copts["embedder"] = self.embedder  # the semantic chunker embeds with the pipeline's model
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
            from .retrieve.filters import parse_filter

            parse_filter(self.filter)

    # -- typed stage configs ------------------------------------------------------------------------------------
    def chunker_config(self, corpus_kind: str | None = None):
        """The chunker's typed config (``auto`` needs ``corpus_kind``)."""
        c = self.resolved(corpus_kind) if corpus_kind else self
        if c.chunker == "auto":
            raise ConfigError("chunker 'auto' is resolved per corpus: pass the corpus kind")
        options = {**dict(c.chunker_options), "prefix": bool(c.prefix)}
        if "tokenizer" not in options and c.uses_vectors and "tokenizer" in CHUNKERS.get(c.chunker).options:
            from .embed.window import embedder_tokenizer

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

    @property
    def uses_embedder(self) -> bool:
        chunker = CHUNKERS.get(self.chunker) if self.chunker != "auto" else None
        return RETRIEVERS.get(self.retriever).uses_embedder or bool(chunker and chunker.uses_embedder)

    uses_vectors = property(lambda self: RETRIEVERS.get(self.retriever).uses_embedder)

    def resolved(self, corpus_kind: str) -> "PipelineConfig":
        """``auto`` and an unset prefix replaced by what they mean for this kind of corpus."""
        chunker = self.chunker if self.chunker != "auto" else ("section" if corpus_kind == "markdown" else "document")
        prefix = self.prefix if self.prefix is not None else True
        return replace(self, chunker=chunker, prefix=prefix)

    @property
    def index_key(self) -> tuple:
        """What the first-stage index depends on (rerankers and filters reuse it)."""
        return (self.chunker, self.prefix, self.chunker_options, self.retriever, self.retriever_options, self.embedder)

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
            from .engines import engine_retriever

            retriever = engine_retriever(f.pop("engine"), retriever)
        f.pop("engine", None)
        rerank = f.pop("rerank", None) or None
        top = {k: f.pop(k) for k in ("prefix", "embedder", "candidates", "filter") if k in f}
        if "rerank_model" in f:
            f["rerank_model"] = f.pop("rerank_model")
        c_owners, r_owners = option_owners("chunker"), option_owners("retriever")
        r_types = _option_types("reranker")
        c_entry = CHUNKERS.get(chunker) if chunker != "auto" and isinstance(chunker, str) else None
        r_entry = RETRIEVERS.get(retriever)
        copts, ropts, xopts, problems = {}, {}, {}, []
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
            elif k in c_owners or k in r_owners:
                if strict:
                    which = (f"chunkers {', '.join(c_owners[k])}" if k in c_owners
                             else f"retrievers {', '.join(r_owners[k])}")
                    mine = f"chunker {chunker}" if k in c_owners else f"retriever {retriever}"
                    problems.append(f"{k} does not apply to {mine} (it applies to {which})")
            else:
                from .registry import did_you_mean

                valid = sorted({*PIPELINE_KEYS, *c_owners, *r_owners, *(RERANK_PREFIX + t for t in r_types)})
                problems.append(f"unknown option {k!r}{did_you_mean(k, valid)}; valid: {', '.join(valid)}")
        if problems:
            raise ConfigError("; ".join(problems))
        return cls(chunker=chunker, prefix=top.get("prefix"), chunker_options=_items(copts), retriever=retriever,
                   retriever_options=_items(ropts), embedder=top.get("embedder", "minilm"), rerank=rerank,
                   rerank_options=_items(xopts), candidates=top.get("candidates", 50), filter=top.get("filter") or None)

    def to_dict(self) -> dict[str, Any]:
        """Flat flag names: what grids, CLI flags and manifests use; :meth:`from_dict` reads it back."""
        d: dict[str, Any] = {"chunker": self.chunker, "prefix": self.prefix, **dict(self.chunker_options),
                             "retriever": self.retriever, **dict(self.retriever_options)}
        if self.uses_embedder:
            d["embedder"] = self.embedder
        if self.rerank:
            d.update(rerank=self.rerank, **{RERANK_PREFIX + k: v for k, v in self.rerank_options},
                     candidates=self.candidates)
        if self.filter:
            d["filter"] = self.filter
        return d

    to_flags = to_dict

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

    @property
    def key(self) -> str:
        blob = json.dumps(self.to_dict(), sort_keys=True, default=list)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def config_hash(self) -> str:
        return self.key

    @property
    def label(self) -> str:
        """Readable and unique per configuration: ``markdown-512-o64-prefix/hybrid``,
        ``fixed-256-o0/hybrid-k1=1.2-rrf_k=10+cross-encoder@50``, ``section/bm25``."""
        def ordered(registry, name, options):  # in the order the config class declares them
            order = registry.get(name).options if name != "auto" else ()
            return sorted(options, key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))

        def value(v):
            return ",".join(map(str, v)) if isinstance(v, tuple) else str(v)

        chunk = [self.chunker]
        effective = self.chunker_config().to_dict() if self.chunker != "auto" else {}
        for k in ("size", "overlap"):  # always shown where the chunker has them: sizes are what sweeps vary
            if k in effective and k in (CHUNKERS.get(self.chunker).options):
                chunk.append(str(effective[k]) if k == "size" else f"o{effective[k]}")
        for k, v in ordered(CHUNKERS, self.chunker, self.chunker_options):
            if k not in ("size", "overlap", "embedder"):
                chunk.append(f"{k}={value(v)}")
        if self.prefix:
            chunk.append("prefix")
        first = [self.retriever, *(f"{k}={value(v)}" for k, v in ordered(RETRIEVERS, self.retriever,
                                                                         self.retriever_options))]
        if self.uses_embedder and self.embedder != "minilm":
            first.append(f"emb={self.embedder}")
        label = "-".join(chunk) + "/" + "-".join(first)
        if self.rerank:
            label += f"+{self.rerank}@{self.candidates}"
        return label + (f" [{self.filter}]" if self.filter else "")


# ---------------------------------------------------------------------------------------------------------------
# Building


@dataclass
class StoredIndex:
    """What a store version already holds: a saved BM25 folder and the chunk vectors."""

    bm25_dir: Path | None = None
    vectors: Any = None


class Resources:
    """What retriever factories build from: the embedder (loaded once, shared), BM25 indexes (loaded from a
    store version, a cache folder, or built) and dense indexes (stored vectors, or embedded now). With ``ray``
    (a :class:`ragtune.scale.RayOptions`), texts missing from the embedding cache are embedded as Ray tasks."""

    def __init__(self, embedder: Any = "minilm", *, show_progress: bool = False, bm25_cache: str | os.PathLike | None = None,
                 stored: StoredIndex | None = None, embedders: dict[str, Any] | None = None, ray: Any = None):
        self._embedder = embedder
        self.ray = ray
        self.show_progress = show_progress
        self.bm25_cache = bm25_cache
        self.stored = stored
        self.embedders = embedders if embedders is not None else {}

    def embedder(self):
        """A cached embedder from the name (memoised per name); an embedder object is used as given."""
        if not isinstance(self._embedder, str):
            return self._embedder
        emb = self.embedders.get(self._embedder)
        if emb is None:
            from .embed import CachedEmbedder, get_embedder

            if self.ray is not None:
                from .scale import RayEmbedder

                inner = RayEmbedder(self._embedder, self.ray)
            else:
                inner = get_embedder(self._embedder)
            emb = self.embedders[self._embedder] = CachedEmbedder(inner, show_progress=self.show_progress)
        return emb

    def bm25(self, chunks: Sequence[Chunk], config):
        from .retrieve.bm25 import BM25Retriever

        if self.stored is not None and self.stored.bm25_dir is not None and self.stored.bm25_dir.is_dir():
            return BM25Retriever.load(self.stored.bm25_dir, chunks, config)
        if self.bm25_cache is None:
            return BM25Retriever.build(chunks, config)
        return _cached_bm25(chunks, config, Path(self.bm25_cache))

    def dense(self, chunks: Sequence[Chunk], *, ann: bool = False):
        from .retrieve.dense import DenseRetriever

        if self.stored is not None and self.stored.vectors is not None:
            import numpy as np

            return DenseRetriever(chunks, np.asarray(self.stored.vectors), self.embedder(), ann=ann)
        return DenseRetriever.build(chunks, self.embedder(), ann=ann)


def _cached_bm25(chunks: Sequence[Chunk], config, cache_dir: Path):
    """BM25 loaded from ``cache_dir`` (keyed by the indexed texts and config), else built and saved there."""
    import shutil

    import bm25s

    from .retrieve.bm25 import BM25Retriever, indexed_texts_key

    # bm25s's version is part of the key: its saved format and scoring may change between releases
    key = hashlib.sha256(json.dumps([bm25s.__version__, indexed_texts_key(chunks), config.to_dict()]).encode())
    folder = cache_dir / key.hexdigest()[:24]
    if (folder / "ragtune-bm25.json").exists():
        try:
            return BM25Retriever.load(folder, chunks, config)
        except (ConfigError, OSError, ValueError, KeyError):
            pass  # damaged or foreign: rebuild
    retriever = BM25Retriever.build(chunks, config)
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    try:
        retriever.save(tmp)
        tmp.rename(folder)
    except OSError:  # another process saved it first, or the cache is not writable: the index is still good
        shutil.rmtree(tmp, ignore_errors=True)
    return retriever


@dataclass(frozen=True)
class Pipeline:
    """A corpus chunked and indexed, ready to search and evaluate. Immutable.

    ``base`` is the first-stage retriever over ``chunks``; ``retriever`` is what gets searched:
    ``base``, reranked if a reranker is set, then mapped to parents for small-to-big.
    """

    corpus: Corpus
    chunker: Any
    base: Retriever
    chunks: tuple[Chunk, ...] = ()
    parents: tuple[Chunk, ...] = ()
    reranker: Reranker | None = None
    candidates: int = 50
    version: str | None = None  # the store version this pipeline was loaded from
    config: PipelineConfig | None = None
    retriever: Retriever = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "chunks", tuple(self.chunks))
        object.__setattr__(self, "parents", tuple(self.parents))
        r: Retriever = self.base
        if self.reranker is not None:
            r = RerankedRetriever(r, self.reranker, candidates=self.candidates)
        if self.parents:
            r = ParentRetriever(r, {p.id: p for p in self.parents})
        object.__setattr__(self, "retriever", r)

    @classmethod
    def build(cls, corpus: Corpus, config: PipelineConfig | None = None, *, show_progress: bool = False,
              **flags: Any) -> "Pipeline":
        """``Pipeline.build(corpus, PipelineConfig(...))``, or with flag names:
        ``Pipeline.build(corpus, chunker="fixed", size=256, retriever="hybrid")``."""
        if config is None:
            flags = {k: v for k, v in flags.items() if v is not None}
            for group in ("chunker_options", "retriever_options"):  # the keyword form of earlier releases
                flags.update(flags.pop(group, None) or {})
            config = PipelineConfig.from_flags(flags)
        elif flags:
            raise ConfigError("give a PipelineConfig or flag names, not both")
        return build_pipeline(corpus, config, resources=Resources(config.embedder, show_progress=show_progress))

    def with_reranker(self, reranker: Reranker | None, candidates: int = 50) -> "Pipeline":
        """A new pipeline over the same index with another reranking stage (no re-chunking, no re-embedding)."""
        return replace(self, reranker=reranker, candidates=candidates)

    def describe(self) -> dict[str, Any]:
        cfg = getattr(self.chunker, "config", None)
        rcfg = getattr(self.base, "config", None)
        rcfg = rcfg.to_dict() if hasattr(rcfg, "to_dict") else dict(rcfg or {})
        out = {
            "corpus": {"root": self.corpus.root, "kind": self.corpus.kind, "documents": len(self.corpus),
                       "fingerprint": self.corpus.fingerprint},
            "chunker": {"name": self.chunker.name, **(cfg.to_dict() if cfg else {})},
            "retriever": {"name": self.retriever.name, **rcfg},
            "chunks": len(self.chunks),
        }
        if self.config is not None:
            out["pipeline"] = self.config.to_dict()
        if self.reranker is not None:
            out["rerank"] = {"name": self.reranker.name, **dict(getattr(self.reranker, "config", {}) or {}),
                             "candidates": self.candidates}
        if self.parents:
            out["parents"] = len(self.parents)
        return out


_WARNED_WINDOW: set[str] = set()


def warn_window(config: PipelineConfig, chunks: Sequence[Chunk], embedder: Any) -> Any:
    """Warn on stderr, once per configuration, when the embedder's window cuts some chunks (prefix included),
    with the share affected. Returns the :class:`~ragtune.embed.window.WindowOverflow` (None: not countable, or
    this configuration was warned about already and is not counted again)."""
    from .embed.window import window_overflow

    if config.key in _WARNED_WINDOW:  # said once already: no need to count again
        return None
    try:
        found = window_overflow(embedder, [c.embed_text for c in chunks])
    except Exception:  # counting is advice: a tokenizer that cannot load must not stop the pipeline
        return None
    if found is not None and found.over:
        import sys

        _WARNED_WINDOW.add(config.key)
        about = "about " if found.sampled else ""
        print(f"warning: {config.label}: {about}{found.over:,} of {found.total:,} chunks ({found.share:.0%}"
              f"{f', from a sample of {found.counted:,}' if found.sampled else ''}) are longer than "
              f"the embedder's {found.max_tokens}-token window and are cut when embedded, losing "
              f"{found.tokens_lost / found.over:.0f} tokens each on average (prefix and special tokens included); use a smaller chunk size{' or no prefix' if config.prefix else ''} to embed whole chunks",
              file=sys.stderr, flush=True)
    return found


def build_pipeline(corpus: Corpus, config: PipelineConfig, *, resources: Resources | None = None,
                   chunking: tuple[Sequence[Chunk], Sequence[Chunk]] | None = None, chunker: Any = None,
                   base: Retriever | None = None, version: str | None = None) -> Pipeline:
    """The one builder: chunk ``corpus`` (or use ``chunking`` = (chunks, parents) already made), build the
    first stage through the retriever registry (or use ``base``), add the reranker."""
    from .chunking import chunk_documents

    config = config.resolved(corpus.kind)
    resources = resources or Resources(config.embedder)
    if chunker is None:
        chunker = CHUNKERS.build(config.chunker, options=config.chunker_config())
    if chunking is None:
        chunking = chunk_documents(corpus, chunker)
    chunks, parents = chunking
    if not chunks:
        raise ConfigError(f"the {chunker.name} chunker produced no chunks: every document is empty")
    if config.uses_vectors and resources.stored is None:  # a stored index was checked when it was built
        warn_window(config, chunks, resources.embedder())
    if base is None:
        base = RETRIEVERS.build(config.retriever, chunks, resources, options=config.retriever_config())
    reranker = RERANKERS.build(config.rerank, options=config.reranker_config()) if config.rerank else None
    return Pipeline(corpus, chunker, base, tuple(chunks), tuple(parents), reranker, config.candidates, version, config)


# ---------------------------------------------------------------------------------------------------------------
# Shorthands kept for the Python API


def default_chunker(corpus: Corpus, name: str = "auto", *, prefix: bool | None = None, **options: Any):
    """The chunker ``name`` (``auto``: sections for markdown, whole documents otherwise) with ``options``."""
    flags = {"chunker": name, "prefix": prefix, **options}
    config = PipelineConfig.from_flags({k: v for k, v in flags.items() if v is not None}).resolved(corpus.kind)
    return CHUNKERS.build(config.chunker, options=config.chunker_config())


def build_retriever(chunks: Sequence[Chunk], name: str = "bm25", *, embedder: Any = "minilm",
                    show_progress: bool = False, bm25_cache: Any = None, **options: Any) -> Retriever:
    """A first-stage retriever from the registry over ``chunks`` (``bm25``, ``dense``, ``hybrid`` or a plugin)."""
    options = {ALIASES.get(k, k): v for k, v in options.items()}
    resources = Resources(embedder, show_progress=show_progress, bm25_cache=bm25_cache)
    return RETRIEVERS.build(name, chunks, resources, options=options)


def build_reranker(name: str, model: str | None = None, **options: Any) -> Reranker:
    """A reranker from the registry: ``embedding`` (default model e5-small) or ``cross-encoder``."""
    return RERANKERS.build(name, options={**options, **({"model": model} if model else {})})


def open_pipeline(*, corpus: Any = None, store: Any = None, version: str | None = None,
                  flags: Mapping[str, Any] | None = None, candidates: int = 50, show_progress: bool = False) -> Pipeline:
    """The pipeline ``flags`` describe, built over ``corpus`` (a path or :class:`Corpus`), or loaded from an index
    ``store`` (path), whose version fixes chunking, retrieval and the embedder: flags contradicting it are refused,
    a reranker (``rerank``, ``rerank_*``) may be added."""
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    if version and not store:
        raise ConfigError("--version selects a version of --store; give --store too")
    if store is None:
        if corpus is None:
            raise ConfigError("--corpus is required (or --store for a built index)")
        if not isinstance(corpus, Corpus):
            from .corpus import load_corpus

            corpus = load_corpus(corpus)
        config = PipelineConfig.from_flags({**flags, "candidates": candidates})
        return build_pipeline(corpus, config, resources=Resources(config.embedder, show_progress=show_progress))
    if corpus is not None:
        raise ConfigError("give --corpus or --store, not both")
    milvus_uri = flags.pop("milvus_uri", None)  # the version's Milvus reached by another address
    if flags.get("engine") == "milvus":  # says what the version already says
        flags.pop("engine")
    bad = ["--" + k.replace("_", "-") for k in flags if k != "rerank" and not k.startswith(RERANK_PREFIX)]
    if bad:
        raise ConfigError(f"with --store, chunking, retrieval and the embedder come from the stored version; drop "
                          f"{', '.join(bad)} (or build a new version with `ragtune index build`)")
    from .store import IndexStore, load_pipeline

    p = load_pipeline(IndexStore(store), version, show_progress=show_progress, milvus_uri=milvus_uri)
    if not flags:
        return p
    cfg = PipelineConfig.from_flags({**(p.config.to_dict() if p.config else {}), **flags, "candidates": candidates})
    return p.with_reranker(RERANKERS.build(cfg.rerank, options=cfg.reranker_config()), candidates)


def run_eval(pipeline: Pipeline, golden: GoldenSet, *, ks: Sequence[int] = DEFAULT_KS, depth: int = 100,
             filters: Any = None, show_progress: bool = False, k_unit: str | None = None) -> EvalResult:
    """Evaluate ``pipeline`` on ``golden``; ``k_unit`` = ``chunk`` | ``doc`` | None (what the golden set labels)."""
    config = {**pipeline.describe(), "golden": golden.source}
    if filters is not None:
        config["filter"] = str(filters)
    return evaluate(pipeline.retriever, golden, pipeline.corpus, ks=ks, depth=depth, config=config,
                    filters=filters, show_progress=show_progress, k_unit=k_unit)


def compare_candidates(pipeline: Pipeline, golden: GoldenSet, candidates: Sequence[int], **eval_options: Any) -> list[dict]:
    """Quality and latency of reranking per shortlist size, with a no-rerank row first (same index throughout):
    per row the metrics, the search's and the rerank stage's own p50/p95, the gain over no reranking and the
    gain per 100 ms. :func:`ragtune.render.candidate_verdict` turns the rows into the verdict for a budget."""
    from .render import candidate_gains, candidate_row

    rows = [candidate_row("none", run_eval(pipeline.with_reranker(None), golden, **eval_options))]
    rows += [candidate_row(n, run_eval(pipeline.with_reranker(pipeline.reranker, n), golden, **eval_options))
             for n in candidates]
    return candidate_gains(rows)


def first_stage_check(pipeline: Pipeline, result: EvalResult, golden: GoldenSet, **eval_options: Any) -> str | None:
    """For a run with a reranker: evaluate the first stage alone over the same index (cheap: no reranking) and
    return one warning line when ``result`` scored lower on nDCG@10 (MRR without 10 among the cut-offs)."""
    from .render import rerank_warning

    if pipeline.reranker is None:
        return None
    plain = run_eval(pipeline.with_reranker(None), golden, **eval_options).metrics
    metric = "ndcg@10" if "ndcg@10" in plain else "mrr"
    return rerank_warning(plain.get(metric, float("nan")), result.metrics.get(metric, float("nan")),
                          pipeline.reranker.name, metric)
