"""The exact gradient flow of the population risk on (alpha, a, b, c), followed to its limit.

Population gradient descent (:mod:`.trajectory`) moves theta = (alpha, a, b, c) by
theta <- theta - M grad R(theta), with M = diag(eta_v, eta_Q / n_a, eta_Q / n_b, eta_Q / n_c)
the per-coordinate step sizes (n_k entries of Q in the class k; the entry of a is 0 with
``diagonal='fixed'``, which freezes a). The flow is its small-step limit,

    d theta / dt = -M grad R(theta),

with t counted in GD steps: GD with the steps M / k, run for k t steps, converges to the flow at
time t as k grows (at first order: the tests measure it). The last phase of the dynamics is
logarithmically slow (b - c grows like ln t and the gradient is of the order of the risk), so a
fixed step budget cannot reach it, but the flow can: it is integrated in the variable
s = ln(1 + t), d theta / ds = (1 + t) d theta / dt, by an adaptive implicit solver (scipy's
LSODA, which switches to BDF where the problem is stiff; Radau and BDF may be chosen), to a
horizon t_max (every caller states it; the studies' is ``T_MAX``), recorded at log-spaced times
(``per_decade`` per decade, and t = 0), with the solver's dense output kept
(:meth:`FlowTrajectory.at`).

Accuracy of the right-hand side (SPEC section 6, the flow). Each evaluation is the exact
engine's (:mod:`.exact`): a complete enumeration (bound 0) when the problem has at most
``complete_max`` multisets, else a certified truncation whose tolerance is chosen at each
evaluation so that the certified bound on M grad R (the vector of M times each component's
bound) has a norm <= ``rel_bound`` (1e-2) x |M grad R|, the flow's speed: the direction of the
flow is right to 1 %. The tolerance is aimed from the previous speed and tightened until the
rule holds. At an exact stationary point the speed is 0 and no truncation can meet a relative
rule: when it demands a tolerance below ``TOL_FLOOR`` x the risk (the rounding level of the sums),
the flow stops there, with status ``stationary at t = ...``, and the limit class reads it as
converged.

The horizon and the limit (SPEC section 6, one rule for every flow). A flow reaches its horizon
when it was integrated to t_max (status ``ok``) or stopped at a stationary point (at rest, its
state holds to the horizon); any other end (a solver failure, a non-finite value, a solver
stalled by step sizes it cannot follow in float64, an interruption) leaves it **censored**: its last state is never read as the state at the horizon
(:attr:`FlowTrajectory.reached`), every time to a criterion is censored, and it has no limit
class. The limit (:func:`limit_class`) is decided from the records of the last decade before
the horizon, t >= t_max / 10 (at least ``MIN_RECORDS``), with u = b - c:

- ``undetermined``: no class can be read: the flow did not reach its horizon, or its last decade
  holds fewer than ``MIN_RECORDS`` records (the reason is given);
- ``tie``: b = c at every one of these records, to ``TIE_RTOL`` relative (held by symmetry, e.g.
  from uniform attention, a fixed point of the flow);
- ``converged``: a stationary end, or every coordinate moved by <= ``STILL`` x (1 + |value|)
  over the decade (a bounded stationary point; the speed at the horizon is reported);
- ``association``: u > 0 at the horizon and its least-squares slope against ln t over the decade
  is >= ``SLOPE_MIN`` (b - c -> +infinity like ln t; the limit attention is block-uniform), with
  the limiting alpha (its value at the horizon and its change over the decade);
- ``other sets``: u < 0 and the slope <= -``SLOPE_MIN`` (b - c -> -infinity);
- ``undecided``: none of these (still moving, not yet in an asymptotic regime).

Every constant that decides a class is declared in SPEC section 6 ("Deciding constants") and a
test compares the two.

References
----------
SPEC sections 2 (training conventions), 4 (symmetry reduction), 5 (exact population risk), 6
(the flow, the limit class, the time to a criterion).
"""
from __future__ import annotations

import bisect
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from scipy.integrate import BDF, LSODA, Radau

