"""Property suite, sampled-data engine: the lemmas of SPEC section 4, checked numerically on the
Numba kernels over random structures, sizes, parameters and data (hypothesis, >= 200 examples
each; tiny sizes so the module runs in seconds).

- L4: grad_Q R_N(Pi Q Pi^T) on the permuted sample = Pi grad_Q R_N(Q) Pi^T (and grad_v, the risk
  and the error unchanged) for random Pi in the structure group G, at tiny sizes and beyond the
  brute-force oracle (D > 12), where the population cannot be enumerated: common random numbers
  (the same draws, relabelled by Pi) make the two sampled risks equal up to rounding;
- L1: the kernels' softmax backprop is the softmax Jacobian (explicit formula and finite
  differences of the kernels' softmax);
- L2: every row of grad_Q sums to zero, so a gradient step conserves the row sums of Q;
- L7: f(-X) = -f(X) and the label symmetry (X, y) -> (-X, -y) on the kernels;
- L8: grad_v is parallel to w* on a noiseless (sigma = 0) sample, for any v.

Data are drawn from an explicit generator seeded by hypothesis (no global seeding).
"""
from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from patchassoc.simulations.engines import sampled_kernels as kernels
from patchassoc.simulations.engines.sampler import sample, unit_vector
from patchassoc.theory import model
from patchassoc.theory.structure import random_partition

from tests.profiles import examples
from tests.scales import scales, within
from tests.tolerances import (EQUIVARIANCE_REL, FD_STEP, GRAD_FD_REL, GRAD_Q_ROW_SUM_REL,
                              KERNEL_VS_NUMPY_REL, ODD_SYMMETRY_REL, PARALLEL_REL,
                              ROW_SUM_DRIFT_REL, SOFTMAX_JACOBIAN_REL)

#: Examples per property (the issue asks for at least 200, whatever the loaded profile).
EXAMPLES = examples(200)

SEEDS = st.integers(0, 2**32 - 1)
SIZES = st.integers(1, 3)
PS = st.sampled_from([3, 5])
NUS = st.floats(0.0, 1.0)


def _problem(seed: int, L: int, C: int, d: int, n: int, q: float, sigma: float,
             scale: float, orthogonal: bool = False):
    """A random structure, feature, sample, v and Q, all drawn from one seeded generator."""
    rng = np.random.default_rng(seed)
    structure = random_partition(L, C, rng)
    w = unit_vector(d, rng)
    data = sample(n, w, structure, q, sigma, rng, orthogonal)
    v = scale * rng.standard_normal(d) / np.sqrt(d)
    Q = 2.0 * rng.standard_normal((structure.D, structure.D))
    return rng, structure, w, data, v, Q


# -- L4: equivariance of the sampled risk and gradients ----------------------------------------
@settings(max_examples=EXAMPLES)
@given(seed=SEEDS, L=SIZES, C=SIZES, d=st.integers(1, 5), n=st.integers(1, 12), p=PS, nu=NUS,
       q=st.floats(0.0, 1.0), sigma=st.floats(0.0, 1.0), scale=st.floats(0.1, 1.5))
def test_gradients_are_equivariant(seed, L, C, d, n, p, nu, q, sigma, scale):
    _check_equivariance(seed, L, C, d, n, p, nu, q, sigma, scale)


#: (L, C) beyond the brute-force oracle (D > 12, tests/properties/test_population_properties.py
#: checks D <= 12 on the population): there the sampled risk, on common random numbers.
LARGE = [(L, C) for L in range(2, 7) for C in range(2, 7) if L * C > 12]


@settings(max_examples=examples(40))
@given(seed=SEEDS, LC=st.sampled_from(LARGE), d=st.integers(1, 4), n=st.integers(1, 6), p=PS,
       nu=NUS, q=st.floats(0.0, 1.0), sigma=st.floats(0.0, 1.0), scale=st.floats(0.1, 1.5))
def test_sampled_risk_is_invariant_beyond_the_oracle(seed, LC, d, n, p, nu, q, sigma, scale):
    # common random numbers: the risk at Pi Q Pi^T on the draws relabelled by Pi (a draw of the
    # same law, L4's third step) against the risk at Q on the draws themselves
    _check_equivariance(seed, *LC, d, n, p, nu, q, sigma, scale)


