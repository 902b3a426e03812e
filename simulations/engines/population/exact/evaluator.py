"""Exact population risk, zero-one error and gradient for G-invariant attention: the entry points.

Setting (SPEC sections 4-5): no projection noise, so <v, X_j> = alpha s_j, and an invariant
logit matrix Q = a I + b (B - I) + c (J - B) with attention values (Pd, Qs, R). Fixing y = +1
and l* = set 0, f = sum_i act(z_i) depends only on the multiset of the L-1 noise-set states
(:mod:`.states`), so the risk, the error and the gradient in (alpha, Pd, Qs, R) are finite
sums over those multisets, which the kernels (:mod:`._search`) enumerate; the chain rule of
:mod:`patchassoc.theory.invariant` gives (a, b, c) and the Gram coordinates (x, y, w).

:func:`evaluate` (and :func:`evaluate_gram`) plans the enumeration (:func:`~.states.plan`:
complete, or truncated at k nonzero noise entries with certified bounds, optionally pruned by
probability and by margin), runs it (:func:`_enumerate`, which redoes a pruned run whose
measured bounds exceed ``tol`` with lower thresholds) and assembles an :class:`Evaluation`.
An :class:`Evaluator` does the same along a trajectory, carrying the margin threshold and the
last search's leaves from point to point (:mod:`.replay`). Every evaluation is certified on its
own; the results never depend on the thread count.

Two exact identities are enforced rather than left to rounding. At uniform attention
(a = b = c, bitwise equal attention values) the gradient in (a, b, c) is exactly 0 (G acts
transitively: every entry of A gets the same gradient), an unstable fixed point that rounding
noise would leave; it is returned as 0. A margin |f| <= TIE_RTOL * D * act(|alpha|) is a tie
(error 1/2), which keeps exact zeros (e.g. T = 0 under uniform attention) from being split at
random by rounding; the brute-force oracle uses the same rule.

Derivations: ``docs/exact_engine.md``; SPEC section 5.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from patchassoc.theory.activation import (act, check_parameters, check_range,
                                          largest_argument_cached)
from patchassoc.theory.bayes import _bayes_error, check_sizes
from patchassoc.theory.invariant import attention_values, chain_to_gram, gram_jacobian
from patchassoc.theory.invariant import gram_to_logits

from patchassoc.simulations.engines._jit import N_CHUNKS
from patchassoc.simulations.engines.population.exact._kernels import (
    COL_D_ALPHA, COL_D_PD, COL_D_QS, COL_D_R, COL_ERROR, COL_LEAVES, COL_MARGIN_E0,
    COL_MARGIN_E1, COL_MARGIN_NODES, COL_MARGIN_P, COL_PROBABILITY, COL_PRUNED_N, COL_PRUNED_P,
    COL_RISK, COL_SCREENED, _FB, _LAMBDAS, _drop_bound, _envelope_tables, _flatten_record,
    _replay_parallel, _replay_serial)
from patchassoc.simulations.engines.population.exact._search import (_enumerate_parallel,
                                                                     _enumerate_serial)
from patchassoc.simulations.engines.population.exact.bounds import (
    _BOUND_SAFETY, _certified_bounds, _coefficients)
from patchassoc.simulations.engines.population.exact.replay import (
    _HORIZON, _RECORD_CAP, _RECORD_MAX_STATES, Recording, ReplayRecord, _envelope_points,
    _Memory, _replay, _total_major)
from patchassoc.simulations.engines.population.exact.states import (
    MARGIN_SHARE, MAX_CONFIGURATIONS, TIE_RTOL, Plan, _complete_plan, _split_depth, _states,
    _sums, _tasks_cached, plan)

#: Below this many multisets the serial kernel is used (thread start-up would dominate).
PARALLEL_MIN_CONFIGURATIONS = 200_000

#: An :class:`Evaluator` aims the margin's skipped bounds at this share of its budget, and
#: raises the margin threshold by at most this factor from one point to the next.
_MARGIN_AIM = 0.7
_MARGIN_RAMP = 4.0


@dataclass(frozen=True)
class Evaluation:
    """Exact (or certified-truncated) population quantities at one point.

    Attributes
    ----------
    risk, error : float
        Population logistic risk and zero-one error (ties 1/2); a truncated sum is a lower
        bound, within ``bounds['risk']`` / ``bounds['error']`` of the true value.
    grad : dict
        Derivatives of the risk in ``alpha`` and the reduced attention coordinates (``a``,
        ``b``, ``c`` for logits; ``x``, ``y``, ``w`` for the Gram form).
    grad_values : tuple
        Derivatives in the attention values (Pd, Qs, R).
    bayes_error : float
        Exact Bayes error of the model (independent of the parameters).
    configurations : int
        Number of multisets enumerated.
    k : int
        Largest total nonzero count enumerated ((L-1) C when complete).
    bounds : dict
        Certified bound on the omitted part of each quantity (0 when complete).
    probability : float
        Total probability of the enumerated configurations (1 - omitted, up to rounding).
    """

    risk: float
    error: float
    grad: dict
    grad_values: tuple
    bayes_error: float
    configurations: int
    k: int
    complete: bool
    bounds: dict
    probability: float
    omitted_probability: float
    attention: tuple = field(default=())

    @property
    def bound(self) -> float:
        """The largest bound over all returned quantities."""
        return max(self.bounds.values())


def check_problem(L, C, q, p, nu):
    """Validate and coerce (L, C, q, p, nu) (each valid combination checked once: every call of
    :func:`evaluate` passes here; the cache tells apart arguments of different types, so that
    ``L = 3.0`` is refused whether or not ``L = 3`` was seen)."""
    try:
        return _check_problem_cached(L, C, q, p, nu)
    except TypeError:   # an unhashable argument: checked (and refused) without the cache
        return _check_problem(L, C, q, p, nu)


@functools.lru_cache(maxsize=256, typed=True)
def _check_problem_cached(L, C, q, p, nu):
    return _check_problem(L, C, q, p, nu)


def _check_problem(L, C, q, p, nu):
    L, C, q = check_sizes(L, C, q)
    if isinstance(p, bool) or int(p) != p or p < 3 or int(p) % 2 == 0:
        raise ValueError(f"p must be an odd integer >= 3, got {p!r}")
    check_parameters(p, 0.0)   # p <= P_MAX: the kernels form t^p by p - 1 products
    nu = float(nu)
    if not (math.isfinite(nu) and nu >= 0):
        raise ValueError(f"nu must be finite and >= 0, got {nu!r}")
    return L, C, q, int(p), nu


def _check_point(**values):
    """The point's coordinates as floats; ValueError naming the first that is not finite."""
    out = []
    for name, v in values.items():
        v = float(v)
        if not math.isfinite(v):
            raise ValueError(f"{name} must be finite, got {v!r}")
        out.append(v)
    return out


