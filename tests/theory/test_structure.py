"""Structures: valid partitions, square windows are local, structure-group elements preserve S."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from patchassoc.theory.structure import (Structure, adjusted_rand_index, blocks, random_partition,
                              within_set_mass, windows)


@given(L=st.integers(1, 6), C=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_random_partition_is_a_partition_and_symmetries_preserve_it(L, C, seed):
    rng = np.random.default_rng(seed)
    S = random_partition(L, C, rng)
    assert sorted(S.sets.ravel().tolist()) == list(range(L * C))
    assert np.all(np.bincount(S.labels) == C)
    pi = S.random_symmetry(rng)
    assert sorted(pi.tolist()) == list(range(S.D))
    # same-set pairs map to same-set pairs: B[pi[i], pi[j]] == B[i, j]
    B = S.same_set()
    assert np.array_equal(B[np.ix_(pi, pi)], B)


def test_windows_are_square_neighbourhoods():
    S = windows(4, 4)  # 4x4 grid, 2x2 windows
    assert S.sets.tolist() == [[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 12, 13], [10, 11, 14, 15]]
    S = windows(4, 9)  # 6x6 grid, 3x3 windows
    r, c = np.divmod(S.sets[3], 6)
    assert r.max() - r.min() == 2 and c.max() - c.min() == 2


@pytest.mark.parametrize("L,C", [(2, 4), (3, 3), (5, 4)])
def test_windows_reject_impossible_grids(L, C):
    with pytest.raises(ValueError, match="windows need"):
        windows(L, C)


def test_structure_validation():
    with pytest.raises(ValueError, match="partition"):
        Structure(np.array([[0, 1], [1, 2]]))
    with pytest.raises(ValueError, match="integer"):
        Structure(np.array([[0.0, 1.0]]))


def test_within_set_mass():
    S = blocks(2, 2)
    assert np.allclose(within_set_mass(np.full((4, 4), 0.25), S), 0.5)
    assert np.allclose(within_set_mass(np.eye(4), S), 1.0)
    A = S.same_set() / 2
    assert np.allclose(within_set_mass(A, S), 1.0)


def test_adjusted_rand_index():
    a = np.array([0, 0, 1, 1, 2, 2])
    assert adjusted_rand_index(a, np.array([5, 5, 3, 3, 4, 4])) == 1.0
    assert adjusted_rand_index(a, np.array([0, 1, 0, 1, 0, 1])) < 0.1


def _labelings():
    """Pairs of labelings of n items: random, with few or many labels, plus the degenerate ones
    (one cluster, all singletons, identical, n = 1)."""
    def pair(n):
        k = st.integers(1, max(1, n))
        labels = lambda k: st.lists(st.integers(0, k - 1), min_size=n, max_size=n)  # noqa: E731
        special = st.sampled_from([[0] * n, list(range(n)), [7 - 2 * i for i in range(n)]])
        one = st.one_of(k.flatmap(labels), special)
        return st.tuples(one, one)
    return st.integers(1, 300).flatmap(pair)


@given(_labelings())
def test_adjusted_rand_index_matches_scikit_learn(pair):
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    a, b = (np.asarray(x) for x in pair)
    expected = sklearn_metrics.adjusted_rand_score(a, b)
    assert abs(adjusted_rand_index(a, b) - expected) <= 1e-12
    assert abs(adjusted_rand_index(a, a) - 1.0) <= 1e-12


@pytest.mark.parametrize("a,b", [
    ([0] * 9, [0] * 9),                 # one cluster each
    (list(range(9)), list(range(9))),   # singletons each
    ([0] * 9, list(range(9))),          # one cluster against singletons
    (list(range(9)), [0] * 9),
    ([0, 0, 0, 1, 1, 1], [0] * 6),
    ([3], [5]),                         # one item
])
def test_adjusted_rand_index_degenerate_cases_match_scikit_learn(a, b):
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    assert abs(adjusted_rand_index(np.array(a), np.array(b))
               - sklearn_metrics.adjusted_rand_score(a, b)) <= 1e-12


def test_ari_of_two_empty_labelings_is_one_as_in_sklearn():
    from sklearn.metrics import adjusted_rand_score
    empty = np.array([], dtype=int)
    assert adjusted_rand_index(empty, empty) == adjusted_rand_score(empty, empty) == 1.0