def _check_equivariance(seed, L, C, d, n, p, nu, q, sigma, scale):
    """R_N(Pi Q Pi^T) on the permuted sample = R_N(Q), the error equal, grad_Q equivariant and
    grad_v unchanged, for a random Pi in G: rounding x the size of the summed terms."""
    rng, S, w, data, v, Q = _problem(seed, L, C, d, n, q, sigma, scale)
    pi = S.random_symmetry(rng)
    inv = np.argsort(pi)
    # the permuted image: patch j moves to pi[j]; logits Pi Q Pi^T: Q[i, j] moves to (pi i, pi j)
    Xp = data.X[:, inv, :]
    Qp = Q[np.ix_(inv, inv)]
    # pi preserves the structure: the permuted image's signal patches fill one set of S
    sp_ = data.s[:, inv]
    lp = S.labels[pi[S.sets[data.lstar, 0]]]
    assert np.all(sp_[np.arange(n)[:, None], S.sets[lp]] == data.y[:, None])
    out = kernels.loss_and_grad(data.X, data.y, v, kernels.softmax_rows(Q), p, nu)
    outp = kernels.loss_and_grad(Xp, data.y, v, kernels.softmax_rows(Qp), p, nu)
    moved = np.empty_like(out["grad_Q"])
    moved[np.ix_(pi, pi)] = out["grad_Q"]                    # Pi grad_Q Pi^T
    # rounding of the summed terms (tests/scales.py), the same for both orders of the sums
    sc = scales(Xp, data.y, v, kernels.softmax_rows(Qp), p, nu)
    assert within(outp["grad_Q"] - moved, sc.grad_Q, EQUIVARIANCE_REL)
    assert within(outp["grad_v"] - out["grad_v"], sc.grad_v, EQUIVARIANCE_REL)
    assert abs(outp["loss"] - out["loss"]) <= EQUIVARIANCE_REL * max(out["loss"], 1e-300)
    assert outp["error"] == out["error"]


# -- L1: the softmax Jacobian on the kernels ---------------------------------------------------
@settings(max_examples=EXAMPLES)
@given(seed=SEEDS, D=st.integers(1, 9), spread=st.floats(0.0, 5.0))
def test_softmax_backprop_is_the_jacobian(seed, D, spread):
    rng = np.random.default_rng(seed)
    Q = spread * rng.standard_normal((D, D))
    g = rng.standard_normal((D, D))
    A = kernels.softmax_rows(Q)
    back = kernels.grad_logits(A, g)
    for i in range(D):
        J = np.diag(A[i]) - np.outer(A[i], A[i])          # da_i/dq_k = a_i (delta_ik - a_k)
        expected = J.T @ g[i]
        scale = max(np.sum(np.abs(A[i] * g[i])), 1e-300)
        assert np.max(np.abs(back[i] - expected)) <= SOFTMAX_JACOBIAN_REL * scale
        # the Jacobian itself, by central differences of the kernels' softmax
        fd = np.empty((D, D))
        for k in range(D):
            e = np.zeros((D, D))
            e[i, k] = FD_STEP
            fd[:, k] = (kernels.softmax_rows(Q + e)[i] - kernels.softmax_rows(Q - e)[i]) \
                / (2 * FD_STEP)
        assert np.max(np.abs(fd - J)) <= GRAD_FD_REL * max(np.max(np.abs(J)), 1e-3)


# -- L2: zero row sums of grad_Q, conserved row sums of Q --------------------------------------
@settings(max_examples=EXAMPLES)
@given(seed=SEEDS, L=SIZES, C=SIZES, d=st.integers(1, 5), n=st.integers(1, 12), p=PS, nu=NUS,
       q=st.floats(0.0, 1.0), sigma=st.floats(0.0, 1.0), scale=st.floats(0.1, 1.5),
       eta=st.floats(0.01, 100.0))
def test_grad_Q_rows_sum_to_zero(seed, L, C, d, n, p, nu, q, sigma, scale, eta):
    _, S, w, data, v, Q = _problem(seed, L, C, d, n, q, sigma, scale)
    A = kernels.softmax_rows(Q)
    out = kernels.loss_and_grad(data.X, data.y, v, A, p, nu)
    gQ = out["grad_Q"]
    # sum_j grad_Q_ij cancels terms A_ij (dA_ij - <A_i, dA_i>) of size grad_Q_abs (tests/scales.py)
    row_scale = np.sum(scales(data.X, data.y, v, A, p, nu).grad_Q, axis=1)
    assert within(gQ.sum(axis=1), row_scale, GRAD_Q_ROW_SUM_REL)
    Q1 = Q - eta * gQ
    drift = np.max(np.abs(Q1.sum(axis=1) - Q.sum(axis=1)))
    assert drift <= ROW_SUM_DRIFT_REL * max(1.0, np.max(np.abs(Q.sum(axis=1))),
                                            eta * np.max(np.abs(gQ)) * S.D)


