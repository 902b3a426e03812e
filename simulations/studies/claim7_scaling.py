"""Scaling studies (claim 7): how errors and phase times move with d along a declared family.

The family (SPEC section 6, item 7) gives the sizes as functions of the patch dimension d:

    L(d) = C(d) = max(2, round(ln d)),   q(d) = min(1, ln d / D),   kappa(d) = ln ln d,

on the grid d_k = round(e^k) (so L = C = k exactly). Under it the Bayes error is
~ (L-1)/2 (q/2)^C = d^(-ln(2 ln d) + o(1)): d^(-omega(1)), as the paper's Definition 2.1 asks.
Each rule can be changed (:class:`Family`): ``log`` (round(ln d)), ``log2`` (round(log2 d)) or a
constant for L and C; ``log`` (ln d / D) or a constant for q; ``loglog`` or a constant for kappa.

Three studies, each made of independent, resumable cells
(:func:`patchassoc.simulations.runtime.cells.run_cells`):

(a) Error against d. Exact closed forms at every d: the Bayes error and the error of identity and
    uniform attention (sign f = sign T for both:
    :func:`patchassoc.theory.solutions.sign_of_sum_error`).
    With the exact engine, certified at tol(d) = 1e-3 Bayes(d): block-uniform
    (alpha, a, b, c) = (2, 2 ln d, 2 ln d, 0) (shifted blocks have the same f for every input,
    Lemma L11, hence the same numbers) and GD's solution read at the declared horizon (SPEC
    section 6, claims read at a declared horizon): the exact gradient flow of the population risk
    (:func:`patchassoc.simulations.engines.population.flow.run_flow`, diagonal fixed, seed 0's
    start, t counted in GD steps) to t_max = 1e15, its last point certified at tol(d). Beside it,
    as a reading within a fixed budget (never the verdict): population GD for
    T(d) = ceil(1000 ln d) steps (trajectory tol 1e-8), its last point certified at tol(d).
    The d^(-omega(1)) test reads the local exponents
    s_k = -ln(e_{k+1} / e_k) / ln(d_{k+1} / d_k) of the certified upper ends e_k
    (:func:`omega_test`).
(b) Dynamics against d and D: the time to each criterion of the flows of (a) (Def. 2.2 in every
    row, share >= 0.9, error <= 1.3 x Bayes + bound, and all three:
    :func:`patchassoc.simulations.engines.criteria.times_to_criteria`), fitted by least squares
    against ln d (exponent gamma) and ln ln d (polylog exponent beta) (:func:`loglog_fit`); a
    censored time (the criterion fails at the horizon) is listed as censored and left out of the
    fit. Beside them, the budget GD runs' phase times t_alpha, t_share and final share
    (:func:`patchassoc.simulations.engines.population.trajectory.phases`), against d and D, with
    the same fits.
(c) Sampled data against d: the smallest N of a grid at which >= 8 of 10 seeds of sampled GD
    associate (Def. 2.2 in every row and share_min >= 0.75, claim 2's test).

Claim 7 (:func:`claim7`) is decided on the flow's certified errors over the declared range; a
FAIL names its cause (:func:`cause_of`): (iii) a control passes; else (i) a flow did not reach
the horizon or its error still moved over the last decade by more than tol(d) (the level the
claim reads errors at), with that trend; else (ii) the flows are at their limits and the limit
errors themselves fail the rule.

References
----------
SPEC sections 1-3, 5 and 6 (item 7; claims read at a declared horizon).
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from patchassoc.theory.association import associate, invariant_association
from patchassoc.theory.bayes import bayes_error
from patchassoc.theory.config import Config
from patchassoc.theory.solutions import sign_of_sum_error
from patchassoc.simulations.analysis import stats
from patchassoc.simulations.engines.criteria import CRITERIA
from patchassoc.simulations.engines.population.exact import evaluate, plan
from patchassoc.simulations.engines.population.flow import (
    FLOW_VERSION, PER_DECADE, T_MAX, flow_reading, reached_horizon, run_flow)
from patchassoc.simulations.engines.population.trajectory import (
    initial_point, phases, population_descent)
from patchassoc.simulations.engines.sampled_descent import train
from patchassoc.simulations.engines.start import record_steps
from patchassoc.simulations.runtime.cells import fingerprint, run_cells
from patchassoc.simulations.runtime.errors import raise_if_interrupted
from patchassoc.simulations.runtime.results import write_json
from patchassoc.simulations.studies.claim2_seeds import SHARE_MIN
from patchassoc.simulations.studies.study import Outcome, Study
from patchassoc.simulations.studies.verdicts import CAUSES, from_step, with_cause

__all__ = ["Family", "ScalingCell", "ScalingTask", "PROTOCOL", "KS", "GD_KS", "FLOW_KS",
           "D_SWEEP_KS", "SAMPLED_KS", "SAMPLED_NS", "N_SEEDS", "PASS_SEEDS", "TOL_FACTOR",
           "TRAJ_TOL", "STEPS_PER_LOG", "BLOCK_ALPHA", "BLOCK_LAMBDA_PER_LOG", "MIN_RISE",
           "MAX_CONFIGURATIONS", "FLOW_T_MAX", "TIME_CRITERIA", "POLYLOG_GAMMA",
           "grid_d", "steps_for", "local_exponents", "omega_test", "loglog_fit", "closed_forms",
           "compute_cell", "run_study_cells", "gd_cells", "flow_cells", "block_cells",
           "sweep_cells", "sampled_cells", "n_assoc", "time_fits", "flow_trend", "cause_of",
           "claim7", "readings", "verdict"]

#: Version of the cell computations: stored cells of another version are recomputed.
PROTOCOL = "scaling-2"
#: The claim (SPEC section 6, item 7) as the claims table names it when it could not be measured
#: (a measured record takes the text of :func:`claim7`).
CLAIM = "scaling: errors and phase times move with d as the theorems say"

# -- declared values (SPEC section 6, item 7) ---------------------------------------------------
#: Grid exponents: d_k = round(e^k).
KS = tuple(range(4, 15))
#: Declared GD range of study (a) (claim 7 is decided on it).
GD_KS = (4, 5, 6, 7)
#: The flows of the full study: the declared range and k = 8 (L = C = 8, the paper's size),
#: which extends it beside the verdict (SPEC 6, claim 7 at the horizon).
FLOW_KS = GD_KS + (8,)
#: The declared horizon of the flow, in GD steps.
FLOW_T_MAX = T_MAX
#: The criteria whose times study (b) reads off the flows (``all``: the three together).
TIME_CRITERIA = CRITERIA + ("all",)
#: Phase times read as polylog(d) when gamma's 95 % interval lies below this (SPEC 6, item 7 (b)).
POLYLOG_GAMMA = 0.25
#: Study (b): L = C = these at fixed d = d_5.
D_SWEEP_KS = (3, 4, 5, 6)
D_SWEEP_AT = 5
#: Study (c).
SAMPLED_KS = (4, 5)
SAMPLED_NS = (125, 250, 500, 1000, 2000)
N_SEEDS = 10
PASS_SEEDS = 8
SAMPLED_STEPS = 600
SAMPLED_N_TEST = 2000
#: Certification: tol(d) = TOL_FACTOR * Bayes(d).
TOL_FACTOR = 1e-3
#: Certified tolerance of each evaluation along a GD trajectory.
TRAJ_TOL = 1e-8
#: GD budget T(d) = ceil(STEPS_PER_LOG ln d).
STEPS_PER_LOG = 1000.0
#: Block-uniform construction: alpha and lambda = BLOCK_LAMBDA_PER_LOG ln d.
BLOCK_ALPHA = 2.0
BLOCK_LAMBDA_PER_LOG = 2.0
#: The local exponent must rise by at least this much from the first pair to the last.
MIN_RISE = 0.25
#: Engine cap per evaluation (beyond it a point is out of reach).
MAX_CONFIGURATIONS = 60_000_000
#: Records kept along a GD trajectory (log-spaced).
RECORDS = 30


def _rule_text(value, name: str, words: tuple[str, ...], integer: bool) -> str:
    text = str(value).strip()
    if text in words:
        return text
    try:
        num = int(text) if integer else float(text)
    except ValueError:
        raise ValueError(f"{name} must be one of {', '.join(words)} or a "
                         f"{'positive integer' if integer else 'number'}, got {value!r}") from None
    if integer and num < 1 or not integer and not math.isfinite(num):
        raise ValueError(f"{name} must be a {'positive integer' if integer else 'finite number'}"
                         f", got {value!r}")
    return str(num)


@dataclass(frozen=True)
class Family:
    """Sizes as functions of d (SPEC section 6, item 7); every rule a string.

    ``L_rule``, ``C_rule``: ``log`` = max(2, round(ln d)), ``log2`` = max(2, round(log2 d)) or
    a positive integer; ``q_rule``: ``log`` = min(1, ln d / D) or a number in [0, 1];
    ``kappa_rule``: ``loglog`` = ln ln d or a number.
    """

    L_rule: str = "log"
    C_rule: str = "log"
    q_rule: str = "log"
    kappa_rule: str = "loglog"

    def __post_init__(self) -> None:
        object.__setattr__(self, "L_rule", _rule_text(self.L_rule, "L_rule", ("log", "log2"), True))
        object.__setattr__(self, "C_rule", _rule_text(self.C_rule, "C_rule", ("log", "log2"), True))
        object.__setattr__(self, "q_rule", _rule_text(self.q_rule, "q_rule", ("log",), False))
        object.__setattr__(self, "kappa_rule",
                           _rule_text(self.kappa_rule, "kappa_rule", ("loglog",), False))
        if self.q_rule != "log" and not 0.0 <= float(self.q_rule) <= 1.0:
            raise ValueError(f"q_rule must lie in [0, 1], got {self.q_rule}")

    @staticmethod
    def _size(rule: str, d: int) -> int:
        if rule == "log":
            return max(2, round(math.log(d)))
        if rule == "log2":
            return max(2, round(math.log2(d)))
        return int(rule)

    def sizes(self, d: int) -> dict:
        """(L, C, D, q, kappa) at ``d`` (an integer >= 3)."""
        if isinstance(d, bool) or int(d) != d or d < 3:
            raise ValueError(f"d must be an integer >= 3, got {d!r}")
        d = int(d)
        L, C = self._size(self.L_rule, d), self._size(self.C_rule, d)
        D = L * C
        q = min(1.0, math.log(d) / D) if self.q_rule == "log" else float(self.q_rule)
        kappa = math.log(math.log(d)) if self.kappa_rule == "loglog" else float(self.kappa_rule)
        return {"d": d, "L": L, "C": C, "D": D, "q": q, "kappa": kappa}

    def config(self, d: int, sizes: dict | None = None, **overrides):
        """The :class:`~patchassoc.theory.config.Config` at ``d`` (diagonal fixed); ``sizes``
        (from :meth:`sizes`, possibly of another family) replaces the family's own."""
        s = self.sizes(d) if sizes is None else sizes
        values = dict(d=s["d"], L=s["L"], C=s["C"], q=s["q"], kappa=s["kappa"],
                      diagonal="fixed", param="logits")
        values.update(overrides)
        return Config(**values)