def check_point(L: int, C: int, p: int, nu: float, alpha, a, b, c, names=("alpha", "a", "b",
                                                                          "c")) -> None:
    """A point the engine can evaluate in float64: every coordinate finite, and alpha where a
    sum of D = L C terms of act stays finite (act's arguments are alpha times attention-weighted
    sums of signs, so at most |alpha| in size; :func:`~patchassoc.theory.activation.check_range`).
    ``names`` name the coordinates in the messages (``("--alpha", ...)`` for the command line).

    Raises
    ------
    ValueError
        A coordinate is not finite, or act overflows at alpha (naming it).
    """
    # every call of evaluate() passes here: a plain loop, and the overflow bound looked up
    # (validated and cached per (p, nu, D)), with the message built only for a refusal
    for name, v in zip(names, (alpha, a, b, c)):
        if not math.isfinite(float(v)):
            raise ValueError(f"{name} must be finite, got {float(v)!r}")
    if not abs(float(alpha)) <= largest_argument_cached(p, nu, L * C):
        check_range(float(alpha), p, nu, L * C, what=f"{names[0]} = {float(alpha):g}")


#: The record buffers of a run that records nothing (never written: their capacity is 0).
_NO_RECORD = (np.empty((N_CHUNKS, 0, 1), dtype=np.uint8), np.empty((N_CHUNKS, 0), dtype=np.int32),
              np.empty((N_CHUNKS, 0)), np.zeros((N_CHUNKS, 1), dtype=np.int64))


