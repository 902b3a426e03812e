"""Brute-force oracle: the population risk of an arbitrary D x D logit matrix at tiny D.

With no projection noise (<v, X_j> = alpha s_j) the population risk is a finite sum over the
label y (2 values), the signal set l* (L values) and the 3^((L-1)C) noise patterns delta of the
other sets, each with probability (q/2)^n (1-q)^((L-1)C - n) / (2L), n the number of nonzero
delta. This module enumerates all of them for any Q, assuming no symmetry whatsoever, and is
what the exact engine of :mod:`.exact` (which assumes invariance) is tested against.

It also returns the gradient in alpha and in Q (full D x D, through the softmax) and the Bayes
error, computed from the likelihoods directly,

    P(s | y) = (1/L) sum_l [s_{S_l} = y 1] prod_{l' != l} p(s_{S_l'}),

predicting the sign of the larger one (ties, to relative 1e-12, count 1/2). Margins within
``TIE_RTOL`` of zero count as ties, as in :mod:`.exact`.

References
----------
SPEC section 5 (brute-force oracle, Bayes error).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from patchassoc.theory.structure import Structure

from .._jit import jit
from ..kernels import grad_logits, softmax_rows
from .exact import TIE_RTOL, _act, _kadd, _logistic, check_problem

__all__ = ["BruteForce", "bruteforce_risk", "MAX_PATTERN_WORK", "pattern_count"]

#: Largest 2 L 3^((L-1)C) D^2 (the oracle's work) accepted.
MAX_PATTERN_WORK = 4_000_000_000

#: Relative tolerance under which the two likelihoods of the Bayes decision are equal.
_BAYES_TIE = 1e-12


@jit
def _bruteforce_kernel(A, sets, q, p, nu, alpha, want_grad, tie):
    L, C = sets.shape
    D = L * C
    N = (L - 1) * C
    half = q / 2.0
    pw = np.empty(N + 1)
    for n in range(N + 1):
        pw[n] = half ** n * (1.0 - q) ** (N - n)
    pset = np.empty(C + 1)  # probability of one set's pattern with n nonzero entries
    for n in range(C + 1):
        pset[n] = half ** n * (1.0 - q) ** (C - n)
    labels = np.empty(D, dtype=np.int64)
    for l in range(L):
        for k in range(C):
            labels[sets[l, k]] = l
    acc = np.zeros(5)  # risk, error, Bayes error, probability, d risk / d alpha
    comp = np.zeros(5)  # compensated sums: up to ~1e7 terms
    gA = np.zeros((D, D))
    s = np.zeros(D)
    u = np.zeros(D)
    G = np.zeros(D)
    noise = np.empty(N, dtype=np.int64)
    digit = np.zeros(N, dtype=np.int64)
    vals = np.array([0.0, 1.0, -1.0])
    nnz_set = np.zeros(L, dtype=np.int64)
    pos_set = np.zeros(L, dtype=np.int64)
    neg_set = np.zeros(L, dtype=np.int64)
    for lstar in range(L):
        m = 0
        for j in range(D):
            if labels[j] != lstar:
                noise[m] = j
                m += 1
        for k in range(N):
            digit[k] = 0
        nnz = 0
        while True:
            w = pw[nnz] / (2.0 * L)
            for yi in range(2):
                y = 1.0 if yi == 0 else -1.0
                for k in range(C):
                    s[sets[lstar, k]] = y
                for k in range(N):
                    s[noise[k]] = vals[digit[k]]
                f = 0.0
                for i in range(D):
                    dot = 0.0
                    for j in range(D):
                        dot += A[i, j] * s[j]
                    u[i] = dot
                    a, da = _act(alpha * dot, p, nu)
                    f += a
                    G[i] = da
                mg = y * f
                loss, dl = _logistic(mg)
                _kadd(acc, comp, 0, w * loss)
                _kadd(acc, comp, 3, w)
                if mg < -tie:
                    _kadd(acc, comp, 1, w)
                elif mg <= tie:
                    _kadd(acc, comp, 1, 0.5 * w)
                if want_grad:
                    g = w * y * dl
                    ga = 0.0
                    for i in range(D):
                        gi = g * G[i]
                        ga += gi * u[i]
                        for j in range(D):
                            gA[i, j] += gi * alpha * s[j]
                    _kadd(acc, comp, 4, ga)
                # Bayes decision from the likelihoods P(s | +1), P(s | -1)
                for l in range(L):
                    nnz_set[l] = 0
                    pos_set[l] = 0
                    neg_set[l] = 0
                for j in range(D):
                    l = labels[j]
                    if s[j] != 0.0:
                        nnz_set[l] += 1
                    if s[j] > 0.0:
                        pos_set[l] += 1
                    elif s[j] < 0.0:
                        neg_set[l] += 1
                like_p = 0.0
                like_m = 0.0
                for l in range(L):
                    if pos_set[l] == C or neg_set[l] == C:
                        prod = 1.0
                        for l2 in range(L):
                            if l2 != l:
                                prod *= pset[nnz_set[l2]]
                        if pos_set[l] == C:
                            like_p += prod
                        else:
                            like_m += prod
                scale = max(like_p, like_m)
                if abs(like_p - like_m) <= _BAYES_TIE * scale:
                    _kadd(acc, comp, 2, 0.5 * w)
                elif (like_p > like_m) != (y > 0):
                    _kadd(acc, comp, 2, w)
            # next noise pattern (base-3 odometer)
            k = 0
            while k < N:
                if digit[k] == 0:
                    nnz += 1
                if digit[k] < 2:
                    digit[k] += 1
                    break
                digit[k] = 0
                nnz -= 1
                k += 1
            if k == N:
                break
    return acc[0] + comp[0], acc[1] + comp[1], acc[2] + comp[2], acc[3] + comp[3], \
        acc[4] + comp[4], gA


@dataclass(frozen=True, eq=False)
class BruteForce:
    """What :func:`bruteforce_risk` computed (gradients are ``None`` unless requested)."""

    risk: float
    error: float
    bayes_error: float
    probability: float
    patterns: int
    grad_alpha: float | None = None
    grad_Q: np.ndarray | None = None
    grad_A: np.ndarray | None = None


def pattern_count(L: int, C: int) -> int:
    """Number of (y, l*, noise pattern) triples the oracle visits."""
    return 2 * L * 3 ** ((L - 1) * C)


def bruteforce_risk(Q: np.ndarray, structure: Structure, q: float, p: int, nu: float,
                    alpha: float, *, grad: bool = False,
                    max_work: int = MAX_PATTERN_WORK) -> BruteForce:
    """Population risk, zero-one error and Bayes error of logits ``Q``, by full enumeration.

    Parameters
    ----------
    Q : (D, D) array
        Any logit matrix (A = row-softmax(Q)); no invariance is assumed.
    structure : Structure
        The partition S.
    q, p, nu : float, int, float
        Feature-noise rate and activation act(t) = t^p + nu t.
    alpha : float
        <v, w*> (no projection noise).
    grad : bool
        Also return d risk / d alpha and d risk / d Q (D x D).
    max_work : int
        Refuse when 2 L 3^((L-1)C) D^2 exceeds this (ValueError with the count).

    References
    ----------
    SPEC section 5.
    """
    if not isinstance(structure, Structure):
        raise ValueError("structure must be a patchassoc.theory.structure.Structure")
    L, C = structure.L, structure.C
    L, C, q, p, nu = check_problem(L, C, q, p, nu)
    D = L * C
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    if Q.shape != (D, D):
        raise ValueError(f"Q must have shape ({D}, {D}), got {Q.shape}")
    if not np.all(np.isfinite(Q)):
        raise ValueError("Q contains non-finite values")
    alpha = float(alpha)
    if not math.isfinite(alpha):
        raise ValueError(f"alpha must be finite, got {alpha!r}")
    n_pat = pattern_count(L, C)
    if n_pat * D * D > max_work:
        raise ValueError(f"brute force at L={L}, C={C} visits {n_pat:,} patterns "
                         f"(work {n_pat * D * D:.3g} > cap {max_work:.3g}); use the exact "
                         f"engine for invariant Q")
    A = softmax_rows(Q)
    Aabs = abs(alpha)
    tie = TIE_RTOL * D * (Aabs ** p + nu * Aabs)
    risk, err, bayes, total, galpha, gA = _bruteforce_kernel(
        A, np.ascontiguousarray(structure.sets, dtype=np.int64), q, p, nu, alpha, grad, tie)
    if not grad:
        return BruteForce(risk=risk, error=err, bayes_error=bayes, probability=total,
                          patterns=n_pat)
    return BruteForce(risk=risk, error=err, bayes_error=bayes, probability=total,
                      patterns=n_pat, grad_alpha=galpha, grad_Q=grad_logits(A, gA), grad_A=gA)
