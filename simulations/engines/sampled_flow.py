"""The gradient flow of the empirical risk R_N, followed to its horizon.

Sampled gradient descent (:mod:`.sampled_descent`) with the diagonal of Q fixed moves
theta = (v, the off-diagonal entries of Q) by theta <- theta - M grad R_N(theta), with
M = diag(eta_v I, eta_Q I); with the diagonal trained (``diagonal="trained"``) theta holds every
entry of Q, and the flow conserves each row sum of Q (the gradient of a row sums to 0: softmax
ignores a shift of a row). The flow is its small-step limit,

    d theta / dt = -M grad R_N(theta),

t counted in GD steps: GD with the steps M / k, run for k t steps, converges to the flow at
time t as k grows (at first order: the tests measure it). Once the sample is fitted the risk
falls like 1/t and the attention keeps moving toward the sets only logarithmically, an
implicit-bias regime that GD with a fixed step cannot reach; the flow reaches it. It is
integrated in s = ln(1 + t), d theta / ds = (1 + t) d theta / dt, by scipy's LSODA (Adams
where the problem is not stiff, BDF where it is; Radau and BDF may be chosen), to a horizon
t_max (default 1e15), recorded at the population flow's log-spaced times
(:func:`~patchassoc.simulations.engines.population.flow.record_times`), dense output kept.

Why it is affordable. Each right-hand side is one pass over the sample (the step kernel of
:mod:`.sampled_kernels`). The stiff solver needs the Jacobian of d theta / ds, -(1 + t) M H,
with H the Hessian of R_N in theta (496 coordinates at ``ref``, 512 with the diagonal trained,
where H has the D row shifts in its kernel): by finite differences that is
one gradient per coordinate, and LSODA spent most of its evaluations there (2,963 evaluations
to t = 1e6, 2,500 of them for 5 Jacobians). :func:`~.sampled_hessian.hessian` computes H
exactly with matrix products at the cost of a few tens of gradients (``jacobian="analytic"``,
the default; ``"finite"`` leaves LSODA its own differences, for the benchmark).

The records are those of ``train``: training loss and error, test error, alpha = <v, w*>,
||v_perp||, ||v||, ||Q offdiag||, the non-invariant part of Q
(:func:`~patchassoc.theory.invariant.noninvariant_residual`), Def. 2.2 rows, the set-mate
share (min, mean) and u_i, the log-odds of row i's share
(:func:`~patchassoc.theory.association.share_log_odds`; min and max over rows), with v and Q
themselves.

The horizon and the limit (SPEC section 6, the empirical-risk flow): the one rule of every flow,
:func:`~patchassoc.simulations.engines.population.flow.reached_horizon`, decides whether the
flow reached its horizon; a flow that did not is censored (class ``undetermined``, every time
to a criterion censored). :func:`limit_class` reads the records of the last decade before the
horizon (at least ``MIN_RECORDS``), with the constants of the population flow, because u_i is
the sampled analogue of b - c (for invariant logits u_i = b - c + ln((C - 1) / (D - C))):

- ``association``: min_i u_i > 0 at the horizon and its least-squares slope against ln t over
  the last decade is >= ``SLOPE_MIN`` (every row's share -> 1);
- ``other sets``: max_i u_i < 0 and its slope is <= -``SLOPE_MIN`` (every share -> 0);
- ``converged``: every coordinate of theta moved by <= ``STILL`` x (1 + |value|) over the decade;
- ``undecided``: none of these; ``undetermined``: the horizon not reached, or too few records.

The slope of min_i u_i is always reported, with the decay rate of the training loss (slope of
ln loss against ln t: -1 when the flow interpolates), the growth of ||v|| and ||Q offdiag|| per
unit of ln t, the angle by which the direction theta / ||theta|| turned over the last decade
(the implicit-bias direction), and the test error at the horizon.

References
----------
SPEC sections 2 (training) and 6 (the empirical-risk flow, claim 2 at the flow's horizon, the
limit class, the time to a criterion).
"""
from __future__ import annotations

import bisect
import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import BDF, LSODA, Radau

from patchassoc.theory.activation import act
from patchassoc.theory.association import set_mate_share, share_log_odds, topc_rows
from patchassoc.theory.config import Config
from patchassoc.theory.invariant import noninvariant_residual
from patchassoc.theory.structure import Structure