def _run(L, C, q, p, nu, alpha, a, b, c, k, parallel, theta=0.0, theta2=0.0, ahead=(),
         cap=None):
    """Enumerate (pruning thresholds ``theta`` on probability, ``theta2`` on the tilted margin
    bound) and return the reduced columns (``COL_*``), the attention values, the tie threshold
    and the :class:`~.replay.Recording` (``None`` without ``cap``).

    ``ahead``: further points (alpha, a, b, c) whose f the margin bounds must also bound (they
    read F's lower envelope over the points). ``cap``: record the leaves computed, at most
    ``cap`` per chunk (a chunk past it is only counted, and the recording is incomplete).
    """
    M = L - 1
    D = L * C
    npos, nneg, n_of, S_of, pi = _states(C, q)
    Pd, Qs, R = attention_values(a, b, c, L, C)
    pisuf, pnsuf, invfact = _sums(C, q, M)
    tasks = _tasks_cached(C, q, M, k, _split_depth(M, C, k))
    A = abs(alpha)
    tie = TIE_RTOL * D * act(A, p, nu)
    cmax = 0.0
    if theta2 > 0.0:
        cmax = max(c1 for key, (_, c1) in _coefficients(L, C, p, nu, alpha, a, b, c,
                                                         k).items()
                   if key not in ("risk", "error"))
    pts = np.array([(alpha, Pd, Qs, R)] + [(x[0], *attention_values(x[1], x[2], x[3], L, C))
                                          for x in ahead], dtype=np.float64)
    if cap is None:  # nothing recorded: shared empty buffers
        rec_st, rec_ti, rec_w, rec_n = _NO_RECORD
    else:
        cap = int(cap)
        rec_st = np.empty((N_CHUNKS, cap, max(M, 1)), dtype=np.uint8)
        rec_ti = np.empty((N_CHUNKS, cap), dtype=np.int32)
        rec_w = np.empty((N_CHUNKS, cap))
        rec_n = np.zeros((N_CHUNKS, 1), dtype=np.int64)
    kernel = _enumerate_parallel if parallel else _enumerate_serial
    states = (n_of, S_of, pi, pisuf, pnsuf, invfact)
    limits = (M, C, int(k), float(tie), float(theta), float(cmax), float(theta2))
    total = kernel(pts, p, float(nu), npos, nneg, states, limits, tasks,
                   float(math.factorial(M)), _LAMBDAS,
                   (cap is not None, rec_st, rec_ti, rec_w, rec_n))
    recording = None
    if cap is not None:  # the envelope the kernel used (the same function, the same numbers)
        tabT, sig = _envelope_tables(C, M, pts, p, float(nu), npos, nneg)
        leaves = (None, None, None)
        if int(rec_n.max()) <= cap:  # complete: flat, grouped by branch (the replays' input)
            leaves = _flatten_record(rec_st, rec_ti, rec_w, rec_n, tabT, sig)
        recording = Recording(rec_n, tabT[:, :, _FB].copy(), sig[:, _FB].copy(), *leaves)
    return total, (Pd, Qs, R), tie, recording


