"""Claim 7's cells: one point of one of the three studies, computed, certified, resumable.

The cells: the flow, block-uniform and budget GD at d; the D sweep; sampled GD at (d, N, seed).

References
----------
SPEC section 6, item 7; the package's notes.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from patchassoc.simulations.engines.criteria import CRITERIA
from patchassoc.simulations.engines.population.exact import evaluate, plan
from patchassoc.simulations.engines.population.flow import (
    FLOW_VERSION,
    T_MAX,
    flow_reading,
    run_flow,
)
from patchassoc.simulations.engines.population.trajectory import (
    initial_point,
    phases,
    population_descent,
)
from patchassoc.simulations.engines.sampled_descent import train
from patchassoc.simulations.engines.start import record_steps
from patchassoc.simulations.runtime.cells import fingerprint, run_cells
from patchassoc.simulations.runtime.errors import raise_if_interrupted
from patchassoc.simulations.studies.common.seed_rule import SHARE_MIN
from patchassoc.simulations.studies.common.scaling_family import (
    GD_KS,
    MAX_CONFIGURATIONS,
    TOL_FACTOR,
    Family,
    flow_trend,
)
from patchassoc.theory.association import associate, invariant_association
from patchassoc.theory.bayes import bayes_error
from patchassoc.theory.solutions import sign_of_sum_error

#: Version of the cell computations: stored cells of another version are recomputed.
PROTOCOL = "scaling-2"


# -- declared values (SPEC section 6, item 7) ---------------------------------------------------
#: Grid exponents: d_k = round(e^k).
KS = tuple(range(4, 15))


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


#: Certified tolerance of each evaluation along a GD trajectory.
TRAJ_TOL = 1e-8


#: GD budget T(d) = ceil(STEPS_PER_LOG ln d).
STEPS_PER_LOG = 1000.0


#: Block-uniform construction: alpha and lambda = BLOCK_LAMBDA_PER_LOG ln d.
BLOCK_ALPHA = 2.0


BLOCK_LAMBDA_PER_LOG = 2.0


#: Records kept along a GD trajectory (log-spaced).
RECORDS = 30


def steps_for(d: int, steps_per_log: float = STEPS_PER_LOG) -> int:
    """GD budget T(d) = ceil(steps_per_log ln d)."""
    return int(math.ceil(steps_per_log * math.log(d)))


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
