"""The exact population engine against the brute-force oracle, finite differences, its own
truncation bounds, and the symmetry of the population risk (SPEC sections 4-5)."""
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from patchassoc.simulations.engines.population import (bruteforce_risk, count_configurations,
                                                       evaluate)
from patchassoc.simulations.engines.population.exact import (
    TIE_RTOL, bayes_error, evaluate_gram, plan, tail_moments)
from patchassoc.theory.invariant import (gram_to_logits, invariant_logits,
                              project_invariant)
from patchassoc.theory.structure import blocks, random_partition

from tests.profiles import examples
from tests.reference_population import (ENGINE_VS_BRUTEFORCE_FMAX, ENGINE_VS_BRUTEFORCE_PER_F,
                                        ENGINE_VS_BRUTEFORCE_REL, INVARIANCE_REL,
                                        ORACLE_VS_NUMPY_REL, POP_FD_MIN_GRAD_OVER_RISK,
                                        POP_FD_STEP, POP_GRAD_FD_REL, POP_GRAD_VS_ORACLE_REL,
                                        PROBABILITY_ABS, TINY_ABS, naive_population,
                                        uniform_gradient_bound, unpatched_uniform_gradient)
from tests.tolerances import GRAD_ROUNDING_REL

# q in {0, 1} or in [1e-6, 1]: tinier q puts the probabilities in the subnormal range, where
# products lose their relative precision whatever the summation
QS = st.one_of(st.sampled_from([0.0, 1.0]), st.floats(1e-6, 1.0))

# (L, C) with D <= 12 whose oracle is cheap (at most 3^8 noise patterns per l*)
SMALL = [(L, C) for C in range(1, 13) for L in range(1, 13)
         if L * C <= 12 and (L - 1) * C <= 8]


def _rel(x, y):
    return abs(x - y) / max(abs(x), abs(y), 1e-300)


def _close(x, y, rel):
    return abs(x - y) <= rel * max(abs(x), abs(y)) + TINY_ABS


def _fmax(D, p, nu, alpha):
    """Largest possible |f| = D act(|alpha|)."""
    return D * (abs(alpha) ** p + nu * abs(alpha))


def _clip_alpha(alpha, D, p, nu, fmax):
    """alpha shrunk (same sign) so that D act(|alpha|) <= fmax."""
    lo, hi = 0.0, abs(alpha)
    if _fmax(D, p, nu, hi) <= fmax:
        return alpha
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _fmax(D, p, nu, mid) <= fmax else (lo, mid)
    return math.copysign(lo, alpha)


def _compare(LC, q, p, nu, alpha, a, b, c, seed, rel):
    L, C = LC
    S = random_partition(L, C, np.random.default_rng(seed))
    ev = evaluate(L, C, q, p, nu, alpha, a, b, c)
    bf = bruteforce_risk(invariant_logits(a, b, c, S), S, q, p, nu, alpha)
    assert ev.complete and ev.bound == 0.0
    assert _close(ev.risk, bf.risk, rel), (ev.risk, bf.risk)
    assert _close(ev.error, bf.error, rel), (ev.error, bf.error)
    assert _close(ev.bayes_error, bf.bayes_error, ENGINE_VS_BRUTEFORCE_REL)
    assert ev.configurations == count_configurations(L, C) or q in (0.0, 1.0)


@settings(max_examples=examples(60))
@given(LC=st.sampled_from(SMALL), q=QS, p=st.sampled_from([3, 5, 7]),
       nu=st.floats(0, 0.5), alpha=st.floats(-3, 3), a=st.floats(-4, 4), b=st.floats(-4, 4),
       c=st.floats(-4, 4), seed=st.integers(0, 2**31))
def test_engine_matches_bruteforce(LC, q, p, nu, alpha, a, b, c, seed):
    """Acceptance: <= 1e-12 relative, for margins |f| <= ENGINE_VS_BRUTEFORCE_FMAX."""
    alpha = _clip_alpha(alpha, LC[0] * LC[1], p, nu, ENGINE_VS_BRUTEFORCE_FMAX)
    _compare(LC, q, p, nu, alpha, a, b, c, seed, ENGINE_VS_BRUTEFORCE_REL)


@settings(max_examples=examples(30))
@given(LC=st.sampled_from(SMALL), q=QS, p=st.sampled_from([3, 5, 7]),
       nu=st.floats(0, 0.5), alpha=st.floats(-3, 3), a=st.floats(-4, 4), b=st.floats(-4, 4),
       c=st.floats(-4, 4), seed=st.integers(0, 2**31))
