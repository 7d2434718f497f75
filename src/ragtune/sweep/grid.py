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
import json
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
from .holdout import SELECT_RULES

__all__ = ["Grid", "load_grid", "parse_grid", "parse_settings", "read_settings_file", "GridError"]

# One configuration of a sweep is a PipelineConfig (chunking x retrieval x reranking, plus a query filter).
TOP_LEVEL = ("metric", "k", "depth", "test", "samples", "seed", "holdout", "folds", "select", "baseline", "grid")
SETTINGS = TOP_LEVEL[:9]  # what a grid file and a search's space file (ragtune.sweep.space) share


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
    folds: int = 0  # K-fold cross-validated selection instead (ragtune.sweep.holdout.folds_selection); 0: none
    select: str = "best"  # how the held-out choice is made (ragtune.sweep.holdout.SELECT_RULES)
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

    def listing(self, *, as_json: bool = False) -> str:
        """What a dry run prints: one line per configuration (key, label), or a JSON list with the configurations."""
        specs = self.all_specs
        if as_json:
            return json.dumps([{"key": s.key, "label": s.label, "config": s.to_dict()} for s in specs], indent=2)
        return "\n".join(f"{s.key}  {s.label}" for s in specs)


def parse_settings(data: Mapping[str, Any], problems: list[str]) -> dict[str, Any]:
    """The settings a grid file and a space file share (metric, k, depth, test, samples, seed, holdout, folds,
    select, the baseline), checked; each problem is appended to ``problems`` and its default used."""
    from ..evaluate.significance import TESTS

    ks_raw = data.get("k", [5, 10, 20])
    ks_list = ks_raw if isinstance(ks_raw, list) else [ks_raw]
    if not ks_list or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in ks_list):
        problems.append(f"k: expected positive integers like [5, 10, 20], got {ks_raw!r}")
        ks_list = [5, 10, 20]
    ks = tuple(sorted(set(ks_list)))
    out: dict[str, Any] = {"ks": ks}
    for name, default, lo in (("depth", 100, 1), ("samples", 10000, 1), ("seed", 0, 0), ("folds", 0, 0)):
        v = data.get(name, default)
        if isinstance(v, bool) or not isinstance(v, int) or v < lo or (name == "folds" and v == 1):
            what = "a number of folds >= 2 (or 0: none), such as 5" if name == "folds" else f"an integer >= {lo}"
            problems.append(f"{name}: expected {what}, got {v!r}")
            v = default
        out[name] = v
    holdout = data.get("holdout", 0.0)
    if isinstance(holdout, bool) or not isinstance(holdout, (int, float)) or not 0 <= holdout < 1:
        problems.append(f"holdout: expected the share of questions to hold out, from 0 (none) up to but below 1, "
                        f"such as 0.3; got {holdout!r}")
        holdout = 0.0
    if holdout and out["folds"]:
        problems.append(f"holdout = {holdout} and folds = {out['folds']}: choose one way to hold questions out of the "
                        "choice (a single split, or K folds), and set the other to 0")
    out["holdout"] = float(holdout)
    select = data.get("select", "best")
    if select not in SELECT_RULES:
        problems.append(f"select: expected one of {', '.join(map(repr, SELECT_RULES))} (how the configuration is "
                        f"chosen on the selection questions); got {select!r}")
        select = "best"
    elif select != "best" and not (holdout or out["folds"]):
        problems.append(f"select = {select!r} chooses among configurations on the selection questions: it needs "
                        "holdout (such as 0.3) or folds (such as 5) too")
    out["select"] = select
    metric = str(data.get("metric", "recall@10"))
    if (err := check_metric(metric, ks)) is not None:  # a name of the metric table, scored at these ks
        problems.append(err)
    out["metric"] = metric
    test = str(data.get("test", "randomization"))
    if test not in TESTS:
        problems.append(f"test {test!r}: choose one of {', '.join(TESTS)}")
    out["test"] = test
    baseline_raw = data.get("baseline")
    if not isinstance(baseline_raw, Mapping):
        problems.append("missing [baseline]: the configuration every other one is compared with")
        baseline_raw = {}
    out["baseline"] = None
    try:
        out["baseline"] = PipelineConfig.from_flags(baseline_raw, strict=False)
    except ConfigError as e:
        problems.append(f"baseline: {e}")
    return out


def parse_grid(data: Mapping[str, Any], *, source: str | None = None) -> Grid:
    """Expand and validate a grid; every problem is reported at once."""
    problems: list[str] = []
    unknown = sorted(set(data) - set(TOP_LEVEL))
    if unknown:
        problems.append(f"unknown top-level key(s) {', '.join(map(repr, unknown))}; valid: {', '.join(TOP_LEVEL)}")
    settings = parse_settings(data, problems)
    grid = data.get("grid") or {}
    if not isinstance(grid, Mapping) or not grid:
        problems.append("missing [grid]: a table of lists whose product is the set of configurations")
        grid = {}
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            problems.append(f"grid.{key}: must be a non-empty list, got {values!r}")

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
    return Grid(specs=tuple(specs.values()), source=source, raw=dict(data), **settings)


def read_settings_file(path: str | os.PathLike[str], what: str = "grid file") -> dict[str, Any]:
    """A grid or space file (TOML or YAML) read into a table, or a GridError saying what is wrong with it."""
    p = Path(path)
    if not p.exists():
        raise GridError(f"{what} {str(p)!r} does not exist")
    from ..io import check_regular_file

    try:
        check_regular_file(p, what)
    except ConfigError as e:
        raise GridError(str(e)) from None
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise GridError(f"{p}: not UTF-8 text (byte {e.start}); save the {what} as UTF-8") from None
    except OSError as e:
        raise GridError(f"{p}: cannot read: {e.strerror or e}") from None
    try:
        if p.suffix.lower() == ".toml":
            data = tomllib.loads(text)
        elif p.suffix.lower() in (".yaml", ".yml"):
            data = safe_yaml_load(text, str(p), what=what, error=GridError) or {}
        else:
            raise GridError(f"{p}: use a .toml or .yaml {what}")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as e:
        raise GridError(f"{p}: cannot parse: {e}") from None
    if not isinstance(data, Mapping):
        raise GridError(f"{p}: expected a table of settings")
    return dict(data)


def load_grid(path: str | os.PathLike[str], *, metric: str | None = None, holdout: float | None = None,
              folds: int | None = None, seed: int | None = None, select: str | None = None) -> Grid:
    """Read and validate a grid file; ``metric``, ``holdout``, ``folds``, ``seed`` and ``select`` override the
    file's."""
    data = read_settings_file(path)
    overrides = {k: v for k, v in (("metric", metric), ("holdout", holdout), ("folds", folds), ("seed", seed),
                                   ("select", select)) if v is not None and v != ""}
    if overrides.get("holdout") and "folds" not in overrides:
        data.pop("folds", None)  # one given on the command line replaces the file's other way
    if overrides.get("folds") and "holdout" not in overrides:
        data.pop("holdout", None)
    return parse_grid({**data, **overrides}, source=str(path))