from patchassoc.theory.association import invariant_association
from patchassoc.theory.bayes import bayes_error
from patchassoc.theory.invariant import attention_values, entry_counts
from patchassoc.simulations.analysis import stats
from patchassoc.simulations.engines import fixed_order
from patchassoc.simulations.engines.criteria import times_to_criteria
from patchassoc.simulations.engines.population.exact import (
    MAX_CONFIGURATIONS, Evaluator, check_problem, count_configurations)
from patchassoc.simulations.engines.population.trajectory import initial_point
from patchassoc.simulations.runtime.errors import interrupted_by, whole_records
from patchassoc.simulations.runtime.progress import progress_bar
from patchassoc.simulations.runtime.results import config_record, save_folder

__all__ = ["FlowTrajectory", "FlowResult", "population_flow", "run_flow", "flow_reading",
           "limit_class", "flow_times", "T_MAX",
           "T_MIN", "PER_DECADE", "REL_BOUND", "RTOL", "ATOL", "COMPLETE_MAX", "SLOPE_MIN", "STILL",
           "classify_decade", "LIMIT_RULE", "record_times",
           "TOL_FLOOR", "LIMIT_CLASSES", "METHODS", "BAYES_FACTOR", "MIN_RECORDS", "TIE_RTOL",
           "FLOW_VERSION", "reached_horizon", "MAX_EVALUATIONS_PER_RECORD", "Stalled",
           "stall_guard", "stalled_status", "check_horizon"]

#: Version of the flow's numbers: studies put it in their cells' fingerprints, so that cells
#: computed by an older engine are recomputed, never reused.
FLOW_VERSION = "flow-5"
#: The declared horizon, in GD steps (SPEC section 6): the studies read their flows there. The
#: engine has no default horizon: every caller states its own.
T_MAX = 1e15
#: The shortest horizon a flow accepts: below it the solver's step underflows (1e-200 ran
#: forever in LSODA), and nothing moves that float64 records could show.
T_MIN = 1e-9
#: Records per decade of t (SPEC: >= 20).
PER_DECADE = 20
#: The certified bound on M grad R relative to |M grad R| (SPEC section 6).
REL_BOUND = 1e-2
#: The solver's relative and absolute tolerances on (alpha, a, b, c).
RTOL = 1e-5
ATOL = 1e-7
#: Problems with at most this many multisets are enumerated completely (bound 0).
COMPLETE_MAX = 200_000
#: Records of the last decade the limit class needs (fewer: undetermined).
MIN_RECORDS = 3
#: b = c to this relative level at every record of the last decade: a tie.
TIE_RTOL = 1e-12
#: Slope of b - c against ln t over the last decade from which b - c diverges.
SLOPE_MIN = 0.05
#: Relative move over the last decade below which every coordinate is still.
STILL = 1e-6
#: A truncated evaluation never asks for a tolerance below this fraction of the risk.
TOL_FLOOR = 1e-14
#: The error criterion's factor on the Bayes error (claim 1).
BAYES_FACTOR = 1.3
#: The classes of a flow's limit (:func:`limit_class`).
LIMIT_CLASSES = ("association", "other sets", "converged", "tie", "undecided", "undetermined")
METHODS = {"LSODA": LSODA, "Radau": Radau, "BDF": BDF}
#: Restarts of a failed solver (each with 10 x tighter tolerances) before the flow gives up.
_RESTARTS = 3
#: Tightenings of a truncated evaluation's tolerance before the flow gives up.
_RETRIES = 8
#: Right-hand sides a flow may evaluate between two records before it stops as ``stalled``: a
#: flow whose steps sizes make it move faster than float64 steps can follow (eta_Q = 1e50, say)
#: keeps the solver at its first step forever; a flow of the studies takes at most a few
#: hundred between two records.
MAX_EVALUATIONS_PER_RECORD = 3000


class Stalled(Exception):
    """The solver used :data:`MAX_EVALUATIONS_PER_RECORD` evaluations without reaching the next
    record: the flow stops there (status ``stalled at t = ...``), censored."""