def warm_up() -> None:
    """Compile (or load from the cache) every kernel on a tiny problem, through the same code
    path and argument types as :func:`evaluate`, so that later timings are of the work only."""
    for parallel in (False, True):
        rec = _run(3, 2, 0.3, 5, 0.03, 0.5, 1.0, 0.5, 0.0, 4, parallel, 1e-3, 1e-3,
                   ((0.6, 1.0, 0.6, 0.0),), 64)[3]
        replay = _replay_parallel if parallel else _replay_serial
        tab, sig = rec.tabB[:, :, None].repeat(5, axis=2), rec.sigB[:, None].repeat(5, 1)
        replay(_total_major(tab), sig, rec.st, rec.ti, rec.w, 0.0)
    _, _, n_of, _, pi = _states(2, 0.3)
    _drop_bound(rec.tabB, tab, rec.sigB, sig, n_of, pi, 2, 2, 4, 0, sig.shape[0] - 1)
    for L, C in ((3, 2), (2, 3)):  # the first calls pay one-time costs (lazy loading)
        evaluate(L, C, 0.3, 5, 0.03, 0.5, 1.0, 0.5, 0.0)
        evaluate(L, C, 0.3, 5, 0.03, 0.5, 1.0, 0.5, 0.0, tol=1e-3)
        evaluate(L, C, 0.3, 5, 0.03, 0.5, 1.0, 0.5, 0.0, tol=1e-3, prune=True)


def _uniform(values, L: int, C: int) -> bool:
    """Whether the attention is exactly uniform (all present classes equal, bit for bit)."""
    Pd, Qs, R = values
    present = [Pd] + ([Qs] if C > 1 else []) + ([R] if L > 1 else [])
    return all(v == Pd for v in present)


#: A pruned run whose bound still exceeds ``tol`` is redone with the threshold divided by this
#: (at most ``_PRUNE_RETRIES`` times, then without pruning, where the tail alone meets tol).
_PRUNE_BACKOFF = 16.0
_PRUNE_RETRIES = 3


def _enumerate(L, C, q, p, nu, alpha, a, b, c, pl: Plan, tol, parallel, prev=None):
    """Run the plan; with pruning, the certified bounds of what was actually omitted.

    ``prev``: the :class:`~.replay._Memory` of a trajectory (or ``None``). The margin pruning was at
    threshold th_prev at the last search, where its bounds summed to ``ratio`` times that
    threshold, so this one aims at ``_MARGIN_AIM`` of the margin's share of ``tol``, moving at
    most ``_MARGIN_RAMP`` times up per search (never below the plan's a-priori threshold). With
    a memory the margin bounds also cover the path ahead (:func:`_envelope_points`) and the
    leaves are recorded for replays.
    Returns the columns, the attention values, the bounds, the omitted probability and whether
    complete. A run above ``tol`` is redone with the threshold of the part that exceeded its
    share lowered.
    """
    theta, theta2 = pl.theta, pl.theta_margin
    mem = prev
    cap = ahead = None
    if mem is not None:
        if theta2 > 0.0 and mem.margin is not None:
            th_prev, ratio = mem.margin
            aim = _MARGIN_AIM * MARGIN_SHARE * tol / ratio if ratio > 0.0 else math.inf
            theta2 = max(theta2, min(aim, _MARGIN_RAMP * th_prev))
        if mem.searches > 0:  # the horizon follows how long the last search's replays lasted
            mem.horizon = (min(2 * mem.horizon, _HORIZON[1]) if mem.replays >= mem.horizon
                           else max(_HORIZON[0], mem.replays))
        mem.record, mem.replays = None, 0
        mem.searches += 1
        if theta2 > 0.0 and (C + 1) * (C + 2) // 2 <= _RECORD_MAX_STATES:
            ahead = _envelope_points(mem, (alpha, a, b, c))
            cap = mem.cap
    for attempt in range(_PRUNE_RETRIES + 2):
        total, values, tie, recording = _run(L, C, q, p, nu, alpha, a, b, c, pl.k, parallel,
                                             theta, theta2, ahead or (), cap)
        if theta == 0.0 and theta2 == 0.0:
            return total, values, dict(pl.bounds), pl.omitted_probability, pl.complete
        pm0, pm1 = float(total[COL_PRUNED_P]), float(total[COL_PRUNED_N])
        e0 = float(total[COL_MARGIN_E0]) * _BOUND_SAFETY
        e1 = float(total[COL_MARGIN_E1]) * _BOUND_SAFETY
        cb = _certified_bounds(L, C, q, p, nu, alpha, a, b, c, pl.k, tie, pm0, pm1, e0, e1)
        if max(cb.total.values()) <= tol:
            if (mem is not None and theta2 > 0.0
                    and total[COL_MARGIN_NODES] + total[COL_SCREENED] > 0):
                mem.margin = (theta2, max(cb.margin.values()) / theta2)
            if recording is not None:
                if recording.complete:
                    mem.record = ReplayRecord.of_search(recording, pl.k, total, e0, e1)
                mem.cap = max(_RECORD_CAP, int(1.25 * recording.most) + 1)
            omitted = cb.tail_probability + pm0 + float(total[COL_MARGIN_P])
            return total, values, cb.total, omitted, False
        if attempt >= _PRUNE_RETRIES:
            theta = theta2 = 0.0
            continue
        if max(cb.margin.values()) > MARGIN_SHARE * tol:
            theta2 = max(pl.theta_margin, theta2 / _PRUNE_BACKOFF)
        if max(cb.tail[key] + cb.pruned[key] for key in cb.tail) > (1.0 - MARGIN_SHARE) * tol:
            theta /= _PRUNE_BACKOFF
    raise AssertionError("unreachable: the unpruned plan meets tol")


