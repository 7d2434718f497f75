"""Paired significance tests, bootstrap confidence intervals, multiple-comparison correction and power.

The tests compare two systems on the *same* questions, so they use the
per-question differences ``d = b - a``. The seed is an argument and is
recorded with every result: the same inputs and seed give the same numbers.

- :func:`randomization_test`, :func:`bootstrap_test`, :func:`t_test`: two-sided
  p-values of ``mean(d) = 0``; :func:`paired_test` picks one by name.
- :func:`bootstrap_ci`: percentile confidence interval of a mean.
- :func:`holm`, :func:`bonferroni`, :func:`correct`: adjusted p-values.
- :func:`detectable_effect`, :func:`questions_needed`: the power calculation
  behind "why is my p-value 1.0?".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from ..errors import ConfigError

__all__ = [
    "CORRECTIONS",
    "TESTS",
    "bonferroni",
    "bootstrap_ci",
    "bootstrap_test",
    "check_correction",
    "check_test",
    "correct",
    "detectable_effect",
    "format_p",
    "p_equals",
    "holm",
    "interval_note",
    "questions_text",
    "paired_test",
    "questions_needed",
    "randomization_test",
    "t_test",
]

TESTS = ("randomization", "bootstrap", "t-test")
CORRECTIONS = ("holm", "bonferroni", "none")
_BATCH = 1000  # resamples drawn at a time: bounds memory to 1000 x questions


def format_p(p: float | None) -> str:
    """A p-value as people read it: three significant digits (``0.01``, ``0.0625``, ``1``), and ``< 0.001`` below
    0.001, where a resampling test's floor ``1 / (samples + 1)`` would print as ``9.999e-05``; ``-`` when unknown."""
    if p is None or not math.isfinite(p):
        return "-"
    return "< 0.001" if p < 0.001 else f"{p:.3g}"


def p_equals(p: float | None, *, tight: bool = False) -> str:
    """What follows "p" in a sentence: ``= 0.01`` or ``< 0.001`` (``=0.01``, ``<0.001`` when ``tight``)."""
    text = format_p(p)
    text = text if text.startswith("<") else f"= {text}"
    return text.replace(" ", "") if tight else text


def interval_note(*, confidence: float, comparisons: int, correction: str, alpha: float,
                  p_label: str | None = None) -> str | None:
    """One sentence for a report that shows a delta's interval beside a corrected p-value: the interval is per
    comparison (its own ``confidence``, like the raw p), not adjusted for ``comparisons`` as the corrected p is,
    so the two can disagree. ``None`` when nothing is corrected (one comparison, or ``correction`` none).
    ``p_label`` names the corrected p as the report shows it (default ``p <correction>``)."""
    if correction == "none" or comparisons < 2:
        return None
    p_label = p_label or f"p {correction}"
    return (f"the delta's {confidence * 100:g}% interval is per comparison, not adjusted for the {comparisons} "
            f"comparisons as {p_label} is: it can exclude 0 while {p_label} is above {alpha:g}")


def questions_text(ids: Sequence[str]) -> str:
    """Question ids as a reader takes them in: ``none``, ``1 question (q3)``, ``2 questions (q1, q3)``."""
    ids = list(ids)
    if not ids:
        return "none"
    return f"{len(ids)} question{'s' if len(ids) != 1 else ''} ({', '.join(ids)})"


def check_test(name: str) -> str:
    """``name`` if it is a known test, else a :class:`ConfigError` listing the valid ones."""
    if name not in TESTS:
        raise ConfigError(f"unknown test {name!r}; choose one of {', '.join(TESTS)}")
    return name


def check_correction(name: str) -> str:
    """``name`` if it is a known correction, else a :class:`ConfigError` listing the valid ones."""
    if name not in CORRECTIONS:
        raise ConfigError(f"unknown correction {name!r}; choose one of {', '.join(CORRECTIONS)}")
    return name


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
    for start in range(0, n, _BATCH):
        means = resample(rng, d, min(_BATCH, n - start))
        count += int(np.count_nonzero(np.abs(means) >= observed - 1e-12))
    return (1 + count) / (1 + n)


def randomization_test(a: Sequence[float], b: Sequence[float], *, n: int = 10000, seed: int = 0) -> float:
    r"""Two-sided paired randomization (permutation) test of mean(b - a) = 0.

    Each resample flips the sign of every per-question difference with
    probability 1/2; the p-value is :math:`(1 + \#\{|\bar d^*| \ge |\bar d|\}) / (1 + n)`.
    With ``m`` non-zero differences no p-value below :math:`2^{1-m}` is possible.
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


def t_test(a: Sequence[float], b: Sequence[float], *, n: int = 10000, seed: int = 0) -> float:
    r"""Two-sided paired t-test of mean(b - a) = 0 (``n`` and ``seed`` are accepted and unused).

    :math:`t = \bar d / (s_d / \sqrt{q})` with :math:`q - 1` degrees of freedom, where
    :math:`s_d` is the sample standard deviation of the :math:`q` differences. The
    p-value is :math:`I_{\nu/(\nu + t^2)}(\nu/2, 1/2)`, the regularised incomplete beta
    function. It assumes the mean difference is roughly normal, which needs more
    questions than the resampling tests when scores are 0 or 1.
    """
    _check_n(n)
    d = _diffs(a, b)
    if d.size == 0 or not np.any(d):
        return 1.0
    if d.size < 2:
        return 1.0
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        return 0.0  # every question moved by the same non-zero amount
    t = float(d.mean()) / (sd / math.sqrt(d.size))
    df = d.size - 1
    return min(1.0, _betainc(df / 2.0, 0.5, df / (df + t * t)))


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta function I_x(a, b), by its continued fraction."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b), evaluated front to back (modified Lentz)."""
    tiny = 1e-300

    def guard(v: float) -> float:
        return tiny if abs(v) < tiny else v

    c = 1.0
    d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0))
    result = d
    for m in range(1, 500):
        even = m * (b - m) * x / ((a + 2 * m - 1.0) * (a + 2 * m))
        d = 1.0 / guard(1.0 + even * d)
        c = guard(1.0 + even / c)
        result *= d * c
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1.0))
        d = 1.0 / guard(1.0 + odd * d)
        c = guard(1.0 + odd / c)
        step = d * c
        result *= step
        if abs(step - 1.0) < 1e-15:
            break
    return result


