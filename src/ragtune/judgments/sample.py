"""Sampled judging pools: draw holes to judge with known inclusion probabilities (``ragtune pool --sample N``).

Nobody judges thirteen holes a question. TREC's answer (Yilmaz and Aslam's infAP, Aslam, Pavlu and Yilmaz's
statAP) is to judge a *sample* of the pool drawn with known probabilities, and to estimate the metrics from it
(:mod:`.estimate`). The design here:

- **Strata by depth.** Every hole of the pool (over all questions) falls in the stratum of its best rank in any
  run: :data:`STRATA` = ranks 1, 2-3, 4-6, 7-10, 11-20, 21-50, 51 and deeper.
- **Rank-weighted allocation.** The ``n`` draws are shared among the strata in proportion to the strata's
  weight, the sum over its holes of ``w(r) = 1 / log2(r + 1)`` (the DCG discount of the hole's best rank), by
  highest quotient (D'Hondt: each next draw goes to the stratum with the largest ``W_h / (n_h + 1)``), after
  every stratum got ``min(2, N_h)`` (two draws per stratum let the variance be estimated; a stratum of one hole
  is drawn with certainty). A stratum never gets more draws than holes.
- **Equal probability within a stratum.** ``n_h`` holes of the stratum's ``N_h`` are drawn without replacement,
  uniformly, with ``numpy.random.default_rng(seed)``: every hole's inclusion probability is
  :math:`\\pi_i = n_h / N_h`, and :math:`\\sum_i \\pi_i = n` exactly. The same pool and seed draw the same holes.

The pool file keeps, for every hole, its stratum, its ``pi`` and whether it was ``sampled``; the workbench serves
the sampled holes first, and :func:`read_pool_sample` reads them back for the estimates.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, CorpusNotFoundError

__all__ = ["STRATA", "Stratum", "SampledHole", "PoolSample", "stratum_of", "rank_weight", "allocate",
           "draw_sample", "read_pool_sample", "read_sampled"]

STRATA: tuple[tuple[int, int], ...] = ((1, 1), (2, 3), (4, 6), (7, 10), (11, 20), (21, 50), (51, 10**9))
"""The depth strata: (first rank, last rank) of the best rank a hole was retrieved at."""


def stratum_of(rank: int) -> int:
    """The index in :data:`STRATA` of a hole whose best rank is ``rank`` (1-based)."""
    for i, (lo, hi) in enumerate(STRATA):
        if lo <= rank <= hi:
            return i
    raise ConfigError(f"rank {rank!r}: ranks start at 1")


def stratum_label(i: int) -> str:
    lo, hi = STRATA[i]
    return str(lo) if lo == hi else (f"{lo}+" if hi >= 10**9 else f"{lo}-{hi}")


def rank_weight(rank: int) -> float:
    """The weight of a hole first retrieved at ``rank``: the DCG discount ``1 / log2(rank + 1)``."""
    return 1.0 / math.log2(rank + 1.0)


@dataclass(frozen=True)
class Stratum:
    """One depth stratum of a sample: its label (``2-3``), holes ``size`` (N_h), ``drawn`` (n_h), ``weight``."""

    label: str
    size: int
    drawn: int
    weight: float

    @property
    def pi(self) -> float:
        return self.drawn / self.size if self.size else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "holes": self.size, "drawn": self.drawn, "pi": self.pi}


@dataclass(frozen=True)
class SampledHole:
    """A hole of a sampled pool: its question, anchor, best rank, stratum label, inclusion probability, drawn or not,
    and how many of the pooled runs retrieved it (a hole many runs agree on is more often relevant)."""

    question: str
    anchor: str
    rank: int
    stratum: str
    pi: float
    sampled: bool
    runs: int = 1


@dataclass(frozen=True)
class PoolSample:
    """A sample drawn from a pool: how many (``n``), with which ``seed``, the strata and every hole of the pool."""

    n: int
    seed: int
    strata: tuple[Stratum, ...]
    holes: tuple[SampledHole, ...]

    def by_question(self) -> dict[str, list[SampledHole]]:
        out: dict[str, list[SampledHole]] = {}
        for h in self.holes:
            out.setdefault(h.question, []).append(h)
        return out

    def sampled(self) -> dict[str, list[str]]:
        """Question id -> the anchors drawn for it, best rank first (what the workbench serves first)."""
        out: dict[str, list[str]] = {}
        for h in sorted(self.holes, key=lambda h: h.rank):
            if h.sampled:
                out.setdefault(h.question, []).append(h.anchor)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "seed": self.seed, "strata": [s.to_dict() for s in self.strata]}

    def summary(self) -> str:
        parts = ", ".join(f"{s.label}: {s.drawn} of {s.size}" for s in self.strata if s.size)
        return (f"sampled {self.n} of {len(self.holes)} holes (seed {self.seed}; best rank: {parts}); judge the "
                "sampled holes first (the workbench serves them first), then `ragtune eval --pool-sample FILE` "
                "estimates the metrics with 95% intervals")


def allocate(sizes: Sequence[int], weights: Sequence[float], n: int) -> list[int]:
    """Draws per stratum: ``min(2, N_h)`` each first, then by highest ``weights[h] / (n_h + 1)`` until ``n`` are
    shared, never more than ``sizes[h]``. ``n`` must be at least the first share and at most the holes."""
    total = sum(sizes)
    floor = [min(2, s) for s in sizes]
    if n > total:
        raise ConfigError(f"sample of {n}: the pool has only {total} holes; ask for at most {total}")
    if n < sum(floor):
        raise ConfigError(f"sample of {n}: draw at least {sum(floor)} (two holes from each depth stratum that has "
                          "two, so every hole can be drawn and the variance estimated)")
    alloc = list(floor)
    for _ in range(n - sum(floor)):
        best = max((h for h in range(len(sizes)) if alloc[h] < sizes[h]),
                   key=lambda h: (weights[h] / (alloc[h] + 1), -h))
        alloc[best] += 1
    return alloc


def draw_sample(holes: Mapping[str, Sequence[tuple[str, int] | tuple[str, int, int]]], n: int, *,
                seed: int = 0) -> PoolSample:
    """Draw ``n`` of the pool's ``holes`` (question id -> (anchor, best rank) or (anchor, best rank, runs that
    retrieved it) per hole), stratified by depth and rank-weighted (see the module docstring), reproducibly from
    ``seed``."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"sample size must be a whole number >= 1 (the holes to draw), got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"sample seed must be a whole number, got {seed!r}")
    units = [(q, h[0], int(h[1]), int(h[2]) if len(h) > 2 else 1) for q, hs in holes.items() for h in hs]
    members: list[list[int]] = [[] for _ in STRATA]
    for i, (_, _, r, _) in enumerate(units):
        members[stratum_of(r)].append(i)
    sizes = [len(m) for m in members]
    weights = [sum(rank_weight(units[i][2]) for i in m) for m in members]
    alloc = allocate(sizes, weights, n)
    rng = np.random.default_rng(seed)
    drawn: set[int] = set()
    for m, k in zip(members, alloc):
        if k:
            drawn.update(m[j] for j in rng.choice(len(m), size=k, replace=False))
    strata = tuple(Stratum(stratum_label(h), sizes[h], alloc[h], weights[h]) for h in range(len(STRATA)))
    out = tuple(SampledHole(q, a, r, stratum_label(stratum_of(r)), alloc[stratum_of(r)] / sizes[stratum_of(r)],
                            i in drawn, runs) for i, (q, a, r, runs) in enumerate(units))
    return PoolSample(n, seed, strata, out)