def grid_d(ks: Sequence[float]) -> list[int]:
    """d_k = round(e^k) for each k (distinct, >= 3, increasing)."""
    ks = [float(k) for k in ks]
    if not ks or any(not math.isfinite(k) or k < math.log(3) for k in ks):
        raise ValueError(f"grid exponents k must be finite numbers >= ln 3, got {ks!r}")
    ds = [int(round(math.exp(k))) for k in ks]
    if len(set(ds)) != len(ds) or ds != sorted(ds):
        raise ValueError(f"grid exponents must be increasing and give distinct d, got {ks!r}")
    return ds


def steps_for(d: int, steps_per_log: float = STEPS_PER_LOG) -> int:
    """GD budget T(d) = ceil(steps_per_log ln d)."""
    return int(math.ceil(steps_per_log * math.log(d)))


# -- the d^(-omega(1)) test and the fits ---------------------------------------------------------
def local_exponents(ds: Sequence[float], errors: Sequence[float]) -> list[float | None]:
    """s_k = -ln(e_{k+1} / e_k) / ln(d_{k+1} / d_k) between consecutive points (None where an
    error is not positive and finite)."""
    ds = [float(x) for x in ds]
    if len(ds) != len(errors):
        raise ValueError("ds and errors must have the same length")
    out: list[float | None] = []
    for i in range(len(ds) - 1):
        e0, e1 = errors[i], errors[i + 1]
        if e0 is None or e1 is None or not (0 < e0 < math.inf and 0 < e1 < math.inf):
            out.append(None)
            continue
        if not ds[i + 1] > ds[i] > 0:
            raise ValueError("ds must be positive and increasing")
        out.append(-math.log(e1 / e0) / math.log(ds[i + 1] / ds[i]))
    return out


def omega_test(ds: Sequence[float], errors: Sequence[float], min_rise: float = MIN_RISE) -> dict:
    """The declared reading of d^(-omega(1)) on a finite range (SPEC 6, item 7): the local
    exponent increases at every consecutive pair, and by >= ``min_rise`` from the first pair to
    the last. Needs >= 3 points (2 exponents); every error positive and finite."""
    s = local_exponents(ds, errors)
    ok = len(s) >= 2 and all(x is not None for x in s)
    increasing = bool(ok and all(s[i + 1] > s[i] for i in range(len(s) - 1)))
    rise = (s[-1] - s[0]) if ok else None
    return {"exponents": s, "increasing": increasing, "rise": rise, "min_rise": min_rise,
            "passed": bool(increasing and rise is not None and rise >= min_rise),
            "points": len(ds)}


def loglog_fit(x: Sequence[float], y: Sequence[float]) -> dict | None:
    """Least squares ln y = intercept + slope ln x, with the slope's standard error and 95 %
    t-interval (``None`` with fewer than 2 usable points; no interval with exactly 2)."""
    pts = [(float(a), float(b)) for a, b in zip(x, y)
           if a is not None and b is not None and a > 0 and b > 0
           and math.isfinite(a) and math.isfinite(b)]
    if len(pts) < 2:
        return None
    return stats.linear_fit([math.log(p[0]) for p in pts], [math.log(p[1]) for p in pts])


# -- closed forms --------------------------------------------------------------------------------
def closed_forms(family: Family, ds: Sequence[int]) -> list[dict]:
    """Exact Bayes error and identity/uniform error (sign of the sum) at every d."""
    rows = []
    for d in ds:
        s = family.sizes(d)
        rows.append({**s, "bayes": bayes_error(s["L"], s["C"], s["q"]),
                     "sign_of_sum": sign_of_sum_error(s["L"], s["C"], s["q"])})
    return rows


# -- cells -----------------------------------------------------------------------------------------
@dataclass(frozen=True, order=True)
class ScalingCell:
    """One independent computation: ``kind`` in {"block", "gd", "flow", "sampled"} at d (and L,
    C for the D sweep; N and seed for sampled runs). ``upstream`` = 0 (the backends' task
    index)."""

    kind: str
    d: int
    L: int = 0
    C: int = 0
    N: int = 0
    seed: int = 0
    upstream: int = 0

    @property
    def key(self) -> str:
        base = f"{self.kind}-d{self.d:07d}-L{self.L:02d}-C{self.C:02d}"
        if self.kind == "sampled":
            base += f"-N{self.N:05d}-s{self.seed:03d}"
        return base


@dataclass(frozen=True)
class ScalingTask:
    """What every cell shares (picklable): the family, the declared constants, the GD seed."""

    family: Family = Family()
    seed: int = 0
    steps_per_log: float = STEPS_PER_LOG
    max_steps: int | None = None
    traj_tol: float = TRAJ_TOL
    tol_factor: float = TOL_FACTOR
    sampled_steps: int = SAMPLED_STEPS
    max_configurations: int = MAX_CONFIGURATIONS
    t_max: float = FLOW_T_MAX
    folder: str = ""

    def fingerprint(self) -> str:
        data = asdict(self)
        data.pop("folder")
        return fingerprint({"protocol": PROTOCOL, "flow": FLOW_VERSION, **data})

    def steps(self, d: int) -> int:
        T = steps_for(d, self.steps_per_log)
        return T if self.max_steps is None else min(T, int(self.max_steps))