def test_engine_matches_bruteforce_large_margins(LC, q, p, nu, alpha, a, b, c, seed):
    """Any alpha: the relative agreement scales with the conditioning |f| of exp(-f)."""
    fmax = _fmax(LC[0] * LC[1], p, nu, alpha)
    rel = max(ENGINE_VS_BRUTEFORCE_REL, ENGINE_VS_BRUTEFORCE_PER_F * fmax)
    _compare(LC, q, p, nu, alpha, a, b, c, seed, rel)


@pytest.mark.parametrize("L,C", [(4, 3), (3, 4), (6, 2), (2, 6), (12, 1)])
def test_engine_matches_bruteforce_at_D12(L, C):
    S = random_partition(L, C, np.random.default_rng(L * 100 + C))
    for alpha, a, b, c in [(1.3, 2.0, 1.0, -0.5), (-0.7, 0.1, 0.4, 0.2), (2.5, 4.0, 3.5, -1.0)]:
        ev = evaluate(L, C, 0.3, 5, 0.03, alpha, a, b, c)
        bf = bruteforce_risk(invariant_logits(a, b, c, S), S, 0.3, 5, 0.03, alpha)
        assert _close(ev.risk, bf.risk, ENGINE_VS_BRUTEFORCE_REL)
        assert _close(ev.error, bf.error, ENGINE_VS_BRUTEFORCE_REL)
        assert _close(ev.bayes_error, bf.bayes_error, ENGINE_VS_BRUTEFORCE_REL)


@settings(max_examples=examples(15))
@given(LC=st.sampled_from([(1, 3), (2, 2), (2, 3), (3, 2), (3, 1)]), q=QS,
       p=st.sampled_from([3, 5]), nu=st.floats(0, 0.5), alpha=st.floats(-2, 2),
       seed=st.integers(0, 2**31))
def test_oracle_matches_numpy_reference(LC, q, p, nu, alpha, seed):
    L, C = LC
    rng = np.random.default_rng(seed)
    S = random_partition(L, C, rng)
    Q = rng.normal(size=(S.D, S.D))
    bf = bruteforce_risk(Q, S, q, p, nu, alpha)
    risk, err, bayes = naive_population(Q, S, q, p, nu, alpha, TIE_RTOL)
    assert _close(bf.risk, risk, ORACLE_VS_NUMPY_REL)
    assert _close(bf.error, err, ORACLE_VS_NUMPY_REL)
    assert _close(bf.bayes_error, bayes, ORACLE_VS_NUMPY_REL)
    assert abs(bf.probability - 1.0) <= PROBABILITY_ABS


@pytest.mark.parametrize("L,C,seed", [(3, 2, 0), (2, 3, 1), (3, 3, 2), (4, 2, 3), (2, 4, 4)])
def test_bruteforce_invariant_under_structure_group(L, C, seed):
    rng = np.random.default_rng(seed)
    S = random_partition(L, C, rng)
    Q = 1.5 * rng.normal(size=(S.D, S.D))  # not invariant
    pi = S.random_symmetry(rng)
    Pi = np.zeros((S.D, S.D))
    Pi[pi, np.arange(S.D)] = 1.0
    QP = Pi @ Q @ Pi.T
    assert np.allclose(QP[np.ix_(pi, pi)], Q)
    assert not np.allclose(QP, Q)
    for alpha in (0.8, -1.7):
        r1 = bruteforce_risk(Q, S, 0.35, 5, 0.03, alpha, grad=True)
        r2 = bruteforce_risk(QP, S, 0.35, 5, 0.03, alpha, grad=True)
        assert _close(r1.risk, r2.risk, INVARIANCE_REL)
        assert _close(r1.error, r2.error, INVARIANCE_REL)
        # and the gradient is equivariant: grad(Pi Q Pi^T) = Pi grad(Q) Pi^T
        # (rounding x the size of the summed terms: the oracle's sums of |terms| behind grad_A,
        # carried through the softmax backpropagation)
        A = np.exp(Q - Q.max(axis=1, keepdims=True))
        A /= A.sum(axis=1, keepdims=True)
        terms = A * (r1.grad_A_abs + np.sum(A * r1.grad_A_abs, axis=1, keepdims=True))
        assert np.allclose(r2.grad_Q, Pi @ r1.grad_Q @ Pi.T, rtol=0,
                           atol=INVARIANCE_REL * terms.max())


