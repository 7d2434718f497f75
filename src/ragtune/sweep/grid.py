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
import itertools
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..safe_yaml import safe_yaml_load
from ..errors import ConfigError, GridError
from ..evaluate.table import check_metric
from ..pipeline import PipelineConfig

__all__ = ["Grid", "load_grid", "parse_grid", "GridError"]

# One configuration of a sweep is a PipelineConfig (chunking x retrieval x reranking, plus a query filter).
TOP_LEVEL = ("metric", "k", "depth", "test", "samples", "seed", "holdout", "baseline", "grid")


@dataclass(frozen=True)
class Grid:
    specs: tuple[PipelineConfig, ...]
    baseline: PipelineConfig
    metric: str = "recall@10"
    ks: tuple[int, ...] = (5, 10, 20)
    depth: int = 100
    test: str = "randomization"
    samples: int = 10000
    seed: int = 0
    holdout: float = 0.0  # share of the questions held out of the choice (ragtune.sweep.holdout); 0: none
    source: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)

    def resolved(self, corpus_kind: str) -> "Grid":
        """The grid with ``auto`` chunkers and unset prefixes made concrete for this corpus, de-duplicated."""
        specs: dict[str, PipelineConfig] = {}
        for s in self.specs:
            r = s.resolved(corpus_kind)
            specs.setdefault(r.key, r)
        return dataclasses.replace(self, specs=tuple(specs.values()), baseline=self.baseline.resolved(corpus_kind))

    @property
    def all_specs(self) -> list[PipelineConfig]:
        """The grid's configurations plus the baseline when the grid does not contain it."""
        keys = {s.key for s in self.specs}
        return list(self.specs) + ([] if self.baseline.key in keys else [self.baseline])


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
    holdout = data.get("holdout", 0.0)
    if isinstance(holdout, bool) or not isinstance(holdout, (int, float)) or not 0 <= holdout < 1:
        problems.append(f"holdout: expected the share of questions to hold out, from 0 (none) up to but below 1, "
                        f"such as 0.3; got {holdout!r}")
        holdout = 0.0
    metric = str(data.get("metric", "recall@10"))
    if (err := check_metric(metric, ks)) is not None:  # a name of the metric table, scored at these ks
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
        baseline = PipelineConfig.from_flags(baseline_raw, strict=False)
    except ConfigError as e:
        problems.append(f"baseline: {e}")

    specs: dict[str, PipelineConfig] = {}
    if not problems or all(not p.startswith("grid.") for p in problems):
        keys = list(grid)
        lists = [grid[k] if isinstance(grid[k], list) else [grid[k]] for k in keys]
        for combo in itertools.product(*lists):
            flags = dict(zip(keys, combo))
            where = ", ".join(f"{k}={v}" for k, v in flags.items())
            try:
                spec = PipelineConfig.from_flags(flags, strict=False)
            except ConfigError as e:
                problems.append(f"[{where}]: {e}")
                continue
            specs.setdefault(spec.key, spec)
    if problems:
        raise GridError(f"{source or 'grid'}: {len(problems)} problem(s):\n" + "\n".join(f"- {p}" for p in problems))
    assert baseline is not None
    return Grid(specs=tuple(specs.values()), baseline=baseline, metric=metric, ks=ks, depth=numbers["depth"], test=test,
                samples=numbers["samples"], seed=numbers["seed"], holdout=float(holdout), source=source, raw=dict(data))


def load_grid(path: str | os.PathLike[str], *, metric: str | None = None, holdout: float | None = None) -> Grid:
    """Read and validate a grid file; ``metric`` and ``holdout`` override the file's."""
    p = Path(path)
    if not p.exists():
        raise GridError(f"grid file {str(p)!r} does not exist")
    from ..io import check_regular_file

    try:
        check_regular_file(p, "grid file")
    except ConfigError as e:
        raise GridError(str(e)) from None
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise GridError(f"{p}: not UTF-8 text (byte {e.start}); save the grid file as UTF-8") from None
    except OSError as e:
        raise GridError(f"{p}: cannot read: {e.strerror or e}") from None
    try:
        if p.suffix.lower() == ".toml":
            data = tomllib.loads(text)
        elif p.suffix.lower() in (".yaml", ".yml"):
            data = safe_yaml_load(text, str(p), what="grid file", error=GridError) or {}
        else:
            raise GridError(f"{p}: use a .toml or .yaml grid file")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as e:
        raise GridError(f"{p}: cannot parse: {e}") from None
    if not isinstance(data, Mapping):
        raise GridError(f"{p}: expected a table of settings")
    overrides = {k: v for k, v in (("metric", metric), ("holdout", holdout)) if v is not None and v != ""}
    return parse_grid({**data, **overrides}, source=str(p))