def evaluate(L: int, C: int, q: float, p: int, nu: float, alpha: float, a: float, b: float,
             c: float, *, tol: float | None = None,
             max_configurations: int = MAX_CONFIGURATIONS, prune: bool = False,
             parallel_min_configurations: int = PARALLEL_MIN_CONFIGURATIONS) -> Evaluation:
    """Exact population risk, error and gradient at (alpha, a, b, c) for invariant logits.

    Parameters
    ----------
    L, C, q, p, nu : problem (sets, set size, feature-noise rate, activation).
    alpha : float
        <v, w*> (the projection noise is zero).
    a, b, c : float
        Invariant logits Q = a I + b (B - I) + c (J - B).
    tol : float, optional
        ``None``: full enumeration (exact up to rounding). Otherwise a certified truncation:
        the omitted part of every returned quantity is <= tol (``bounds``).
    max_configurations : int
        Refuse (ValueError with the estimated cost) beyond this many multisets.
    prune : bool
        With ``tol``: also prune by probability (``docs/exact_engine.md``), several times fewer
        configurations at the paper's size; ``configurations`` is then the number enumerated
        and ``omitted_probability`` a bound.
    parallel_min_configurations : int
        Use the threaded kernel from this many (planned) multisets on; the result is the same
        bit for bit either way (0 forces the threads, as the tests do).

    References
    ----------
    SPEC section 5.
    """
    L, C, q, p, nu = check_problem(L, C, q, p, nu)
    check_point(L, C, p, nu, alpha, a, b, c)
    return _evaluate(L, C, q, p, nu, alpha, a, b, c, tol, max_configurations, prune,
                     parallel_min_configurations)