_TEST_FUNCTIONS = {"randomization": randomization_test, "bootstrap": bootstrap_test, "t-test": t_test}


def paired_test(test: str, a: Sequence[float], b: Sequence[float], *, n: int = 10000, seed: int = 0) -> float:
    """The p-value of the paired test named ``test`` (one of :data:`TESTS`)."""
    return _TEST_FUNCTIONS[check_test(test)](a, b, n=n, seed=seed)


def bootstrap_ci(values: Sequence[float], *, n: int = 10000, seed: int = 0,
                 confidence: float = 0.95) -> tuple[float, float]:
    r"""Percentile bootstrap confidence interval of the mean of ``values``.

    Draws ``n`` resamples of the values with replacement and returns the
    :math:`(1-c)/2` and :math:`(1+c)/2` quantiles of their means (linear
    interpolation between order statistics). For paired differences pass
    ``b - a``: resampling the differences resamples whole questions.
    """
    _check_n(n)
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be between 0 and 1, got {confidence!r}")
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return float("nan"), float("nan")
    if np.all(x == x[0]):
        return float(x[0]), float(x[0])
    rng = np.random.default_rng(seed)
    means = np.empty(n)
    for start in range(0, n, _BATCH):
        m = min(_BATCH, n - start)
        means[start:start + m] = x[rng.integers(0, x.size, size=(m, x.size))].mean(axis=1)
    lo, hi = np.percentile(means, [50.0 * (1.0 - confidence), 50.0 * (1.0 + confidence)])
    return float(lo), float(hi)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (monotone, capped at 1), in the input order.

    Sorted ascending, the j-th smallest (from 0) is multiplied by ``m - j``; a running
    maximum keeps the order, and values are capped at 1.
    """
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    if m == 0:
        return []
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, np.maximum.accumulate(p[order] * np.arange(m, 0, -1, dtype=np.float64)))
    adjusted = np.empty(m)
    adjusted[order] = stepped
    return adjusted.tolist()


def bonferroni(p_values: Sequence[float]) -> list[float]:
    """Bonferroni adjusted p-values: each multiplied by the number of tests, capped at 1."""
    p = np.asarray(p_values, dtype=np.float64)
    return np.minimum(1.0, p * float(p.size)).tolist()


def correct(p_values: Sequence[float], method: str = "holm") -> list[float]:
    """Adjust ``p_values`` for multiple comparisons with ``method`` (one of :data:`CORRECTIONS`)."""
    check_correction(method)
    if method == "holm":
        return holm(p_values)
    if method == "bonferroni":
        return bonferroni(p_values)
    return [float(p) for p in p_values]


def _z_sum(alpha: float, power: float) -> float:
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"alpha must be between 0 and 1, got {alpha!r}")
    if not 0.0 < power < 1.0:
        raise ConfigError(f"power must be between 0 and 1, got {power!r}")
    z = NormalDist()
    return z.inv_cdf(1.0 - alpha / 2.0) + z.inv_cdf(power)


def detectable_effect(sd: float, n: int, *, alpha: float = 0.05, power: float = 0.8) -> float | None:
    r"""Minimum detectable effect of a paired comparison of ``n`` questions.

    :math:`MDE = (z_{1-\alpha/2} + z_{power}) \cdot s_d / \sqrt{n}`, where :math:`s_d` is the
    standard deviation of the per-question differences and :math:`z_p` the standard
    normal quantile (normal approximation, two-sided). ``None`` when ``n < 2`` or
    ``sd`` is not finite.
    """
    if n < 2 or sd is None or not math.isfinite(sd):
        return None
    return _z_sum(alpha, power) * sd / math.sqrt(n)


def questions_needed(sd: float, effect: float, *, alpha: float = 0.05, power: float = 0.8) -> int | None:
    r"""Questions a paired comparison needs to detect a mean difference of ``effect``.

    :math:`n = \lceil ((z_{1-\alpha/2} + z_{power}) \cdot s_d / |effect|)^2 \rceil`, at least 2,
    assuming more questions vary as much as the ones measured. ``None`` when
    ``effect`` is 0 or ``sd`` is 0 or not finite (nothing to extrapolate from).
    """
    if sd is None or not math.isfinite(sd) or sd <= 0.0 or not effect or not math.isfinite(effect):
        return None
    return max(2, math.ceil((_z_sum(alpha, power) * sd / abs(effect)) ** 2))
