"""Search spaces: what ``ragtune sweep --search`` explores, validated whole before anything loads.

A space file is a grid file (the same settings and ``[baseline]``) whose ``[space]`` table gives, per key, a list of
choices or a range::

    metric = "recall@5"
    holdout = 0.3
    [baseline]
    chunker = "section"
    retriever = "bm25"
    [space]
    chunker = ["fixed", "markdown", "section"]     # choices
    size = {low = 128, high = 1024, step = 64}     # an integer range, stepped: 15 values
    overlap = [0, 32, 64]
    retriever = ["bm25", "hybrid"]
    k1 = {low = 0.6, high = 2.0, step = 0.2}       # a stepped float range: 8 values
    b = {low = 0.3, high = 1.0}                    # a continuous float range
    rrf_k = {low = 10, high = 200, log = true}     # a log-scale range (integers: every one of them)
    rerank = ["", "embedding"]
    candidates = [20, 50]

Keys are conditional, as the registries say: a key applies to a configuration only when its chunker, retriever or
reranker takes it (``size`` and ``overlap`` to the size-based chunkers, ``rrf_k`` and ``weights`` to hybrid
retrieval, ``candidates`` and ``rerank_*`` to configurations with a reranker, ``embedder`` to those that embed,
``strategy_*`` to those whose strategy takes the option: ``strategy_window`` to ``history``), and
a search suggests it only there. So the number of points is the sum, over the choices of chunker x retriever x
reranker, of the product of the sizes of the keys that apply (finite when every range is stepped or of integers).

Validation reports every problem at once: unknown keys, empty lists and ranges, ranges that do not end on a step,
a key no choice of the space takes (``rrf_k`` with only BM25), and configurations that cannot be built at the
corners of the ranges (``overlap`` reaching ``size``).
"""

from __future__ import annotations

import itertools
import json
import math
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..config import config_key
from ..errors import ConfigError, GridError
from ..pipeline import ALIASES, DEFAULT_RETRIEVER, DEFAULT_STRATEGY, PIPELINE_KEYS, RERANK_PREFIX, STRATEGY_PREFIX, \
    PipelineConfig, option_owners, option_types
from ..registry import CHUNKERS, RERANKERS, RETRIEVERS, STRATEGIES, did_you_mean
from .grid import SETTINGS, Grid, parse_settings

__all__ = ["Dim", "Space", "parse_space", "SPACE_TOP_LEVEL", "search_text"]

SPACE_TOP_LEVEL = (*SETTINGS, "baseline", "space")
# the keys whose choice decides which others apply
STRUCTURAL = ("chunker", "engine", "retriever", "rerank", "strategy")
RANGE_KEYS = ("low", "high", "step", "log")
CORNERS_IN_FULL = 64  # corner configurations checked in full per choice of chunker x retriever x reranker


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _decimals(step: float) -> int:
    text = repr(float(step))
    return 0 if "e" in text else len(text.split(".")[1].rstrip("0"))


