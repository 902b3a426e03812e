"""Property suite, population engines: the lemmas of SPEC section 4 checked numerically on the
exact population engine (:mod:`patchassoc.simulations.population`) over random structures, sizes and
parameters (hypothesis, >= 200 examples each; tiny sizes so the module runs in seconds).

- exact engine vs brute force: the symmetry-reduced risk, error and gradient equal the oracle's
  full enumeration for an arbitrary partition (L4, L6: the oracle's full D x D gradient is
  invariant, and its block sums are the reduced gradient);
- exact engine vs Monte Carlo: the sampled engine's empirical risk on noiseless-projection
  samples (sigma = 0, or noise orthogonal to w* with v = alpha w*: L8) agrees with the exact risk
  and error within Bernstein's bound at confidence 1 - MC_DELTA (exact variance and range of the
  per-sample values, by enumeration), for any v_perp when sigma = 0;
- reduced vs full-Q population dynamics: one population step in (alpha, a, b, c) is the
  per-entry gradient step of the full Q and v (L6), and the full step stays invariant (L4);
- the uniform fixed point (L10): at any row-constant Q the oracle's grad_A has equal entries in
  each row and grad_Q = 0; at a = b = c the engine's gradients in (Pd, Qs, R) are proportional
  to the block sizes (equal per-entry gradients).
"""
from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from patchassoc.simulations import kernels
from patchassoc.simulations.population import bruteforce_risk, evaluate, population_descent
from patchassoc.simulations.population.exact import TIE_RTOL
from patchassoc.simulations.sampler import sample, unit_vector
from patchassoc.theory import model
from patchassoc.theory.invariant import (entry_counts, invariant_attention, invariant_logits,
                              project_invariant)
from patchassoc.theory.structure import random_partition

from tests.reference_population import ENGINE_VS_BRUTEFORCE_REL, POP_GRAD_VS_ORACLE_REL
from tests.tolerances import MC_DELTA, STEP_VS_FULL_REL, UNIFORM_GRAD_REL

#: Examples per property (the issue asks for at least 200, whatever the loaded profile).
EXAMPLES = 200

#: (L, C) whose brute-force oracle is cheap: at most 3^6 noise patterns per (y, l*).
SMALL = [(L, C) for L in range(1, 5) for C in range(1, 5) if (L - 1) * C <= 6]
SEEDS = st.integers(0, 2**32 - 1)
QS = st.floats(0.0, 1.0)
PS = st.sampled_from([3, 5])
NUS = st.floats(0.0, 1.0)
ALPHAS = st.floats(-1.5, 1.5)
LOGITS = st.floats(-3.0, 3.0)


def _blocks(structure):
    """Boolean masks of the diagonal, same-set off-diagonal and cross-set entries."""
    B = structure.same_set().astype(bool)
    eye = np.eye(structure.D, dtype=bool)
    return eye, B & ~eye, ~B


def _grad_Q_scale(A, grad_A) -> float:
    return float(np.max(np.sum(A * np.abs(grad_A), axis=1)))


def _population_moments(S, q, p, nu, alpha, A):
    """Exact law of the per-sample loss and zero-one error (noiseless projections), by plain
    enumeration of every (y, l*, delta): (mean, variance, max deviation) of each."""
    L, C, D = S.L, S.C, S.D
    N = (L - 1) * C
    pats = np.array(list(itertools.product((0.0, 1.0, -1.0), repeat=N))).reshape(3 ** N, N)
    nnz = (pats != 0).sum(axis=1)
    prob = (q / 2) ** nnz * (1 - q) ** (N - nnz) / (2 * L)
    tie = TIE_RTOL * D * (abs(alpha) ** p + nu * abs(alpha))
    weights, losses, errors = [], [], []
    for lstar in range(L):
        noise = np.setdiff1d(np.arange(D), S.sets[lstar])
        for y in (1.0, -1.0):
            s = np.zeros((pats.shape[0], D))
            s[:, S.sets[lstar]] = y
            s[:, noise] = pats
            m = y * model.act(alpha * (s @ A.T), p, nu).sum(axis=1)
            weights.append(prob)
            losses.append(model.logistic_loss(m))
            errors.append(np.where(m < -tie, 1.0, np.where(m <= tie, 0.5, 0.0)))
    w = np.concatenate(weights)
    out = []
    for values in (np.concatenate(losses), np.concatenate(errors)):
        mean = float(np.sum(w * values))
        var = float(np.sum(w * (values - mean) ** 2))
        dev = float(np.max(np.abs(values[w > 0] - mean)))
        out.append((mean, var, dev))
    return out