from patchassoc.simulations.analysis import stats
from patchassoc.simulations.engines import fixed_order
from patchassoc.simulations.engines import sampled_kernels as kernels
from patchassoc.simulations.engines.criteria import times_to_criteria
from patchassoc.simulations.engines.population.flow import (
    ATOL, MAX_EVALUATIONS_PER_RECORD, MIN_RECORDS, PER_DECADE, RTOL, SLOPE_MIN, STILL, T_MAX,
    T_MIN, Stalled, check_horizon, reached_horizon, record_times, stall_guard, stalled_status)
from patchassoc.simulations.engines.sampled_descent import draw_run
from patchassoc.simulations.engines.sampled_hessian import hessian
from patchassoc.simulations.engines.sampler import Sample
from patchassoc.simulations.runtime.errors import interrupted_by, whole_records
from patchassoc.simulations.runtime.progress import progress_bar

__all__ = ["SampledFlowTrajectory", "sampled_flow", "run_sampled_flow", "SampledFlowResult",
           "limit_class", "flow_times", "flow_reading", "SAMPLED_FLOW_VERSION", "METHODS",
           "JACOBIANS", "SAMPLED_LIMIT_CLASSES", "DIAGONALS", "free_entries",
           "errors_of_records"]

#: Version of the empirical-risk flow's numbers (cells keep it in their fingerprints).
SAMPLED_FLOW_VERSION = "sampled-flow-1"
METHODS = {"LSODA": LSODA, "BDF": BDF, "Radau": Radau}
#: How the stiff solver gets its Jacobian: the exact Hessian, or the solver's own differences.
JACOBIANS = ("analytic", "finite")
#: The classes of the empirical-risk flow's limit (:func:`limit_class`).
SAMPLED_LIMIT_CLASSES = ("association", "other sets", "converged", "undecided", "undetermined")
#: The diagonal of Q held at its start (the paper's Simplification 3.1) or trained.
DIAGONALS = ("fixed", "trained")
#: Restarts of a failed solver (each with 10 x tighter tolerances) before the flow gives up.
_RESTARTS = 3


@dataclass(frozen=True, eq=False)
class SampledFlowTrajectory:
    """What :func:`sampled_flow` recorded; arrays are indexed by record (``t`` in GD steps).

    ``v`` (records, d) and ``Q`` (records, D, D) are the parameters at each record;
    ``q_norm`` is ||Q offdiag||_F, ``q_residual`` the non-invariant part of Q, ``u_min`` and
    ``u_max`` the extreme log-odds of the rows' set-mate shares. ``diagonal`` says whether
    theta holds the diagonal of Q (``"trained"``) or not (``"fixed"``).
    """

    t: np.ndarray
    train_loss: np.ndarray
    train_error: np.ndarray
    test_error: np.ndarray
    alpha: np.ndarray
    v_perp_norm: np.ndarray
    v_norm: np.ndarray
    q_norm: np.ndarray
    q_residual: np.ndarray
    topc_rows: np.ndarray
    share_min: np.ndarray
    share_mean: np.ndarray
    u_min: np.ndarray
    u_max: np.ndarray
    v: np.ndarray
    Q: np.ndarray
    status: str
    t_reached: float
    t_max: float
    evaluations: int
    jacobians: int
    jacobian_seconds: float
    solver_steps: int
    method: str
    jacobian: str
    rtol: float
    atol: float
    seconds: float
    D: int
    diagonal: str = "fixed"
    segments: list = field(default_factory=list, repr=False)
    restarts: list = field(default_factory=list)
    #: wall seconds from the start to each record (a timing: for ``bench``, never saved)
    record_seconds: list = field(default_factory=list, repr=False)

    ARRAYS = ("t", "train_loss", "train_error", "test_error", "alpha", "v_perp_norm", "v_norm",
              "q_norm", "q_residual", "topc_rows", "share_min", "share_mean", "u_min", "u_max",
              "v", "Q")

    @property
    def reached(self) -> bool:
        """Whether the flow reached its horizon (the one rule of every flow)."""
        return reached_horizon(self.status, self.t_reached, self.t_max)

    @property
    def free(self) -> np.ndarray:
        """The (D, D) mask of the entries of Q that theta holds (:func:`free_entries`)."""
        return free_entries(self.D, self.diagonal)

    def theta(self, k) -> np.ndarray:
        """theta = (v, the free entries of Q) of the records ``k`` (an index, a slice or an
        index array): (d + n_free,) for one record, (records, d + n_free) for several."""
        v, Q = self.v[k], self.Q[k]
        if v.ndim == 1:
            return np.concatenate([v, Q[self.free]])
        return np.concatenate([v, Q[:, self.free]], axis=1)

    def at(self, t: float) -> np.ndarray:
        """theta = (v, the free entries of Q: the off-diagonal ones with the diagonal fixed,
        all of them with it trained) at time ``t`` (GD steps) from the solver's dense output."""
        t = float(t)
        if not self.segments or not (0.0 <= t <= self.t_reached):
            raise ValueError(f"t must lie in [0, {self.t_reached:g}] (the integrated range)")
        s = math.log1p(t)
        ends = [seg[1] for seg in self.segments]
        k = min(bisect.bisect_left(ends, s), len(self.segments) - 1)
        return np.asarray(self.segments[k][2](s), dtype=np.float64)


