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