def check_horizon(t_max: float, eta_v: float, eta_Q: float) -> None:
    """Refuse a horizon the flow cannot reach in float64: the solver integrates
    d theta / ds = (1 + t) M grad R up to s = ln(1 + t_max), so (1 + t_max) times the step sizes
    must be a float64 number (with the headroom of the gradient's terms).

    Raises
    ------
    ValueError
        Naming t_max and the step size.
    """
    for name, eta in (("eta_v", eta_v), ("eta_Q", eta_Q)):
        if not (1.0 + float(t_max)) * float(eta) <= 1e300:
            raise ValueError(f"t_max = {float(t_max):g} with {name} = {float(eta):g}: the flow's "
                             f"time (1 + t) {name} would pass 1e300 before the horizon, too "
                             f"close to the largest float64 for the gradient's terms")


def stall_guard(state: dict, t_next, limit: int = MAX_EVALUATIONS_PER_RECORD) -> None:
    """Count one evaluation of the right-hand side in ``state`` (key ``"since_record"``, which
    a record sets to 0); raise :class:`Stalled` past ``limit`` since the last record.
    ``t_next`` is the time of the next record (for the message)."""
    state["since_record"] = state.get("since_record", 0) + 1
    if state["since_record"] > limit:
        raise Stalled(f"{limit} evaluations short of the next record t = {t_next:.3g}")


def stalled_status(exc: Stalled, s_now: float, eta_v: float, eta_Q: float) -> str:
    """The status of a flow stopped by :func:`stall_guard` at ``s = ln(1 + t)``."""
    return (f"stalled at t = {math.expm1(s_now):.3g} ({exc}: the flow moves faster than "
            f"float64 steps can follow, with eta_v = {eta_v:g} and eta_Q = {eta_Q:g})")


class _Stationary(Exception):
    """The relative bound demands a tolerance below the rounding level: the speed is ~ 0."""


@dataclass(frozen=True, eq=False)
class FlowTrajectory:
    """What :func:`population_flow` recorded; arrays are indexed by record (``t`` in GD steps).

    ``speed`` is |M grad R| (the flow's speed in GD time), ``bound`` the largest certified bound
    of the record's evaluation and ``rel_bound`` the certified bound on M grad R over the speed
    (0 when complete). ``max_rel_bound`` is the largest relative bound over every evaluation the
    solver made (records included).
    """

    t: np.ndarray
    alpha: np.ndarray
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    risk: np.ndarray
    error: np.ndarray
    bound: np.ndarray
    rel_bound: np.ndarray
    speed: np.ndarray
    topc_rows: np.ndarray
    share: np.ndarray
    Pd: np.ndarray
    Qs: np.ndarray
    R: np.ndarray
    status: str
    t_reached: float
    t_max: float
    evaluations: int
    solver_steps: int
    max_rel_bound: float
    complete: bool
    method: str
    rtol: float
    atol: float
    seconds: float
    diagonal: str
    D: int
    segments: list = field(default_factory=list, repr=False)
    restarts: list = field(default_factory=list)

    ARRAYS = ("t", "alpha", "a", "b", "c", "risk", "error", "bound", "rel_bound", "speed",
              "topc_rows", "share", "Pd", "Qs", "R")

    @property
    def reached(self) -> bool:
        """Whether the flow reached its horizon (:func:`reached_horizon`)."""
        return reached_horizon(self.status, self.t_reached, self.t_max)

    def at(self, t: float) -> np.ndarray:
        """(alpha, a, b, c) at time ``t`` (GD steps) from the solver's dense output."""
        t = float(t)
        if not self.segments or not (0.0 <= t <= self.t_reached):
            raise ValueError(f"t must lie in [0, {self.t_reached:g}] (the integrated range)")
        s = math.log1p(t)
        ends = [seg[1] for seg in self.segments]
        k = min(bisect.bisect_left(ends, s), len(self.segments) - 1)
        return np.asarray(self.segments[k][2](s), dtype=np.float64)