def free_entries(D: int, diagonal: str) -> np.ndarray:
    """The entries of Q that the flow moves: every off-diagonal one, and the diagonal too when
    ``diagonal`` is ``"trained"`` (ValueError for anything but ``"fixed"`` or ``"trained"``)."""
    if diagonal not in DIAGONALS:
        raise ValueError(f"diagonal must be one of {DIAGONALS}, got {diagonal!r}")
    if diagonal == "trained":
        return np.ones((D, D), dtype=bool)
    return ~np.eye(D, dtype=bool)


def _check_options(t_max, per_decade, method, jacobian, rates) -> float:
    t_max = float(t_max)
    if not (math.isfinite(t_max) and t_max >= T_MIN):
        raise ValueError(f"t_max must be a finite number of steps >= {T_MIN:g}, got {t_max!r}")
    if isinstance(per_decade, bool) or int(per_decade) != per_decade or per_decade < 1:
        raise ValueError(f"per_decade must be an integer >= 1, got {per_decade!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}, got {method!r}")
    if jacobian not in JACOBIANS:
        raise ValueError(f"jacobian must be one of {JACOBIANS}, got {jacobian!r}")
    for name, val in rates.items():
        if not (math.isfinite(float(val)) and float(val) > 0):
            raise ValueError(f"{name} must be a positive finite number, got {val!r}")
    check_horizon(t_max, rates["eta_v"], rates["eta_Q"])
    return t_max


def _check_problem(train_data, test_data, v0, Q0, w_star, structure, p, nu):
    """The samples, the start, w* and the activation of :func:`sampled_flow`, checked and
    coerced: ``(X, y, test_X, test_y, v0, Q0, w_star, p, nu)`` (the test arrays None without a
    test sample)."""
    X, y = kernels.check_data(train_data.X, train_data.y)
    test_X = test_y = None
    if test_data is not None:
        test_X, test_y = kernels.check_data(test_data.X, test_data.y)
    N, D, d = X.shape
    v0 = np.ascontiguousarray(v0, dtype=np.float64)
    Q0 = np.ascontiguousarray(Q0, dtype=np.float64)
    w_star = np.ascontiguousarray(w_star, dtype=np.float64)
    if v0.shape != (d,) or w_star.shape != (d,) or Q0.shape != (D, D):
        raise ValueError(f"v0 and w_star must be ({d},) and Q0 ({D}, {D})")
    if not (np.all(np.isfinite(v0)) and np.all(np.isfinite(Q0))):
        raise ValueError("the start (v0, Q0) must be finite")
    if structure.D != D:
        raise ValueError(f"the structure has D = {structure.D}, the sample D = {D}")
    p, nu = kernels._check_model_args(X, y, v0, kernels.softmax_rows(Q0), p, nu,
                                      data_checked=True)[4:]
    return X, y, test_X, test_y, v0, Q0, w_star, p, nu


