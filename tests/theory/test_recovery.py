"""Structure recovery from attention: exact on associated attention, fails on uninformative A."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from patchassoc.theory.model import softmax_rows
from patchassoc.theory.recovery import recover_spectral, recover_top_c, recovery_report
from patchassoc.theory.structure import adjusted_rand_index, random_partition


@given(L=st.integers(2, 6), C=st.integers(2, 5), seed=st.integers(0, 2**32 - 1),
       lam=st.floats(1.0, 8.0), frac=st.floats(0.0, 0.49))
def test_associated_attention_is_recovered_exactly(L, C, seed, lam, frac):
    # bounded perturbations below half the within/across logit gap keep every within-set weight
    # above every across-set weight, so both methods must return S
    rng = np.random.default_rng(seed)
    S = random_partition(L, C, rng)
    Q = lam * S.same_set() + frac * lam * rng.uniform(-1, 1, (S.D, S.D))
    A = softmax_rows(Q)
    assert adjusted_rand_index(recover_top_c(A, C), S.labels) == 1.0
    assert adjusted_rand_index(recover_spectral(A, L, seed=seed % 1000), S.labels) == 1.0


def test_identity_attention_recovers_nothing():
    rng = np.random.default_rng(0)
    S = random_partition(4, 4, rng)
    A = softmax_rows(2.0 * np.eye(16))
    rep = recovery_report(A, S)
    assert not rep["exact_top_c"] and rep["ari_top_c"] < 0.2


def test_recovery_rejects_bad_input():
    with pytest.raises(ValueError, match="square"):
        recover_top_c(np.ones((2, 3)), 1)
    with pytest.raises(ValueError, match="C must lie"):
        recover_top_c(np.eye(3), 4)