def _sizes(task: ScalingTask, cell: ScalingCell) -> dict:
    s = task.family.sizes(cell.d)
    if cell.L and cell.C:  # the D sweep: sizes given, q and kappa from d by the family's rules
        fam = Family(str(cell.L), str(cell.C), task.family.q_rule, task.family.kappa_rule)
        s = fam.sizes(cell.d)
    return s


def _certify(s: dict, alpha, a, b, c, tol, cap) -> dict:
    L, C, q = s["L"], s["C"], s["q"]
    try:
        pl = plan(L, C, q, 5, 0.03, alpha, a, b, c, tol=tol, max_configurations=cap, prune=True)
        ev = evaluate(L, C, q, 5, 0.03, alpha, a, b, c, tol=tol, prune=True,
                      max_configurations=cap)
    except ValueError as exc:
        return {"reached": False, "reason": str(exc)}
    bound = float(ev.bounds["error"])
    return {"reached": True, "error": ev.error, "bound": bound, "error_high": ev.error + bound,
            "risk": ev.risk, "risk_bound": float(ev.bounds["risk"]), "tol": tol,
            "configurations": ev.configurations, "planned_configurations": pl.configurations}


def _block(task: ScalingTask, cell: ScalingCell) -> dict:
    s = _sizes(task, cell)
    bayes = bayes_error(s["L"], s["C"], s["q"])
    lam = BLOCK_LAMBDA_PER_LOG * math.log(cell.d)
    tol = task.tol_factor * bayes if bayes > 0 else 1e-12
    rec = _certify(s, BLOCK_ALPHA, lam, lam, 0.0, tol, task.max_configurations)
    return {**s, "bayes": bayes, "alpha": BLOCK_ALPHA, "lambda": lam, **rec, "status": "ok"}


def _gd(task: ScalingTask, cell: ScalingCell) -> dict:
    s = _sizes(task, cell)
    L, C, q = s["L"], s["C"], s["q"]
    cfg = task.family.config(cell.d, s)
    bayes = bayes_error(L, C, q)
    T = task.steps(cell.d)
    alpha0, coords0, _ = initial_point(cfg, task.seed)
    try:
        tr = population_descent(L, C, q, cfg.p, cfg.nu, alpha0, coords0, eta_v=cfg.eta_v,
                                eta_Q=cfg.eta_Q, steps=T, at=record_steps(T, RECORDS),
                                tol=task.traj_tol, diagonal="fixed",
                                max_configurations=task.max_configurations)
    except ValueError as exc:
        return {**s, "bayes": bayes, "steps": T, "status": "ok", "reached": False,
                "reason": str(exc)}
    raise_if_interrupted(tr.status, f"cell {cell.key}")
    rec = {**s, "bayes": bayes, "steps": T, "steps_done": int(tr.steps_done),
           "status": tr.status, "alpha0": alpha0, "reached": True,
           "trajectory_bound_max": float(np.max(tr.bound)) if tr.bound.size else None}
    if tr.status != "ok":
        return rec
    ph = phases(tr.per_step, L, C)
    alpha, a, b, c = float(tr.alpha[-1]), float(tr.a[-1]), float(tr.b[-1]), float(tr.c[-1])
    assoc = invariant_association(a, b, c, L, C, eps=0.1)
    tol = task.tol_factor * bayes if bayes > 0 else 1e-12
    cert = _certify(s, alpha, a, b, c, tol, task.max_configurations)
    rec.update(phases=ph, t_alpha=ph["t_alpha"], t_share=ph["t_share"],
               share_final=ph["share_final"], alpha=alpha, a=a, b=b, c=c,
               topc=bool(assoc.topc), associated=bool(assoc.associated),
               trajectory_error=float(tr.error[-1]), **cert)
    return rec


#: The flow's records kept in its cell (for the trend, the figures and the times).
_FLOW_SERIES = ("t", "error", "bound", "share", "topc_rows", "alpha", "b", "c")


def flow_trend(t: Sequence[float], error: Sequence[float], share: Sequence[float],
               gap: Sequence[float], b: Sequence[float] | None = None,
               c: Sequence[float] | None = None) -> dict:
    """How a recorded flow still moves over its last decade (the records with t >= t_end / 10):
    the change of the error, of the share and of b - c (and of b and c, when given) from the
    decade's first record to the last, and d(b - c) / d ln t (least squares over the decade)."""
    t = np.asarray(t, dtype=np.float64)
    if t.size < 2:
        return {"t_from": None, "t_to": None, "error_from": None, "error_to": None,
                "error_change": None, "share_change": None, "gap_change": None,
                "gap_slope": None, "b_change": None, "c_change": None}
    end = t[-1]
    last = np.flatnonzero(t >= end / 10.0) if end > 0 else np.arange(t.size)
    if last.size < 2:
        last = np.arange(t.size - 2, t.size)
    i0, i1 = int(last[0]), int(last[-1])
    err, sh, gp = (np.asarray(x, dtype=np.float64) for x in (error, share, gap))
    slope = stats.slope([math.log1p(float(x)) for x in t[last]], gp[last])
    return {"t_from": float(t[i0]), "t_to": float(t[i1]), "error_from": float(err[i0]),
            "error_to": float(err[i1]), "error_change": float(err[i1] - err[i0]),
            "share_change": float(sh[i1] - sh[i0]), "gap_change": float(gp[i1] - gp[i0]),
            "gap_slope": slope,
            "b_change": None if b is None else float(b[i1] - b[i0]),
            "c_change": None if c is None else float(c[i1] - c[i0])}


def _flow(task: ScalingTask, cell: ScalingCell) -> dict:
    """The flow at d to the horizon, its reading (limit class, horizon values, times to each
    criterion, bookkeeping), its last point certified at tol(d) and its last decade's trend."""
    s = _sizes(task, cell)
    cfg = task.family.config(cell.d, s)
    bayes = bayes_error(s["L"], s["C"], s["q"])
    base = {**s, "bayes": bayes, "t_max": float(task.t_max)}
    try:
        res = run_flow(cfg, task.seed, t_max=task.t_max,
                       max_configurations=task.max_configurations)
    except ValueError as exc:
        return {**base, "status": "ok", "reached": False, "reason": str(exc)}
    tr = res.trajectory
    raise_if_interrupted(tr.status, f"cell {cell.key}")
    reading = flow_reading(tr, bayes)
    reading.pop("config", None)
    series = {k: getattr(tr, k).tolist() for k in _FLOW_SERIES}
    rec = {**base, "status": tr.status, "reading": reading, "series": series,
           "alpha0": float(tr.alpha[0]) if tr.t.size else None, "reached": False}
    if not tr.t.size:
        rec["reason"] = "the flow recorded nothing"
        return rec
    gap = (tr.b - tr.c).tolist()
    rec["trend"] = flow_trend(tr.t, tr.error, tr.share, gap, tr.b, tr.c)
    alpha, a, b, c = float(tr.alpha[-1]), float(tr.a[-1]), float(tr.b[-1]), float(tr.c[-1])
    tol = task.tol_factor * bayes if bayes > 0 else 1e-12
    cert = _certify(s, alpha, a, b, c, tol, task.max_configurations)
    rec.update(alpha=alpha, a=a, b=b, c=c, **cert)
    if not tr.reached:        # censored: its last state is not the state at the horizon
        rec.update(reached=False, reason=f"the flow did not reach its horizon ({tr.status})")
    return rec


def _sampled(task: ScalingTask, cell: ScalingCell) -> dict:
    s = _sizes(task, cell)
    cfg = task.family.config(cell.d, s, n_train=int(cell.N), n_test=SAMPLED_N_TEST,
                             steps=task.sampled_steps, records=5)
    res = train(cfg, cell.seed)
    t = res.trajectory
    raise_if_interrupted(t.status, f"cell {cell.key}")
    assoc = associate(np.asarray(t.Q, dtype=np.float64), res.structure, kind="logits",
                      eps=1.0 - SHARE_MIN)
    ok = bool(t.status == "ok" and assoc.topc and assoc.share_min >= SHARE_MIN)
    return {**s, "N": int(cell.N), "seed": int(cell.seed), "status": t.status,
            "topc_rows": int(assoc.topc_rows), "share_min": float(assoc.share_min),
            "associated": ok,
            "test_error": float(t.test_error[-1]) if t.steps.size else None}