def record_times(t_max: float, per_decade: int = PER_DECADE) -> np.ndarray:
    """The times a flow records: t = 0, then log-spaced from t = 1 to ``t_max``, ``per_decade``
    a decade, ``t_max`` included (just t = 0 and ``t_max`` when ``t_max`` <= 1)."""
    hi = math.log10(t_max) if t_max > 1 else 0.0
    n = max(1, int(math.ceil(hi * per_decade)))
    # 10 ** x by the C library's scalar pow, not NumPy's vectorized one (whose bits depend on
    # the CPU): the record times are the times the solver is asked for
    pts = (np.array([10.0 ** float(x) for x in np.linspace(0.0, hi, n + 1)]) if t_max > 1
           else np.array([]))
    pts = np.unique(np.concatenate([pts, [t_max]]))
    return np.concatenate([[0.0], pts[(pts > 0.0) & (pts <= t_max)]])


def reached_horizon(status: str, t_reached: float | None, t_max: float) -> bool:
    """The one rule for every flow (SPEC section 6): a flow reached its horizon when it was
    integrated to ``t_max`` (status ``"ok"`` and its last record at t_max), or when it stopped
    at a stationary point (status ``"stationary at t = ..."``: at rest, its state holds to the
    horizon). Any other end (a solver failure, a non-finite value, an interruption, a stop) is
    censored: its last state is not the state at the horizon."""
    status = str(status)
    if status.startswith("stationary"):
        return True
    return bool(status == "ok" and t_reached is not None and math.isfinite(float(t_reached))
                and float(t_reached) >= float(t_max))


