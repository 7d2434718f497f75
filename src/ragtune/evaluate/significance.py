"""Paired significance tests over per-question scores, and multiple-comparison correction.

Both tests compare two systems on the *same* questions, so they use the
per-question differences. The seed is an argument and is recorded with the
result: the same inputs and seed give the same p-value.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ConfigError

__all__ = ["randomization_test", "bootstrap_test", "holm", "TESTS"]

TESTS = ("randomization", "bootstrap")


def _check_n(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"the number of resamples must be a positive integer, got {n!r}")


def _diffs(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ConfigError(f"paired tests need the same questions on both sides, got {x.size} and {y.size} scores")
    return y - x


def _p_value(a: Sequence[float], b: Sequence[float], n: int, seed: int, resample) -> float:
    """(1 + resamples whose |mean| reaches the observed |mean|) / (1 + n), resampling 1000 at a time.

    ``resample(rng, d, m)`` returns ``m`` resampled means of the per-question differences ``d``.
    """
    _check_n(n)
    d = _diffs(a, b)
    if d.size == 0 or not np.any(d):
        return 1.0
    rng = np.random.default_rng(seed)
    observed = abs(d.mean())
    count = 0
    for start in range(0, n, 1000):
        means = resample(rng, d, min(1000, n - start))
        count += int(np.count_nonzero(np.abs(means) >= observed - 1e-12))
    return (1 + count) / (1 + n)


def randomization_test(a: Sequence[float], b: Sequence[float], *, n: int = 10000, seed: int = 0) -> float:
    r"""Two-sided paired randomization (permutation) test of mean(b - a) = 0.

    Each resample flips the sign of every per-question difference with
    probability 1/2; the p-value is :math:`(1 + \#\{|\bar d^*| \ge |\bar d|\}) / (1 + n)`.
    """
    def flip(rng, d, m):
        signs = rng.integers(0, 2, size=(m, d.size), dtype=np.int8) * 2 - 1
        return (signs @ d) / d.size

    return _p_value(a, b, n, seed, flip)


def bootstrap_test(a: Sequence[float], b: Sequence[float], *, n: int = 10000, seed: int = 0) -> float:
    """Two-sided paired bootstrap test: resample questions, centre the differences under the null."""
    def draw(rng, d, m):
        idx = rng.integers(0, d.size, size=(m, d.size))
        return (d - d.mean())[idx].mean(axis=1)

    return _p_value(a, b, n, seed, draw)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (monotone, capped at 1), in the input order."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()