def _evaluate(L, C, q, p, nu, alpha, a, b, c, tol, max_configurations, prune,
              parallel_min_configurations, prev=None):
    """:func:`evaluate` on a checked problem. ``prev``: the :class:`_Memory` of a trajectory
    (updated): the last search's leaves are replayed when their certified bounds meet ``tol``
    here, and a search is run (and recorded) otherwise."""
    alpha, a, b, c = float(alpha), float(a), float(b), float(c)
    if not (math.isfinite(alpha) and math.isfinite(a) and math.isfinite(b)
            and math.isfinite(c)):
        _check_point(alpha=alpha, a=a, b=b, c=c)  # raises, naming the field
    got = None
    if prev is not None and prev.record is not None and tol is not None and prune:
        got = _replay(L, C, q, p, nu, alpha, a, b, c, tol, prev, parallel_min_configurations)
    if got is not None:
        total, values, bounds, omitted = got
        complete, k = False, prev.record.k
        prev.replays += 1
        prev.replays_total += 1
    else:
        if tol is None:  # the complete plan depends on (L, C) only
            pl = _complete_plan(L, C)
            if pl.configurations > max_configurations:
                plan(L, C, q, p, nu, alpha, a, b, c, tol, max_configurations, prune)  # raises
        else:
            pl = plan(L, C, q, p, nu, alpha, a, b, c, tol, max_configurations, prune)
        total, values, bounds, omitted, complete = _enumerate(
            L, C, q, p, nu, alpha, a, b, c, pl, tol,
            pl.configurations >= parallel_min_configurations, prev)
        k = pl.k
    if prev is not None:
        prev.last = (alpha, a, b, c)
    tl = total.tolist()  # Python floats, in one call
    if _uniform(values, L, C):
        # Exact identity: at uniform attention every entry of a row gets the same per-entry
        # gradient, so d/da = d/db = d/dc = 0 (module docstring); the computed values are rounding
        # noise (~1e-18) that the unstable fixed point would amplify.
        ga = gb = gc = 0.0
    else:
        # chain_to_logits written out with the attention values of the run (the same
        # numbers, without recomputing the softmax)
        Pd, Qs, R = values
        gP, gQ, gR = tl[COL_D_PD], tl[COL_D_QS], tl[COL_D_R]
        mix = Pd * gP + Qs * gQ + R * gR
        ga, gb, gc = Pd * (gP - mix), Qs * (gQ - (C - 1) * mix), R * (gR - (L * C - C) * mix)
    ev = Evaluation(risk=tl[COL_RISK], error=tl[COL_ERROR],
                    grad={"alpha": tl[COL_D_ALPHA], "a": ga, "b": gb, "c": gc},
                    grad_values=(tl[COL_D_PD], tl[COL_D_QS], tl[COL_D_R]),
                    bayes_error=_bayes_error(L, C, q), configurations=int(tl[COL_LEAVES]), k=k,
                    complete=complete, bounds=bounds, probability=tl[COL_PROBABILITY],
                    omitted_probability=omitted, attention=values)
    return ev


def evaluate_gram(L: int, C: int, q: float, p: int, nu: float, alpha: float, x: float,
                  y: float, w: float, *, tol: float | None = None,
                  max_configurations: int = MAX_CONFIGURATIONS, prune: bool = False,
                  parallel_min_configurations: int = PARALLEL_MIN_CONFIGURATIONS
                  ) -> Evaluation:
    """:func:`evaluate` for Q = P P^T with invariant symmetric P = x I + y (B - I) + w (J - B).

    ``grad`` holds derivatives in (alpha, x, y, w) (chain rule through
    :func:`patchassoc.theory.invariant.gram_to_logits`); the bounds are propagated with |J|^T.
    """
    L, C, q, p, nu = check_problem(L, C, q, p, nu)
    check_point(L, C, p, nu, alpha, x, y, w, names=("alpha", "x", "y", "w"))
    return _evaluate_gram(L, C, q, p, nu, alpha, x, y, w, tol, max_configurations, prune,
                          parallel_min_configurations)


def _evaluate_gram(L, C, q, p, nu, alpha, x, y, w, tol, max_configurations, prune,
                   parallel_min_configurations, prev=None):
    """:func:`evaluate_gram` on a checked problem (``prev`` as in :func:`_evaluate`)."""
    alpha, x, y, w = _check_point(alpha=alpha, x=x, y=y, w=w)
    a, b, c = gram_to_logits(x, y, w, L, C)
    J = np.abs(gram_jacobian(x, y, w, L, C))
    # a tolerance in (a, b, c) that gives ``tol`` in (x, y, w): |J|^T bounds <= colsum * max
    scale = max(1.0, float(J.sum(axis=0).max()))
    ev = _evaluate(L, C, q, p, nu, alpha, a, b, c, None if tol is None else tol / scale,
                   max_configurations, prune, parallel_min_configurations, prev)
    gx, gy, gw = chain_to_gram(ev.grad["a"], ev.grad["b"], ev.grad["c"], x, y, w, L, C)
    bab = np.array([ev.bounds["a"], ev.bounds["b"], ev.bounds["c"]])
    bx = J.T @ bab
    bounds = {"risk": ev.bounds["risk"], "error": ev.bounds["error"],
              "alpha": ev.bounds["alpha"], "x": float(bx[0]), "y": float(bx[1]),
              "w": float(bx[2])}
    return Evaluation(risk=ev.risk, error=ev.error,
                      grad={"alpha": ev.grad["alpha"], "x": gx, "y": gy, "w": gw},
                      grad_values=ev.grad_values, bayes_error=ev.bayes_error,
                      configurations=ev.configurations, k=ev.k, complete=ev.complete,
                      bounds=bounds, probability=ev.probability,
                      omitted_probability=ev.omitted_probability,
                      attention=ev.attention)