def compute_cell(task: ScalingTask, cell: ScalingCell) -> dict:
    """One cell's JSON-ready record (module notes), with its fingerprint and timings."""
    t0, c0 = time.perf_counter(), time.process_time()
    if cell.kind == "block":
        rec = _block(task, cell)
    elif cell.kind == "gd":
        rec = _gd(task, cell)
    elif cell.kind == "flow":
        rec = _flow(task, cell)
    elif cell.kind == "sampled":
        rec = _sampled(task, cell)
    else:
        raise ValueError(f"unknown cell kind {cell.kind!r}")
    rec.update(kind=cell.kind, key=cell.key, seconds=time.perf_counter() - t0,
               cpu_seconds=time.process_time() - c0, fingerprint=task.fingerprint())
    return rec


def _matches(rec: dict, cell: ScalingCell) -> bool:
    return rec.get("key") == cell.key and rec.get("kind") == cell.kind


def gd_cells(ds: Sequence[int]) -> list[ScalingCell]:
    return [ScalingCell("gd", int(d)) for d in ds]


def flow_cells(ds: Sequence[int]) -> list[ScalingCell]:
    """The flows at ``ds``, the largest d first (the dearest cells start first)."""
    return [ScalingCell("flow", int(d)) for d in sorted(ds, reverse=True)]


def block_cells(ds: Sequence[int]) -> list[ScalingCell]:
    return [ScalingCell("block", int(d)) for d in ds]


def sweep_cells(d: int, sizes: Sequence[int], family: Family | None = None) -> list[ScalingCell]:
    """GD at fixed d with L = C = each of ``sizes`` (study (b) against D); the size the family
    itself gives at d is the family's own GD cell (computed once)."""
    own = (family or Family()).sizes(d)
    return [ScalingCell("gd", int(d)) if (own["L"], own["C"]) == (n, n)
            else ScalingCell("gd", int(d), int(n), int(n)) for n in sizes]


def sampled_cells(ds: Sequence[int], Ns: Sequence[int], seeds: Sequence[int]) -> list[ScalingCell]:
    return [ScalingCell("sampled", int(d), 0, 0, int(N), int(s))
            for d in ds for N in Ns for s in seeds]


def run_study_cells(task: ScalingTask, cells: Sequence[ScalingCell], folder: str | Path, *,
                    jobs: int = 1, dask=None, progress: bool = False, desc: str = "scaling",
                    compute=compute_cell) -> dict:
    """Compute the missing cells (each stored as it finishes), return key -> record."""
    out = run_cells(task, list(cells), folder, compute, _matches, jobs=jobs, dask=dask,
                    progress=progress, desc=desc)
    return out


def n_assoc(records: Sequence[dict], Ns: Sequence[int], n_seeds: int,
            pass_seeds: int) -> dict:
    """Per N: seeds associated out of those run; N_assoc = the smallest N with >= pass_seeds
    of n_seeds associated (None: censored, > max N)."""
    per_N = []
    found = None
    for N in sorted(int(n) for n in Ns):
        recs = [r for r in records if int(r["N"]) == N]
        k = sum(bool(r.get("associated")) for r in recs)
        shares = [float(r["share_min"]) for r in recs if r.get("share_min") is not None]
        per_N.append({"N": N, "associated": k, "seeds": len(recs),
                      "share_min_mean": float(np.mean(shares)) if shares else None})
        if found is None and len(recs) >= n_seeds and k >= pass_seeds:
            found = N
    return {"per_N": per_N, "N_assoc": found, "censored": found is None,
            "N_max": max(int(n) for n in Ns)}


# -- the three studies ----------------------------------------------------------------------
#: The reproduction's reduced study (SPEC 6, item 7) and the quick smoke run.
REDUCED = dict(gd_ks=(4, 5), flow_ks=(4, 5), block_max_k=6, sweep_ks=(3, 4, 5),
               sampled_ks=(4,), ns=(250, 1000), seeds=3, max_steps=None)


QUICK = dict(gd_ks=(4,), flow_ks=(4,), block_max_k=5, sweep_ks=(), sampled_ks=(), ns=(),
             seeds=0, max_steps=1000)


def _fit_pair(xs, ys) -> dict:
    """Fits of ln t against ln d (gamma) and against ln ln d (beta)."""
    pts = [(x, y) for x, y in zip(xs, ys) if y is not None and y > 0]
    return {"gamma": loglog_fit([p[0] for p in pts], [p[1] for p in pts]),
            "beta": loglog_fit([math.log(p[0]) for p in pts], [p[1] for p in pts])}


def time_fits(rows: Sequence[dict], criteria: Sequence[str] = TIME_CRITERIA) -> dict:
    """Per criterion, the fits of ln t against ln d (gamma) and ln ln d (beta) of the times to
    it (``row["times"][criterion]``, a :func:`~patchassoc.simulations.engines.criteria.time_to` record, at ``row["d"]``).

    A censored time (the criterion fails at the horizon) is listed in ``censored_d`` and left out
    of the fit, as is a time of 0 (the criterion holds from the start: no logarithm), listed in
    ``zero_d``; ``d`` and ``t`` are the points fitted. ``polylog_reading`` is SPEC 6 item 7 (b)'s
    reading of phase times (gamma's 95 % interval below :data:`POLYLOG_GAMMA`, beta's bounded),
    ``None`` without intervals (fewer than 3 points)."""
    out = {}
    for crit in criteria:
        used, censored, zero = [], [], []
        for r in rows:
            x = (r.get("times") or {}).get(crit) or {}
            if x.get("censored"):
                censored.append(r["d"])
            elif x.get("time") is None:
                continue
            elif x["time"] > 0:
                used.append((r["d"], float(x["time"])))
            else:
                zero.append(r["d"])
        pair = _fit_pair([u[0] for u in used], [u[1] for u in used])
        g, b = pair["gamma"], pair["beta"]
        polylog = None
        if g and g.get("ci_high") is not None and b and b.get("ci_high") is not None:
            polylog = bool(g["ci_high"] < POLYLOG_GAMMA)
        out[crit] = {**pair, "d": [u[0] for u in used], "t": [u[1] for u in used],
                     "censored_d": censored, "zero_d": zero, "polylog_reading": polylog}
    return out


def _err(rec):
    if rec is None:
        return None
    if not rec.get("reached", False):
        return {"reached": False, "reason": rec.get("reason", rec.get("status"))}
    if "error" not in rec:
        return {"reached": False, "reason": rec.get("status")}
    return {"reached": True, "error": rec["error"], "bound": rec["bound"],
            "error_high": rec["error_high"], "configurations": rec.get("configurations"),
            "steps": rec.get("steps")}


def _flow_err(rec, tol_factor: float = TOL_FACTOR):
    """A flow cell as study (a) reads it: the certified error at the horizon (as :func:`_err`),
    the limit class, the horizon values, the times to each criterion, the last decade's trend,
    and ``settled``: the flow ended at the horizon (or at a stationary point) and its error moved
    by <= tol(d) over the last decade (so its error is its limit at the level claim 7 reads)."""
    if rec is None:
        return None
    out = _err(rec)
    rd = rec.get("reading") or {}
    status = str(rec.get("status"))
    if out["reached"] and not reached_horizon(status, rd.get("t_reached"),
                                              rec.get("t_max") or FLOW_T_MAX):
        # the one rule, applied where the cell is read too: a flow that stopped early is never
        # read at its horizon, whatever its cell says
        out = {"reached": False, "reason": f"the flow did not reach its horizon ({status})"}
    lim = rd.get("limit") or {}
    hz = rd.get("horizon") or {}
    times = rd.get("times") or {}
    trend = rec.get("trend") or {}
    ser = rec.get("series") or {}
    if ser.get("t") and all(k in ser for k in ("error", "share", "b", "c")):
        # read from the stored records (the same rule as the cell's own trend)
        b, c = ser["b"], ser["c"]
        trend = flow_trend(ser["t"], ser["error"], ser["share"],
                           [x - y for x, y in zip(b, c)], b, c)
    tol = tol_factor * rec["bayes"] if rec.get("bayes") else None
    change = trend.get("error_change")
    settled = bool(out["reached"] and change is not None and tol is not None
                   and abs(change) <= tol)
    out.update(status=status, t_max=rec.get("t_max"), t_reached=rd.get("t_reached"),
               limit=lim.get("class"), limit_alpha=lim.get("alpha"), slope_bc=lim.get("slope_bc"),
               horizon={k: hz.get(k) for k in ("t", "error_over_bayes", "share", "topc",
                                               "topc_rows", "gap_bc", "alpha")},
               times={c: {"time": (times.get(c) or {}).get("time"),
                          "censored": (times.get(c) or {}).get("censored")}
                      for c in TIME_CRITERIA},
               trend=trend, settled=settled, tol=tol, evaluations=rd.get("evaluations"),
               max_rel_bound=rd.get("max_rel_bound"), complete=rd.get("complete"),
               flow_seconds=rd.get("seconds"), seconds=rec.get("seconds"))
    return out


