"""Noise-set states, the counts and task lists of the enumeration, and its plan.

A noise set of C entries is summarized by its state (n+, n-), the numbers of +1 and -1
entries: K = (C+1)(C+2)/2 states, probability multinomial(C; n+, n-, n0) (q/2)^(n+ + n-)
(1-q)^n0 (:func:`_states`), sorted by their nonzero count n = n+ + n- so that a truncation at a
total nonzero count k prunes whole subtrees of the enumeration. The engine sums over the
multisets of L-1 states (:func:`count_configurations` of them within k), split into tasks by
their first levels (:func:`_tasks`), with the suffix sums that bound a subtree's weight
(:func:`_sums`).

:func:`plan` chooses the truncation for a tolerance: the smallest k whose tail bound meets
it, and with pruning the thresholds of the pruning by probability (read from a histogram of
the leaf keys w (C + n), which depends on (L, C, q, k) only: :func:`_key_cumulative`) and by
margin. SPEC section 5; ``docs/exact_engine.md`` for the derivations.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from patchassoc.simulations.engines.population.exact._search import _KEY_OFFSET, _key_histogram
from patchassoc.simulations.engines.population.exact.bounds import (
    _BOUND_SAFETY, QUANTITIES, _bounds, _coefficients)

#: Relative tie threshold on the margin, in units of the largest possible |f| = D act(|alpha|).
TIE_RTOL = 1e-10

#: Largest number of multisets one evaluation may enumerate (about a few seconds).
MAX_CONFIGURATIONS = 60_000_000

#: Rough cost of one multiset (used only to state the estimated time of a refused request).
SECONDS_PER_CONFIGURATION = 6e-8

#: With pruning, the share of ``tol`` left to the tail n > k, and the share of the subtrees
#: skipped by their margin (the rest is the budget of the pruning by probability).
TAIL_SHARE = 0.1
MARGIN_SHARE = 0.3

#: Pruning aims at this share of its budget: the subtree bounds add a little to what the key
#: histogram predicts (a run that still ends above ``tol`` is redone with a lower threshold).
_PRUNE_MARGIN = 0.8

#: Enumerations of fewer multisets than this run as one task (no split of the first levels):
#: starting a task costs as much as a few dozen leaves, and these run on one thread anyway.
_SPLIT_MIN = 1 << 14


# -- states and counts --------------------------------------------------------------------------
@functools.lru_cache(maxsize=64)
def _states(C: int, q: float):
    """Noise-set states (n+, n-) sorted by nonzero count n, with their probabilities."""
    npos, nneg = [], []
    for n in range(C + 1):
        for k in range(n, -1, -1):
            npos.append(k)
            nneg.append(n - k)
    npos = np.array(npos, dtype=np.int64)
    nneg = np.array(nneg, dtype=np.int64)
    n_of = npos + nneg
    S_of = npos - nneg
    half = q / 2.0
    pi = np.array([math.comb(C, int(a)) * math.comb(C - int(a), int(b)) * half ** int(a + b)
                   * (1.0 - q) ** int(C - a - b) for a, b in zip(npos, nneg)])
    for arr in (npos, nneg, n_of, S_of, pi):
        arr.setflags(write=False)
    return npos, nneg, n_of, S_of, pi


def count_configurations(L: int, C: int, k: int | None = None) -> int:
    """Number of multisets of L-1 noise-set states with total nonzero count <= k (all if None)."""
    M = L - 1
    kmax = M * C if k is None else min(int(k), M * C)
    if kmax == M * C:
        K = (C + 1) * (C + 2) // 2
        return math.comb(K + M - 1, M)
    return _count(M, C, kmax)


@functools.lru_cache(maxsize=256)
def _count(M: int, C: int, kmax: int) -> int:
    """Number of multisets of M states with total nonzero count <= kmax (a small dynamic
    program over the states, exact integers)."""
    if kmax < 0:
        return 0
    # dp[m][t]: multisets of size m with total nonzero t, built state by state
    dp = [[0] * (kmax + 1) for _ in range(M + 1)]
    dp[0][0] = 1
    for n in range(C + 1):
        for _ in range(n + 1):  # n + 1 states have n nonzero entries
            for m in range(1, M + 1):
                prev, cur = dp[m - 1], dp[m]
                for t in range(n, kmax + 1):
                    cur[t] += prev[t - n]
    return sum(dp[M])


@functools.lru_cache(maxsize=256)
def _split_depth(M: int, C: int, k: int) -> int:
    """The levels split into independent tasks: 0 (one task) for small enumerations, else the
    first two (one for M = 2)."""
    return 0 if _count(M, C, k) < _SPLIT_MIN else max(0, min(2, M - 1))


@functools.lru_cache(maxsize=64)
def _tasks_cached(C, q, M, k, depth):
    """:func:`_tasks` for the states of (C, q), read-only and cached."""
    _, _, n_of, _, pi = _states(C, q)
    out = _tasks(n_of, pi, M, k, depth)
    out.setflags(write=False)
    return out


def _tasks(n_of, pi, M, k, depth):
    """Non-decreasing prefixes of length ``depth`` (0, 1 or 2) that can still complete within
    k nonzero entries (states sorted by nonzero count), in lexicographic order."""
    K = n_of.shape[0]
    ok = pi != 0.0
    if depth == 0:
        return np.zeros((1, 0), dtype=np.int64)
    if depth == 1:
        s0 = np.nonzero(ok & (n_of * M <= k))[0]
        return s0.astype(np.int64).reshape(-1, 1)
    i, j = np.triu_indices(K)  # i <= j, row-major: lexicographic
    keep = ok[i] & ok[j] & (n_of[i] + n_of[j] * (M - 1) <= k)
    return np.stack([i[keep], j[keep]], axis=1).astype(np.int64)


@functools.lru_cache(maxsize=64)
def _sums(C: int, q: float, M: int):
    """Suffix sums over the sorted states of pi and of pi n, and 1/m! for m <= M (the subtree
    bounds of the pruning)."""
    _, _, n_of, _, pi = _states(C, q)
    pisuf = np.cumsum(pi[::-1])[::-1].copy()
    pnsuf = np.cumsum((pi * n_of)[::-1])[::-1].copy()
    invfact = np.array([1.0 / math.factorial(i) for i in range(M + 1)])
    for arr in (pisuf, pnsuf, invfact):
        arr.setflags(write=False)
    return pisuf, pnsuf, invfact


# -- planning: which truncation, at what cost ---------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """A truncation level k with its certified bounds and its cost.

    With pruning (``theta`` > 0) ``bounds`` are the bounds on the tail n > k alone and
    ``configurations`` counts the multisets within k before pruning; the evaluation reports
    the bounds that include what it pruned, and the number it enumerated.
    """

    k: int
    configurations: int
    complete: bool
    omitted_probability: float
    bounds: dict
    theta: float = 0.0
    theta_margin: float = 0.0

    @property
    def bound(self) -> float:
        return max(self.bounds.values())

    @property
    def estimated_seconds(self) -> float:
        return self.configurations * SECONDS_PER_CONFIGURATION


def _refuse(what: str, configurations: int, max_configurations: int,
            hint: str = "") -> ValueError:
    """The error of a request beyond the cap, with its size and estimated time."""
    return ValueError(
        f"{what} needs {configurations:,} configurations (estimated "
        f"{configurations * SECONDS_PER_CONFIGURATION:.3g} s), more than the cap of "
        f"{max_configurations:,}{hint}")


@functools.lru_cache(maxsize=16)
def _key_cumulative(C: int, q: float, M: int, k: int) -> np.ndarray:
    """Cumulative sums, over the key bins, of the keys w (C + n) of the multisets within k."""
    _, _, n_of, S_of, pi = _states(C, q)
    H = _key_histogram(n_of, S_of, pi, M, C, k, float(math.factorial(M)))
    cum = np.cumsum(H.sum(axis=0))
    cum.setflags(write=False)
    return cum


def _bin_edge(b: int) -> float:
    """The smallest key in bin ``b`` (keys below it are exactly those of the bins < b)."""
    e, sub = divmod(b - _KEY_OFFSET, 4)
    return math.ldexp(0.5 + sub / 8.0, e)


def _smallest_k(L, C, q, p, nu, alpha, a, b, c, tol):
    """The smallest truncation k whose tail bounds (:func:`~.bounds._bounds`) meet ``tol``, with
    those bounds and P(n > k)."""
    N = (L - 1) * C
    for k in range(0, N + 1):
        bounds, t0 = _bounds(L, C, q, p, nu, alpha, a, b, c, k)
        if max(bounds.values()) <= tol:
            break
    return k, bounds, t0


@functools.lru_cache(maxsize=256)
def _complete_plan(L: int, C: int) -> Plan:
    """The plan of a complete enumeration (shared: its ``bounds`` are only ever copied)."""
    bounds = {k_: 0.0 for k_ in QUANTITIES}
    return Plan(k=(L - 1) * C, configurations=count_configurations(L, C), complete=True,
                omitted_probability=0.0, bounds=bounds)


def plan(L: int, C: int, q: float, p: int, nu: float, alpha: float, a: float, b: float,
         c: float, tol: float | None = None,
         max_configurations: int = MAX_CONFIGURATIONS, prune: bool = False) -> Plan:
    """Choose the truncation: full enumeration (``tol=None``) or a certified truncation.

    ``tol`` bounds the omitted part of every returned quantity: risk, error and each gradient
    component in (alpha, a, b, c). Without pruning: the smallest total nonzero count k whose
    tail meets ``tol``. With ``prune=True``: the tail gets ``TAIL_SHARE`` of ``tol`` and the
    rest goes to pruning by probability: ``theta`` is the largest key threshold whose pruned
    keys w (C + n) sum (from the histogram of the keys, which depends on (L, C, q, k) only) to
    at most the budget. Raises ValueError (stating the configurations and the estimated
    seconds) when the enumeration needed exceeds ``max_configurations``.
    """
    N = (L - 1) * C
    if tol is None:
        n_conf = count_configurations(L, C)
        if n_conf > max_configurations:
            raise _refuse(f"full enumeration at L={L}, C={C}", n_conf, max_configurations,
                          "; pass a tolerance (--tol) for a certified truncation")
        bounds = {k_: 0.0 for k_ in QUANTITIES}
        return Plan(k=N, configurations=n_conf, complete=True, omitted_probability=0.0,
                    bounds=bounds)
    if not (tol > 0 and math.isfinite(tol)):
        raise ValueError(f"tol must be a positive finite number, got {tol!r}")
    k, bounds, t0 = _smallest_k(L, C, q, p, nu, alpha, a, b, c, tol)
    n_conf = count_configurations(L, C, k)
    if n_conf > max_configurations:
        raise _refuse(f"tolerance {tol:g} at L={L}, C={C} (truncation at {k} nonzero noise "
                      f"entries of {N})", n_conf, max_configurations)
    complete = k >= N or t0 == 0.0
    base = Plan(k=k, configurations=n_conf, complete=complete, omitted_probability=t0,
                bounds=bounds)
    if not prune or complete or L < 2:
        return base
    kp, bounds_p, t0_p = _smallest_k(L, C, q, p, nu, alpha, a, b, c, TAIL_SHARE * tol)
    n_p = count_configurations(L, C, kp)
    if n_p > max_configurations:
        return base
    coef = _coefficients(L, C, p, nu, alpha, a, b, c, kp)
    # the pruned keys sum to dt1 = C P(pruned) + E[n 1_pruned] and P(pruned) <= dt1 / C, so
    # quantity X grows by at most safety (c0/C + c1) dt1
    budget = min(((1.0 - MARGIN_SHARE) * tol - bounds_p[x]) / (_BOUND_SAFETY * (c0 / C + c1))
                 for x, (c0, c1) in coef.items() if c0 > 0 or c1 > 0)
    cum = _key_cumulative(C, q, L - 1, kp)
    nb = int(np.searchsorted(cum, _PRUNE_MARGIN * budget, side="right"))
    theta = _bin_edge(nb) if nb > 0 else 0.0
    # each subtree skipped by its margin holds a multiset within k, so at most n_p of them
    theta_margin = MARGIN_SHARE * tol / (n_p * _BOUND_SAFETY)
    return Plan(k=kp, configurations=n_p, complete=kp >= N or t0_p == 0.0,
                omitted_probability=t0_p, bounds=bounds_p, theta=theta,
                theta_margin=theta_margin)