class Evaluator:
    """Evaluations of one problem at the successive points of a trajectory.

    :func:`evaluate` (``param='logits'``) or :func:`evaluate_gram` (``'gram'``) with
    (L, C, q, p, nu), ``tol``, ``prune`` and the caps fixed. What depends on the problem only
    (states, task lists, key histograms of the pruning plan) is cached across the calls. With
    ``prune`` and ``tol``, two things carry over from point to point (:mod:`.replay`):

    - the threshold of the pruning by margin, set from the sums measured at the last search:
      the tilted bounds of the subtrees skipped there summed to r times their threshold, so
      the threshold aims at ``_MARGIN_AIM`` of the margin's share of ``tol`` (never below the
      a-priori threshold of :func:`~.states.plan`);
    - the leaves of the last search, which later points replay (only those leaves are
      computed) while the replay's own certified bounds meet ``tol``; a search's margin bounds
      cover the path extrapolated a few steps ahead, so that its replays last.

    Every evaluation is certified on its own: its bounds are measured (a replay's before any
    leaf is computed), and a search above ``tol`` is redone with lower thresholds. These
    choices only decide how much work that takes, so the numbers depend (deterministically) on
    the points evaluated before, within the certified bounds; never on the thread count.

    References
    ----------
    SPEC section 5.
    """

    def __init__(self, L: int, C: int, q: float, p: int, nu: float, *,
                 tol: float | None = None, prune: bool = False, param: str = "logits",
                 max_configurations: int = MAX_CONFIGURATIONS,
                 parallel_min_configurations: int = PARALLEL_MIN_CONFIGURATIONS):
        self.problem = check_problem(L, C, q, p, nu)
        if param not in ("logits", "gram"):
            raise ValueError(f"param must be 'logits' or 'gram', got {param!r}")
        if tol is not None and not (tol > 0 and math.isfinite(tol)):
            raise ValueError(f"tol must be a positive finite number, got {tol!r}")
        self.tol, self.prune, self.param = tol, bool(prune), param
        self.max_configurations = int(max_configurations)
        self.parallel_min_configurations = int(parallel_min_configurations)
        self.memory = _Memory()

    def __call__(self, alpha: float, *coords: float) -> Evaluation:
        """The evaluation at (alpha, coords): (a, b, c) for logits, (x, y, w) for Gram."""
        if len(coords) != 3:
            raise ValueError(f"three attention coordinates expected, got {len(coords)}")
        fn = _evaluate if self.param == "logits" else _evaluate_gram
        return fn(*self.problem, alpha, *coords, self.tol, self.max_configurations,
                  self.prune, self.parallel_min_configurations, self.memory)

    def search_next(self) -> None:
        """Make the next call a search (drop the recorded leaves; the margin threshold and the
        horizon stay)."""
        self.memory.record = None

    @property
    def margin(self) -> tuple | None:
        """(threshold, ratio) of the margin pruning at the last search that pruned by margin."""
        return self.memory.margin

    @property
    def ratio(self) -> float | None:
        """The margin's skipped bounds over its threshold at the last search that pruned."""
        return None if self.memory.margin is None else self.memory.margin[1]

    @property
    def counts(self) -> dict:
        """How many evaluations were searches and how many replays, and the current horizon."""
        m = self.memory
        return {"searches": m.searches, "replays": m.replays_total, "horizon": m.horizon}