def sampled_flow(train_data: Sample, v0, Q0, *, p: int, nu: float, eta_v: float, eta_Q: float,
                 w_star, structure: Structure, test_data: Sample | None = None,
                 t_max: float = T_MAX, per_decade: int = PER_DECADE, rtol: float = RTOL,
                 atol: float = ATOL, method: str = "LSODA", jacobian: str = "analytic",
                 diagonal: str = "fixed", progress: bool = False,
                 desc: str = "flow") -> SampledFlowTrajectory:
    """The gradient flow d theta / dt = -M grad R_N(theta) of the empirical risk on
    theta = (v, Q offdiag), the diagonal of Q held at its start (or theta = (v, Q) with
    ``diagonal="trained"``), from (v0, Q0) to ``t_max``.

    Parameters
    ----------
    train_data, test_data : Sample
        The training sample (the risk R_N) and an optional test sample (its error is recorded).
    v0 : (d,) array
    Q0 : (D, D) array
        The start; diag(Q0) stays fixed unless ``diagonal`` is ``"trained"``.
    p, nu : the activation.
    eta_v, eta_Q : the GD step sizes that make M (t counts GD steps).
    w_star : (d,) array
        The feature (alpha = <v, w*>).
    structure : Structure
        The sets (Def. 2.2, the shares, the non-invariant part of Q).
    t_max : horizon in GD steps (>= 1e-9).
    per_decade : records per decade of t, plus t = 0 and t_max.
    rtol, atol : the solver's tolerances; a solver that fails is restarted from its last
        accepted point with 10 x tighter tolerances, up to 3 times (``restarts``).
    method : ``"LSODA"``, ``"BDF"`` or ``"Radau"``.
    jacobian : ``"analytic"`` (:func:`~.sampled_hessian.hessian`) or ``"finite"`` (the solver's
        own differences; LSODA only, BDF and Radau make their own too).
    diagonal : ``"fixed"`` (the paper's Simplification 3.1) or ``"trained"`` (every entry of Q
        moves with the step eta_Q, as in ``train`` with ``diagonal=trained``).
    progress : a progress bar over the records.

    Returns
    -------
    SampledFlowTrajectory
        ``status`` is ``"ok"``, ``"solver failed at t = ..."``, ``"non-finite at t = ..."``,
        ``"stalled at t = ..."`` (too many evaluations between two records,
        :func:`~patchassoc.simulations.engines.population.flow.stall_guard`) or
        ``"interrupted at t = ... (the test errors were not computed: NaN)"`` (or
        ``"interrupted while the test errors were computed ..."``, after the integration: they
        are then left NaN too); what was recorded up to then is kept, whole, and
        :attr:`SampledFlowTrajectory.reached` says whether the horizon was reached.
    """
    t_max = _check_options(t_max, per_decade, method, jacobian,
                           {"eta_v": eta_v, "eta_Q": eta_Q, "rtol": rtol, "atol": atol})
    X, y, test_X, test_y, v0, Q0, w_star, p, nu = _check_problem(
        train_data, test_data, v0, Q0, w_star, structure, p, nu)
    N, D, d = X.shape
    free = free_entries(D, diagonal)          # the entries of Q in theta
    m = np.concatenate([np.full(d, float(eta_v)), np.full(int(free.sum()), float(eta_Q))])
    state = {"evaluations": 0, "jacobians": 0, "jacobian_seconds": 0.0}
    # the solver's own differences evaluate the right-hand side once per coordinate
    stall_limit = MAX_EVALUATIONS_PER_RECORD + (m.size if jacobian == "finite" else 0)

    def unpack(theta):
        v = np.ascontiguousarray(theta[:d])
        Q = Q0.copy()
        Q[free] = theta[d:]
        return v, Q

    def quantities(theta):
        v, Q = unpack(theta)
        A, loss, err, gv, _, gQ = kernels._step_quantities(X, y, v, Q, p, nu)
        state["evaluations"] += 1
        g = np.concatenate([gv, gQ[free]])
        if not (math.isfinite(loss) and np.all(np.isfinite(g))):
            raise FloatingPointError("non-finite gradient")
        return v, Q, A, loss, err, g

    def rhs(s, theta):
        stall_guard(state, t_rec[min(len(rows["t"]), len(t_rec) - 1)], stall_limit)
        return -math.exp(s) * m * quantities(theta)[5]

    def jac(s, theta):
        c0 = time.perf_counter()
        v, Q = unpack(theta)
        H = hessian(X, y, v, Q, p, nu, free=free)
        state["jacobians"] += 1
        state["jacobian_seconds"] += time.perf_counter() - c0
        return (-math.exp(s)) * m[:, None] * H

    offdiag = ~np.eye(D, dtype=bool)        # ||Q offdiag|| is recorded whatever the diagonal
    t_rec = record_times(t_max, per_decade)
    s_rec = np.array([math.log1p(float(x)) for x in t_rec])
    rows: dict[str, list] = {k: [] for k in SampledFlowTrajectory.ARRAYS}

    def record(t, theta):
        state["since_record"] = 0
        stamps.append(time.perf_counter() - t0)
        v, Q, A, loss, err, _ = quantities(theta)
        alpha = fixed_order.dot(v, w_star)
        share = set_mate_share(A, structure)
        u = share_log_odds(Q, structure)
        # the test error of every record is computed at the end, in one pass over the test
        # sample (_test_errors): a pass per record would cost more than the flow itself
        for k, val in (("t", t), ("train_loss", loss), ("train_error", err),
                       ("test_error", math.nan), ("alpha", alpha),
                       ("v_perp_norm", fixed_order.norm(v - alpha * w_star)),
                       ("v_norm", fixed_order.norm(v)),
                       ("q_norm", fixed_order.norm(Q[offdiag])),
                       ("q_residual", noninvariant_residual(Q, structure)),
                       ("topc_rows", int(topc_rows(Q, structure).sum())),
                       ("share_min", float(share.min())), ("share_mean", float(share.mean())),
                       ("u_min", float(u.min())), ("u_max", float(u.max())),
                       ("v", v.copy()), ("Q", Q.copy())):
            rows[k].append(val)

    theta0 = np.concatenate([v0, Q0[free]])
    t0 = time.perf_counter()
    stamps: list[float] = []
    status, s_now, steps = "ok", 0.0, 0
    segments: list = []
    restarts: list = []
    kw = {"jac": jac} if jacobian == "analytic" else {}
    bar = progress_bar(total=len(t_rec), desc=desc, enable=progress)
    try:
        record(0.0, theta0)
        bar.update(1)
        nxt = 1
        tols = [float(rtol), float(atol)]
        solver = METHODS[method](rhs, 0.0, theta0, float(s_rec[-1]), rtol=tols[0],
                                 atol=tols[1], **kw)
        while solver.status == "running" and nxt < len(t_rec):
            with warnings.catch_warnings():
                # a failing LSODA warns before it fails; the failure is handled just below
                warnings.filterwarnings("ignore", message="lsoda", category=UserWarning)
                msg = solver.step()
            steps += 1
            if solver.status == "failed":
                if len(restarts) < _RESTARTS:
                    tols = [tols[0] / 10.0, tols[1] / 10.0]
                    restarts.append({"t": math.expm1(float(solver.t)), "message": str(msg),
                                     "rtol": tols[0], "atol": tols[1]})
                    solver = METHODS[method](rhs, float(solver.t), np.array(solver.y),
                                             float(s_rec[-1]), rtol=tols[0], atol=tols[1],
                                             **kw)
                    continue
                status = f"solver failed at t = {math.expm1(solver.t):.3g}: {msg}"
                break
            dense = solver.dense_output()
            segments.append((float(solver.t_old), float(solver.t), dense))
            s_now = float(solver.t)
            while nxt < len(t_rec) and s_rec[nxt] <= s_now:
                theta = dense(float(s_rec[nxt])) if s_rec[nxt] < s_now else solver.y
                record(float(t_rec[nxt]), np.asarray(theta, dtype=np.float64))
                nxt += 1
                bar.update(1)
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

    # one pass over the test sample for every record; it can take longer than the flow, so it
    # is skipped after Ctrl-C (the command stops now), and an interruption during it keeps the
    # records; either way their test errors stay NaN, and the status says so
    if test_data is not None and rows["t"] and status.startswith("interrupted"):
        status += " (the test errors were not computed: NaN)"
    elif test_data is not None and rows["t"]:
        try:
            rows["test_error"] = list(_test_errors(test_X, test_y, np.asarray(rows["v"]),
                                                   np.asarray(rows["Q"]), p, nu))
        except BaseException as exc:
            if not interrupted_by(exc):
                raise
            status = (f"interrupted while the test errors were computed (the integration "
                      f"had reached t = {rows['t'][-1]:.3g}; the test errors are left NaN)")
    arrays = {}
    for k, vals in rows.items():
        if k == "v":
            arrays[k] = np.asarray(vals, dtype=np.float64).reshape(len(vals), d)
        elif k == "Q":
            arrays[k] = np.asarray(vals, dtype=np.float64).reshape(len(vals), D, D)
        else:
            arrays[k] = np.asarray(vals, dtype=np.int64 if k == "topc_rows" else np.float64)
    t_reached = float(arrays["t"][-1]) if arrays["t"].size else 0.0
    if status == "ok" and t_reached < t_max:
        status = f"stopped at t = {t_reached:.3g}"
    return SampledFlowTrajectory(
        **arrays, status=status, t_reached=t_reached, t_max=t_max,
        evaluations=int(state["evaluations"]), jacobians=int(state["jacobians"]),
        jacobian_seconds=float(state["jacobian_seconds"]), solver_steps=steps, method=method,
        jacobian=jacobian, rtol=float(rtol), atol=float(atol),
        seconds=time.perf_counter() - t0, D=D, diagonal=diagonal, segments=segments,
        restarts=restarts,
        record_seconds=stamps[:len(arrays["t"])])