def _bernstein(var: float, dev: float, n: int, delta: float) -> float:
    """Two-sided Bernstein deviation bound for the mean of n i.i.d. values with variance var and
    |value - mean| <= dev, holding with probability >= 1 - delta."""
    log = np.log(2.0 / delta)
    return float(np.sqrt(2.0 * var * log / n) + 2.0 * dev * log / (3.0 * n))


def _rel(x, y, scale=None) -> float:
    scale = max(abs(x), abs(y)) if scale is None else scale
    return abs(x - y) / max(scale, 1e-300)


# -- exact engine vs brute force (L4, L6) ------------------------------------------------------
@settings(max_examples=EXAMPLES)
@given(LC=st.sampled_from(SMALL), seed=SEEDS, q=QS, p=PS, nu=NUS, alpha=ALPHAS, a=LOGITS,
       b=LOGITS, c=LOGITS)
def test_exact_engine_matches_bruteforce(LC, seed, q, p, nu, alpha, a, b, c):
    L, C = LC
    S = random_partition(L, C, np.random.default_rng(seed))
    Q = invariant_logits(a, b, c, S)
    bf = bruteforce_risk(Q, S, q, p, nu, alpha, grad=True)
    ev = evaluate(L, C, q, p, nu, alpha, a, b, c)
    assert _rel(ev.risk, bf.risk) <= ENGINE_VS_BRUTEFORCE_REL
    assert abs(ev.error - bf.error) <= ENGINE_VS_BRUTEFORCE_REL
    assert _rel(ev.grad["alpha"], bf.grad_alpha) <= POP_GRAD_VS_ORACLE_REL
    # the oracle's full gradient is invariant (constant on each block), and its block sums are
    # the reduced gradient (d/da, d/db, d/dc)
    A = model.softmax_rows(Q)
    scale = _grad_Q_scale(A, bf.grad_A)
    for mask, name in zip(_blocks(S), "abc"):
        entries = bf.grad_Q[mask]
        if entries.size == 0:
            continue
        assert np.max(entries) - np.min(entries) <= POP_GRAD_VS_ORACLE_REL * scale
        assert _rel(ev.grad[name], entries.sum(), scale * S.D) <= POP_GRAD_VS_ORACLE_REL


# -- exact engine vs Monte Carlo on the sampled engine (L8 setting) ----------------------------
#: |alpha| >= 0.05: near alpha = 0 the rounding of <v, X_j> (~1e-16 |v|) exceeds the engines' tie
#: threshold TIE_RTOL D act(|alpha|) and would split exact ties at random; the exact-vs-oracle
#: test covers every alpha.
MC_ALPHAS = st.one_of(st.floats(-1.5, -0.05), st.floats(0.05, 1.5))


@settings(max_examples=EXAMPLES)
@given(LC=st.sampled_from([(L, C) for L in range(1, 4) for C in range(1, 4)]), seed=SEEDS,
       q=QS, p=PS, nu=NUS, alpha=MC_ALPHAS, a=LOGITS, b=LOGITS, c=LOGITS,
       noise=st.sampled_from(["none", "orthogonal"]), sigma=st.floats(0.05, 1.0),
       v_perp=st.floats(0.0, 2.0))
def test_exact_engine_matches_monte_carlo(LC, seed, q, p, nu, alpha, a, b, c, noise, sigma,
                                          v_perp):
    L, C = LC
    n, d = 3000, 3
    rng = np.random.default_rng(seed)
    S = random_partition(L, C, rng)
    w = unit_vector(d, rng)
    if noise == "none":
        # sigma = 0: <v, X_j> = alpha s_j whatever the part of v orthogonal to w*
        data = sample(n, w, S, q, 0.0, rng)
        u = rng.standard_normal(d)
        u -= (u @ w) * w
        v = alpha * w + v_perp * u / max(np.linalg.norm(u), 1e-300)
    else:
        # noise orthogonal to w* and v = alpha w*: the projections are noiseless again
        data = sample(n, w, S, q, sigma, rng, orthogonal=True)
        v = alpha * w
    A = invariant_attention(a, b, c, S)
    m = kernels.margins(data.X, data.y, v, A, p, nu)
    ev = evaluate(L, C, q, p, nu, alpha, a, b, c)
    (risk, var_l, dev_l), (error, var_e, dev_e) = _population_moments(S, q, p, nu, alpha, A)
    assert _rel(ev.risk, risk) <= ENGINE_VS_BRUTEFORCE_REL
    assert abs(ev.error - error) <= ENGINE_VS_BRUTEFORCE_REL
    slack = 1e-12 * (1.0 + ev.risk)                     # rounding, when the loss is constant
    losses = model.logistic_loss(m)
    assert abs(losses.mean() - ev.risk) <= _bernstein(var_l, dev_l, n, MC_DELTA) + slack
    tie = TIE_RTOL * S.D * (abs(alpha) ** p + nu * abs(alpha))
    errors = np.where(m < -tie, 1.0, np.where(m <= tie, 0.5, 0.0))
    assert abs(errors.mean() - ev.error) <= _bernstein(var_e, dev_e, n, MC_DELTA) + 1e-12


