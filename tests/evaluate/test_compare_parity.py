"""Parity of the statistics behind ``compare`` with scipy and statsmodels."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

scipy_stats = pytest.importorskip("scipy.stats")
multitest = pytest.importorskip("statsmodels.stats.multitest")
power_mod = pytest.importorskip("statsmodels.stats.power")

from ragtune.evaluate.significance import (  # noqa: E402
    bonferroni,
    bootstrap_ci,
    detectable_effect,
    holm,
    questions_needed,
    randomization_test,
    t_test,
)


def paired_scores(seed, n=40, shift=0.08):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 1, size=n)
    b = np.clip(a + rng.normal(shift, 0.25, size=n), 0, 1)
    return a, b


@pytest.mark.parametrize("seed,shift", [(1, 0.08), (2, 0.0), (3, 0.12)])
def test_randomization_test_matches_scipy_permutation_test(seed, shift):
    a, b = paired_scores(seed, shift=shift)
    ref = scipy_stats.permutation_test(
        (a, b), lambda x, y, axis: np.mean(y - x, axis=axis), permutation_type="samples", vectorized=True,
        alternative="two-sided", n_resamples=20000, rng=np.random.default_rng(seed),
    ).pvalue
    ours = randomization_test(a, b, n=20000, seed=seed)
    # two independent Monte-Carlo estimates of the same p: standard error <= 0.0035 each
    assert ours == pytest.approx(ref, abs=0.015)


def test_randomization_test_matches_scipy_exact_enumeration():
    a, b = paired_scores(4, n=12, shift=0.15)  # 2^12 sign patterns: scipy enumerates them all
    ref = scipy_stats.permutation_test(
        (a, b), lambda x, y, axis: np.mean(y - x, axis=axis), permutation_type="samples", vectorized=True,
        alternative="two-sided", n_resamples=10**6,
    ).pvalue
    assert randomization_test(a, b, n=40000, seed=0) == pytest.approx(ref, abs=0.01)


@pytest.mark.parametrize("binary", [False, True])
def test_bootstrap_ci_matches_scipy_percentile_bootstrap(binary):
    rng = np.random.default_rng(5)
    x = (rng.uniform(size=60) < 0.7).astype(float) if binary else rng.uniform(size=60) ** 2
    ref = scipy_stats.bootstrap((x,), np.mean, method="percentile", n_resamples=20000, confidence_level=0.95,
                                rng=np.random.default_rng(5)).confidence_interval
    lo, hi = bootstrap_ci(x, n=20000, seed=5, confidence=0.95)
    # quantiles of two independent bootstrap distributions of the mean (sd ~0.06 here)
    assert lo == pytest.approx(ref.low, abs=0.006)
    assert hi == pytest.approx(ref.high, abs=0.006)


def test_paired_delta_ci_matches_scipy_paired_bootstrap():
    a, b = paired_scores(6, n=50)
    ref = scipy_stats.bootstrap((a, b), lambda x, y, axis: np.mean(y - x, axis=axis), paired=True, vectorized=True,
                                method="percentile", n_resamples=20000, rng=np.random.default_rng(6)).confidence_interval
    lo, hi = bootstrap_ci(b - a, n=20000, seed=6)
    assert lo == pytest.approx(ref.low, abs=0.006) and hi == pytest.approx(ref.high, abs=0.006)


@pytest.mark.parametrize("seed,n", [(7, 5), (8, 30), (9, 200)])
def test_t_test_matches_scipy_ttest_rel(seed, n):
    a, b = paired_scores(seed, n=n)
    assert t_test(a, b) == pytest.approx(scipy_stats.ttest_rel(b, a).pvalue, rel=1e-9, abs=1e-15)


def test_t_test_degenerate_cases():
    assert t_test([0.5, 0.5], [0.5, 0.5]) == 1.0
    assert t_test([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]) == 0.0  # scipy: t = inf, p = 0


p_lists = st.lists(st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.01, 0.05, 0.5, 1.0])), min_size=1,
                   max_size=40)


@settings(max_examples=40, deadline=None)  # statsmodels' holm takes ~60 ms a call
@given(p_lists)
def test_holm_equals_statsmodels_exactly(p):
    assert holm(p) == multitest.multipletests(p, method="holm")[1].tolist()


@settings(max_examples=200, deadline=None)
@given(p_lists)
def test_bonferroni_equals_statsmodels_exactly(p):
    assert bonferroni(p) == multitest.multipletests(p, method="bonferroni")[1].tolist()


@pytest.mark.parametrize("n,alpha,power", [(22, 0.05, 0.8), (100, 0.01, 0.9), (500, 0.05 / 6, 0.8)])
def test_detectable_effect_matches_statsmodels_power(n, alpha, power):
    sd = 0.37
    # one-sample (paired) z-test: NormalIndPower with ratio=0; its effect size is in units of sd
    ref = power_mod.NormalIndPower().solve_power(nobs1=n, alpha=alpha, power=power, ratio=0) * sd
    # statsmodels also counts the far tail's rejections, which we ignore: a relative difference < 1e-4
    assert detectable_effect(sd, n, alpha=alpha, power=power) == pytest.approx(ref, rel=1e-4)
    effect = 0.05
    needed = power_mod.NormalIndPower().solve_power(effect_size=effect / sd, alpha=alpha, power=power, ratio=0)
    assert questions_needed(sd, effect, alpha=alpha, power=power) == int(np.ceil(needed - 1e-6))