@pytest.mark.parametrize("L,C", [(3, 2), (2, 3), (3, 3), (4, 2), (1, 3), (3, 1)])
def test_gradient_matches_full_oracle_gradient(L, C):
    """The per-entry convention: the full D x D gradient of an invariant point is invariant,
    with entries (dR/da)/D, (dR/db)/(D(C-1)), (dR/dc)/(D(D-C))."""
    S = random_partition(L, C, np.random.default_rng(7))
    D = S.D
    alpha, a, b, c = 1.1, 1.5, 0.7, -0.4
    ev = evaluate(L, C, 0.3, 5, 0.03, alpha, a, b, c)
    bf = bruteforce_risk(invariant_logits(a, b, c, S), S, 0.3, 5, 0.03, alpha, grad=True)
    # rounding x the size of the summed terms (issue 10): the oracle's sums of |terms| of
    # grad_A, carried through grad_Q = A o (grad_A - rowsum(A o grad_A))
    A = np.exp(invariant_logits(a, b, c, S))
    A /= A.sum(axis=1, keepdims=True)
    scale = np.max(A * (bf.grad_A_abs + np.sum(A * bf.grad_A_abs, axis=1, keepdims=True)))
    B = S.same_set().astype(bool)
    eye = np.eye(D, dtype=bool)
    G = bf.grad_Q
    expected = np.where(eye, ev.grad["a"] / D,
                        np.where(B, ev.grad["b"] / max(1, D * (C - 1)),
                                 ev.grad["c"] / max(1, D * (D - C))))
    assert np.max(np.abs(G - expected)) <= POP_GRAD_VS_ORACLE_REL * scale
    assert abs(ev.grad["alpha"] - bf.grad_alpha) <= POP_GRAD_VS_ORACLE_REL * bf.grad_alpha_abs
    # the per-entry gradient has zero row sums (softmax shift invariance)
    assert np.max(np.abs(G.sum(axis=1))) <= POP_GRAD_VS_ORACLE_REL * scale * D


def _fd(fun, x, h):
    """5-point central difference of fun at x, coordinate by coordinate."""
    g = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = h
        g[k] = (fun(x - 2 * e) - 8 * fun(x - e) + 8 * fun(x + e) - fun(x + 2 * e)) / (12 * h)
    return g


@settings(max_examples=examples(20))
@given(LC=st.sampled_from([(2, 2), (3, 2), (4, 4), (3, 5), (1, 4), (5, 1)]),
       q=st.floats(0.05, 0.9), p=st.sampled_from([3, 5]), nu=st.floats(0, 0.3),
       alpha=st.floats(-2, 2).filter(lambda x: abs(x) > 0.05), a=st.floats(-3, 3),
       b=st.floats(-3, 3), c=st.floats(-3, 3))
def test_gradient_matches_finite_differences(LC, q, p, nu, alpha, a, b, c):
    L, C = LC
    x0 = np.array([alpha, a, b, c])
    ev = evaluate(L, C, q, p, nu, *x0)
    g = np.array([ev.grad[k] for k in ("alpha", "a", "b", "c")])
    assume(np.max(np.abs(g)) >= POP_FD_MIN_GRAD_OVER_RISK * ev.risk)
    fd = _fd(lambda x: evaluate(L, C, q, p, nu, *x).risk, x0, POP_FD_STEP)
    assert np.max(np.abs(g - fd)) <= POP_GRAD_FD_REL * np.max(np.abs(g)), (g, fd)


@pytest.mark.parametrize("L,C,point", [(3, 3, (0.9, 1.2, 0.3, -0.2)), (4, 4, (1.4, 1.5, 0.5, 0.1)),
                                       (2, 5, (-0.6, 0.8, -0.4, 0.3))])
def test_gram_gradient_matches_finite_differences(L, C, point):
    x0 = np.array(point)
    ev = evaluate_gram(L, C, 0.3, 5, 0.03, *x0)
    g = np.array([ev.grad[k] for k in ("alpha", "x", "y", "w")])
    fd = _fd(lambda x: evaluate_gram(L, C, 0.3, 5, 0.03, *x).risk, x0, POP_FD_STEP)
    assert np.max(np.abs(g - fd)) <= POP_GRAD_FD_REL * np.max(np.abs(g)), (g, fd)
    # and (a, b, c) of P P^T built as matrices
    S = blocks(L, C)
    P = invariant_logits(*x0[1:], S)
    assert np.allclose(project_invariant(P @ P.T, S), gram_to_logits(*x0[1:], L, C))
    assert np.allclose(P @ P.T, invariant_logits(*gram_to_logits(*x0[1:], L, C), S))


@pytest.mark.parametrize("L,C,q,point", [(5, 4, 0.3, (1.2, 2.0, 1.0, 0.0)),
                                         (4, 6, 0.2, (2.0, 3.0, 2.5, -0.5)),
                                         (6, 3, 0.5, (0.7, 0.5, 0.2, 0.1))])