def errors_of_records(data: Sample, V, Qs, p: int, nu: float) -> np.ndarray:
    """The zero-one error (ties count 1/2) on ``data`` of each recorded (v_r, Q_r), in one pass
    over the sample (:func:`_test_errors`): V is (records, d), Qs (records, D, D)."""
    X, y = kernels.check_data(data.X, data.y)
    V = np.ascontiguousarray(V, dtype=np.float64)
    Qs = np.ascontiguousarray(Qs, dtype=np.float64)
    if V.ndim != 2 or Qs.ndim != 3 or V.shape[0] != Qs.shape[0]:
        raise ValueError(f"V must be (records, d) and Qs (records, D, D), got {V.shape} and "
                         f"{Qs.shape}")
    return _test_errors(X, y, V, Qs, p, nu)


def _test_errors(X, y, V, Qs, p, nu, chunk: int = 1024) -> np.ndarray:
    """The zero-one test error (ties count 1/2) of every record (v_r, Q_r), in one pass over X:
    the projections of a chunk of samples on every v_r are one matrix product."""
    R = V.shape[0]
    A = np.stack([kernels.softmax_rows(np.ascontiguousarray(Q)) for Q in Qs])   # (R, D, D)
    wrong = np.zeros(R)
    N, D, d = X.shape
    for lo in range(0, N, chunk):
        Xc = np.asarray(X[lo:lo + chunk], dtype=np.float64)
        U = (Xc.reshape(-1, d) @ V.T).reshape(Xc.shape[0], D, R)          # <v_r, X_j>
        Z = np.einsum("rij,njr->nri", A, U, optimize=True)                 # z_i per record
        m = y[lo:lo + chunk, None] * act(Z, p, nu).sum(axis=2)             # (n, R)
        wrong += np.where(m < 0, 1.0, np.where(m == 0, 0.5, 0.0)).sum(axis=0)
    return wrong / N


