"""Slow, obviously-correct references for the population engine (plain NumPy, tiny D only),
and the tolerances of the population tests.

:func:`naive_population` enumerates every (y, l*, noise pattern) with itertools and evaluates
the model of :mod:`patchassoc.theory.model` on all of them at once; it is what the brute-force
oracle is checked against, which in turn checks the symmetry-reduced engine.
:func:`unpatched_uniform_gradient` and :func:`uniform_gradient_bound` check the uniform fixed
point without the engine's special case there.
"""
from __future__ import annotations

import itertools

import numpy as np

from patchassoc.theory import model
from patchassoc.theory.invariant import chain_to_logits

# -- tolerances of the population tests (named by the quantity they bound) -------------------
#: Exact engine vs brute-force oracle, risk and error (issue 3 acceptance: <= 1e-12 relative),
#: on the domain where the margins are at most ``ENGINE_VS_BRUTEFORCE_FMAX`` = D act(|alpha|).
ENGINE_VS_BRUTEFORCE_REL = 1e-12
ENGINE_VS_BRUTEFORCE_FMAX = 100.0
#: Beyond that domain: the loss exp(-f) has relative condition number |f|, so two correct
#: summation orders of f (relative rounding ~1e-15) differ by ~|f| 1e-15 in relative risk
#: (measured: at most 1.8e-15 * D act(|alpha|) over 400 random draws). Bound per unit of fmax.
ENGINE_VS_BRUTEFORCE_PER_F = 1e-14
#: Below this, the products weight * loss are (near) subnormal and carry no relative precision:
#: quantities are compared with this absolute floor.
TINY_ABS = 1e-290
#: Numba oracle vs the NumPy reference (same sums, different order).
ORACLE_VS_NUMPY_REL = 1e-12
#: Analytic population gradient vs 5-point central differences (acceptance: <= 1e-7 relative,
#: measured against the largest gradient component).
POP_GRAD_FD_REL = 1e-7
#: Step of the 5-point stencil (truncation ~h^4, rounding ~1e-16 R / h).
POP_FD_STEP = 1e-4
#: Central differences can only reach 1e-7 relative when the gradient is not buried under their
#: own rounding floor ~1e-12 R: the FD test draws points with max |grad| >= this times R.
POP_FD_MIN_GRAD_OVER_RISK = 1e-4
#: Gradient in (a, b, c) / the full D x D gradient of the oracle (rounding of ~1e4-term sums).
POP_GRAD_VS_ORACLE_REL = 1e-10
#: Brute-force risk under a structure-preserving permutation (acceptance: equal).
INVARIANCE_REL = 1e-12
#: Conserved row sum a + (C-1) b + (D-C) c along the population dynamics.
POP_ROW_SUM_REL = 1e-12
#: Enumerated probability vs 1 - binomial tail.
PROBABILITY_ABS = 1e-13
#: One population step vs the projected full-Q step.
STEP_VS_FULL_ABS = 1e-12


def naive_population(Q, structure, q, p, nu, alpha, tie_rtol):
    """(risk, error, bayes_error) by plain enumeration: every y, l* and noise pattern.

    Ties: margins within ``tie_rtol * D * act(|alpha|)`` of zero count 1/2.
    """
    A = model.softmax_rows(np.asarray(Q, dtype=np.float64))
    L, C, D = structure.L, structure.C, structure.D
    N = (L - 1) * C
    patterns = np.array(list(itertools.product((0.0, 1.0, -1.0), repeat=N)),
                        dtype=np.float64).reshape(3 ** N, N)
    nnz = (patterns != 0).sum(axis=1)
    prob = (q / 2) ** nnz * (1 - q) ** (N - nnz)
    tie = tie_rtol * D * (abs(alpha) ** p + nu * abs(alpha))
    risk = err = bayes = 0.0
    pset = lambda n: (q / 2) ** n * (1 - q) ** (C - n)  # noqa: E731
    for lstar in range(L):
        noise = np.setdiff1d(np.arange(D), structure.sets[lstar])
        for y in (1.0, -1.0):
            s = np.zeros((patterns.shape[0], D))
            s[:, structure.sets[lstar]] = y
            s[:, noise] = patterns
            f = model.act(alpha * (s @ A.T), p, nu).sum(axis=1)
            m = y * f
            w = prob / (2 * L)
            risk += float(np.sum(w * model.logistic_loss(m)))
            err += float(np.sum(w * np.where(m < -tie, 1.0, np.where(m <= tie, 0.5, 0.0))))
            # Bayes: likelihoods of the observed s under y = +-1
            like = {1.0: np.zeros(len(s)), -1.0: np.zeros(len(s))}
            sets_s = s[:, structure.sets]                        # (P, L, C)
            n_set = (sets_s != 0).sum(axis=2)
            p_set = pset(n_set)                                  # (P, L)
            for l in range(L):
                others = np.prod(np.delete(p_set, l, axis=1), axis=1)
                for sign in (1.0, -1.0):
                    like[sign] += np.where(np.all(sets_s[:, l] == sign, axis=1), others, 0.0)
            lp, lm = like[1.0], like[-1.0]
            tie_b = np.abs(lp - lm) <= 1e-12 * np.maximum(lp, lm)
            wrong = np.where(tie_b, 0.5, np.where((lp > lm) != (y > 0), 1.0, 0.0))
            bayes += float(np.sum(w * wrong))
    return risk, err, bayes


def unpatched_uniform_gradient(ev, level: float, L: int, C: int) -> np.ndarray:
    """The engine's gradient in (a, b, c) at a = b = c = ``level`` without the special case of
    :func:`~patchassoc.simulations.engines.population.exact.evaluate` (which returns exactly 0 there):
    the chain rule applied to its raw derivatives (gP, gQ, gR) = ``ev.grad_values``."""
    return np.array(chain_to_logits(*ev.grad_values, level, level, level, L, C))


def uniform_gradient_bound(ev, bf, structure, level: float, rel: float, tiny: float) -> np.ndarray:
    """Rounding bound on :func:`unpatched_uniform_gradient`: the chain rule J is linear in
    (gP, gQ, gR), whose exact values make J g = 0; their rounding is at most ``rel`` x the block
    sums of the oracle's sums of absolute terms (``bf.grad_A_abs``, the same terms grouped
    differently), and applying J adds ``rel`` x |J| |g|. ``tiny``: the subnormal floor."""
    L, C, D = structure.L, structure.C, structure.D
    B = structure.same_set().astype(bool)
    eye = np.eye(D, dtype=bool)
    terms = np.array([bf.grad_A_abs[m].sum() for m in (eye, B & ~eye, ~B)])
    J = np.array([chain_to_logits(*e, level, level, level, L, C) for e in np.eye(3)]).T
    raw = np.abs(np.array(ev.grad_values))
    return rel * (np.abs(J) @ terms + np.abs(J) @ raw) + tiny