@dataclass(frozen=True)
class Dim:
    """One key of a space: a list of ``choices``, or a range ``low..high`` (``step``: stepped; ``log``: sampled on a
    log scale; ``integer``: integer values)."""

    key: str
    choices: tuple[Any, ...] | None = None
    low: float | None = None
    high: float | None = None
    step: float | None = None
    log: bool = False
    integer: bool = False

    @property
    def count(self) -> int | None:
        """How many values it has (None: a continuous range)."""
        if self.choices is not None:
            return len(self.choices)
        if self.integer:
            return int((self.high - self.low) // (self.step or 1)) + 1
        if self.step is None:
            return None if self.high > self.low else 1
        return int(round((self.high - self.low) / self.step)) + 1

    @property
    def corners(self) -> list[Any]:
        """The values validation builds: every choice, or a range's two ends."""
        if self.choices is not None:
            return list(self.choices)
        return [self._cast(self.low)] + ([self._cast(self.high)] if self.high != self.low else [])

    def _cast(self, v: float) -> Any:
        if self.integer:
            return int(v)
        return round(float(v), _decimals(self.step)) if self.step else float(v)

    def suggest(self, trial: Any) -> Any:
        """The value an Optuna trial suggests for this key (define-by-run)."""
        if self.choices is not None:
            encoded = [_encode(c) for c in self.choices]
            return _decode(trial.suggest_categorical(self.key, encoded), self.choices, encoded)
        if self.integer:
            return int(trial.suggest_int(self.key, int(self.low), int(self.high), step=int(self.step or 1), log=self.log))
        return self._cast(trial.suggest_float(self.key, float(self.low), float(self.high), step=self.step, log=self.log))

    def describe(self) -> str:
        if self.choices is not None:
            shown = ", ".join("none" if c is None or c == "" else json.dumps(c) if isinstance(c, (list, bool))
                              else str(c) for c in self.choices)
            return f"{len(self.choices)} choice(s): {shown}"
        span = f"{self._cast(self.low)}..{self._cast(self.high)}"
        if self.step:
            span += f" step {self._cast(self.step) if not self.integer else int(self.step)}"
        if self.log:
            span += " log"
        n = self.count
        return f"{span}: " + ("continuous" if n is None else f"{n:,} value(s)")

    def to_dict(self) -> dict[str, Any]:
        if self.choices is not None:
            return {"choices": list(self.choices)}
        return {k: v for k, v in (("low", self.low), ("high", self.high), ("step", self.step), ("log", self.log),
                                  ("integer", self.integer)) if v not in (None, False)}


def _encode(c: Any) -> Any:
    return c if c is None or isinstance(c, (bool, int, float, str)) else json.dumps(c)


def _decode(v: Any, choices: Sequence[Any], encoded: Sequence[Any]) -> Any:
    return choices[list(encoded).index(v)]


@dataclass(frozen=True)
class Space:
    """The dimensions of a search, structural keys first (see the module docstring)."""

    dims: tuple[Dim, ...]
    raw: Mapping[str, Any] = field(default_factory=dict)

    def dim(self, key: str) -> Dim | None:
        return next((d for d in self.dims if d.key == key), None)

    def structural_choices(self) -> list[dict[str, Any]]:
        """Every combination of the structural keys (chunker, engine, retriever, rerank) the space offers."""
        keys = [d.key for d in self.dims if d.key in STRUCTURAL]
        lists = [self.dim(k).choices for k in keys]
        return [dict(zip(keys, combo)) for combo in itertools.product(*lists)]

    def applies(self, key: str, flags: Mapping[str, Any]) -> bool:
        """Whether ``key`` is an option of the configuration the structural ``flags`` describe."""
        return _applies(key, flags)

    def suggest(self, trial: Any) -> dict[str, Any]:
        """The flags of one configuration, as an Optuna trial suggests them (only the keys that apply)."""
        flags: dict[str, Any] = {}
        for d in self.dims:
            if d.key in STRUCTURAL or _applies(d.key, flags):
                flags[d.key] = d.suggest(trial)
        return flags

    @property
    def points(self) -> int | None:
        """How many configurations the space holds (None: a continuous range makes it infinite)."""
        total = 0
        others = [d for d in self.dims if d.key not in STRUCTURAL]
        for combo in self.structural_choices():
            n = 1
            for d in others:
                if _applies(d.key, combo):
                    if d.count is None:
                        return None
                    n *= d.count
            total += n
        return total

    @property
    def continuous(self) -> list[str]:
        return [d.key for d in self.dims if d.count is None]

    def describe(self) -> list[str]:
        """One line per key (its values and, for a conditional key, what takes it), then the number of points."""
        combos = self.structural_choices()
        width = max(len(d.key) for d in self.dims)
        lines = []
        for d in self.dims:
            line = f"{d.key:<{width}}  {d.describe()}"
            if d.key not in STRUCTURAL:
                takers = _takers(d.key, combos)
                if takers:
                    line += f" (only with {takers})"
            lines.append(line)
        n = self.points
        lines.append(f"points: {n:,}" if n is not None else
                     f"points: infinite (continuous range(s): {', '.join(self.continuous)}; give them a step to count)")
        return lines

    @property
    def key(self) -> str:
        return config_key({d.key: d.to_dict() for d in self.dims})

    def to_dict(self) -> dict[str, Any]:
        return {d.key: d.to_dict() for d in self.dims}


def _entries(flags: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """(chunker entry or None for auto, retriever entry, reranker entry or None) of structural flags."""
    chunker = flags.get("chunker", "auto")
    retriever = flags.get("retriever", DEFAULT_RETRIEVER)
    if flags.get("engine"):
        from ..engines import engine_retriever

        retriever = engine_retriever(flags["engine"], retriever)
    rerank = flags.get("rerank") or None
    return (CHUNKERS.get(chunker) if chunker != "auto" else None, RETRIEVERS.get(retriever),
            RERANKERS.get(rerank) if rerank else None)


def _strategy_option(key: str) -> str | None:
    """The strategy option a ``strategy_<option>`` key names (None: not such a key)."""
    name = key[len(STRATEGY_PREFIX):] if key.startswith(STRATEGY_PREFIX) else None
    return name if name in option_types("strategy") else None


def _applies(key: str, flags: Mapping[str, Any]) -> bool:
    if key in STRUCTURAL or key in ("prefix", "filter"):
        return True
    if _strategy_option(key):
        return _strategy_option(key) in STRATEGIES.get(flags.get("strategy") or DEFAULT_STRATEGY).options
    c, r, x = _entries(flags)
    if key == "embedder":
        return r.uses_embedder or bool(c and c.uses_embedder)
    if key == "candidates":
        return x is not None
    if key.startswith(RERANK_PREFIX) and key[len(RERANK_PREFIX):] in option_types("reranker"):
        return x is not None and key[len(RERANK_PREFIX):] in x.options
    if c is not None and key in c.options:
        return True
    return key in r.options


def _takers(key: str, combos: Sequence[Mapping[str, Any]]) -> str:
    """Which of the space's choices take a conditional key, in words ("" when every configuration does)."""
    if all(_applies(key, c) for c in combos):
        return ""
    if key in ("candidates",) or key.startswith(RERANK_PREFIX):
        names = sorted({c["rerank"] for c in combos if c.get("rerank") and _applies(key, c)})
        return "reranker " + ", ".join(names) if names else "a reranker"
    if key == "embedder":
        return "retrievers that embed"
    if _strategy_option(key):
        return "strategies " + ", ".join(sorted({c.get("strategy") or DEFAULT_STRATEGY for c in combos
                                                  if _applies(key, c)}))
    stage = "chunker" if key in option_owners("chunker") else "retriever"
    names = sorted({_entries(c)[0 if stage == "chunker" else 1].name for c in combos if _applies(key, c)})
    return f"{stage}s " + ", ".join(names)


def _option_type(key: str) -> Any:
    """The annotation of a space key's option (int, float, bool, str, a tuple...), None when unknown."""
    if key == "candidates":
        return int
    if key == "prefix":
        return bool
    if key.startswith(RERANK_PREFIX) and key[len(RERANK_PREFIX):] in option_types("reranker"):
        hint = option_types("reranker")[key[len(RERANK_PREFIX):]]
    elif _strategy_option(key):
        hint = option_types("strategy")[_strategy_option(key)]
    else:
        hint = {**option_types("retriever"), **option_types("chunker")}.get(key)
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1:
        return args[0]
    return hint


def _dim(key: str, value: Any, problems: list[str]) -> Dim | None:
    where = f"space.{key}"
    if isinstance(value, list):
        if not value:
            problems.append(f"{where}: an empty list; give at least one choice")
            return None
        return Dim(key, choices=tuple(value))
    if not isinstance(value, Mapping):
        problems.append(f"{where}: a list of choices, such as [256, 512], or a range, such as "
                        f"{{low = 128, high = 1024, step = 64}}; got {value!r}")
        return None
    if key in STRUCTURAL:
        problems.append(f"{where}: a list of names, such as [\"markdown\", \"section\"]: {key} has no range")
        return None
    kind = _option_type(key)
    if kind not in (int, float):
        problems.append(f"{where}: a range needs a numeric option, and {key} is not one; give a list of choices")
        return None
    unknown = sorted(set(value) - set(RANGE_KEYS))
    if unknown:
        problems.append(f"{where}: unknown range key(s) {', '.join(unknown)}; a range takes {', '.join(RANGE_KEYS)}")
        return None
    low, high, step, log = value.get("low"), value.get("high"), value.get("step"), value.get("log", False)
    if not (_number(low) and _number(high)):
        problems.append(f"{where}: a range needs numbers low and high, such as {{low = 128, high = 1024}}; got "
                        f"low={low!r}, high={high!r}")
        return None
    if step is not None and (not _number(step) or step <= 0):
        problems.append(f"{where}: step must be a number > 0, got {step!r}")
        return None
    if not isinstance(log, bool):
        problems.append(f"{where}: log must be true or false, got {log!r}")
        return None
    integer = kind is int
    if integer and not all(isinstance(v, int) for v in (low, high, step if step is not None else 1)):
        problems.append(f"{where}: {key} takes integers; give integer low, high and step, got "
                        f"low={low!r}, high={high!r}, step={step!r}")
        return None
    if low > high:
        problems.append(f"{where}: an empty range, low {low} > high {high}; swap them")
        return None
    if log and (low <= 0 or step not in (None, 1)):
        problems.append(f"{where}: a log range needs low > 0 and no step (got low={low}, step={step}); "
                        "drop log, or the step")
        return None
    if step is not None:
        n = (high - low) / step
        if abs(n - round(n)) > 1e-9:
            down, up = low + math.floor(n) * step, low + math.ceil(n) * step
            fmt = (lambda v: str(int(v))) if integer else (lambda v: str(round(v, _decimals(step))))
            problems.append(f"{where}: {low}..{high} step {step} does not end on a step; use high = {fmt(down)} or "
                            f"{fmt(up)}")
            return None
    return Dim(key, low=low, high=high, step=step if (step is not None and not (integer and step == 1)) else None,
               log=log, integer=integer)


def _normal(key: Any) -> str:
    k = str(key).strip().replace("-", "_")
    return ALIASES.get(k, k)


def parse_space(data: Mapping[str, Any], *, source: str | None = None,
                table: str = "space") -> tuple[Grid, Space]:
    """(settings and baseline as a Grid without configurations, the Space) from a space file's table; every
    problem is reported at once, as a GridError. ``table="grid"`` reads a grid file's lists as a space of choices."""
    problems: list[str] = []
    top = (*SETTINGS, "baseline", table)
    unknown = sorted(set(data) - set(top))
    if unknown:
        hint = "; a search reads its keys from [space] (or a grid file's [grid])" if "grid" in unknown else ""
        problems.append(f"unknown top-level key(s) {', '.join(map(repr, unknown))}; valid: {', '.join(top)}{hint}")
    settings = parse_settings(data, problems)
    raw = data.get(table) or {}
    if not isinstance(raw, Mapping) or not raw:
        problems.append(f"missing [{table}]: a table of choices and ranges, such as chunker = [\"markdown\", "
                        "\"section\"] and size = {low = 128, high = 1024, step = 64}")
        raw = {}
    c_owners, r_owners, x_types = option_owners("chunker"), option_owners("retriever"), option_types("reranker")
    valid = sorted({*PIPELINE_KEYS, *c_owners, *r_owners, *(RERANK_PREFIX + t for t in x_types),
                    *(STRATEGY_PREFIX + t for t in option_types("strategy"))})
    dims: dict[str, Dim] = {}
    for key, value in raw.items():
        k = _normal(key)
        if k not in valid:
            problems.append(f"{table}.{key}: unknown key{did_you_mean(k, valid)}; valid: {', '.join(valid)}")
            continue
        if k in dims:
            problems.append(f"{table}.{key}: given twice (as {k})")
            continue
        d = _dim(k, value, problems)
        if d is not None:
            dims[k] = d
    for k in STRUCTURAL:  # names that do not exist, before anything is built with them
        d = dims.get(k)
        if d is None or d.choices is None:
            continue
        for name in d.choices:
            try:
                if k == "chunker" and name != "auto":
                    CHUNKERS.get(name)
                elif k == "retriever":
                    RETRIEVERS.get(name)
                elif k == "rerank" and name not in ("", None):
                    RERANKERS.get(name)
                elif k == "strategy":
                    STRATEGIES.get(name)
            except ConfigError as e:
                problems.append(f"{table}.{k}: {e}")
    order = [*STRUCTURAL, "prefix", "embedder", "filter"]
    ordered = sorted(dims.values(), key=lambda d: (order.index(d.key) if d.key in order else len(order),
                                                   d.key.startswith(RERANK_PREFIX) or d.key == "candidates"))
    space = Space(tuple(ordered), raw=dict(raw))
    if not problems:
        problems.extend(_check(space, table))
    if problems:
        raise GridError(f"{source or 'space'}: {len(problems)} problem(s):\n" + "\n".join(f"- {p}" for p in problems))
    grid = Grid(specs=(), source=source, raw=dict(data), **settings)
    return grid, space


def _check(space: Space, table: str) -> list[str]:
    """Conditions no choice meets, and configurations that cannot be built at the corners of the ranges."""
    try:
        combos = space.structural_choices()
        for c in combos:
            _entries(c)
    except ConfigError as e:
        return [f"{table}: {e}"]
    problems: list[str] = []
    others = [d for d in space.dims if d.key not in STRUCTURAL]
    for d in others:
        if not any(_applies(d.key, c) for c in combos):
            problems.append(_never(d.key, space, table))
    if problems:
        return problems
    seen: set[str] = set()
    for combo in combos:
        dims = [d for d in others if _applies(d.key, combo)]
        corners = [d.corners for d in dims]
        if math.prod(len(c) for c in corners) <= CORNERS_IN_FULL:
            points = list(itertools.product(*corners))
        else:  # every corner of one key with the others at their first, and all of them at their last
            points = [tuple(c[0] for c in corners), tuple(c[-1] for c in corners)]
            points += [tuple(v if j == i else c[0] for j, c in enumerate(corners)) for i, cs in enumerate(corners)
                       for v in cs]
        for point in points:
            flags = {**combo, **dict(zip((d.key for d in dims), point))}
            try:
                PipelineConfig.from_flags(flags, strict=True)
            except ConfigError as e:
                msg = str(e)
                if msg not in seen:
                    seen.add(msg)
                    where = ", ".join(f"{k}={v}" for k, v in flags.items())
                    problems.append(f"[{where}]: {msg} (narrow the range or the choices so that every combination "
                                    "of the space can be built)")
    return problems[:12] + ([f"... and {len(problems) - 12} more"] if len(problems) > 12 else [])


def _never(key: str, space: Space, table: str) -> str:
    """The message for a key that no configuration of the space takes, with the fix."""
    if key == "candidates" or key.startswith(RERANK_PREFIX):
        return (f"{table}.{key} applies only with a reranker, and the space has none: add rerank = [\"\", "
                f"\"embedding\"] (or another reranker) to [{table}], or remove {key}")
    if key == "embedder":
        return (f"{table}.embedder applies only to retrievers that embed (dense, hybrid), and the space's retrievers "
                f"do not: add one to {table}.retriever, or remove embedder")
    if _strategy_option(key):
        takers = [e.name for e in STRATEGIES if _strategy_option(key) in e.options]
        return (f"{table}.{key} applies only to strategies {', '.join(takers)}, and the space has none of them: add "
                f"one to {table}.strategy, or remove {key}")
    c_owners, r_owners = option_owners("chunker"), option_owners("retriever")
    stage, takers = ("chunker", c_owners[key]) if key in c_owners else ("retriever", r_owners.get(key, []))
    d = space.dim(stage)
    have = ", ".join(map(str, d.choices)) if d else ("auto (the default)" if stage == "chunker"
                                                     else f"{DEFAULT_RETRIEVER} (the default)")
    return (f"{table}.{key} applies only to {stage}s {', '.join(takers)}, and the space's {stage} choices are {have}: "
            f"add one of them to {table}.{stage}, or remove {key}")


def share_text(shares: Sequence[float]) -> str:
    """The shares a search prunes after, as people read them: 0.1, 0.3 -> '10%, 30%'."""
    return ", ".join(f"{x:.0%}" if x >= 0.01 else f"{x:.1%}" for x in shares)


def search_text(info: Mapping[str, Any], metric: str) -> str:
    """The line a search's table ends with: trials, pruned, served from the cache, the highest trial score on the
    selection questions (a figure of the search, not a recommendation: the table's first line names that)."""
    studies = info.get("studies") or []
    trials = [t for s in studies for t in s["trials"]]
    count = {state: sum(1 for t in trials if t["state"] == state) for state in ("complete", "pruned", "fail")}
    cached = sum(1 for t in trials if t.get("cached"))
    points = info.get("space_points")
    size = f"{points:,} points" if points is not None else "infinitely many points"
    shares = share_text(info.get("prune_shares") or [info.get("prune_share") or 0])
    per = f" in each of {len(studies)} fold searches" if len(studies) > 1 else ""
    line = (f"search ({info['sampler']}, seed {info['seed']}): {info['trials']} trials{per} over a space of {size}: "
            f"{count['complete']} evaluated, {count['pruned']} pruned after {shares} of the "
            f"selection questions, {cached} repeated configuration(s) served from the cache"
            + (f", {count['fail']} failed" if count["fail"] else "") + f"; {info['evaluated']} distinct configurations "
            f"evaluated.")
    for s in studies:
        if s.get("best"):
            b = s["best"]
            where = f"{s['name']}: " if len(studies) > 1 else ""
            line += (f" {where}highest trial score on its {s['selection_questions']} selection questions: {metric} "
                     f"{b['value']:.3f} (trial {b['number'] + 1}, {b['label']}).")
    return line + " Every trial, pruned ones with their partial score, in results.json under search."