def _study_a(cf_rows, block, gd, gd_ds, flow=None, tol_factor: float = TOL_FACTOR) -> dict:
    flow = flow or {}
    rows = []
    for r in cf_rows:
        d = r["d"]
        b = block.get(d)
        g = gd.get(d)
        rows.append({"d": d, "k": math.log(d), "L": r["L"], "C": r["C"], "q": r["q"],
                     "bayes": r["bayes"], "identity": r["sign_of_sum"],
                     "uniform": r["sign_of_sum"],
                     "block": _err(b), "shifted": _err(b), "gd": _err(g),
                     "flow": _flow_err(flow.get(d), tol_factor)})
    by_d = {r["d"]: r for r in rows}

    def hi(on, name):
        return [(r[name] or {}).get("error_high") if isinstance(r[name], dict) or r[name] is None
                else r[name] for r in on]

    def tests_on(ds, names):
        on = [by_d[d] for d in ds if d in by_d]
        return {name: omega_test([r["d"] for r in on], hi(on, name)) for name in names}

    names = ("flow", "gd", "identity", "uniform", "bayes", "block")
    tests = tests_on(gd_ds, names)
    # the flows beyond the declared range (k = 8): the same test on the longer range, beside it
    flow_ds = sorted(d for d in flow if (by_d.get(d, {}).get("flow") or {}).get("reached"))
    ext_ds = sorted(set(gd_ds) | set(flow_ds))
    tests_ext = (tests_on(ext_ds, ("flow", "identity", "uniform", "bayes"))
                 if ext_ds != sorted(gd_ds) and set(gd_ds) <= set(flow_ds) else None)
    all_ds = [r["d"] for r in rows]
    full = {"bayes": omega_test(all_ds, [r["bayes"] for r in rows]),
            "identity": omega_test(all_ds, [r["identity"] for r in rows])}
    blk = [r for r in rows if r["block"] and r["block"].get("error_high")]
    full["block"] = omega_test([r["d"] for r in blk], [r["block"]["error_high"] for r in blk])
    return {"rows": rows, "gd_ds": list(gd_ds), "flow_ds": flow_ds, "tests": tests,
            "tests_extended": tests_ext, "extended_ds": ext_ds if tests_ext else None,
            "tests_all_d": full}


def _series_of(rec: dict) -> dict | None:
    """The records a figure draws of a flow: t, error / Bayes, share (t > 0)."""
    ser = rec.get("series") or {}
    if not ser.get("t") or not rec.get("bayes"):
        return None
    keep = [i for i, t in enumerate(ser["t"]) if t > 0]
    return {"t": [ser["t"][i] for i in keep],
            "error_over_bayes": [ser["error"][i] / rec["bayes"] for i in keep],
            "share": [ser["share"][i] for i in keep]}


def _study_b(gd_recs, sweep_recs, flow_recs=(), budget=None) -> dict:
    def row(r):
        return {"d": r["d"], "L": r["L"], "C": r["C"], "D": r["D"], "steps": r.get("steps"),
                "t_alpha": r.get("t_alpha"), "t_share": r.get("t_share"),
                "share_final": r.get("share_final"), "topc": r.get("topc"),
                "associated": r.get("associated"), "status": r.get("status")}
    vs_d = [row(r) for r in gd_recs if r.get("reached") and r.get("status") == "ok"]
    vs_D = [row(r) for r in sweep_recs if r.get("reached") and r.get("status") == "ok"]
    fits_d = {t: _fit_pair([r["d"] for r in vs_d], [r[t] for r in vs_d])
              for t in ("t_alpha", "t_share")}
    fits_D = {t: loglog_fit([r["D"] for r in vs_D], [r[t] for r in vs_D])
              for t in ("t_alpha", "t_share")}
    polylog = None
    g = (fits_d.get("t_share") or {}).get("gamma")
    if g and g.get("ci_high") is not None:
        polylog = bool(g["ci_high"] < POLYLOG_GAMMA)
    frows = []
    for r in flow_recs:
        rd = r.get("reading") or {}
        if not rd.get("times"):
            continue
        frows.append({"d": r["d"], "L": r["L"], "C": r["C"], "D": r["D"],
                      "status": r.get("status"), "t_reached": rd.get("t_reached"),
                      "budget": budget(r["d"]) if budget else None,
                      "times": {c: {"time": rd["times"][c]["time"],
                                    "censored": rd["times"][c]["censored"]}
                                for c in TIME_CRITERIA},
                      "series": _series_of(r)})
    frows.sort(key=lambda x: x["d"])
    flow = {"rows": frows, "fits": time_fits(frows), "criteria": list(TIME_CRITERIA),
            "per_decade": PER_DECADE,
            "resolution": 10.0 ** (1.0 / PER_DECADE),
            "note": ("a time is the first recorded time from which the criterion holds up to the "
                     "horizon; records are log-spaced, so it is an upper end within a factor "
                     f"10^(1/{PER_DECADE}) of the first time; censored times are left out of "
                     "the fits")}
    return {"vs_d": vs_d, "fits_d": fits_d, "vs_D": vs_D, "fits_D": fits_D,
            "sweep_d": vs_D[0]["d"] if vs_D else None, "polylog_reading": polylog,
            "flow": flow}


def _study_c(recs, ds, Ns, n_seeds, family) -> dict:
    per_d = []
    for d in ds:
        rs = [r for r in recs if r["d"] == d]
        s = family.sizes(d)
        per_d.append({"d": d, "L": s["L"], "C": s["C"],
                      **n_assoc(rs, Ns, n_seeds, PASS_SEEDS if n_seeds == N_SEEDS
                                   else math.ceil(0.8 * n_seeds))})
    found = [p for p in per_d if p["N_assoc"] is not None]
    fit = loglog_fit([p["d"] for p in found], [p["N_assoc"] for p in found])
    return {"per_d": per_d, "Ns": list(Ns), "seeds": n_seeds, "fit": fit}