def population_flow(L: int, C: int, q: float, p: int, nu: float, alpha0: float,
                    coords0: Sequence[float], *, eta_v: float, eta_Q: float,
                    t_max: float, per_decade: int = PER_DECADE,
                    diagonal: str = "fixed", rel_bound: float = REL_BOUND,
                    rtol: float = RTOL, atol: float = ATOL, method: str = "LSODA",
                    complete_max: int = COMPLETE_MAX,
                    max_configurations: int = MAX_CONFIGURATIONS, progress: bool = False,
                    desc: str = "flow") -> FlowTrajectory:
    """The gradient flow d theta / dt = -M grad R from (alpha0, a0, b0, c0) to ``t_max``.

    Parameters
    ----------
    coords0 : (a, b, c), the free logits' invariant coordinates.
    eta_v, eta_Q : the GD step sizes that make M (t counts GD steps).
    t_max : horizon in GD steps (> 0).
    per_decade : records per decade of t (>= 1), plus t = 0 and t_max.
    diagonal : ``"fixed"`` freezes a (the paper's Simplification 3.1), ``"trained"`` moves it.
    rel_bound : certified bound on M grad R over its norm, for truncated evaluations.
    rtol, atol : the solver's tolerances. A solver that fails (LSODA's "unexpected istate", say)
        is restarted from its last accepted point with 10 x tighter tolerances, up to 3 times
        (``restarts`` records where and why).
    method : ``"LSODA"``, ``"Radau"`` or ``"BDF"``.
    complete_max : enumerate completely up to this many multisets, else truncate.

    Returns
    -------
    FlowTrajectory
        ``status`` is ``"ok"``, ``"stationary at t = ..."``, ``"solver failed at t = ..."``,
        ``"non-finite at t = ..."``, ``"stalled at t = ..."`` (:data:`MAX_EVALUATIONS_PER_RECORD`
        evaluations between two records) or ``"interrupted at t = ..."``; what was recorded up to then
        is kept (:attr:`FlowTrajectory.reached` says whether the horizon was reached).
    """
    L, C, q, p, nu = check_problem(L, C, q, p, nu)
    if diagonal not in ("trained", "fixed"):
        raise ValueError(f"diagonal must be 'trained' or 'fixed', got {diagonal!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}, got {method!r}")
    t_max = float(t_max)
    if not (math.isfinite(t_max) and t_max >= T_MIN):
        raise ValueError(f"t_max must be a finite number of steps >= {T_MIN:g}, got {t_max!r}")
    if isinstance(per_decade, bool) or int(per_decade) != per_decade or per_decade < 1:
        raise ValueError(f"per_decade must be an integer >= 1, got {per_decade!r}")
    for name, v in (("eta_v", eta_v), ("eta_Q", eta_Q), ("rtol", rtol), ("atol", atol),
                    ("rel_bound", rel_bound)):
        if not (math.isfinite(float(v)) and float(v) > 0):
            raise ValueError(f"{name} must be a positive finite number, got {v!r}")
    check_horizon(t_max, eta_v, eta_Q)
    y0 = np.array([alpha0, *coords0], dtype=np.float64)
    if y0.shape != (4,) or not np.all(np.isfinite(y0)):
        raise ValueError("alpha0 and the three attention coordinates (a, b, c) must be finite")
    D = L * C
    n_entries = entry_counts(L, C)
    m = np.array([float(eta_v)] + [float(eta_Q) / n if n else 0.0 for n in n_entries])
    if diagonal == "fixed":
        m[1] = 0.0
    complete = count_configurations(L, C) <= int(complete_max)
    evaluator = Evaluator(L, C, q, p, nu, tol=None if complete else 1e-6, prune=not complete,
                          max_configurations=max_configurations)
    state = {"evaluations": 0, "max_rel": 0.0, "speed": None}
    norm_m = fixed_order.norm(m)

    def evaluate(y):
        """(velocity in GD time, evaluation, relative bound) at y, the bound rule enforced."""
        alpha, a, b, c = (float(x) for x in y)
        if complete:
            ev = evaluator(alpha, a, b, c)
            state["evaluations"] += 1
            g = np.array([ev.grad["alpha"], ev.grad["a"], ev.grad["b"], ev.grad["c"]])
            return -m * g, ev, 0.0
        speed = state["speed"]
        tol = evaluator.tol if speed is None else 0.5 * rel_bound * speed / norm_m
        for _ in range(_RETRIES):
            evaluator.tol = tol
            ev = evaluator(alpha, a, b, c)
            state["evaluations"] += 1
            g = np.array([ev.grad["alpha"], ev.grad["a"], ev.grad["b"], ev.grad["c"]])
            v = -m * g
            bnd = m * np.array([ev.bounds["alpha"], ev.bounds["a"], ev.bounds["b"],
                                ev.bounds["c"]])
            sp, bn = fixed_order.norm(v), fixed_order.norm(bnd)
            if bn <= rel_bound * sp:
                state["speed"] = sp
                return v, ev, (bn / sp if sp > 0 else 0.0)
            # aim below what this evaluation's speed asks for, at least halving
            tol = min(0.5 * tol, 0.5 * tol * rel_bound * sp / bn) if bn > 0 else 0.5 * tol
            if tol < TOL_FLOOR * max(ev.risk, 1e-300):
                raise _Stationary()
        raise _Stationary()

    def rhs(s, y):
        stall_guard(state, t_rec[min(nxt_record[0], len(t_rec) - 1)])
        try:
            v, _, rel = evaluate(y)
        except (OverflowError, ZeroDivisionError) as exc:
            # a wild trial point of the solver (alpha ~ 1e7, say) overflows a bound: the step
            # cannot be taken, and the flow stops there with what it recorded
            raise FloatingPointError(str(exc)) from exc
        state["max_rel"] = max(state["max_rel"], rel)
        if not np.all(np.isfinite(v)):
            raise FloatingPointError("non-finite gradient")
        return math.exp(s) * v           # d theta / ds = (1 + t) d theta / dt

    t_rec = record_times(t_max, per_decade)
    s_rec = np.array([math.log1p(float(x)) for x in t_rec])
    rows: dict[str, list] = {k: [] for k in FlowTrajectory.ARRAYS}
    nxt_record = [0]     # the index of the next record (for the stall guard's message)

    def record(t, y, into):
        state["since_record"] = 0
        nxt_record[0] += 1
        v, ev, rel = evaluate(y)
        state["max_rel"] = max(state["max_rel"], rel)
        alpha, a, b, c = (float(x) for x in y)
        Pd, Qs, R = attention_values(a, b, c, L, C)
        assoc = invariant_association(a, b, c, L, C, eps=0.1)
        for k, val in (("t", t), ("alpha", alpha), ("a", a), ("b", b), ("c", c),
                       ("risk", ev.risk), ("error", ev.error), ("bound", ev.bound),
                       ("rel_bound", rel), ("speed", fixed_order.norm(v)),
                       ("topc_rows", assoc.topc_rows), ("share", assoc.share_min),
                       ("Pd", Pd), ("Qs", Qs), ("R", R)):
            into[k].append(val)

    t0 = time.perf_counter()
    status, s_now, steps = "ok", 0.0, 0
    segments: list = []
    restarts: list = []
    bar = progress_bar(total=len(t_rec), desc=desc, enable=progress)
    try:
        record(0.0, y0, rows)
        bar.update(1)
        nxt = 1
        tols = [rtol, atol]
        solver = METHODS[method](rhs, 0.0, y0, float(s_rec[-1]), rtol=rtol, atol=atol)
        while solver.status == "running" and nxt < len(t_rec):
            with warnings.catch_warnings():
                # a failing LSODA warns before it fails; the failure is handled just below
                warnings.filterwarnings("ignore", message="lsoda", category=UserWarning)
                msg = solver.step()
            steps += 1
            if solver.status == "failed":
                if len(restarts) < _RESTARTS:
                    # restart from the last accepted point with 10 x tighter tolerances
                    tols = [tols[0] / 10.0, tols[1] / 10.0]
                    restarts.append({"t": math.expm1(float(solver.t)), "message": str(msg),
                                     "rtol": tols[0], "atol": tols[1]})
                    solver = METHODS[method](rhs, float(solver.t), np.array(solver.y),
                                             float(s_rec[-1]), rtol=tols[0], atol=tols[1])
                    continue
                status = f"solver failed at t = {math.expm1(solver.t):.3g}: {msg}"
                break
            dense = solver.dense_output()
            segments.append((float(solver.t_old), float(solver.t), dense))
            s_now = float(solver.t)
            while nxt < len(t_rec) and s_rec[nxt] <= s_now:
                y = dense(float(s_rec[nxt])) if s_rec[nxt] < s_now else solver.y
                record(float(t_rec[nxt]), np.asarray(y, dtype=np.float64), rows)
                nxt += 1
                bar.update(1)
    except _Stationary:
        status = f"stationary at t = {math.expm1(s_now):.3g}"
    except Stalled as exc:
        status = stalled_status(exc, s_now, eta_v, eta_Q)
    except FloatingPointError:
        status = f"non-finite at t = {math.expm1(s_now):.3g}"
    except BaseException as exc:  # Ctrl-C, also inside a kernel (a SystemError caused by it)
        if not interrupted_by(exc):
            raise
        status = f"interrupted at t = {math.expm1(s_now):.3g}"
    finally:
        bar.close()
    whole_records(rows)

    def arrays_of(r):
        return {k: np.asarray(v, dtype=np.int64 if k == "topc_rows" else np.float64)
                for k, v in r.items()}
    arrays = arrays_of(rows)
    t_reached = float(arrays["t"][-1]) if arrays["t"].size else 0.0
    if status != "ok" or t_reached < t_max:
        status = status if status != "ok" else f"stopped at t = {t_reached:.3g}"
    return FlowTrajectory(**arrays, status=status, t_reached=t_reached, t_max=t_max,
                          evaluations=int(state["evaluations"]),
                          solver_steps=steps, max_rel_bound=float(state["max_rel"]),
                          complete=bool(complete), method=method, rtol=float(rtol),
                          atol=float(atol), seconds=time.perf_counter() - t0,
                          diagonal=diagonal, D=D, segments=segments, restarts=restarts)