def test_truncation_bound_is_certified(L, C, q, point):
    full = evaluate(L, C, q, 5, 0.03, *point)
    for tol in (1e-2, 1e-4, 1e-7):
        tr = evaluate(L, C, q, 5, 0.03, *point, tol=tol)
        assert tr.bound <= tol
        assert tr.configurations == count_configurations(L, C, tr.k)
        assert 0.0 <= full.risk - tr.risk <= tr.bounds["risk"]
        assert 0.0 <= full.error - tr.error <= tr.bounds["error"] + 1e-15
        for k in ("alpha", "a", "b", "c"):
            assert abs(full.grad[k] - tr.grad[k]) <= tr.bounds[k] + 1e-15
        # the enumerated probability is exactly 1 - P(Binomial((L-1)C, q) > k)
        assert abs(tr.probability - (1.0 - tr.omitted_probability)) <= PROBABILITY_ABS
    assert full.configurations == count_configurations(L, C)


def test_tail_moments_are_exact():
    from scipy.stats import binom
    for N, q, k in [(56, 0.13, 20), (12, 0.35, 3), (30, 0.5, 29), (7, 0.0, 0), (9, 1.0, 4)]:
        t0, t1 = tail_moments(N, q, k)
        n = np.arange(k + 1, N + 1)
        pmf = binom.pmf(n, N, q)
        assert _close(t0, float(pmf.sum()), 1e-12) or t0 == pmf.sum() == 0
        assert _close(t1, float((n * pmf).sum()), 1e-12) or t1 == (n * pmf).sum() == 0


def test_bayes_error_closed_form():
    # L = 2: error = P(M- = 1) / 2 with M- the indicator that the noise set is all -1
    q, C = 0.4, 3
    assert bayes_error(2, C, q) == pytest.approx(0.5 * (q / 2) ** C, rel=1e-14)
    assert bayes_error(1, 4, 0.3) == 0.0
    assert bayes_error(4, 4, 0.0) == 0.0


def test_refusal_states_the_cost():
    with pytest.raises(ValueError, match=r"configurations \(estimated .* s\)"):
        evaluate(8, 8, 0.13, 5, 0.03, 1.0, 2.0, 1.0, 0.0)  # full enumeration: 1.2e8
    with pytest.raises(ValueError, match=r"tolerance 1e-200 .* configurations \(estimated"):
        plan(8, 8, 0.13, 5, 0.03, 1.0, 2.0, 1.0, 0.0, tol=1e-200)
    with pytest.raises(ValueError, match="configurations"):
        evaluate(4, 4, 0.3, 5, 0.03, 1.0, 2.0, 1.0, 0.0, max_configurations=100)
    with pytest.raises(ValueError, match="tol"):
        evaluate(4, 4, 0.3, 5, 0.03, 1.0, 2.0, 1.0, 0.0, tol=-1.0)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="p must be"):
        evaluate(2, 2, 0.3, 4, 0.0, 1.0, 0, 0, 0)
    with pytest.raises(ValueError, match="q must"):
        evaluate(2, 2, 1.3, 5, 0.0, 1.0, 0, 0, 0)
    with pytest.raises(ValueError, match="alpha must be finite"):
        evaluate(2, 2, 0.3, 5, 0.0, math.nan, 0, 0, 0)
    S = blocks(2, 2)
    with pytest.raises(ValueError, match="shape"):
        bruteforce_risk(np.zeros((3, 3)), S, 0.3, 5, 0.0, 1.0)


def test_uniform_attention_is_a_fixed_point():
    """At a = b = c the engine's unpatched gradient in (a, b, c) (the chain rule on its raw
    (gP, gQ, gR); ``evaluate`` itself returns exactly 0 there) vanishes up to rounding x the
    size of the summed terms (the oracle's sums of |terms|); 1e-3 away from uniform it exceeds
    that bound by orders of magnitude, so the check can fail."""
    L, C, q, p, nu, alpha, level = 3, 3, 0.35, 5, 0.03, 2.0, 0.7
    S = random_partition(L, C, np.random.default_rng(5))
    bf = bruteforce_risk(invariant_logits(level, level, level, S), S, q, p, nu, alpha, grad=True)
    ev = evaluate(L, C, q, p, nu, alpha, level, level, level)
    bound = uniform_gradient_bound(ev, bf, S, level, GRAD_ROUNDING_REL, TINY_ABS)
    raw = unpatched_uniform_gradient(ev, level, L, C)
    assert np.all(np.abs(raw) <= bound), (raw, bound)
    near = evaluate(L, C, q, p, nu, alpha, level, level + 1e-3, level)
    g_near = np.array([near.grad[k] for k in "abc"])
    assert np.max(np.abs(g_near)) > 1e6 * np.max(bound), (g_near, bound)
