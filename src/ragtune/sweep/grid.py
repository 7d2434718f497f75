"""Sweep grids: expand and validate every configuration before anything runs.

A grid file (TOML or YAML) uses the names of the ``ragtune eval`` flags::

    metric = "recall@10"
    [baseline]
    chunker = "fixed"
    size = 512
    overlap = 64
    retriever = "bm25"
    [grid]
    chunker = ["fixed", "recursive", "small_to_big"]
    size = [256, 512, 1024]
    overlap = [0, 64]
    prefix = [true, false]
    retriever = ["hybrid"]

Every ``[grid]`` key is a list and the grid is their product. A key that a
configuration's chunker or retriever does not take (``size`` for the section
chunker, ``k1`` for dense retrieval) is dropped for that configuration, and
configurations that become identical are run once. Impossible values
(overlap >= size, an unknown chunker) are reported together, before any model
loads.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..chunking import CHUNKERS
from ..errors import ConfigError, RagtuneError
from ..retrieve.bm25 import BM25Config
from ..retrieve.filters import parse_filter

__all__ = ["RunSpec", "Grid", "load_grid", "parse_grid", "GridError", "CHUNKER_KEYS", "SPEC_KEYS"]

CHUNKER_KEYS = ("size", "overlap", "tokenizer", "parent_size", "parent", "merge_siblings", "threshold", "percentile")
RETRIEVER_KEYS = ("k1", "b", "rrf_k", "fusion_depth", "weights", "ann")
SPEC_KEYS = ("chunker", "prefix", *CHUNKER_KEYS, "retriever", *RETRIEVER_KEYS, "embedder", "rerank", "rerank_model",
             "candidates", "filter")
ALIASES = {"parent_chunker": "parent", "depth_fuse": "fusion_depth"}
RETRIEVER_TAKES = {"bm25": {"k1", "b"}, "dense": {"ann"}, "hybrid": {"k1", "b", "rrf_k", "fusion_depth", "weights", "ann"}}
TOP_LEVEL = ("metric", "k", "depth", "test", "samples", "seed", "baseline", "grid")
METRIC_NAMES = ("recall", "hit", "precision", "mrr", "ndcg", "context_tokens")


class GridError(RagtuneError, ValueError):
    """A grid file is invalid; the message lists every problem found."""


def _norm_key(key: str) -> str:
    k = key.strip().replace("-", "_")
    return ALIASES.get(k, k)


RETRIEVER_DEFAULTS = {"k1": 1.5, "b": 0.75, "rrf_k": 60, "fusion_depth": 50, "ann": False, "weights": None}


def _without_defaults(chunker: str, options: dict[str, Any]) -> dict[str, Any]:
    """Drop the options whose value is what the chunker would use anyway, so that an option set to
    its default and the option left out are the same configuration (and get the same key)."""
    cls = CHUNKERS[chunker][0]
    try:
        full = cls(**options).to_dict()
    except (ConfigError, TypeError):
        return options  # invalid: validate() reports it
    kept = {}
    for k, v in options.items():
        try:
            same = cls(**{o: w for o, w in options.items() if o != k}).to_dict() == full
        except (ConfigError, TypeError):
            same = False
        if not same:
            kept[k] = v
    return kept


def _chunker_fields(name: str) -> set[str]:
    """The grid keys a chunker takes (semantic chunks never overlap, so it takes no overlap)."""
    config_cls = CHUNKERS[name][0]
    fields = {f.name for f in dataclasses.fields(config_cls)} - {"prefix"}
    return fields - {"overlap"} if name == "semantic" else fields


@dataclass(frozen=True)
class RunSpec:
    """One configuration of a sweep: chunking x retrieval x reranking."""

    chunker: str = "auto"
    prefix: bool | None = None
    chunker_options: tuple[tuple[str, Any], ...] = ()
    retriever: str = "bm25"
    retriever_options: tuple[tuple[str, Any], ...] = ()
    embedder: str = "minilm"
    rerank: str | None = None
    rerank_model: str | None = None
    candidates: int = 50
    filter: str | None = None

    @classmethod
    def from_flags(cls, flags: Mapping[str, Any]) -> "RunSpec":
        """Build from eval-flag names, dropping keys this chunker/retriever does not take."""
        f = {_norm_key(k): v for k, v in flags.items()}
        unknown = sorted(set(f) - set(SPEC_KEYS))
        if unknown:
            raise ConfigError(f"unknown key(s) {', '.join(map(repr, unknown))}; valid keys: {', '.join(SPEC_KEYS)}")
        chunker = f.get("chunker", "auto")
        if chunker != "auto" and chunker not in CHUNKERS:
            raise ConfigError(f"unknown chunker {chunker!r}; choose one of: auto, {', '.join(CHUNKERS)}")
        takes = _chunker_fields(chunker) if chunker != "auto" else set()
        given = {k: f[k] for k in CHUNKER_KEYS if k in f and k in takes}
        copts = tuple(sorted(_without_defaults(chunker, given).items())) if chunker != "auto" else ()
        if chunker == "semantic" and f.get("embedder", "minilm") != "minilm":
            copts = tuple(sorted((*copts, ("embedder", f["embedder"]))))
        retriever = f.get("retriever", "bm25")
        if retriever not in RETRIEVER_TAKES:
            raise ConfigError(f"unknown retriever {retriever!r}; choose one of: {', '.join(RETRIEVER_TAKES)}")
        ropts = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in f.items()
                             if k in RETRIEVER_KEYS and k in RETRIEVER_TAKES[retriever]
                             and v != RETRIEVER_DEFAULTS.get(k)))
        uses_embedder = retriever in ("dense", "hybrid") or chunker == "semantic"
        rerank = f.get("rerank") or None
        prefix = f.get("prefix")
        if prefix is not None and not isinstance(prefix, bool):
            raise ConfigError(f"prefix must be true or false, got {prefix!r}")
        candidates = f.get("candidates", 50)
        if isinstance(candidates, bool) or not isinstance(candidates, int):
            raise ConfigError(f"candidates must be an integer, got {candidates!r}")
        return cls(
            chunker=chunker, prefix=f.get("prefix"), chunker_options=copts, retriever=retriever,
            retriever_options=ropts, embedder=f.get("embedder", "minilm") if uses_embedder else "minilm",
            rerank=rerank, rerank_model=f.get("rerank_model") if rerank else None,
            candidates=candidates if rerank else 50, filter=f.get("filter") or None,
        )

    def validate(self) -> None:
        """Cheap checks that load nothing: chunker options, BM25 options, names."""
        from ..chunking import make_chunker
        from ..embed import EMBEDDERS  # noqa: F401  (names only)
        from ..pipeline import RERANKERS

        if self.chunker != "auto":
            make_chunker(self.chunker, prefix=bool(self.prefix), **dict(self.chunker_options))
        bm25 = {k: v for k, v in self.retriever_options if k in ("k1", "b")}
        BM25Config.from_dict(bm25)
        if self.rerank is not None and self.rerank not in RERANKERS:
            raise ConfigError(f"unknown reranker {self.rerank!r}; choose one of: {', '.join(RERANKERS)}")
        if self.candidates < 1:
            raise ConfigError(f"candidates must be >= 1, got {self.candidates}")
        emb = self.embedder
        if not (emb in ("minilm", "e5-small") or emb.split(":", 1)[0] in ("onnx", "st", "openai")):
            raise ConfigError(f"unknown embedder {emb!r}; choose minilm, e5-small, onnx:<folder>, st:<model>, openai:<model>")
        parse_filter(self.filter)

    def to_dict(self) -> dict[str, Any]:
        return {"chunker": self.chunker, "prefix": self.prefix, **dict(self.chunker_options),
                "retriever": self.retriever, **dict(self.retriever_options),
                **({"embedder": self.embedder} if self.retriever != "bm25" or self.chunker == "semantic" else {}),
                **({"rerank": self.rerank, "rerank_model": self.rerank_model, "candidates": self.candidates}
                   if self.rerank else {}),
                **({"filter": self.filter} if self.filter else {})}

    @property
    def key(self) -> str:
        blob = json.dumps(self.to_dict(), sort_keys=True, default=list)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    @property
    def label(self) -> str:
        d = self.to_dict()
        parts = [d.pop("chunker")]
        prefix = d.pop("prefix")
        parts += [f"{k}={d[k]}" for k in CHUNKER_KEYS if k in d]
        if prefix:
            parts.append("prefix")
        parts.append(d["retriever"])
        parts += [f"{k}={d[k]}" for k in RETRIEVER_KEYS if k in d]
        if self.rerank:
            parts.append(f"+{self.rerank}@{self.candidates}")
        return " ".join(str(p) for p in parts)

    def resolved(self, corpus_kind: str) -> "RunSpec":
        """Replace ``auto`` and an unset prefix by what they mean for this kind of corpus."""
        chunker = self.chunker
        if chunker == "auto":
            chunker = "section" if corpus_kind == "markdown" else "document"
        prefix = self.prefix if self.prefix is not None else corpus_kind == "beir"
        return dataclasses.replace(self, chunker=chunker, prefix=prefix)

    @property
    def index_key(self) -> tuple:
        """What the first-stage index depends on (rerankers reuse it)."""
        return (self.chunker, self.prefix, self.chunker_options, self.retriever, self.retriever_options, self.embedder)


@dataclass(frozen=True)
class Grid:
    specs: tuple[RunSpec, ...]
    baseline: RunSpec
    metric: str = "recall@10"
    ks: tuple[int, ...] = (5, 10, 20)
    depth: int = 100
    test: str = "randomization"
    samples: int = 10000
    seed: int = 0
    source: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)

    def resolved(self, corpus_kind: str) -> "Grid":
        """The grid with ``auto`` chunkers and unset prefixes made concrete for this corpus, de-duplicated."""
        specs: dict[str, RunSpec] = {}
        for s in self.specs:
            r = s.resolved(corpus_kind)
            specs.setdefault(r.key, r)
        return dataclasses.replace(self, specs=tuple(specs.values()), baseline=self.baseline.resolved(corpus_kind))

    @property
    def all_specs(self) -> list[RunSpec]:
        """The grid's configurations plus the baseline when the grid does not contain it."""
        keys = {s.key for s in self.specs}
        return list(self.specs) + ([] if self.baseline.key in keys else [self.baseline])