def read_pool_sample(path: str | os.PathLike[str]) -> PoolSample:
    """The sample a pool file holds (``ragtune pool --sample N --out FILE``): every hole with its stratum, inclusion
    probability and whether it was drawn."""
    from ..corpus.loaders import iter_jsonl

    path = Path(path)
    if not path.is_file():
        raise CorpusNotFoundError(f"{path}: no such pool file (`ragtune pool ... --sample N --out FILE` writes one)")
    holes: list[SampledHole] = []
    meta: Mapping[str, Any] = {}
    for lineno, row in iter_jsonl(path):
        if not isinstance(row, Mapping) or not isinstance(row.get("sample"), Mapping):
            raise ConfigError(f"{path}:{lineno}: a pool line without a sample; draw one with `ragtune pool ... "
                              "--sample N --out FILE`")
        meta = row["sample"]
        for h in row.get("holes") or []:
            try:
                holes.append(SampledHole(str(row["id"]), str(h["anchor"]), int(h["rank"]), str(h["stratum"]),
                                         float(h["pi"]), bool(h["sampled"]), max(1, len(h.get("found_by") or ()))))
            except (KeyError, TypeError, ValueError, IndexError):
                raise ConfigError(f"{path}:{lineno}: a hole without rank, stratum, pi and sampled; write the pool "
                                  "again with `ragtune pool ... --sample N --out FILE`") from None
    if any(not 0.0 < h.pi <= 1.0 for h in holes):
        raise ConfigError(f"{path}: an inclusion probability outside (0, 1]; write the pool again with "
                          "`ragtune pool ... --sample N --out FILE`")
    strata = tuple(Stratum(str(s.get("label")), int(s.get("holes", 0)), int(s.get("drawn", 0)), 0.0)
                   for s in meta.get("strata", []) if isinstance(s, Mapping))
    return PoolSample(int(meta.get("n", sum(h.sampled for h in holes))), int(meta.get("seed", 0)), strata,
                      tuple(holes))


def read_sampled(path: str | os.PathLike[str]) -> dict[str, list[str]]:
    """Question id -> the holes a pool file's sample drew, best rank first; empty when the pool holds no sample
    (what the workbench serves first)."""
    try:
        return read_pool_sample(path).sampled()
    except ConfigError:
        return {}