# -- the reading ---------------------------------------------------------------------------------
#: The limit rule in words (:func:`limit_class`).
LIMIT_RULE = (f"the last decade of records before the horizon (>= {MIN_RECORDS} records; a flow "
              f"that did not reach its horizon has none: undetermined), u_i the log-odds of row "
              f"i's set-mate share: min u > 0 with slope vs ln t >= {SLOPE_MIN:g} -> "
              f"association; max u < 0 with slope <= -{SLOPE_MIN:g} -> other sets; every "
              f"coordinate of (v, Q offdiag) still to {STILL:g} (1 + |x|) -> converged; else "
              f"undecided")


def limit_class(tr: SampledFlowTrajectory) -> dict:
    """The limit of an empirical-risk flow from the records of its last decade (module notes).

    Returns
    -------
    dict
        ``class`` (one of :data:`SAMPLED_LIMIT_CLASSES`), ``reason`` (why undetermined),
        ``decided_at``, ``records``, ``u_min`` and ``slope_u_min`` (min_i u_i at the horizon and
        its slope against ln t over the last decade; the slope always reported when there are
        records), ``u_max`` and ``slope_u_max``, ``loss_rate`` (slope of ln loss against ln t),
        ``v_growth`` and ``q_growth`` (slopes of ||v|| and ||Q offdiag|| against ln t),
        ``turn`` (the angle, in radians, between theta / ||theta|| at the decade's first and
        last records), ``max_move`` and ``test_error`` at the horizon, and ``rule``.
    """
    out = {"class": "undetermined", "reason": None, "decided_at": None, "records": 0,
           "u_min": None, "slope_u_min": None, "u_max": None, "slope_u_max": None,
           "loss_rate": None, "v_growth": None, "q_growth": None, "turn": None,
           "max_move": None, "test_error": None, "rule": LIMIT_RULE}
    if not tr.reached:
        out["reason"] = f"the flow did not reach its horizon ({tr.status})"
        return out
    t = tr.t
    end = float(t[-1]) if t.size else 0.0
    last = np.flatnonzero(t >= end / 10.0) if end > 0 else np.arange(t.size)
    if last.size < MIN_RECORDS:
        out["reason"] = (f"{last.size} record(s) in the last decade before the horizon "
                         f"t = {end:.3g}; the rule needs {MIN_RECORDS}")
        return out
    lnt = np.array([math.log1p(float(x)) for x in t[last]])
    theta = tr.theta(last)
    first, final = theta[0], theta[-1]
    cosine = fixed_order.dot(first, final) / (fixed_order.norm(first) * fixed_order.norm(final))
    loss = tr.train_loss[last]
    move = float(np.max(np.abs(final - first) / (1.0 + np.abs(final))))
    out.update(decided_at=end, records=int(last.size), u_min=float(tr.u_min[-1]),
               slope_u_min=stats.slope(lnt, tr.u_min[last]), u_max=float(tr.u_max[-1]),
               slope_u_max=stats.slope(lnt, tr.u_max[last]),
               loss_rate=(stats.slope(lnt, np.log(loss)) if np.all(loss > 0) else None),
               v_growth=stats.slope(lnt, tr.v_norm[last]), q_growth=stats.slope(lnt, tr.q_norm[last]),
               turn=float(math.acos(max(-1.0, min(1.0, cosine)))), max_move=move,
               test_error=float(tr.test_error[-1]))
    if out["u_min"] > 0 and out["slope_u_min"] >= SLOPE_MIN:
        out["class"] = "association"
    elif out["u_max"] < 0 and out["slope_u_max"] <= -SLOPE_MIN:
        out["class"] = "other sets"
    elif move <= STILL:
        out["class"] = "converged"
    else:
        out["class"] = "undecided"
    return out


