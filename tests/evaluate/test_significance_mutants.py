"""Significance helpers: the details mutation testing found untested (exact p-values where the resampling is
forced, the edges of every check, the exact error messages, the power formulas)."""

import math
from statistics import NormalDist

import numpy as np
import pytest

from ragtune import ConfigError
from ragtune.evaluate import significance as sig
from ragtune.evaluate.significance import (
    bonferroni,
    bootstrap_ci,
    bootstrap_test,
    check_correction,
    check_test,
    correct,
    detectable_effect,
    holm,
    paired_test,
    questions_needed,
    randomization_test,
    t_test,
)


def message(call, *args, **kwargs):
    with pytest.raises(ConfigError) as e:
        call(*args, **kwargs)
    return str(e.value)


def test_names_are_checked_with_the_valid_choices():
    assert check_test("t-test") == "t-test" and check_correction("none") == "none"
    assert message(check_test, "z") == "unknown test 'z'; choose one of randomization, bootstrap, t-test"
    assert message(check_correction, "fdr") == "unknown correction 'fdr'; choose one of holm, bonferroni, none"


@pytest.mark.parametrize("n", [True, 2.0, "10", 0])
def test_resample_count_must_be_a_positive_int(n):
    for f in (randomization_test, bootstrap_test, t_test):
        assert message(f, [0.0, 1.0], [1.0, 1.0], n=n) == (
            f"the number of resamples must be a positive integer, got {n!r}")
    assert message(bootstrap_ci, [0.0, 1.0], n=n) == f"the number of resamples must be a positive integer, got {n!r}"


def test_mismatched_sides_name_both_sizes():
    assert message(randomization_test, [1, 2, 3], [1]) == (
        "paired tests need the same questions on both sides, got 3 and 1 scores")


def test_randomization_p_value_is_exact_when_every_resample_counts():
    # a single question: flipping its sign keeps |mean|, so all n resamples count
    for n in (1, 7, 2500):
        assert randomization_test([0.2], [0.9], n=n) == 1.0
    # sums of tenths are not exact in floating point: the tolerance makes 0.1 + 0.2 reach 0.3
    d = [0.1, 0.2, 0.3]
    p = randomization_test([0.0] * 3, d, n=4000, seed=1)
    assert p == pytest.approx(2 / 8, abs=0.03)  # sign patterns +++ and --- of 8


def test_randomization_draws_in_batches_of_the_same_distribution():
    # more resamples than one batch, and not a multiple of it: the p-value still has the 1/(1+n) resolution
    a, b = [0.0] * 4, [1.0, 1.0, 1.0, 1.0]  # only ++++ and ---- reach the observed mean: p -> 2/16
    for n in (999, 1000, 1001, 2500):
        p = randomization_test(a, b, n=n, seed=3)
        assert p * (1 + n) == pytest.approx(round(p * (1 + n)))
        assert p == pytest.approx(1 / 8, abs=0.04)


def test_bootstrap_test_centres_the_differences():
    # all differences equal: centred, every resample mean is 0 < observed, so only the +1 remains
    assert bootstrap_test([0.0] * 5, [0.4] * 5, n=99) == pytest.approx(1 / 100)
    # a wide spread around a small mean: most centred resamples reach it
    assert bootstrap_test([0.0] * 4, [1.0, -1.0, 1.0, -0.9], n=500, seed=0) > 0.5


@pytest.mark.parametrize("test", [randomization_test, bootstrap_test, t_test])
def test_no_questions_or_no_change_gives_one(test):
    assert test([], []) == 1.0
    assert test([0.3, 0.4], [0.3, 0.4]) == 1.0


def test_t_test_edge_cases_and_formula():
    assert t_test([0.0], [1.0]) == 1.0  # one question: no spread to estimate
    assert t_test([0.0, 0.0], [0.5, 0.5]) == 0.0  # every question moved by the same amount
    d = np.array([0.5, 0.1, 0.3, -0.1, 0.4])
    t = d.mean() / (d.std(ddof=1) / math.sqrt(d.size))
    # two-sided p of a t with 4 degrees of freedom, by the closed form of its CDF for nu = 4
    x = t * t / (4 + t * t)
    p_ref = 1 - math.sqrt(x) * (1.5 - 0.5 * x)  # P(|T| >= t) = 1 - sqrt(x)(3 - x)/2 for nu = 4
    assert t_test(np.zeros(5), d) == pytest.approx(p_ref, rel=1e-9)
    assert t_test(d, np.zeros(5)) == pytest.approx(p_ref, rel=1e-9)


def test_incomplete_beta_edges_and_symmetry():
    assert sig._betainc(2.0, 0.5, 0.0) == 0.0 and sig._betainc(2.0, 0.5, -1.0) == 0.0
    assert sig._betainc(2.0, 0.5, 1.0) == 1.0 and sig._betainc(2.0, 0.5, 2.0) == 1.0
    # I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 - (1 - x)^b; both branches of the continued fraction
    for x in (0.05, 0.3, 0.5, 0.7, 0.95):
        assert sig._betainc(1.0, 1.0, x) == pytest.approx(x, rel=1e-12)
        assert sig._betainc(3.0, 1.0, x) == pytest.approx(x ** 3, rel=1e-12)
        assert sig._betainc(1.0, 2.5, x) == pytest.approx(1 - (1 - x) ** 2.5, rel=1e-12)
        assert sig._betainc(2.0, 3.0, x) + sig._betainc(3.0, 2.0, 1 - x) == pytest.approx(1.0, rel=1e-12)


