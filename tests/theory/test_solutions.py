"""The explicit solutions of patchassoc.theory.solutions: patterns, scaling, association metrics and the
closed forms (sign-of-sum error, block-limit threshold), against direct computations."""
import itertools
import math

import numpy as np
import pytest

from patchassoc.theory import solutions as th
from patchassoc.theory.invariant import invariant_logits
from patchassoc.theory.model import act, softmax_rows
from patchassoc.theory.structure import blocks, random_partition

# Tolerances of this module (named by the quantity they bound).
#: Closed-form probabilities vs plain enumeration (sums of <= 3^8 terms).
CLOSED_FORM_REL = 1e-12
#: Attention of the hard limit at lambda = 40 (e^-40 ~ 4e-18 leaks off the pattern).
HARD_LIMIT_ABS = 1e-15


def _S(L, C, seed=0):
    return random_partition(L, C, np.random.default_rng(seed))


@pytest.mark.parametrize("name", th.INVARIANT)
def test_invariant_constructions_have_their_coordinates(name):
    S = _S(4, 4)
    sol = th.construct(name, S, 2.5, 1.1)
    a, b, c = sol.invariant
    assert np.array_equal(invariant_logits(a, b, c, S), sol.Q)
    assert sol.alpha == 1.1 and sol.lam == 2.5


def test_patterns_scale_linearly_and_lambda_zero_is_uniform():
    S = _S(3, 4, 1)
    for name in th.CONSTRUCTIONS:
        assert np.array_equal(th.construct(name, S, 3.0, 1.0).Q, 3.0 * th.pattern(name, S))
        A0 = th.construct(name, S, 0.0, 1.0).A
        assert np.allclose(A0, 1.0 / S.D, rtol=0, atol=1e-16)
    assert th.construct("wrong", S, 1.0, 1.0).invariant is None
    assert th.construct("shifted", S, 1.0, 1.0).invariant is None


def test_wrong_partition_takes_one_patch_per_true_set_when_L_equals_C():
    S = _S(4, 4, 3)
    W = th.wrong_partition(S)
    for members in W.sets:
        assert sorted(S.labels[members].tolist()) == [0, 1, 2, 3]
    # hard limit: within-set mass (under S) is exactly the diagonal's, 1/C = C/D here
    A = th.construct("wrong", S, 40.0, 1.0).A
    m = th.attention_metrics(A, S)
    assert abs(m["mass_min"] - 1 / 4) <= HARD_LIMIT_ABS
    assert abs(m["mass_mean"] - S.C / S.D) <= HARD_LIMIT_ABS
    assert m["other_share_min"] <= HARD_LIMIT_ABS


def test_shifted_blocks_attend_to_the_next_set_only():
    S = _S(4, 4, 5)
    A = th.construct("shifted", S, 40.0, 1.0).A
    for i in range(S.D):
        target = S.sets[(S.labels[i] + 1) % S.L]
        assert abs(A[i, target].sum() - 1.0) <= HARD_LIMIT_ABS
    assert th.attention_metrics(A, S)["mass_mean"] <= HARD_LIMIT_ABS
    # a row permutation of the block-uniform attention: same multiset of rows
    Ab = th.construct("block", S, 40.0, 1.0).A
    assert sorted(map(tuple, np.round(A, 15))) == sorted(map(tuple, np.round(Ab, 15)))
    assert abs(th.row_tv_distance(A, Ab) - 1.0) <= HARD_LIMIT_ABS


def test_attention_metrics_and_association_labels():
    L, C = 4, 4
    S = _S(L, C, 7)
    D = L * C
    share_uniform = (C - 1) / (D - 1)
    m = th.attention_metrics(th.construct("identity", S, 40.0, 1.0).A, S)
    assert m["mass_min"] >= 1 - 1e-15
    assert abs(m["other_share_min"] - share_uniform) <= 1e-12  # off-diagonal is uniform
    assert th.association(m) == "self"
    m = th.attention_metrics(th.construct("uniform", S, 5.0, 1.0).A, S)
    assert abs(m["mass_min"] - C / D) <= 1e-15 and abs(m["other_share_min"] - share_uniform) < 1e-15
    assert th.association(m) == "none"
    m = th.attention_metrics(th.construct("block", S, 40.0, 1.0).A, S)
    assert th.association(m) == "set"
    # block-uniform at lambda: mass = C e^lam / (C e^lam + D - C)
    lam = 2.0
    m = th.attention_metrics(th.construct("block", S, lam, 1.0).A, S)
    expect = C * math.exp(lam) / (C * math.exp(lam) + D - C)
    assert abs(m["mass_min"] - expect) <= 1e-15 and abs(m["mass_mean"] - expect) <= 1e-15