def flow_times(tr: SampledFlowTrajectory, error_limit: float, share_level: float) -> dict:
    """The time to each criterion of claim 2's seed rule along the flow's records
    (:mod:`~patchassoc.simulations.engines.criteria`): Def. 2.2 in every row, share_min >=
    ``share_level``, test error <= ``error_limit``; every criterion censored for a flow that
    did not reach its horizon."""
    if tr.t.size == 0:
        raise ValueError("the flow recorded nothing")
    return times_to_criteria(tr.t, topc=tr.topc_rows == tr.D, share=tr.share_min,
                             error=tr.test_error, error_limit=error_limit,
                             eps=1.0 - share_level, reached=tr.reached)


def flow_reading(tr: SampledFlowTrajectory, *, error_limit: float, share_level: float) -> dict:
    """The JSON-ready reading of an empirical-risk flow: the last record (the horizon when
    ``reached``), the limit class, the time to each criterion, and the bookkeeping."""
    has = tr.t.size > 0
    keys = ("t", "train_loss", "train_error", "test_error", "alpha", "v_perp_norm", "v_norm",
            "q_norm", "q_residual", "share_min", "share_mean", "u_min", "u_max")
    end = {k: (float(getattr(tr, k)[-1]) if has else None) for k in keys}
    rows = int(tr.topc_rows[-1]) if has else None
    return {"status": tr.status, "t_max": tr.t_max, "t_reached": tr.t_reached,
            "reached": tr.reached,
            "horizon": {**end, "topc_rows": rows, "topc": (rows == tr.D) if has else None},
            "limit": limit_class(tr),
            "times": flow_times(tr, error_limit, share_level) if has else None,
            "error_limit": float(error_limit), "share_level": float(share_level), "D": tr.D,
            "diagonal": tr.diagonal,
            "evaluations": tr.evaluations, "jacobians": tr.jacobians,
            "jacobian_seconds": tr.jacobian_seconds, "solver_steps": tr.solver_steps,
            "records": int(tr.t.size),
            "solver": {"method": tr.method, "jacobian": tr.jacobian, "rtol": tr.rtol,
                       "atol": tr.atol, "variable": "s = ln(1 + t)",
                       "restarts": list(tr.restarts)},
            "seconds": tr.seconds}


