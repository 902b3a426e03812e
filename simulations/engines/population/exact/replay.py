"""Replays: the leaves of one search, computed again at the next points of a trajectory.

From one step of a trajectory to the next the parameters move little, and so does the set of
leaves a search must compute. A search records those leaves (:class:`Recording`: their states,
total and weight, in one array each, grouped by the branch of their loss), and an
:class:`~.evaluator.Evaluator` keeps them with the sums of what the search left out
(:class:`ReplayRecord`). At the next point only those leaves are computed (:func:`_replay`),
and the rest is bounded before any leaf is (:func:`_replay_bounds`): the tail and the part
pruned by probability with the new point's coefficients, the part skipped by its margin
grown by e^Delta, Delta >= f_B - f over every configuration within k (f_B the lower envelope of
f that the search's margin bounds used). When those bounds exceed ``tol`` the point is searched
afresh. A search's envelope covers the path extrapolated a few steps ahead
(:func:`_envelope_points`), so that Delta <= 0 while the trajectory follows that path.
Derivations: ``docs/exact_engine.md``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from patchassoc.theory.activation import act
from patchassoc.theory.invariant import attention_values

from patchassoc.simulations.engines.population.exact._kernels import (
    COL_LEAVES, COL_MARGIN_P, COL_PRUNED_N, COL_PRUNED_P, _drop_bound, _replay_parallel,
    _replay_serial, _tables)
from patchassoc.simulations.engines.population.exact.bounds import (
    _BOUND_SAFETY, _certified_bounds)
from patchassoc.simulations.engines.population.exact.states import TIE_RTOL, _states

#: The envelope of a search covers the path extrapolated over this many steps at first; the
#: horizon doubles (up to the second number) after a search whose replays lasted at least that
#: long, and shrinks to what they lasted otherwise.
_HORIZON = (4, 64)
#: Leaves recorded per chunk at the first search (later: 1.25 times the largest chunk's count
#: of the previous search); a search that records more is not replayed.
_RECORD_CAP = 1 << 16
#: Recorded states are bytes: recording is off for more states than that (C > 21).
_RECORD_MAX_STATES = 256


class Recording(NamedTuple):
    """What a recorded search wrote: the leaves computed per chunk (``counts``, shape
    (N_CHUNKS, 1)), the envelope column of its tables (``tabB[s, t]``, ``sigB[t]``), and when
    no chunk exceeded its capacity the leaves themselves in one array each (``st`` states,
    ``ti`` total index, ``w`` weight; grouped by branch, :func:`~._kernels._flatten_record`),
    else ``None``."""

    counts: np.ndarray
    tabB: np.ndarray
    sigB: np.ndarray
    st: np.ndarray | None
    ti: np.ndarray | None
    w: np.ndarray | None

    @property
    def most(self) -> int:
        """The largest chunk's count of leaves."""
        return int(self.counts.max())

    @property
    def complete(self) -> bool:
        """Whether every leaf was kept (no chunk past its capacity)."""
        return self.st is not None


@dataclass(frozen=True, eq=False)
class ReplayRecord:
    """A search that later points replay: its truncation ``k``, the number of ``leaves`` it
    computed, the sums of what it left out within k (``pruned_p``, ``pruned_n``: probability
    and a bound on E[n 1_O] of the configurations pruned by probability; ``margin_p``, ``e0``,
    ``e1``: the probability bound and the bounds on sum w e^-f_B and sum w e^-f_B (C + n) of
    those skipped by their margin, with the safety factor), the envelope ``tabB``, ``sigB`` and
    the leaves ``st``, ``ti``, ``w`` of its :class:`Recording`."""

    k: int
    leaves: int
    pruned_p: float
    pruned_n: float
    margin_p: float
    e0: float
    e1: float
    tabB: np.ndarray
    sigB: np.ndarray
    st: np.ndarray
    ti: np.ndarray
    w: np.ndarray

    @classmethod
    def of_search(cls, recording: Recording, k: int, total, e0: float,
                  e1: float) -> "ReplayRecord":
        """The record of a complete recording, from the search's result columns ``total``
        and its margin sums e0, e1 (as the bounds used them)."""
        return cls(k=int(k), leaves=int(total[COL_LEAVES]), pruned_p=float(total[COL_PRUNED_P]),
                   pruned_n=float(total[COL_PRUNED_N]), margin_p=float(total[COL_MARGIN_P]),
                   e0=e0, e1=e1, tabB=recording.tabB, sigB=recording.sigB, st=recording.st,
                   ti=recording.ti, w=recording.w)