def test_paired_test_passes_n_and_seed():
    a, b = [0.0, 0.2, 0.4, 0.1, 0.3, 0.0], [0.3, 0.2, 0.9, 0.5, 0.2, 0.4]
    for name, f in (("randomization", randomization_test), ("bootstrap", bootstrap_test)):
        assert paired_test(name, a, b, n=37, seed=5) == f(a, b, n=37, seed=5)
        assert paired_test(name, a, b, n=37, seed=5) * 38 == pytest.approx(round(paired_test(name, a, b, n=37, seed=5) * 38))
        assert paired_test(name, a, b) == f(a, b, n=10000, seed=0)
    with pytest.raises(ConfigError):
        paired_test("t-test", a, b, n=0)  # n reaches the t-test too (checked, unused)


def test_bootstrap_ci_edges():
    lo, hi = bootstrap_ci([])
    assert math.isnan(lo) and math.isnan(hi)
    assert bootstrap_ci([0.25]) == (0.25, 0.25)
    assert message(bootstrap_ci, [0.1, 0.2], confidence=1.0) == "confidence must be between 0 and 1, got 1.0"
    assert message(bootstrap_ci, [0.1, 0.2], confidence=0.0) == "confidence must be between 0 and 1, got 0.0"
    x = [0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    lo, hi = bootstrap_ci(x, n=3000, seed=2)
    assert 0.0 <= lo < np.mean(x) < hi <= 1.0
    assert (lo, hi) == bootstrap_ci(x, n=3000, seed=2)
    assert bootstrap_ci(x, n=3000, seed=2) != bootstrap_ci(x, n=3000, seed=3)
    narrow = bootstrap_ci(x, n=3000, seed=2, confidence=0.5)
    assert lo < narrow[0] < narrow[1] < hi
    # every resample filled in: with n not a multiple of the batch, the quantiles stay inside the data range
    lo, hi = bootstrap_ci([0.5, 0.75], n=1001, seed=0, confidence=0.999)
    assert 0.5 <= lo <= hi <= 0.75


def test_bootstrap_ci_quantiles_are_the_percentiles_of_the_resampled_means():
    x = np.array([0.0, 0.0, 1.0])
    lo, hi = bootstrap_ci(x, n=20000, seed=4, confidence=0.8)
    # the mean of 3 draws from {0, 0, 1} is k/3 with k ~ Binomial(3, 1/3): P(0) = 8/27, P(k <= 1) = 20/27
    assert lo == pytest.approx(0.0) and hi == pytest.approx(2 / 3)


def test_holm_and_bonferroni_by_hand():
    assert holm([0.04, 0.01]) == pytest.approx([0.04, 0.02])
    assert holm([0.3, 0.3, 0.3]) == pytest.approx([0.9, 0.9, 0.9])
    assert holm([0.9, 0.6]) == [1.0, 1.0]  # 2 x 0.6, capped at 1
    assert holm([0.02, 0.01, 0.5]) == pytest.approx([0.04, 0.03, 0.5])  # running maximum keeps the order
    assert bonferroni([0.2, 0.6]) == [0.4, 1.0] and bonferroni([]) == []
    assert correct([0.2, 0.6]) == holm([0.2, 0.6])
    assert correct([np.float64(0.2)], "none") == [0.2] and type(correct([np.float64(0.2)], "none")[0]) is float


def test_power_formulas():
    z = NormalDist().inv_cdf
    assert detectable_effect(0.3, 25) == pytest.approx((z(0.975) + z(0.8)) * 0.3 / 5, rel=1e-12)
    assert detectable_effect(0.3, 25, alpha=0.01, power=0.9) == pytest.approx((z(0.995) + z(0.9)) * 0.06, rel=1e-12)
    assert detectable_effect(0.3, 2) is not None and detectable_effect(0.3, 1) is None
    assert detectable_effect(float("nan"), 10) is None and detectable_effect(None, 10) is None
    assert detectable_effect(float("inf"), 10) is None
    k = (z(0.975) + z(0.8)) * 0.3 / 0.05
    assert questions_needed(0.3, 0.05) == math.ceil(k * k)
    assert questions_needed(0.3, -0.05) == math.ceil(k * k)
    assert questions_needed(0.3, 0.05, alpha=0.01, power=0.9) == math.ceil(((z(0.995) + z(0.9)) * 6) ** 2)
    assert questions_needed(0.01, 1.0) == 2  # at least two
    for sd, effect in ((-0.1, 0.05), (float("nan"), 0.05), (None, 0.05), (float("inf"), 0.05), (0.3, float("nan")),
                       (0.3, float("inf"))):
        assert questions_needed(sd, effect) is None


@pytest.mark.parametrize("kwargs,text", [
    ({"alpha": 0.0}, "alpha must be between 0 and 1, got 0.0"),
    ({"alpha": 1.0}, "alpha must be between 0 and 1, got 1.0"),
    ({"power": 0.0}, "power must be between 0 and 1, got 0.0"),
    ({"power": 1.0}, "power must be between 0 and 1, got 1.0"),
])
def test_power_options_are_checked(kwargs, text):
    assert message(detectable_effect, 0.3, 10, **kwargs) == text
    assert message(questions_needed, 0.3, 0.1, **kwargs) == text
