import math

import numpy as np

from ragtune.evaluate.metrics import hit_at_k, ndcg_at_k, precision_at_k, recall_at_k, reciprocal_rank

INF = np.inf


def test_recall_hit_and_rr_by_hand():
    first = np.array([2.0, 7.0, INF])
    assert recall_at_k(first, 5) == 1 / 3
    assert recall_at_k(first, 10) == 2 / 3
    assert hit_at_k(first, 1) == 0.0 and hit_at_k(first, 2) == 1.0
    assert reciprocal_rank(first) == 0.5
    assert reciprocal_rank(np.array([INF])) == 0.0


def test_precision_divides_by_k_even_for_short_lists():
    assert precision_at_k(np.array([True, False, True]), 5) == 2 / 5


def test_ndcg_by_hand():
    # relevant anchors found at ranks 1 and 3, one missed; grades 1
    first = np.array([1.0, 3.0, INF])
    grades = np.ones(3)
    dcg = 1 + 1 / math.log2(4)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert math.isclose(ndcg_at_k(first, grades, 10), dcg / idcg)
    # graded: the grade-2 anchor at rank 2, grade-1 at rank 1
    first = np.array([2.0, 1.0])
    grades = np.array([2.0, 1.0])
    assert math.isclose(ndcg_at_k(first, grades, 10), (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))


def test_ndcg_capped_when_one_chunk_covers_two_anchors():
    assert ndcg_at_k(np.array([1.0, 1.0]), np.ones(2), 10) == 1.0


def test_inputs_not_mutated():
    first = np.array([3.0, 1.0, INF])
    grades = np.array([1.0, 2.0, 1.0])
    before = (first.copy(), grades.copy())
    ndcg_at_k(first, grades, 2)
    recall_at_k(first, 2)
    assert np.array_equal(first, before[0]) and np.array_equal(grades, before[1])


def test_empty_relevant_set_is_nan():
    assert math.isnan(recall_at_k(np.array([]), 5))
    assert math.isnan(ndcg_at_k(np.array([]), np.array([]), 10))


def test_no_relevant_anchor_gives_nan_not_zero():
    empty = np.array([], dtype=np.float64)
    for value in (recall_at_k(empty, 5), hit_at_k(empty, 5), reciprocal_rank(empty), ndcg_at_k(empty, empty, 10)):
        assert math.isnan(value)


def test_single_anchor_cut_offs_are_inclusive():
    one = np.array([10.0])
    assert hit_at_k(one, 10) == 1.0 and hit_at_k(one, 9) == 0.0
    assert recall_at_k(one, 10) == 1.0 and recall_at_k(one, 9) == 0.0
    assert math.isclose(ndcg_at_k(one, np.ones(1), 10), 1 / math.log2(11))  # rank 10 counts, discounted
    assert ndcg_at_k(np.array([12.0]), np.ones(1), 10) == 0.0  # found, but below the cut-off


def test_ndcg_with_small_and_zero_grades():
    # one anchor of grade 0.5 at rank 1: ideal, though IDCG is below 1
    assert ndcg_at_k(np.array([1.0]), np.array([0.5]), 10) == 1.0
    # grades all zero: nothing to gain, the score is 0 (not NaN, not 1)
    assert ndcg_at_k(np.array([1.0, 2.0]), np.zeros(2), 10) == 0.0