def _check_metric(metric: str, ks: tuple[int, ...]) -> str | None:
    name, _, k = metric.partition("@")
    if name not in METRIC_NAMES:
        return f"metric {metric!r}: choose one of {', '.join(METRIC_NAMES)} (with @k where it takes one)"
    if name == "mrr":
        return None if not k else f"metric {metric!r}: mrr takes no @k"
    if not k.isdigit():
        return f"metric {metric!r}: {name} needs a cut-off, e.g. {name}@10"
    if name != "ndcg" and int(k) not in ks:
        return f"metric {metric!r}: k={k} is not among the evaluated k values {list(ks)}; add it to k"
    if name == "ndcg" and k != "10":
        return f"metric {metric!r}: only ndcg@10 is computed"
    return None


def parse_grid(data: Mapping[str, Any], *, source: str | None = None) -> Grid:
    """Expand and validate a grid; every problem is reported at once."""
    from ..evaluate.significance import TESTS

    problems: list[str] = []
    unknown = sorted(set(data) - set(TOP_LEVEL))
    if unknown:
        problems.append(f"unknown top-level key(s) {', '.join(map(repr, unknown))}; valid: {', '.join(TOP_LEVEL)}")
    ks_raw = data.get("k", [5, 10, 20])
    ks_list = ks_raw if isinstance(ks_raw, list) else [ks_raw]
    if not ks_list or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in ks_list):
        problems.append(f"k: expected positive integers like [5, 10, 20], got {ks_raw!r}")
        ks_list = [5, 10, 20]
    ks = tuple(sorted(set(ks_list)))
    numbers = {}
    for name, default, lo in (("depth", 100, 1), ("samples", 10000, 1), ("seed", 0, 0)):
        v = data.get(name, default)
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            problems.append(f"{name}: expected an integer >= {lo}, got {v!r}")
            v = default
        numbers[name] = v
    metric = str(data.get("metric", "recall@10"))
    if (err := _check_metric(metric, ks)) is not None:
        problems.append(err)
    test = str(data.get("test", "randomization"))
    if test not in TESTS:
        problems.append(f"test {test!r}: choose one of {', '.join(TESTS)}")
    grid = data.get("grid") or {}
    if not isinstance(grid, Mapping) or not grid:
        problems.append("missing [grid]: a table of lists whose product is the set of configurations")
        grid = {}
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            problems.append(f"grid.{key}: must be a non-empty list, got {values!r}")
    baseline_raw = data.get("baseline")
    if not isinstance(baseline_raw, Mapping):
        problems.append("missing [baseline]: the configuration every other one is compared with")
        baseline_raw = {}
    baseline = None
    try:
        baseline = RunSpec.from_flags(baseline_raw)
        baseline.validate()
    except ConfigError as e:
        problems.append(f"baseline: {e}")

    specs: dict[str, RunSpec] = {}
    if not problems or all(not p.startswith("grid.") for p in problems):
        keys = list(grid)
        lists = [grid[k] if isinstance(grid[k], list) else [grid[k]] for k in keys]
        for combo in itertools.product(*lists):
            flags = dict(zip(keys, combo))
            where = ", ".join(f"{k}={v}" for k, v in flags.items())
            try:
                spec = RunSpec.from_flags(flags)
                spec.validate()
            except ConfigError as e:
                problems.append(f"[{where}]: {e}")
                continue
            specs.setdefault(spec.key, spec)
    if problems:
        raise GridError(f"{source or 'grid'}: {len(problems)} problem(s):\n" + "\n".join(f"- {p}" for p in problems))
    assert baseline is not None
    return Grid(specs=tuple(specs.values()), baseline=baseline, metric=metric, ks=ks, depth=numbers["depth"], test=test,
                samples=numbers["samples"], seed=numbers["seed"], source=source, raw=dict(data))


def load_grid(path: str | os.PathLike[str]) -> Grid:
    p = Path(path)
    if not p.is_file():
        raise GridError(f"grid file {str(p)!r} does not exist")
    text = p.read_text(encoding="utf-8")
    try:
        if p.suffix.lower() == ".toml":
            data = tomllib.loads(text)
        elif p.suffix.lower() in (".yaml", ".yml"):
            data = yaml.safe_load(text) or {}
        else:
            raise GridError(f"{p}: use a .toml or .yaml grid file")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as e:
        raise GridError(f"{p}: cannot parse: {e}") from None
    if not isinstance(data, Mapping):
        raise GridError(f"{p}: expected a table of settings")
    return parse_grid(data, source=str(p))