def limit_class(tr: FlowTrajectory) -> dict:
    """The limit of a flow, from the records of its last decade before the horizon (module
    notes: the rule, and what each class means).

    Returns
    -------
    dict
        ``class`` (one of :data:`LIMIT_CLASSES`), ``reason`` (why it is ``undetermined``, else
        ``None``), ``decided_at`` (the last record used), ``slope_bc`` (d(b - c)/d ln t over the
        last decade), ``gap_bc`` (b - c there), ``alpha`` and ``alpha_change`` (its move over
        the decade), ``max_move`` (the largest relative move of a coordinate over the decade),
        the attention values (Pd, Qs, R) and the speed at the last record, ``records`` used and
        ``rule`` (the rule in words).
    """
    keys = ("t", "alpha", "a", "b", "c", "Pd", "Qs", "R", "speed")
    series = {k: np.asarray(getattr(tr, k), dtype=np.float64) for k in keys}
    return classify_decade(series, tr.status, reached=tr.reached)


#: The limit rule in words (:func:`limit_class`).
LIMIT_RULE = (f"the last decade of records before the horizon (>= {MIN_RECORDS} records; a flow "
              f"that did not reach its horizon has none: undetermined): b = c throughout "
              f"({TIE_RTOL:g} rel.) -> tie; a stationary end -> converged; b - c > 0 with slope "
              f"vs ln t >= {SLOPE_MIN:g} -> association; b - c < 0 with slope <= "
              f"-{SLOPE_MIN:g} -> other sets; every coordinate still to {STILL:g} (1 + |x|) -> "
              f"converged; else undecided")