def test_generalization_verdicts():
    bayes = 0.001
    thr = th.generalization_threshold(bayes)
    assert thr == 2 * bayes + 0.001
    assert th.generalizes(thr, thr, bayes) == "yes"
    assert th.generalizes(thr * 1.01, thr * 1.02, bayes) == "no"
    assert th.generalizes(thr * 0.99, thr * 1.01, bayes) == "undetermined"


def _sign_of_sum_naive(L, C, q):
    """Enumerate every noise pattern of the (L-1) C noise patches: P(T < 0) + P(T = 0) / 2."""
    N = (L - 1) * C
    err = []
    for pat in itertools.product((0, 1, -1), repeat=N):
        nnz = sum(x != 0 for x in pat)
        prob = (q / 2) ** nnz * (1 - q) ** (N - nnz)
        T = C + sum(pat)
        err.append(prob if T < 0 else (prob / 2 if T == 0 else 0.0))
    return math.fsum(err)


@pytest.mark.parametrize("L,C,q", [(3, 2, 0.4), (2, 3, 0.9), (5, 2, 0.35), (3, 3, 0.7),
                                   (2, 4, 0.3), (4, 2, 1.0)])
def test_sign_of_sum_error_matches_enumeration(L, C, q):
    exact = th.sign_of_sum_error(L, C, q)
    naive = _sign_of_sum_naive(L, C, q)
    assert abs(exact - naive) <= CLOSED_FORM_REL * max(naive, 1e-300)


@pytest.mark.parametrize("lam,alpha", [(0.0, 0.7), (1.5, 1.3), (6.0, 0.2), (40.0, 2.0)])
def test_identity_and_uniform_predict_the_sign_of_the_sum(lam, alpha):
    """Fact 2 pattern by pattern: sign f = sign T for identity attention at any lambda."""
    L, C, p, nu = 3, 2, 5, 0.03
    S = blocks(L, C)
    A = th.construct("identity", S, lam, alpha).A
    s = np.array(list(itertools.product((0.0, 1.0, -1.0), repeat=S.D)))
    f = act(alpha * (s @ A.T), p, nu).sum(axis=1)
    T = s.sum(axis=1)
    scale = S.D * act(alpha, p, nu)
    assert np.all(np.sign(np.where(np.abs(f) <= 1e-12 * scale, 0.0, f)) == np.sign(T))


def test_block_bayes_alpha_is_the_root_of_the_worst_case():
    L, C, p, nu = 4, 4, 5, 0.03
    a = th.block_bayes_alpha(L, C, p, nu)
    r = (C - 1) / C
    gap = lambda x: act(x, p, nu) - (L - 1) * act(x * r, p, nu)  # noqa: E731
    assert abs(gap(a)) <= 1e-14 * act(a, p, nu)
    assert gap(0.99 * a) < 0 < gap(1.01 * a)
    # closed form at the reference: (nu ((L-1) r - 1) / (1 - (L-1) r^p))^(1/4)
    assert abs(a - (0.03 * 1.25 / (1 - 3 * 0.75 ** 5)) ** 0.25) <= 1e-15
    assert th.block_bayes_alpha(8, 8, 5, 0.03) == math.inf   # 7 (7/8)^5 > 1: never
    assert th.block_bayes_alpha(2, 4, 5, 0.03) == 0.0         # (L-1) r < 1: always
    assert th.block_bayes_alpha(1, 4, 5, 0.03) == 0.0


def test_row_tv_distance_values():
    S = _S(4, 4, 2)
    Ab = th.construct("block", S, 40.0, 1.0).A
    Ai = th.construct("identity", S, 40.0, 1.0).A
    assert abs(th.row_tv_distance(Ab, Ai) - 0.75) <= 1e-14     # (C - 1) / C
    assert th.row_tv_distance(Ab, Ab) == 0.0
    with pytest.raises(ValueError):
        th.row_tv_distance(Ab, Ab[:3])


def test_bad_input_is_refused():
    S = _S(2, 2)
    with pytest.raises(ValueError, match="lambda"):
        th.construct("block", S, -1.0, 1.0)
    with pytest.raises(ValueError, match="unknown construction"):
        th.construct("diagonal", S, 1.0, 1.0)
    with pytest.raises(ValueError, match="alpha"):
        th.construct("block", S, 1.0, float("nan"))
    assert softmax_rows(th.construct("uniform", S, 3.0, 1.0).Q).shape == (4, 4)
