"""Certified bounds on what an enumeration of the exact engine leaves out.

Every configuration with n nonzero noise entries has |f|, |df/dalpha|, |df/da|, |df/db|, |df/dc|
at most c1 (C + n) and a loss at most c0 + c1 (C + n) (:func:`_coefficients`), so
the omitted part of a quantity over ANY omitted set O is at most
c0 P(O) + c1 E[(C + n) 1_O]: two sums per omitted set are all a certificate needs. An
enumeration omits three sets (``docs/exact_engine.md``):

- the tail n > k, whose sums are exact binomial tails (:func:`tail_moments`), with the
  coefficients of any configuration;
- the configurations within k pruned by probability, whose sums the kernel measures, with
  the tighter coefficients of configurations within k (rows of A summed over C + k entries);
- the subtrees skipped by their margin, whose sums e0 >= sum w e^-f and e1 >= sum w e^-f
  (C + n) the kernel measures too (l(f), |l'(f)| <= e^-f, the zero-one loss <= e^(tie) e^-f).

:func:`_certified_bounds` adds the three, for a search and for a replay alike.
:func:`_bounds` is the tail alone in the form the plan uses to choose k.
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from patchassoc.theory.activation import act, act_prime
from patchassoc.theory.invariant import attention_values

#: Safety factor on the computed tail sums (their own rounding error is ~1e-15 relative).
_BOUND_SAFETY = 1.0 + 1e-9

#: The quantities a bound is certified for, in the order of an :class:`~.evaluator.Evaluation`'s bounds.
QUANTITIES = ("risk", "error", "alpha", "a", "b", "c")


def tail_moments(N: int, q: float, k: int) -> tuple[float, float]:
    """(P(n > k), E[n 1{n > k}]) for n ~ Binomial(N, q), summed term by term in log space."""
    if k >= N:
        return 0.0, 0.0
    t0, t1 = _tails(int(N), float(q))
    k = max(int(k), -1)
    return float(t0[k + 1]), float(t1[k + 1])


@functools.lru_cache(maxsize=256)
def _tails(N: int, q: float) -> tuple[np.ndarray, np.ndarray]:
    """t0[k + 1] = P(n > k), t1[k + 1] = E[n 1{n > k}] for k = -1..N, as suffix sums of the
    binomial pmf (each term exact in log space; summed from the smallest term up)."""
    pmf = np.zeros(N + 1)
    if q == 0.0:
        pmf[0] = 1.0
    elif q == 1.0:
        pmf[N] = 1.0
    else:
        lq, l1q = math.log(q), math.log1p(-q)
        lgN = math.lgamma(N + 1)
        for n in range(N + 1):
            pmf[n] = math.exp(lgN - math.lgamma(n + 1) - math.lgamma(N - n + 1) + n * lq
                              + (N - n) * l1q)
    t0 = np.zeros(N + 2)
    t1 = np.zeros(N + 2)
    for k in range(N - 1, -2, -1):  # P(n > k) = P(n > k + 1) + pmf[k + 1]
        t0[k + 1] = t0[k + 2] + pmf[k + 1]
        t1[k + 1] = t1[k + 2] + (k + 1) * pmf[k + 1]
    t0 = np.minimum(t0, 1.0)
    t0.setflags(write=False)
    t1.setflags(write=False)
    return t0, t1


def _row_top(values, L: int, C: int, m: int) -> float:
    """The sum of the m largest entries of a row of the invariant attention (one Pd, C - 1
    times Qs, D - C times R), at most 1."""
    Pd, Qs, R = values
    total, left = 0.0, m
    for v, count in sorted(((Pd, 1), (Qs, C - 1), (R, (L - 1) * C)), reverse=True):
        take = min(count, left)
        total += take * v
        left -= take
    return min(1.0, total)


def _coefficients(L, C, p, nu, alpha, a, b, c, k=None) -> dict:
    """(c0, c1) for each quantity: its omitted part is <= c0 P(O) + c1 E[(C + n) 1_O] for any
    set O of omitted configurations; with ``k``, for sets O of configurations with at most k
    nonzero noise entries (then |u_i| <= r, the sum of the C + k largest entries of a row, and
    act(|alpha|), act'(|alpha|) shrink to act(|alpha| r) / r and act'(|alpha| r))."""
    D = L * C
    A = abs(alpha)
    Pd, Qs, R = attention_values(a, b, c, L, C)
    r = 1.0 if k is None else _row_top((Pd, Qs, R), L, C, C + max(0, int(k)))
    Ar = A * r
    actA = act(Ar, p, nu) / r
    dactA = act_prime(Ar, p, nu)
    return {
        "risk": (math.log(2.0), actA),
        "error": (1.0, 0.0),
        "alpha": (0.0, dactA),
        "a": (0.0, A * dactA * 2 * Pd * (1 - Pd)),
        "b": (0.0, A * dactA * 2 * (C - 1) * Qs * (1 - (C - 1) * Qs)),
        "c": (0.0, A * dactA * 2 * (D - C) * R * (1 - (D - C) * R)),
    }


def _bounds_from(coef: dict, t0: float, t1: float) -> dict:
    """c0 t0 + c1 t1 per quantity (with the safety factor): the bound of an omitted set whose
    probability is t0 and whose E[(C + n) 1_O] is t1."""
    s = _BOUND_SAFETY
    return {k_: max(0.0, float(s * (c0 * t0 + c1 * t1))) for k_, (c0, c1) in coef.items()}


def _bounds(L, C, q, p, nu, alpha, a, b, c, k) -> tuple[dict, float]:
    """The bounds of the tail n > k alone and P(n > k): what :func:`~.states.plan` meets with
    the smallest k (the coefficients of :func:`_coefficients` without k, written out)."""
    D = L * C
    N = (L - 1) * C
    t0, tn = tail_moments(N, q, k)
    t1 = C * t0 + tn  # E[(C + n) 1{n > k}]
    A = abs(alpha)
    actA = act(A, p, nu)
    dactA = act_prime(A, p, nu)
    Pd, Qs, R = attention_values(a, b, c, L, C)
    s = _BOUND_SAFETY
    bounds = {
        "risk": s * (math.log(2.0) * t0 + actA * t1),
        "error": s * t0,
        "alpha": s * dactA * t1,
        "a": s * A * dactA * 2 * Pd * (1 - Pd) * t1,
        "b": s * A * dactA * 2 * (C - 1) * Qs * (1 - (C - 1) * Qs) * t1,
        "c": s * A * dactA * 2 * (D - C) * R * (1 - (D - C) * R) * t1,
    }
    bounds = {k_: max(0.0, float(v)) for k_, v in bounds.items()}
    return bounds, t0


class CertifiedBounds(NamedTuple):
    """The bounds of one enumeration (a search or a replay), per quantity: ``total`` (the
    certificate) and its three parts, with P(n > k)."""

    total: dict
    tail: dict
    pruned: dict
    margin: dict
    tail_probability: float


def _certified_bounds(L, C, q, p, nu, alpha, a, b, c, k, tie, pruned_p, pruned_n, e0,
                      e1) -> CertifiedBounds:
    """The certified bounds of an enumeration within k at (alpha, a, b, c): the tail n > k
    with the coefficients of any configuration; the configurations pruned by probability
    (probability ``pruned_p``, E[n 1_O] at most ``pruned_n``) with those of configurations
    within k; the part skipped by its margin from e0 >= sum w e^-f (the risk, and the error
    with the tie factor e^(tie)) and e1 >= sum w e^-f (C + n) (each derivative, times its c1).
    e0 and e1 come with their safety factors (and a replay's growth e^Delta) applied."""
    N = (L - 1) * C
    t0, tn = tail_moments(N, q, k)
    coef = _coefficients(L, C, p, nu, alpha, a, b, c, k)
    tail = _bounds_from(_coefficients(L, C, p, nu, alpha, a, b, c), t0, C * t0 + tn)
    pruned = _bounds_from(coef, pruned_p, C * pruned_p + pruned_n)
    margin = {"risk": e0, "error": math.exp(tie) * e0}
    margin.update({key: coef[key][1] * e1 for key in ("alpha", "a", "b", "c")})
    total = {key: float(tail[key] + pruned[key] + margin[key]) for key in tail}
    return CertifiedBounds(total, tail, pruned, margin, t0)