def classify_decade(r: dict, status: str, *, reached: bool) -> dict:
    """:func:`limit_class` on arrays: ``r`` holds ``t``, ``alpha``, ``a``, ``b``, ``c`` (and
    optionally ``Pd``, ``Qs``, ``R``, ``speed``) over the records up to the horizon; ``reached``
    is the flow's :func:`reached_horizon`."""
    t = np.asarray(r["t"], dtype=np.float64)
    out = {"class": "undetermined", "reason": None, "decided_at": None, "slope_bc": None,
           "gap_bc": None, "alpha": None, "alpha_change": None, "max_move": None, "Pd": None,
           "Qs": None, "R": None, "speed": None, "records": 0, "rule": LIMIT_RULE}
    if not reached:
        out["reason"] = f"the flow did not reach its horizon ({status})"
        return out
    end = float(t[-1]) if t.size else 0.0
    last = np.flatnonzero(t >= end / 10.0) if end > 0 else np.arange(t.size)
    if last.size < MIN_RECORDS:
        out["reason"] = (f"{last.size} record(s) in the last decade before the horizon "
                         f"t = {end:.3g}; the rule needs {MIN_RECORDS}")
        return out
    ys = np.stack([np.asarray(r[k], dtype=np.float64)[last] for k in ("alpha", "a", "b", "c")])
    b, c = ys[2], ys[3]
    u = b - c
    lnt = np.array([math.log1p(float(x)) for x in t[last]])
    slope = stats.slope(lnt, u)
    move = float(np.max(np.abs(ys[:, -1] - ys[:, 0]) / (1.0 + np.abs(ys[:, -1]))))
    out.update(decided_at=end, slope_bc=slope, gap_bc=float(u[-1]), alpha=float(ys[0, -1]),
               alpha_change=float(ys[0, -1] - ys[0, 0]), max_move=move,
               records=int(last.size),
               **{k: (float(np.asarray(r[k])[-1]) if k in r else None)
                  for k in ("Pd", "Qs", "R", "speed")})
    scale = 1.0 + np.abs(b) + np.abs(c)
    if np.all(np.abs(u) <= TIE_RTOL * scale):
        out["class"] = "tie"
    elif str(status).startswith("stationary"):
        out["class"] = "converged"
    elif u[-1] > 0 and slope >= SLOPE_MIN:
        out["class"] = "association"
    elif u[-1] < 0 and slope <= -SLOPE_MIN:
        out["class"] = "other sets"
    elif move <= STILL:
        out["class"] = "converged"
    else:
        out["class"] = "undecided"
    return out