def compute(out: Path, *, family=None, ks=None, gd_ks=None, flow_ks=None, block_max_k=None,
            sweep_ks=None, sampled_ks=None, ns=None, seeds=None, steps_per_log=None,
            max_steps=None, t_max=None, seed: int = 0, jobs: int = 1, dask=None,
            progress: bool = False, mode: str = "full") -> dict:
    """Run the three studies into ``out`` (cells resumable); the JSON-ready summary (saved as
    ``out/scaling.json``, the cells in ``out/cells/``; its figures are drawn from it)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = Path(out)
    family = family or Family()
    preset = {"quick": QUICK, "reduced": REDUCED}.get(mode, {})
    ks = tuple(KS if ks is None else ks)
    gd_ks = tuple(preset.get("gd_ks", GD_KS) if gd_ks is None else gd_ks)
    flow_ks = tuple(preset.get("flow_ks", FLOW_KS) if flow_ks is None else flow_ks)
    sweep_ks = tuple(preset.get("sweep_ks", D_SWEEP_KS) if sweep_ks is None else sweep_ks)
    sampled_ks = tuple(preset.get("sampled_ks", SAMPLED_KS) if sampled_ks is None
                       else sampled_ks)
    ns = tuple(preset.get("ns", SAMPLED_NS) if ns is None else ns)
    seeds = int(preset.get("seeds", N_SEEDS) if seeds is None else seeds)
    if block_max_k is None:
        block_max_k = preset.get("block_max_k", max(ks) if ks else 0)
    max_steps = preset.get("max_steps") if max_steps is None else max_steps
    steps_per_log = STEPS_PER_LOG if steps_per_log is None else float(steps_per_log)
    t_max = FLOW_T_MAX if t_max is None else float(t_max)
    if not (steps_per_log > 0 and math.isfinite(steps_per_log)):
        raise ValueError(f"steps-per-log must be a positive number, got {steps_per_log!r}")
    if not (t_max > 0 and math.isfinite(t_max)):
        raise ValueError(f"t-max must be a positive number of steps, got {t_max!r}")
    if max_steps is not None and max_steps < 1:
        raise ValueError(f"max-steps must be >= 1, got {max_steps!r}")
    if seeds < 0:
        raise ValueError(f"seeds must be >= 0, got {seeds}")
    if isinstance(jobs, bool) or jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs!r}")
    if not ks:
        raise ValueError("ks must name at least one grid point")
    if sampled_ks and (not ns or seeds < 1):
        raise ValueError("the sampled study needs --ns and --seeds >= 1 (or --sampled-ks '')")
    ds = grid_d(ks)
    gd_ds = grid_d(gd_ks) if gd_ks else []
    flow_ds = grid_d(flow_ks) if flow_ks else []
    block_ds = [d for d, k in zip(ds, ks) if k <= block_max_k]
    sweep_d = grid_d([D_SWEEP_AT])[0]
    sampled_ds = grid_d(sampled_ks) if sampled_ks else []
    task = ScalingTask(family=family, seed=int(seed), steps_per_log=steps_per_log,
                       max_steps=max_steps, t_max=t_max, folder=str(out))
    sweep = sweep_cells(sweep_d, sweep_ks, family)
    # the flows first, the dearest first: they set the wall time with several jobs
    cells = list(dict.fromkeys(flow_cells(flow_ds) + block_cells(block_ds) + gd_cells(gd_ds)
                               + sweep + sampled_cells(sampled_ds, ns,
                                                       range(seed, seed + seeds))))
    cf_rows = closed_forms(family, sorted(set(ds) | set(flow_ds)))
    res = run_study_cells(task, cells, out / "cells", jobs=jobs, dask=dask,
                          progress=progress)
    recs = res["records"]
    block = {c.d: recs[c.key] for c in cells if c.kind == "block" and c.key in recs}
    gd = {c.d: recs[c.key] for c in cells if c.kind == "gd" and not c.L and c.key in recs}
    flow = {c.d: recs[c.key] for c in cells if c.kind == "flow" and c.key in recs}
    sweep = [recs[c.key] for c in sweep if c.key in recs]
    sampled = [recs[c.key] for c in cells if c.kind == "sampled" and c.key in recs]
    a = _study_a(cf_rows, block, gd, gd_ds, flow, task.tol_factor)
    b = _study_b([gd[d] for d in gd_ds if d in gd], sweep,
                 [flow[d] for d in flow_ds if d in flow], budget=task.steps)
    c = _study_c(sampled, sampled_ds, ns, seeds, family) if sampled_ds else None
    reasons = []
    if mode != "full":
        reasons.append(f"{mode} run")
    if tuple(gd_ks) != GD_KS:
        reasons.append(f"range k = {list(gd_ks)}, not the declared {list(GD_KS)}")
    if family != Family():
        reasons.append("not the declared family")
    if t_max != FLOW_T_MAX:
        reasons.append(f"flow horizon {t_max:g}, not the declared {FLOW_T_MAX:g}")
    if seed != 0:
        reasons.append(f"seed {seed}, not the declared seed 0")
    # a point of the range that was not computed, did not reach its horizon or could not be
    # certified is not a preview: it fails the claim with its cause (claim7, cause_of)
    budget_missing = [r["d"] for r in a["rows"]
                      if r["d"] in gd_ds and not (r["gd"] or {}).get("reached")]
    budget_note = []
    if steps_per_log != STEPS_PER_LOG or max_steps is not None:
        budget_note.append("not the declared GD step budget")
    if budget_missing:
        budget_note.append(f"budget GD not certified at d = {budget_missing}")
    summary = {"family": {"L_rule": family.L_rule, "C_rule": family.C_rule,
                          "q_rule": family.q_rule, "kappa_rule": family.kappa_rule},
               "mode": mode, "seed": seed, "ks": list(ks), "gd_ks": list(gd_ks),
               "flow_ks": list(flow_ks), "t_max": t_max, "per_decade": PER_DECADE,
               "steps_per_log": steps_per_log, "max_steps": max_steps,
               "tol_factor": TOL_FACTOR, "traj_tol": TRAJ_TOL, "min_rise": MIN_RISE,
               "a": a, "b": b, "c": c, "preview_reasons": reasons, "preview": bool(reasons),
               "budget_note": budget_note,
               "cells": {"computed": len(res["computed"]), "reused": len(res["reused"])},
               "cell_cpu_seconds": sum(float(r.get("cpu_seconds", 0.0)) for r in recs.values()),
               "flow_cpu_seconds": sum(float(r.get("cpu_seconds", 0.0)) for r in flow.values()),
               "out": str(out), "figures": []}
    summary["claim7"] = claim7(summary)
    summary.update(seconds=time.perf_counter() - t0, cpu_seconds=time.process_time() - c0)
    write_json(out / "scaling.json", summary)
    return summary


# -- claim 7, its cause and readings ------------------------------------------------------------
def _exps(test: dict | None) -> str:
    ex = (test or {}).get("exponents") or []
    return "[" + ", ".join(_num(x) for x in ex) + "]"


def _flows_on(summary: dict) -> list[dict]:
    """The rows of study (a) on the declared range (its ``gd_ds``), in order of d."""
    a = summary.get("a") or {}
    ds = set(a.get("gd_ds") or [])
    return [r for r in a.get("rows") or [] if r["d"] in ds]


def _moving_text(r: dict) -> str:
    f = r.get("flow") or {}
    if not f:
        return f"d = {r['d']}: no flow"
    if not f.get("reached"):
        return f"d = {r['d']}: no certified flow ({f.get('reason')})"
    tr = f.get("trend") or {}
    bayes = r["bayes"]
    parts = [f"d = {r['d']}"]
    if not (f["status"] == "ok" or f["status"].startswith("stationary")):
        parts.append(f"flow {f['status']} (horizon {_num(f.get('t_max'), '{:.0e}')})")
    if tr.get("error_from") is not None:
        parts.append(f"error {tr['error_from'] / bayes:.4g} -> {tr['error_to'] / bayes:.4g} x "
                     f"Bayes over t = {tr['t_from']:.2g} .. {tr['t_to']:.2g} (change "
                     f"{tr['error_change'] / bayes:+.2e} x Bayes, tol(d) = "
                     f"{_tol_text(f, bayes)} x Bayes), share {tr['share_change']:+.2e}, "
                     f"b - c slope {_num(tr.get('gap_slope'))} per unit ln t")
    parts.append(f"limit class {f.get('limit')}")
    return f"{parts[0]}: " + "; ".join(parts[1:])


def _tol_text(f: dict, bayes: float) -> str:
    return _num((f.get("tol") or 0.0) / bayes if bayes else None, "{:.0e}")


def cause_of(summary: dict) -> dict | None:
    """What a FAIL of claim 7 says (SPEC 6: what a FAIL says), ``{"code", "why"}``, or ``None``
    when the rule holds.

    (iii) a control (identity or uniform) passes the rule; else (i) a flow on the declared range
    did not reach the horizon, or its error still moved over the last decade by more than tol(d)
    (not settled, :func:`_flow_err`): the trend of each such flow; else (ii) every flow settled
    at its limit and the limit errors themselves fail the rule (their local exponents)."""
    a = summary.get("a") or {}
    tests = a.get("tests") or {}
    flow = tests.get("flow") or {}
    passing = [k for k in ("identity", "uniform") if (tests.get(k) or {}).get("passed")]
    if flow.get("passed") and not passing:
        return None
    if passing:
        return {"code": "iii", "why": "; ".join(
            f"{k} attention passes the rule: local exponents {_exps(tests[k])} (rise "
            f"{_num(tests[k].get('rise'))})" for k in passing)}
    rows = _flows_on(summary)
    moving = [r for r in rows if not (r.get("flow") or {}).get("settled")]
    if moving:
        return {"code": "i", "why": "; ".join(_moving_text(r) for r in moving)}
    limits = ", ".join(f"{(r['flow'] or {}).get('limit')}" for r in rows)
    ratios = ", ".join(_ratio(r['flow']['error_high'] / r['bayes']) for r in rows)
    why = (f"the flows settled (error moved <= tol(d) over the last decade at every d; limit "
           f"classes {limits}); their certified errors, {ratios} x Bayes, have local exponents "
           f"{_exps(flow)} (rise {_num(flow.get('rise'))}): "
           + ("not increasing at every pair" if not flow.get("increasing")
              else f"rise below {summary.get('min_rise')}"))
    return {"code": "ii", "why": why}


def claim7(summary: dict) -> dict:
    """SPEC claim 7 by the declared rule, read at the declared horizon: on the declared range
    the local exponent of GD's certified error (the flow's error at t_max = 1e15, certified at
    tol(d)) increases at every pair and by >= MIN_RISE overall, and both controls (identity,
    uniform) fail that test; the Bayes error must pass it (else no verdict). The fixed-budget
    GD reading (ceil(1000 ln d) steps) is reported beside it, never as the verdict. A reduced or
    quick run is a preview, never a pass or a fail. A rule that fails carries its ``cause``
    (:func:`cause_of`)."""
    a = summary.get("a") or {}
    tests = a.get("tests") or {}
    reasons = list(summary.get("preview_reasons") or [])
    flow = tests.get("flow") or {}
    gd = tests.get("gd") or {}
    controls = {k: bool((tests.get(k) or {}).get("passed")) for k in ("identity", "uniform")}
    bayes_ok = bool((tests.get("bayes") or {}).get("passed"))
    few = (tests.get("bayes") or {}).get("points", 0) < 3
    if few:
        reasons.append("fewer than 3 points: no exponent trend to read")
    elif not bayes_ok:
        reasons.append("the Bayes error itself fails the test: the family does not meet the "
                       "paper's assumption on this range")
    rule = bool(flow.get("passed")) and not any(controls.values())
    decided = not reasons
    rows = _flows_on(summary)
    ratios = [((r.get("flow") or {}).get("error_high") / r["bayes"]
               if (r.get("flow") or {}).get("reached") else None) for r in rows]
    budget = [((r.get("gd") or {}).get("error_high") / r["bayes"]
               if (r.get("gd") or {}).get("reached") else None) for r in rows]
    limits = [(r.get("flow") or {}).get("limit") for r in rows]
    horizon = _num(summary.get("t_max"), "{:.0e}")
    detail = (f"flow at the horizon t = {horizon} over d = {a.get('gd_ds')}: certified error "
              f"[{', '.join(_ratio(x) for x in ratios)}] x Bayes, local exponents "
              f"{_exps(flow)} (rise {_num(flow.get('rise'))}, needs increasing and >= "
              f"{summary.get('min_rise')}); limit classes {', '.join(map(str, limits))}; "
              f"beside it, GD within "
              f"ceil({summary.get('steps_per_log', STEPS_PER_LOG):g} ln d) steps: "
              f"[{', '.join(_ratio(x) for x in budget)}] x Bayes, exponents {_exps(gd)}"
              f" -> {'holds' if gd.get('passed') else 'fails'} within the budget; controls "
              f"identity {'PASS (fails the claim)' if controls['identity'] else 'fail'}, "
              f"uniform {'PASS (fails the claim)' if controls['uniform'] else 'fail'}; "
              f"Bayes {'passes' if bayes_ok else 'fails' if few is False else 'n/a'}")
    ext = a.get("tests_extended")
    if ext:
        detail += (f"; extended to d = {a.get('extended_ds')} (beside the verdict): flow "
                   f"exponents {_exps(ext.get('flow'))} -> "
                   f"{'holds' if (ext.get('flow') or {}).get('passed') else 'fails'}")
    if reasons:
        detail += f"; not a verdict ({'; '.join(reasons)})"
    # no exponent trend (fewer than 3 points): nothing failed, so no cause to name
    cause = None if rule or few else cause_of(summary)
    status = ("pass" if rule else "fail") if decided else "preview"
    return {"claim": "scaling: along the declared family, GD's certified error at the declared "
                     "horizon (the exact flow to t = 1e15) falls faster than any fixed power of "
                     "d (local exponent increasing), identity and uniform attention do not",
            "passed": bool(rule and decided),
            "measured": {"flow_exponents": flow.get("exponents"), "flow_rise": flow.get("rise"),
                         "flow_increasing": flow.get("increasing"),
                         "flow_error_over_bayes": ratios, "flow_limits": limits,
                         "budget_exponents": gd.get("exponents"), "budget_rise": gd.get("rise"),
                         "budget_passes": bool(gd.get("passed")),
                         "budget_error_over_bayes": budget, "controls_pass": controls,
                         "bayes_passes": bayes_ok,
                         "extended": ({"ds": a.get("extended_ds"),
                                       "flow_exponents": (ext.get("flow") or {}).get("exponents"),
                                       "flow_passes": bool((ext.get("flow") or {}).get("passed"))}
                                      if ext else None)},
            "threshold": {"increasing": True, "min_rise": summary.get("min_rise"),
                          "gd_ks": list(GD_KS), "t_max": FLOW_T_MAX},
            "rule_holds": rule, "verdict": decided, "detail": detail, "cause": cause,
            "status": status}


def _num(x, fmt="{:.2f}") -> str:
    return "n/a" if x is None else fmt.format(x)


def _ratio(x) -> str:
    """An error over Bayes: six decimals near 1 (where the flows end), three digits else."""
    if x is None:
        return "n/a"
    return f"{x:.6f}" if abs(x - 1.0) < 0.01 else f"{x:.3g}"


def _end(test: dict, i: int) -> str:
    ex = test.get("exponents") or []
    return _num(ex[i]) if ex else "n/a"


def _fit_text(fit: dict | None, digits: int = 2) -> str:
    if not fit:
        return "no fit"
    f = "{:." + str(digits) + "f}"
    if fit.get("ci_low") is None:
        return f"{f.format(fit['slope'])} ({fit['n']} points, no interval)"
    return (f"{f.format(fit['slope'])} +- {f.format(fit['se'])} (95 % "
            f"[{f.format(fit['ci_low'])}, {f.format(fit['ci_high'])}], {fit['n']} points)")


_CRIT_WORDS = {"def22": "Def. 2.2 in every row", "share": "share >= 0.9",
               "error": "error <= 1.3 x Bayes + bound", "all": "all three"}


def _time_text(x: dict) -> str:
    if x.get("censored"):
        return "censored"
    return "n/a" if x.get("time") is None else f"{x['time']:.3g}"


def readings(s: dict) -> dict[str, str]:
    """The report's reading of each figure, built from the numbers."""
    out = {}
    a = s.get("a")
    if a:
        rows = a["rows"]
        first, last = rows[0], rows[-1]
        c7 = claim7(s)
        t = a["tests"]
        fl = [r for r in rows if (r.get("flow") or {}).get("reached")]
        ga = [r for r in rows if r["gd"] and r["gd"].get("reached")]
        flow_text = ""
        if fl:
            flow_text = (f"GD's solution at the declared horizon (the exact flow to t = "
                         f"{_num(s.get('t_max'), '{:.0e}')} GD steps, certified at tol(d) = "
                         f"{s.get('tol_factor', TOL_FACTOR):g} x Bayes): error "
                         + ", ".join(f"{r['flow']['error_high']:.3e} "
                                     f"({_ratio(r['flow']['error_high'] / r['bayes'])} x Bayes, "
                                     f"{r['flow']['limit']}) at d = {r['d']}" for r in fl)
                         + f"; local exponents on the declared range {_exps(t.get('flow'))}. ")
            odd = [r for r in fl if r["flow"]["limit"] != "association"]
            for r in odd:
                f, tr = r["flow"], r["flow"].get("trend") or {}
                flow_text += (f"At d = {r['d']} the limit class is {f['limit']}: over the last "
                              f"decade b - c moved with slope {_num(f.get('slope_bc'))} per unit "
                              f"ln t (to {_num(f['horizon'].get('gap_bc'))}; b by "
                              f"{_num(tr.get('b_change'), '{:+.2f}')}, c by "
                              f"{_num(tr.get('c_change'), '{:+.2f}')}), the share by "
                              f"{_num(tr.get('share_change'), '{:+.1e}')} and the error by "
                              f"{_num((tr.get('error_change') or 0.0) / r['bayes'], '{:+.1e}')} x "
                              f"Bayes ({'settled' if f.get('settled') else 'still moving'} at "
                              f"tol(d)). ")
            ext = a.get("tests_extended")
            if ext:
                flow_text += (f"With d = {a['extended_ds'][-1]} added (beside the verdict): "
                              f"{_exps(ext.get('flow'))}. ")
        gd_text = ""
        if len(ga) == 1:
            gd_text = (f"Beside it, GD within the budget ceil({s.get('steps_per_log', 1000):g} "
                       f"ln d) steps: {ga[0]['gd']['error_high']:.2e} at d = {ga[0]['d']} "
                       f"({ga[0]['gd']['error_high'] / ga[0]['bayes']:.2f} x Bayes), one "
                       "point. ")
        elif ga:
            gd_text = ("Beside it, GD within the budget ceil("
                       f"{s.get('steps_per_log', 1000):g} ln d) steps: "
                       + ", ".join(_ratio(r['gd']['error_high'] / r['bayes']) for r in ga)
                       + f" x Bayes at d = {', '.join(str(r['d']) for r in ga)}, local "
                       f"exponents {_exps(t.get('gd'))} (a reading within a budget, not the "
                       "verdict). ")
        cause = ""
        if c7.get("cause"):
            cs = c7["cause"]
            cause = f" Cause ({cs['code']}) {CAUSES[cs['code']]}: {cs['why']}."
        out["scaling_error"] = (
            f"Along L = C = round(ln d), q = ln d / D: the Bayes error falls from "
            f"{first['bayes']:.2e} at d = {first['d']} to {last['bayes']:.2e} at d = {last['d']} "
            f"(local exponents from {_end(a['tests_all_d']['bayes'], 0)} to "
            f"{_end(a['tests_all_d']['bayes'], -1)}), identity and uniform attention "
            f"only from {first['identity']:.2e} to {last['identity']:.2e} (exponents "
            f"{_end(a['tests_all_d']['identity'], 0)} to "
            f"{_end(a['tests_all_d']['identity'], -1)}). " + flow_text + gd_text
            + f"Claim 7: {c7['status']}.{cause}")
    b = s.get("b")
    if b:
        txt = ""
        fb = b.get("flow") or {}
        if fb.get("rows"):
            ds = [r["d"] for r in fb["rows"]]
            txt += f"Time to each criterion along the flows (GD steps, d = {ds}): "
            parts = []
            for crit in TIME_CRITERIA:
                times = ", ".join(_time_text(r["times"][crit]) for r in fb["rows"])
                f = fb["fits"][crit]
                fit = ""
                if f["gamma"]:
                    fit = (f"; gamma = {_fit_text(f['gamma'])}, beta = {_fit_text(f['beta'])}")
                    if f["polylog_reading"] is not None:
                        fit += ("; reads as polylog(d)" if f["polylog_reading"]
                                else "; not polylog(d) by the SPEC 6 (b) reading (gamma's "
                                     f"interval reaches {POLYLOG_GAMMA})")
                if f["censored_d"]:
                    fit += f"; censored at d = {f['censored_d']} (left out of the fit)"
                if f["zero_d"]:
                    fit += f"; 0 at d = {f['zero_d']} (left out)"
                parts.append(f"{_CRIT_WORDS[crit]}: {times}{fit}")
            txt += "; ".join(parts) + ". "
            short = [r for r in fb["rows"] if r.get("budget") and not r["times"]["error"]
                     ["censored"] and r["times"]["error"]["time"] > r["budget"]]
            if short:
                txt += ("The budget T(d) = ceil(1000 ln d) falls short of the time to 1.3 x "
                        "Bayes at d = " + ", ".join(
                            f"{r['d']} ({r['budget']} < {r['times']['error']['time']:.3g})"
                            for r in short) + ". ")
            txt += f"Times are read on records {fb['per_decade']} per decade (upper ends). "
        if b["vs_d"]:
            fd = b["fits_d"]["t_share"]
            g, be = fd.get("gamma"), fd.get("beta")
            txt += (f"Beside them, GD within the budget: phase times t_alpha "
                    + ", ".join(str(r["t_alpha"]) for r in b["vs_d"]) + " and t_share "
                    + ", ".join(str(r["t_share"]) for r in b["vs_d"]) + " steps at d = "
                    + ", ".join(str(r["d"]) for r in b["vs_d"]) + "; final share "
                    + ", ".join(_num(r["share_final"]) for r in b["vs_d"]) + ". ")
            if g:
                txt += (f"t_share ~ d^gamma with gamma = {g['slope']:.3f}"
                        + (f" [{g['ci_low']:.3f}, {g['ci_high']:.3f}]" if g["ci_low"] is not None
                           else " (2 points, no interval)")
                        + f", ~ (ln d)^beta with beta = {be['slope']:.2f}. ")
            sh = [r["share_final"] for r in b["vs_d"] if r["share_final"] is not None]
            if len(sh) >= 2 and all(y < x for x, y in zip(sh, sh[1:])):
                txt += (f"The final share after T(d) = ceil({s.get('steps_per_log', 1000):g} "
                        f"ln d){' (capped)' if s.get('max_steps') else ''} steps falls at "
                        f"every d, from {sh[0]:.2f} to {sh[-1]:.2f}: within the budget GD "
                        f"associates less as d grows. ")
        if b["vs_D"]:
            txt += (f"At d = {b['sweep_d']}, budget GD's t_share = "
                    + ", ".join(f"{r['t_share']} (D = {r['D']})" for r in b["vs_D"]) + ".")
        if txt:
            out["scaling_dynamics"] = txt.strip()
    c = s.get("c")
    if c:
        parts = []
        for p in c["per_d"]:
            fr = ", ".join(f"{x['associated']}/{x['seeds']} at N = {x['N']}" for x in p["per_N"])
            top = p["per_N"][-1] if p["per_N"] else {}
            parts.append(f"d = {p['d']} (L = C = {p['L']}): {fr}; N_assoc "
                         + (f"= {p['N_assoc']}" if p["N_assoc"] is not None
                            else f"> {p['N_max']} (censored)")
                         + (f"; mean share_min at N = {top['N']}: {top['share_min_mean']:.2f}"
                            if top.get("share_min_mean") is not None else ""))
        out["scaling_sampled"] = ("Sampled GD (diagonal fixed, association = Def. 2.2 in every "
                                  "row and share_min >= 0.75): " + "; ".join(parts) + ".")
    return out