# -- reduced vs full-Q population dynamics (L6, L4) --------------------------------------------
@settings(max_examples=EXAMPLES)
@given(LC=st.sampled_from([lc for lc in SMALL if lc[0] > 1 or lc[1] > 1]), seed=SEEDS, q=QS,
       p=PS, nu=NUS, alpha=ALPHAS, a=LOGITS, b=LOGITS, c=LOGITS, eta_v=st.floats(0.01, 1.0),
       eta_Q=st.floats(1.0, 100.0))
def test_population_step_equals_full_Q_step(LC, seed, q, p, nu, alpha, a, b, c, eta_v, eta_Q):
    L, C = LC
    S = random_partition(L, C, np.random.default_rng(seed))
    traj = population_descent(L, C, q, p, nu, alpha, (a, b, c), eta_v=eta_v, eta_Q=eta_Q,
                              steps=1, at=[0, 1])
    assert traj.status == "ok"
    Q0 = invariant_logits(a, b, c, S)
    bf = bruteforce_risk(Q0, S, q, p, nu, alpha, grad=True)
    step = eta_Q * bf.grad_Q
    Q1 = Q0 - step
    scale = max(1.0, float(np.max(np.abs(Q0))),
                eta_Q * _grad_Q_scale(model.softmax_rows(Q0), bf.grad_A))
    # the full step stays invariant ...
    a1, b1, c1 = project_invariant(Q1, S)
    assert np.max(np.abs(Q1 - invariant_logits(a1, b1, c1, S))) <= STEP_VS_FULL_REL * scale
    # ... and moves (a, b, c) exactly as the population step does (unused classes stay put)
    counts = entry_counts(L, C)
    for got, full, start, k in zip((traj.a[1], traj.b[1], traj.c[1]), (a1, b1, c1), (a, b, c),
                                   counts):
        expected = full if k else start
        assert abs(got - expected) <= STEP_VS_FULL_REL * scale
    alpha1 = alpha - eta_v * bf.grad_alpha
    assert abs(traj.alpha[1] - alpha1) <= STEP_VS_FULL_REL * max(1.0, abs(alpha),
                                                                 abs(eta_v * bf.grad_alpha))


# -- the uniform fixed point (L10) -------------------------------------------------------------
@settings(max_examples=EXAMPLES)
@given(LC=st.sampled_from(SMALL), seed=SEEDS, q=QS, p=PS, nu=NUS, alpha=ALPHAS,
       level=LOGITS, spread=st.floats(0.0, 3.0))
def test_uniform_attention_is_a_fixed_point(LC, seed, q, p, nu, alpha, level, spread):
    L, C = LC
    rng = np.random.default_rng(seed)
    S = random_partition(L, C, rng)
    D = S.D
    # any Q with constant rows gives A = J / D
    r = level + spread * rng.standard_normal(D)
    Q = np.repeat(r[:, None], D, axis=1)
    bf = bruteforce_risk(Q, S, q, p, nu, alpha, grad=True)
    A = model.softmax_rows(Q)
    scale = _grad_Q_scale(A, bf.grad_A)
    spread_rows = np.max(bf.grad_A, axis=1) - np.min(bf.grad_A, axis=1)
    assert np.max(spread_rows) <= UNIFORM_GRAD_REL * max(scale * D, 1e-300)
    assert np.max(np.abs(bf.grad_Q)) <= UNIFORM_GRAD_REL * max(scale, 1e-300)
    # the engine at a = b = c: the per-entry gradients in A (block derivative / block size) agree
    ev = evaluate(L, C, q, p, nu, alpha, level, level, level)
    per_entry = [g / k for g, k in zip(ev.grad_values, entry_counts(L, C)) if k]
    ref = max(abs(x) for x in ev.grad_values) / D + 1e-300
    assert max(per_entry) - min(per_entry) <= UNIFORM_GRAD_REL * ref * D
    assert ev.grad["a"] == ev.grad["b"] == ev.grad["c"] == 0.0