def flow_times(tr: FlowTrajectory, bayes: float, eps: float = 0.1,
               factor: float = BAYES_FACTOR) -> dict:
    """The time to each criterion along the flow's records (:mod:`~patchassoc.simulations.engines.criteria`): Def. 2.2 in every
    row, share >= 1 - eps, error <= ``factor`` x Bayes + the record's certified bound. A flow
    that did not reach its horizon has every criterion censored (it is not known to hold up to
    the horizon)."""
    if tr.t.size == 0:
        raise ValueError("the flow recorded nothing")
    return times_to_criteria(tr.t, topc=tr.topc_rows == tr.D, share=tr.share, error=tr.error,
                             error_limit=factor * bayes + tr.bound, eps=eps,
                             reached=tr.reached)


def flow_reading(tr: FlowTrajectory, bayes: float, eps: float = 0.1) -> dict:
    """The JSON-ready reading of a flow: the horizon values, the limit class, the time to each
    criterion and the bookkeeping (evaluations, solver steps, tolerances, the largest relative
    bound)."""
    has = tr.t.size > 0
    end = {k: (float(getattr(tr, k)[-1]) if has else None)
           for k in ("t", "alpha", "a", "b", "c", "risk", "error", "bound", "share", "speed")}
    rows = int(tr.topc_rows[-1]) if has else None
    err = end["error"]
    return {
        "status": tr.status, "t_max": tr.t_max, "t_reached": tr.t_reached,
        "reached": tr.reached,
        "horizon": {**end, "topc_rows": rows, "topc": rows == tr.D if has else None,
                    "error_over_bayes": err / bayes if has and bayes > 0 else None,
                    "gap_bc": end["b"] - end["c"] if has else None},
        "limit": limit_class(tr),
        "times": flow_times(tr, bayes, eps=eps) if has else None,
        "eps": eps, "bayes_error": float(bayes), "D": tr.D, "diagonal": tr.diagonal,
        "evaluations": tr.evaluations, "solver_steps": tr.solver_steps,
        "records": int(tr.t.size),
        "complete": tr.complete,
        "max_rel_bound": tr.max_rel_bound, "rel_bound_rule": REL_BOUND,
        "max_bound": float(np.max(tr.bound)) if has else None,
        "solver": {"method": tr.method, "rtol": tr.rtol, "atol": tr.atol,
                   "variable": "s = ln(1 + t)", "restarts": list(tr.restarts)},
        "seconds": tr.seconds}


@dataclass(frozen=True, eq=False)
class FlowResult:
    """A flow run: config, seed, structure (for the maps), trajectory, Bayes error."""

    config: object
    seed: int
    structure: object
    trajectory: FlowTrajectory
    bayes_error: float

    def summary(self) -> dict:
        """:func:`flow_reading` with the seed and the configuration."""
        return {**flow_reading(self.trajectory, self.bayes_error), "seed": int(self.seed),
                "config": self.config.to_dict()}

    def save(self, folder, run: dict | None = None):
        """config.json (the configuration, the seed and, from a command, ``run``'s command and
        options: :func:`~.results.config_record`), metrics.json (the summary) and arrays.npz
        (the records, the sets)."""
        t = self.trajectory
        arrays = {k: getattr(t, k) for k in FlowTrajectory.ARRAYS}
        arrays["sets"] = self.structure.sets
        return save_folder(folder, config_record(self.config.to_dict(), self.seed, run),
                           self.summary(), arrays)


def run_flow(config, seed: int = 0, *, t_max: float, progress: bool = False,
             structure=None, **options) -> FlowResult:
    """The flow of ``config`` (free logits) from the seed's initial point, the GD step sizes
    of the config as M (``options``: those of :func:`population_flow`)."""
    if config.param != "logits":
        raise ValueError("the flow runs on the free logits (param='logits')")
    alpha0, coords0, drawn = initial_point(config, seed)
    tr = population_flow(config.L, config.C, config.q, config.p, config.nu, alpha0, coords0,
                         eta_v=config.eta_v, eta_Q=config.eta_Q, t_max=t_max,
                         diagonal=config.diagonal, progress=progress, **options)
    return FlowResult(config=config, seed=int(seed),
                      structure=drawn if structure is None else structure, trajectory=tr,
                      bayes_error=bayes_error(config.L, config.C, config.q))