# -- a run of a configuration -------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class SampledFlowResult:
    """An empirical-risk flow run: config, seed, structure, feature, trajectory, and the levels
    of the seed rule it is read with."""

    config: Config
    seed: int
    structure: Structure
    w_star: np.ndarray
    trajectory: SampledFlowTrajectory
    bayes_error: float
    error_limit: float
    share_level: float

    def summary(self) -> dict:
        """:func:`flow_reading` with the seed, the Bayes error and the configuration."""
        return {**flow_reading(self.trajectory, error_limit=self.error_limit,
                               share_level=self.share_level),
                "seed": int(self.seed), "bayes_error": float(self.bayes_error),
                "diagonal": self.config.diagonal, "n_train": int(self.config.n_train),
                "config": self.config.to_dict()}

    def save(self, folder, run: dict | None = None):
        """config.json (the configuration, the seed and, from a command, ``run``'s command and
        options: :func:`~.results.config_record`), metrics.json (the summary) and arrays.npz
        (the records, the sets, w*)."""
        from patchassoc.simulations.runtime.results import config_record, save_folder

        t = self.trajectory
        arrays = {k: getattr(t, k) for k in SampledFlowTrajectory.ARRAYS}
        arrays.update(sets=self.structure.sets, w_star=self.w_star)
        return save_folder(folder, config_record(self.config.to_dict(), self.seed, run),
                           self.summary(), arrays)


def run_sampled_flow(config: Config, seed: int = 0, *, error_factor: float,
                     error_slack: float, share_level: float, t_max: float = T_MAX,
                     progress: bool = False, **options) -> SampledFlowResult:
    """The empirical-risk flow of ``config`` from the draws of ``train(config, seed)``
    (:func:`~.sampled_descent.draw_run`: the same structure, feature, start and samples), the
    GD step sizes of the config as M. Free logits, with the diagonal fixed or trained as the
    config says.

    The reading's criteria are given by the caller (claim 2's seed rule lives in its study):
    test error <= ``error_factor`` x Bayes + ``error_slack`` and share_min >= ``share_level``.
    ``options`` are those of :func:`sampled_flow`.
    """
    if config.param != "logits":
        raise ValueError("the empirical-risk flow runs on free logits (param=logits)")
    if config.data != "structured":
        raise ValueError("the empirical-risk flow runs on structured data (data=structured)")
    from patchassoc.theory.bayes import bayes_error

    run = draw_run(config, seed)
    bayes = bayes_error(config.L, config.C, config.q)
    limit = float(error_factor) * bayes + float(error_slack)
    tr = sampled_flow(run.train_data, run.v0, run.theta0, p=config.p, nu=config.nu,
                      eta_v=config.eta_v, eta_Q=config.eta_Q, w_star=run.w_star,
                      structure=run.structure, test_data=run.test_data, t_max=t_max,
                      diagonal=config.diagonal, progress=progress, **options)
    return SampledFlowResult(config=config, seed=int(seed), structure=run.structure,
                             w_star=run.w_star, trajectory=tr, bayes_error=bayes,
                             error_limit=limit, share_level=float(share_level))