# -- L7: odd symmetry and the label symmetry ---------------------------------------------------
@settings(max_examples=EXAMPLES)
@given(seed=SEEDS, L=SIZES, C=SIZES, d=st.integers(1, 5), n=st.integers(1, 12), p=PS, nu=NUS,
       q=st.floats(0.0, 1.0), sigma=st.floats(0.0, 1.0), scale=st.floats(0.1, 1.5))
def test_odd_symmetry(seed, L, C, d, n, p, nu, q, sigma, scale):
    _, S, w, data, v, Q = _problem(seed, L, C, d, n, q, sigma, scale)
    A = kernels.softmax_rows(Q)
    m = kernels.margins(data.X, data.y, v, A, p, nu)
    sc = scales(data.X, data.y, v, A, p, nu)
    # f(-X) = -f(X): with the same label the margin changes sign
    assert within(kernels.margins(-data.X, data.y, v, A, p, nu) + m, sc.margin, ODD_SYMMETRY_REL)
    # (X, y) -> (-X, -y): same margins, same loss, error and gradients
    assert within(kernels.margins(-data.X, -data.y, v, A, p, nu) - m, sc.margin, ODD_SYMMETRY_REL)
    out = kernels.loss_and_grad(data.X, data.y, v, A, p, nu)
    flip = kernels.loss_and_grad(-data.X, -data.y, v, A, p, nu)
    # the loss is a mean of positive terms: no cancellation, so relative to itself is rounding
    assert abs(flip["loss"] - out["loss"]) <= ODD_SYMMETRY_REL * out["loss"]
    assert flip["error"] == out["error"]
    for key in ("grad_v", "grad_A", "grad_Q"):
        assert within(flip[key] - out[key], getattr(sc, key), ODD_SYMMETRY_REL)


# -- L8: grad_v parallel to w* when sigma = 0 --------------------------------------------------
@settings(max_examples=EXAMPLES)
@given(seed=SEEDS, L=SIZES, C=SIZES, d=st.integers(1, 6), n=st.integers(1, 12), p=PS, nu=NUS,
       q=st.floats(0.0, 1.0), scale=st.floats(0.1, 1.5))
# issue 10: |grad_v| = 2.9e-13 from cancelling terms; the old bound, relative to |grad_v|, failed
@example(seed=1621, L=2, C=1, d=5, n=2, p=3, nu=0.0, q=0.25, scale=1.0)
def test_grad_v_parallel_to_w_star_without_noise(seed, L, C, d, n, p, nu, q, scale):
    _, S, w, data, v, Q = _problem(seed, L, C, d, n, q, 0.0, scale)
    A = kernels.softmax_rows(Q)
    out = kernels.loss_and_grad(data.X, data.y, v, A, p, nu)
    g = out["grad_v"]
    residual = g - (g @ w) * w
    # rounding of grad_v = sum G_ni A_ij X_nj is relative to its terms, not to |grad_v|, which
    # cancels to ~0 in the regression example (tests/scales.py)
    bound = np.linalg.norm(scales(data.X, data.y, v, A, p, nu).grad_v)
    assert np.linalg.norm(residual) <= PARALLEL_REL * bound


@settings(max_examples=EXAMPLES)
@given(seed=SEEDS, L=SIZES, C=SIZES, d=st.integers(2, 6), n=st.integers(1, 12), p=PS, nu=NUS,
       q=st.floats(0.0, 1.0), sigma=st.floats(0.05, 1.0), scale=st.floats(0.1, 1.5))
def test_orthogonal_part_of_grad_v_is_the_projected_noise(seed, L, C, d, n, p, nu, q, sigma,
                                                          scale):
    # control for L8: with sigma > 0 the sampled gradient has a part orthogonal to w*, and it is
    # exactly sum_{n,j} (G A)_nj (I - w* w*^T) X_nj (the noise projected off w*); the parallel
    # property above is the special case where that projection vanishes.
    _, S, w, data, v, Q = _problem(seed, L, C, d, n, q, sigma, scale)
    A = kernels.softmax_rows(Q)
    g = kernels.loss_and_grad(data.X, data.y, v, A, p, nu)["grad_v"]
    U, z, f = model.forward(data.X, v, A, p, nu)
    G = (data.y * model.neg_sigmoid_neg(data.y * f) / n)[:, None] * model.act_prime(z, p, nu)
    X_perp = data.X - (data.X @ w)[..., None] * w
    expected = np.einsum("nj,njk->k", G @ A, X_perp)
    residual = g - (g @ w) * w
    # |residual - expected| is rounding of the sums behind grad_v (tests/scales.py)
    bound = np.linalg.norm(scales(data.X, data.y, v, A, p, nu).grad_v)
    assert np.max(np.abs(residual - expected)) <= KERNEL_VS_NUMPY_REL * bound