def reproduce(out_dir: Path, config, seed: int, quick: bool, progress: bool) -> Outcome:
    """Reproduction step: the reduced study (``quick``: the smoke run); a preview of claim 7.
    ``config`` is not used: the study's sizes come from its declared family."""
    # one process: the cells are small, and a spawned worker pays its own imports and kernel
    # loading
    return Outcome(compute(Path(out_dir), seed=seed, jobs=1, progress=progress,
                           mode="quick" if quick else "reduced"),
                   saved=Path(out_dir) / "scaling.json")


def verdict(root: Path) -> dict:
    """Claim 7 from a reproduction folder: :func:`claim7` on the ``scaling`` step's summary,
    a FAIL with its cause (a preview keeps it in ``values['preview_cause']``)."""
    got: dict = {}

    def rule(summary):
        got.update(claim7(summary))
        return got

    rec = from_step(root, "7", "scaling", rule, CLAIM,
                    "no scaling result (run `patchassoc scaling`)")
    cause = got.get("cause")
    if cause:
        rec = with_cause(rec, cause["code"], cause["why"])
    return rec


STUDY = Study(
    name="scaling", claim="7", verdict=verdict, readings=readings,
    what="claim 7, reduced: errors at the flow's horizon and times to each criterion against d "
         "along the declared family",
    run=reproduce, cost=25, kernels=("exact", "sampled"),
    figures=("scaling_error", "scaling_dynamics", "scaling_sampled"),
    version=f"{PROTOCOL}/{FLOW_VERSION}")
