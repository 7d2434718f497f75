import numpy as np
import pytest

from ragtune.evaluate.significance import bootstrap_test, holm, randomization_test


@pytest.mark.parametrize("test", [randomization_test, bootstrap_test])
def test_identical_systems_are_not_different(test):
    a = [0.0, 1.0, 0.5, 1.0]
    assert test(a, a, n=500, seed=1) == 1.0


@pytest.mark.parametrize("test", [randomization_test, bootstrap_test])
def test_consistent_improvement_is_significant_and_seeded(test):
    rng = np.random.default_rng(3)
    a = rng.uniform(0, 0.6, size=80)
    b = a + rng.uniform(0.05, 0.3, size=80)
    p = test(a, b, n=2000, seed=7)
    assert p < 0.01
    assert p == test(a, b, n=2000, seed=7)
    assert test(b, a, n=2000, seed=7) == pytest.approx(p, abs=0.01)  # two-sided


def test_noise_is_not_significant():
    rng = np.random.default_rng(5)
    a = rng.uniform(0, 1, size=60)
    b = a + rng.normal(0, 0.2, size=60)
    b -= (b - a).mean()  # mean difference exactly zero
    assert randomization_test(a, b, n=2000, seed=0) > 0.5


def test_randomization_matches_exact_enumeration():
    # 6 questions: 2^6 sign patterns; exact p = share with |mean| >= observed
    d = np.array([0.5, 0.25, 0.0, 1.0, -0.25, 0.5])
    a = np.zeros(6)
    signs = np.array(np.meshgrid(*[[-1, 1]] * 6)).reshape(6, -1).T
    exact = np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-12)
    assert randomization_test(a, d, n=20000, seed=0) == pytest.approx(exact, abs=0.01)


def test_holm_by_hand():
    assert holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert holm([]) == []


def test_mismatched_lengths():
    with pytest.raises(ValueError, match="same questions"):
        randomization_test([1, 2], [1])


@pytest.mark.parametrize("n", [0, -5])
def test_resample_count_must_be_positive(n):
    with pytest.raises(ValueError, match="positive integer"):
        randomization_test([0, 1], [1, 1], n=n)


def test_paired_test_dispatches_by_name_and_rejects_unknown_ones():
    from ragtune.evaluate.significance import paired_test, t_test

    a, b = [0.0, 0.2, 0.4, 0.1], [0.3, 0.2, 0.9, 0.5]
    assert paired_test("randomization", a, b, n=500, seed=2) == randomization_test(a, b, n=500, seed=2)
    assert paired_test("bootstrap", a, b, n=500, seed=2) == bootstrap_test(a, b, n=500, seed=2)
    assert paired_test("t-test", a, b) == t_test(a, b)
    with pytest.raises(ValueError, match="unknown test 'wilcoxon'; choose one of randomization, bootstrap, t-test"):
        paired_test("wilcoxon", a, b)


def test_corrections_by_name():
    from ragtune.evaluate.significance import correct

    p = [0.01, 0.04, 0.03, 0.5]
    assert correct(p, "holm") == holm(p)
    assert correct(p, "bonferroni") == pytest.approx([0.04, 0.16, 0.12, 1.0])
    assert correct(p, "none") == p
    with pytest.raises(ValueError, match="unknown correction 'fdr'; choose one of holm, bonferroni, none"):
        correct(p, "fdr")


def test_bootstrap_ci_brackets_the_mean_and_narrows_with_more_data():
    from ragtune.evaluate.significance import bootstrap_ci

    rng = np.random.default_rng(1)
    small, large = rng.uniform(size=20), rng.uniform(size=500)
    lo_s, hi_s = bootstrap_ci(small, n=2000, seed=0)
    lo_l, hi_l = bootstrap_ci(large, n=2000, seed=0)
    assert lo_s < small.mean() < hi_s and lo_l < large.mean() < hi_l
    assert hi_l - lo_l < hi_s - lo_s
    assert bootstrap_ci([0.5, 0.5, 0.5]) == (0.5, 0.5)
    with pytest.raises(ValueError, match="confidence must be between 0 and 1"):
        bootstrap_ci([0.1, 0.2], confidence=95)


def test_power_helpers_refuse_to_extrapolate_from_nothing():
    from ragtune.evaluate.significance import detectable_effect, questions_needed

    assert questions_needed(0.0, 0.05) is None  # no question changed
    assert questions_needed(0.3, 0.0) is None  # no difference to detect
    assert detectable_effect(0.3, 1) is None
    assert questions_needed(0.3, 0.05) > questions_needed(0.3, 0.1) > questions_needed(0.1, 0.1)
    with pytest.raises(ValueError, match="power must be between 0 and 1"):
        detectable_effect(0.3, 10, power=80)