class _Memory:
    """What an :class:`~.evaluator.Evaluator` carries from one point of a trajectory to the
    next: the threshold of the margin pruning and its measured ratio at the last search, the
    previous point, the last search's record (for replays), the horizon of the envelope, and
    counters."""

    def __init__(self):
        self.margin: tuple | None = None
        self.last: tuple | None = None
        self.record: ReplayRecord | None = None
        self.horizon = _HORIZON[0]
        self.replays = 0          # replays since the last search
        self.replays_total = 0
        self.searches = 0
        self.cap = _RECORD_CAP


class ReplayBounds(NamedTuple):
    """:func:`_replay_bounds`: the certified bounds, the tables at the point (state-major),
    the attention values, the tie threshold, P(n > k) and Delta."""

    bounds: dict
    tab: np.ndarray
    sig: np.ndarray
    values: tuple
    tie: float
    tail_probability: float
    delta: float


def _replay_bounds(L, C, q, p, nu, alpha, a, b, c, rec: ReplayRecord) -> ReplayBounds:
    """The certified bounds of a replay of ``rec`` at (alpha, a, b, c), before any leaf is
    computed: the tail n > k and the probability-pruned part with this point's coefficients,
    and the margin-skipped part grown by e^Delta, Delta >= f_B - f for every configuration
    within k (f_B: the envelope's f, which the search's margin bounds bound)."""
    M, k = L - 1, rec.k
    npos, nneg, n_of, S_of, pi = _states(C, q)
    Pd, Qs, R = attention_values(a, b, c, L, C)
    A = abs(alpha)
    tie = TIE_RTOL * L * C * act(A, p, nu)
    tab, sig = _tables(C, M, float(alpha), float(Pd), float(Qs), float(R), p, float(nu),
                       npos, nneg)
    # f = sig(T) + sum of M state terms F(s, T), T = C + sum S within k of C
    Tmin = C - M * C
    lo, hi = max(0, -k - Tmin + C), min(sig.shape[0] - 1, k - Tmin + C)
    delta = float(_drop_bound(rec.tabB, tab, rec.sigB, sig, n_of, pi, M, C, k, lo, hi))
    grow = math.exp(delta) * _BOUND_SAFETY if delta < 700.0 else math.inf
    e0 = grow * rec.e0 if rec.e0 > 0.0 else 0.0
    e1 = grow * rec.e1 if rec.e1 > 0.0 else 0.0
    cb = _certified_bounds(L, C, q, p, nu, alpha, a, b, c, k, tie, rec.pruned_p, rec.pruned_n,
                           e0, e1)
    return ReplayBounds(cb.total, tab, sig, (Pd, Qs, R), tie, cb.tail_probability, delta)


def _total_major(tab):
    """The replay kernels' layout of a table: ``out[t, s] = tab[s, t]``."""
    return np.ascontiguousarray(tab.transpose(1, 0, 2))


def _replay(L, C, q, p, nu, alpha, a, b, c, tol, mem: _Memory, parallel_min_configurations):
    """The last search's leaves at a new point, certified by :func:`_replay_bounds`: the result
    columns, the attention values, the bounds and the omitted probability; ``None`` when those
    bounds exceed ``tol`` (then nothing is computed: the caller searches)."""
    rec = mem.record
    rb = _replay_bounds(L, C, q, p, nu, alpha, a, b, c, rec)
    if max(rb.bounds.values()) > tol:
        return None
    kernel = (_replay_parallel if rec.leaves >= parallel_min_configurations
              else _replay_serial)
    total = kernel(_total_major(rb.tab), rb.sig, rec.st, rec.ti, rec.w, float(rb.tie))
    omitted = rb.tail_probability + rec.pruned_p + rec.margin_p
    return total, rb.values, rb.bounds, omitted


def _envelope_points(mem: _Memory | None, point) -> tuple:
    """The points ahead that a search's margin bounds cover: the path extrapolated from the
    previous point over half the horizon and the whole horizon (none without a previous
    point)."""
    if mem is None or mem.last is None:
        return ()
    x, x0 = np.array(point), np.array(mem.last)
    v = x - x0
    return tuple(tuple(x + h * v) for h in (mem.horizon / 2.0, float(mem.horizon)))
