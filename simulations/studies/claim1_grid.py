"""Claim 1 (Theorem 4.1, idealized) on a grid of problem sizes, read at a declared horizon.

The grid (SPEC section 6, claim 1): every (L, C) with L, C >= 2 and D = L C <= 32, times
d in {64, 256, 1024, 4096}; each point uses the reference rules of SPEC sections 1-2 at its own
sizes (q = min(1, ln d / D), kappa = ln ln d, eta_v = 0.1, eta_Q = 50, the seed's alpha0) with
the diagonal fixed (the paper's Simplification 3.1).

Each point (:func:`run_point`) is read twice from the same start (same configuration, same seed):

- **At the horizon** (the verdict; SPEC section 6, claims read at a declared horizon): the exact
  gradient flow of the population risk
  (:func:`patchassoc.simulations.engines.population.flow.population_flow`, t in GD steps) to
  ``T_MAX`` = 1e15 steps. A point passes when, at the horizon, Def. 2.2 holds in every row
  (closed form for invariant logits: a > c and b > c, ties fail;
  :func:`patchassoc.theory.association.invariant_association`), the population error is
  <= 1.3 x Bayes + the certified bound of the horizon's evaluation, and the flow's limit class
  (:func:`~patchassoc.simulations.engines.population.flow.limit_class`) is association (b - c
  -> +infinity, block-uniform limit attention); a flow that stopped before the horizon (solver
  failure) does not pass. The record holds the limit class with its numbers, the time to each
  criterion along the flow (Def. 2.2, share >= 0.9, error <= 1.3 x Bayes + bound, all three;
  or censored > horizon: :mod:`patchassoc.simulations.engines.criteria`), the horizon reading
  (Def. 2.2 rows, error, bound, error/Bayes, share, alpha, b - c) and the trend over the last
  recorded decade (b - c against ln t, error/Bayes and share a decade before the horizon).
- **Within 10,000 GD steps** (a reading within a fixed budget, never the verdict): exact
  population gradient descent (:func:`run_cell`, unchanged from the step-budget protocol),
  stopped at the first check (every ``CHECK_EVERY`` steps) where Def. 2.2 holds in every row and
  error <= 1.3 x Bayes + bound, or after ``MAX_STEPS`` steps. Beside it the flow's time to the
  same two conditions (the first recorded time where both hold, and the time after which they
  hold for good), so the steps GD needed and the flow's time can be compared.

Verdict (the rule unchanged, read at the horizon): on the points of the paper's regime (sparse
feature noise and several sets: q <= 0.5 and L >= 3), the claim passes when >= 90 % of them pass
and the reference point (L, C, d) = (4, 4, 256) passes; the matrix controls must fail
association. Points outside the regime are run and drawn too. ``patchassoc grid --max-D 48``
adds the points with 32 < D <= 48, read by the flow alone (``--budget-max-D`` adds the GD
reading, which costs many times the flow there): they are reported beside the verdict, never
counted in it.

A failing claim names its cause (:func:`grid_cause`, SPEC section 6): (iii) a control passes;
else (ii) when the failing regime points that reached a limit (limit class converged, other
sets or tie, or association with a horizon reading that fails and no longer improves) are
enough on their own to fail the rule, or the reference point is one of them; else (i): the rule
fails because of points still moving at the horizon (class undecided, or association with
error/Bayes still falling by more than ``FALLING`` over the last decade), quoted with their
trend.

Cells are independent and resumable: each finished point is stored as
``<folder>/L<L>-C<C>-d<d>.json`` (atomic write) with the grid's fingerprint, and a re-run
computes only the missing ones, on ``jobs`` local processes or a Dask scheduler
(:mod:`patchassoc.simulations.runtime.executor`).

References
----------
SPEC section 6 (claim 1; claims read at a declared horizon), section 3 (Def. 2.2, share),
section 5 (exact population risk).
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from patchassoc.theory.association import invariant_association
from patchassoc.theory.bayes import bayes_error
from patchassoc.theory.config import Config, preset
from patchassoc.theory.structure import Structure
from patchassoc.simulations.engines.criteria import CRITERIA, time_to
from patchassoc.simulations.engines.population.flow import (FLOW_VERSION, T_MAX, flow_reading,
                                                          reached_horizon, run_flow)
from patchassoc.simulations.engines.population.trajectory import initial_point, population_descent
from patchassoc.simulations.runtime.cells import fingerprint, run_cells
from patchassoc.simulations.runtime.errors import raise_if_interrupted
from patchassoc.simulations.runtime.executor import default_jobs
from patchassoc.simulations.runtime.verified import read_verified, write_summary
from patchassoc.simulations.studies.study import Outcome, Study
from patchassoc.simulations.studies.verdicts import (as_preview, controls_ok, controls_text, fmt,
                                                     matrix_controls, not_run, record,
                                                     reference_structure, step_summary,
                                                     CAUSES, with_cause)

__all__ = ["GridCell", "GridTask", "PROTOCOL", "MAX_STEPS", "CHECK_EVERY", "DS", "QUICK_DS",
           "MAX_D", "QUICK_MAX_D", "EXTENDED_MAX_D", "T_MAX", "BAYES_FACTOR", "REGIME_Q",
           "REGIME_L", "PASS_FRACTION", "SHARE_LEVEL", "REFERENCE", "LIMIT_ORDER", "FALLING",
           "grid_cells",
           "cell_config", "run_cell", "run_point", "horizon_record", "point_verdict", "run_grid", "grid_summary",
           "grid_cause", "in_regime", "CLAIM", "claim1", "claim1_point", "compute", "reproduce",
           "verdict", "readings", "STUDY"]

#: The claim (SPEC section 6, item 1), as the claims table states it.
CLAIM = ("population dynamics (diagonal fixed) associate (Def. 2.2) with error near Bayes, on a "
         "grid, read at the horizon")
#: Version of the cell computation: stored cells of another version are recomputed.
PROTOCOL = "claim1-grid-2"
#: SPEC section 6, claim 1: the step budget of the GD reading beside the verdict.
MAX_STEPS = 10_000
DS = (64, 256, 1024, 4096)
#: The declared grid: the verdict is taken on the points with D <= MAX_D.
MAX_D = 32
#: ``patchassoc grid --max-D`` may extend the grid up to this D (reported, never counted).
EXTENDED_MAX_D = 48
BAYES_FACTOR = 1.3
REGIME_Q = 0.5
REGIME_L = 3
PASS_FRACTION = 0.9
#: Reported beside the verdict: the share level of association at eps = 0.1.
SHARE_LEVEL = 0.9
REFERENCE = (4, 4, 256)
#: Steps between two checks of the GD reading's stopping rule.
CHECK_EVERY = 50
#: The quick grid (``reproduce --quick``): a preview on fewer d, never a verdict.
QUICK_DS = (256,)
QUICK_MAX_D = 16
#: A failing point of class association whose error/Bayes fell by more than this fraction over
#: the last recorded decade is still moving toward its limit (cause (i), not (ii)).
FALLING = 1e-3
#: The limit classes in report order (those of the flow, and ``n/a`` for a record without one).
LIMIT_ORDER = ("association", "undecided", "converged", "other sets", "tie", "undetermined",
               "n/a")


@dataclass(frozen=True, order=True)
class GridCell:
    """One point (L, C, d) of the grid. ``upstream`` (always 0) lets the transfer sweep's
    backends index the task."""

    L: int
    C: int
    d: int
    upstream: int = 0

    @property
    def key(self) -> str:
        return f"L{self.L:02d}-C{self.C:02d}-d{self.d:05d}"


@dataclass(frozen=True)
class GridTask:
    """What every cell shares (picklable): the base preset, seed, the GD reading's step budget
    and check period, the flow's horizon (GD steps) and the largest D that gets the GD reading
    (beyond the declared grid the flow alone is run unless asked: there the 10,000 steps cost
    many times the flow)."""

    base: str = "ref"
    seed: int = 0
    max_steps: int = MAX_STEPS
    check_every: int = CHECK_EVERY
    t_max: float = T_MAX
    budget_max_D: int = MAX_D

    def fingerprint(self) -> str:
        return fingerprint({"protocol": PROTOCOL, "flow": FLOW_VERSION, **asdict(self)})


def grid_cells(ds: Sequence[int] = DS, max_D: int = MAX_D) -> list[GridCell]:
    """Every (L, C) with L, C >= 2 and L C <= max_D, times ``ds``; largest D first."""
    if not ds or any(int(d) != d or d < 3 for d in ds):
        raise ValueError(f"ds must be integers >= 3, got {ds!r}")
    if int(max_D) != max_D or max_D < 4:
        raise ValueError(f"max_D must be an integer >= 4, got {max_D!r}")
    cells = [GridCell(L, C, int(d)) for C in range(2, max_D // 2 + 1)
             for L in range(2, max_D // C + 1) for d in ds]
    return sorted(cells, key=lambda c: (-c.L * c.C, c.L, c.C, c.d))


def cell_config(task: GridTask, cell: GridCell) -> Config:
    """The point's configuration: the base preset at (L, C, d) with its own reference scalings
    (q = min(1, ln d / D), sigma, kappa) and the diagonal fixed."""
    return preset(task.base, L=cell.L, C=cell.C, d=cell.d, diagonal="fixed")


def in_regime(L: int, q: float) -> bool:
    """The paper's regime: sparse feature noise and several sets (q <= 0.5, L >= 3)."""
    return q <= REGIME_Q and L >= REGIME_L


def run_cell(task: GridTask, cell: GridCell) -> dict:
    """The 10,000-step reading: population GD at one point until both conditions hold or the
    budget is spent (a reading within a fixed budget, not the verdict; :func:`run_point` puts it
    beside the flow's horizon reading).

    Returns a JSON-ready record: ``passed`` (within the budget), ``steps`` (the check at which it
    stopped), ``topc``, ``error``, ``bayes_error``, ``bound``, ``error_over_bayes``, ``share``,
    ``(alpha, a, b, c)``, ``q``, ``in_regime``, ``status``, ``seconds``, ``fingerprint``.
    """

    t0, c0 = time.perf_counter(), time.process_time()
    cfg = cell_config(task, cell)
    L, C, D = cfg.L, cfg.C, cfg.D
    bayes = bayes_error(L, C, cfg.q)
    alpha, coords, _ = initial_point(cfg, task.seed)
    step, passed, status = 0, False, "ok"
    rec: dict = {}
    while True:
        chunk = min(task.check_every, task.max_steps - step) if step < task.max_steps else 0
        tr = population_descent(L, C, cfg.q, cfg.p, cfg.nu, alpha, coords, eta_v=cfg.eta_v,
                                eta_Q=cfg.eta_Q, steps=chunk, at=[chunk], param="logits",
                                diagonal="fixed")
        raise_if_interrupted(tr.status, f"cell {cell.key}: GD reading")
        if tr.status != "ok" or tr.steps.size == 0:
            status = tr.status
            step += tr.steps_done
            break
        alpha, coords = float(tr.alpha[-1]), tr.coords[-1]
        step += chunk
        a, b, c = float(tr.a[-1]), float(tr.b[-1]), float(tr.c[-1])
        assoc = invariant_association(a, b, c, L, C, eps=1.0 - SHARE_LEVEL)
        error, bound = float(tr.error[-1]), float(tr.bound[-1])
        rec = {"topc": assoc.topc, "share": assoc.share_min, "error": error, "bound": bound,
               "alpha": alpha, "a": a, "b": b, "c": c}
        passed = bool(assoc.topc and error <= BAYES_FACTOR * bayes + bound)
        if passed or step >= task.max_steps:
            break
    seconds = time.perf_counter() - t0
    return {"L": L, "C": C, "d": cell.d, "D": D, "q": cfg.q, "kappa": cfg.kappa,
            "in_regime": in_regime(L, cfg.q), "passed": passed, "steps": step,
            "status": status, "bayes_error": bayes,
            "error_over_bayes": (rec.get("error", math.nan) / bayes if bayes > 0 else None),
            "associated_eps01": bool(rec.get("topc") and rec.get("share", 0.0) >= SHARE_LEVEL),
            **rec, "seconds": seconds, "cpu_seconds": time.process_time() - c0,
            "fingerprint": task.fingerprint()}


def point_verdict(horizon: dict, limit: str | None, bayes: float, reached: bool) -> dict:
    """The horizon test at one point (SPEC section 6, claim 1 at the horizon).

    Parameters
    ----------
    horizon : the horizon reading: ``topc`` (Def. 2.2 in every row), ``error``, ``bound``.
    limit : the flow's limit class.
    bayes : the Bayes error.
    reached : the flow reached its horizon (it did not stop early on a solver failure).

    Returns
    -------
    dict
        ``passed`` and its three conditions ``def22``, ``error`` (error <= 1.3 x Bayes + bound)
        and ``association`` (the limit class), and ``reached``.
    """
    err, bound = horizon.get("error"), horizon.get("bound") or 0.0
    ok_err = bool(err is not None and math.isfinite(err)
                  and err <= BAYES_FACTOR * bayes + bound)
    ok_topc = bool(horizon.get("topc"))
    ok_limit = limit == "association"
    return {"passed": bool(ok_topc and ok_err and ok_limit and reached), "def22": ok_topc,
            "error": ok_err, "association": ok_limit, "reached": bool(reached)}


def _decade_trend(tr, bayes: float) -> dict:
    """The flow a decade before its last record against the last record: the trend a FAIL of
    cause (i) quotes."""
    t = np.asarray(tr.t, dtype=np.float64)
    if t.size < 2:
        return {"t_from": None, "t_to": None}
    k = int(np.flatnonzero(t >= t[-1] / 10.0)[0]) if t[-1] > 0 else 0
    k = min(k, t.size - 2)
    eob = (lambda e: float(e) / bayes if bayes > 0 else None)
    return {"t_from": float(t[k]), "t_to": float(t[-1]),
            "error_over_bayes_from": eob(tr.error[k]), "error_over_bayes_to": eob(tr.error[-1]),
            "share_from": float(tr.share[k]), "share_to": float(tr.share[-1]),
            "gap_bc_from": float(tr.b[k] - tr.c[k]), "gap_bc_to": float(tr.b[-1] - tr.c[-1]),
            "alpha_from": float(tr.alpha[k]), "alpha_to": float(tr.alpha[-1])}


def _flow_both(tr, bayes: float) -> dict:
    """The flow's time to the GD reading's stopping rule (Def. 2.2 in every row and error <=
    1.3 x Bayes + bound): the first recorded time where both hold, and the time after which they
    hold for good (:func:`patchassoc.simulations.engines.criteria.time_to`)."""
    holds = (np.asarray(tr.topc_rows) == tr.D) & np.isfinite(tr.error) & (
        np.asarray(tr.error) <= BAYES_FACTOR * bayes + np.asarray(tr.bound))
    first = np.flatnonzero(holds)
    return {"first": float(tr.t[first[0]]) if first.size else None,
            "for_good": time_to(tr.t, holds, tr.reached)}


def run_point(task: GridTask, cell: GridCell) -> dict:
    """One grid point, read at the horizon and within the step budget (module notes).

    Returns
    -------
    dict
        JSON-ready: ``L``, ``C``, ``d``, ``D``, ``q``, ``kappa``, ``in_regime``, ``bayes_error``;
        ``passed`` (the horizon test, :func:`point_verdict`) and ``verdict`` (its conditions);
        ``limit`` (the flow's limit class and its numbers) and ``limit_class``; ``times`` (the
        flow's time to each criterion, or censored); ``horizon`` (the horizon reading: ``t``,
        ``topc_rows``, ``topc``, ``error``, ``bound``, ``error_over_bayes``, ``share``,
        ``alpha``, ``a``, ``b``, ``c``, ``gap_bc``, ``risk``, ``speed``); ``trend`` (the last
        decade); ``flow`` (status, horizon, evaluations, solver, bounds, seconds); ``budget``
        (the 10,000-step reading, :func:`run_cell`'s record without its fingerprint; ``None``
        for D > ``task.budget_max_D``);
        ``compare`` (GD's stopping step against the flow's time to the same rule); ``status``,
        ``seconds``, ``cpu_seconds``, ``fingerprint``.
    """
    t0, c0 = time.perf_counter(), time.process_time()
    budget = None
    if cell.L * cell.C <= task.budget_max_D:
        budget = run_cell(task, cell)
        budget.pop("fingerprint", None)
    cfg = cell_config(task, cell)
    f0, fc0 = time.perf_counter(), time.process_time()
    res = run_flow(cfg, task.seed, t_max=task.t_max)
    raise_if_interrupted(res.trajectory.status, f"cell {cell.key}: flow")
    rec = horizon_record(cfg, res.trajectory, res.bayes_error, task.t_max,
                         seconds=time.perf_counter() - f0, cpu_seconds=time.process_time() - fc0)
    both = _flow_both(res.trajectory, res.bayes_error)
    b = budget or {}
    compare = {"rule": "Def. 2.2 in every row and error <= 1.3 x Bayes + bound",
               "gd_steps": b["steps"] if b.get("passed") else None,
               "gd_censored": (not b["passed"]) if b else None, "gd_budget": task.max_steps,
               "gd_check_every": task.check_every,
               "flow_first": both["first"], "flow_for_good": both["for_good"]["time"],
               "flow_censored": both["for_good"]["censored"]}
    rec.update(budget=budget, compare=compare, seconds=time.perf_counter() - t0,
               cpu_seconds=time.process_time() - c0, fingerprint=task.fingerprint())
    return rec


def horizon_record(cfg: Config, tr, bayes: float, t_max: float, *, seconds: float = 0.0,
                   cpu_seconds: float = 0.0) -> dict:
    """A point's flow read by claim 1's horizon rule (SPEC section 6): the part of
    :func:`run_point`'s record that the flow decides, for any configuration and start (the
    robustness study reads its variants' flows with it).

    Parameters
    ----------
    cfg : the point's configuration.
    tr : its :class:`~patchassoc.simulations.engines.population.flow.FlowTrajectory`.
    bayes : its Bayes error.
    t_max : the declared horizon (a flow that stopped before it has not reached it).
    seconds, cpu_seconds : the flow's cost, kept in ``flow``.

    Returns
    -------
    dict
        ``L``, ``C``, ``d``, ``D``, ``q``, ``kappa``, ``in_regime`` (at ``cfg``'s q),
        ``bayes_error``, ``passed``, ``verdict``, ``limit_class``, ``limit``, ``times``,
        ``horizon``, ``trend``, ``flow`` and ``status`` (module notes, :func:`run_point`).
    """
    reading = flow_reading(tr, bayes, eps=1.0 - SHARE_LEVEL)
    h = reading["horizon"]
    horizon = {"t": h["t"], "topc_rows": h["topc_rows"], "D": cfg.D, "topc": h["topc"],
               "error": h["error"], "bound": h["bound"],
               "error_limit": BAYES_FACTOR * bayes + (h["bound"] or 0.0),
               "error_over_bayes": h["error_over_bayes"], "share": h["share"],
               "alpha": h["alpha"], "a": h["a"], "b": h["b"], "c": h["c"],
               "gap_bc": h["gap_bc"], "risk": h["risk"], "speed": h["speed"]}
    limit = reading["limit"]
    status = str(reading["status"])
    # the one rule for every flow (flow.reached_horizon), at the declared horizon t_max
    reached = reached_horizon(status, float(tr.t[-1]) if tr.t.size else None, t_max)
    test = point_verdict(horizon, limit["class"], bayes, reached)
    flow = {k: reading.get(k) for k in ("status", "t_max", "t_reached", "evaluations",
                                        "solver_steps", "records", "complete", "max_rel_bound",
                                        "rel_bound_rule", "max_bound", "solver")}
    flow.update(reached=bool(reached), seconds=float(seconds), cpu_seconds=float(cpu_seconds))
    return {"L": cfg.L, "C": cfg.C, "d": cfg.d, "D": cfg.D, "q": cfg.q, "kappa": cfg.kappa,
            "in_regime": in_regime(cfg.L, cfg.q), "bayes_error": bayes,
            "passed": test["passed"], "verdict": test, "limit_class": limit["class"],
            "limit": limit, "times": reading["times"], "horizon": horizon,
            "trend": _decade_trend(tr, bayes), "flow": flow, "status": status}


def _matches(rec: dict, cell: GridCell) -> bool:
    return (rec.get("L"), rec.get("C"), rec.get("d")) == (cell.L, cell.C, cell.d)


def run_grid(task: GridTask, cells: Sequence[GridCell], folder: str | Path, *,
             jobs: int = 1, dask=None, progress: bool = False,
             compute: Callable[[GridTask, GridCell], dict] = run_point) -> dict:
    """Compute the missing cells (stored as each finishes) and return every cell's record
    (:func:`patchassoc.simulations.runtime.cells.run_cells`).

    Returns
    -------
    dict
        ``cells`` (key -> record), ``computed`` and ``reused`` (keys), ``seconds`` (wall).
    """
    out = run_cells(task, cells, folder, compute, _matches, jobs=jobs, dask=dask,
                    progress=progress, desc="claim 1 grid")
    out["cells"] = out.pop("records")
    return out


# -- the summary -------------------------------------------------------------------------------
def _D(r: dict) -> int:
    return int(r.get("D") or r["L"] * r["C"])


def _key(r: dict) -> list:
    return [r["L"], r["C"], r["d"]]


def _class(r: dict) -> str:
    return r.get("limit_class") or (r.get("limit") or {}).get("class") or "n/a"


def _classes(records) -> dict:
    counts = {}
    for r in records:
        counts[_class(r)] = counts.get(_class(r), 0) + 1
    order = {c: i for i, c in enumerate(LIMIT_ORDER)}
    return dict(sorted(counts.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


def _flow_reached(r: dict) -> bool:
    """The one rule of the horizon (:func:`~patchassoc.simulations.engines.population.flow.reached_horizon`) on a point's flow, read from the
    record's status and times, whatever else the record says (True for a record without its
    flow, e.g. a budget-only reading)."""
    f = r.get("flow")
    return not f or reached_horizon(str(f.get("status")), f.get("t_reached"),
                                    f.get("t_max") or T_MAX)


def point_passed(r: dict) -> bool:
    """A point's record read by the horizon rule: its ``passed``, and its flow at its horizon
    (:func:`_flow_reached`): a flow that stopped early never passes."""
    return bool(r["passed"]) and _flow_reached(r)


def _kind(r: dict) -> str:
    """Why a point fails at the horizon: ``moving`` (not at its limit yet, cause (i)): class
    undecided, a flow that did not reach the horizon (a solver failure, a non-finite value, an
    interruption: class undetermined, censored), or class
    association (b - c still growing like ln t) with Def. 2.2 not yet in every row or error/Bayes
    still falling by more than ``FALLING`` over the last decade;
    ``converged`` (it reached a limit that fails, cause (ii)): class converged (a stationary
    end included), other sets or tie, or association with a horizon reading that fails and has
    stopped improving."""
    cls = _class(r)
    if cls in ("undecided", "undetermined", "n/a") or not _flow_reached(r):
        return "moving"  # a flow that stopped before the horizon has not reached it either
    if cls == "association":
        tr = r.get("trend") or {}
        e0, e1 = tr.get("error_over_bayes_from"), tr.get("error_over_bayes_to")
        falling = e0 is not None and e1 is not None and e0 > (1.0 + FALLING) * e1
        if falling or not (r.get("horizon") or {}).get("topc", True):
            return "moving"
    return "converged"


def _censored(records) -> dict:
    out = {}
    for crit in (*CRITERIA, "all"):
        rows = [(r.get("times") or {}).get(crit) for r in records]
        rows = [x for x in rows if x is not None]
        out[crit] = sum(bool(x.get("censored")) for x in rows) if rows else None
    return out


def _stats(values) -> dict | None:
    v = [float(x) for x in values if x is not None and math.isfinite(float(x))]
    if not v:
        return None
    return {"n": len(v), "median": float(np.median(v)), "min": min(v), "max": max(v)}


def _trend(records) -> dict:
    """The trend of points at the horizon: slope of b - c per ln t over the last decade, and
    error/Bayes and share a decade before the horizon and at it (medians and ranges)."""
    tr = [r.get("trend") or {} for r in records]
    return {"slope_bc": _stats((r.get("limit") or {}).get("slope_bc") for r in records),
            "error_over_bayes_from": _stats(x.get("error_over_bayes_from") for x in tr),
            "error_over_bayes_to": _stats(x.get("error_over_bayes_to") for x in tr),
            "share_from": _stats(x.get("share_from") for x in tr),
            "share_to": _stats(x.get("share_to") for x in tr)}


def _slim(r: dict | None) -> dict | None:
    if r is None:
        return None
    keep = ("L", "C", "d", "D", "q", "in_regime", "bayes_error", "passed", "verdict",
            "limit_class", "limit", "times", "horizon", "trend", "budget", "compare", "status")
    return {k: r[k] for k in keep if k in r}


def _budget(records, regime, ref) -> dict:
    """The 10,000-step reading over the same points (the old rule's numbers, not a verdict)."""
    have = [r for r in records if r.get("budget")]
    reg = [r for r in regime if r.get("budget")]
    k_reg = sum(bool(r["budget"]["passed"]) for r in reg)
    frac = k_reg / len(reg) if reg else None
    rb = (ref or {}).get("budget") or {}
    share = [r for r in have if r["budget"].get("associated_eps01")]
    max_steps = _common((r.get("compare") or {}).get("gd_budget") for r in have) or MAX_STEPS
    return {"max_steps": max_steps, "check_every": CHECK_EVERY, "n_points": len(have),
            "n_passed": sum(bool(r["budget"]["passed"]) for r in have),
            "n_regime": len(reg), "n_regime_passed": k_reg, "regime_fraction": frac,
            "reference_passed": (bool(rb["passed"]) if rb else None),
            "reference_steps": rb.get("steps"),
            "passed": bool(reg and frac >= PASS_FRACTION and rb.get("passed")),
            "fraction_share_ge_0_9": (len(share) / len(have)) if have else None,
            "regime_failures": [_key(r) for r in reg if not r["budget"]["passed"]],
            "median_steps": (float(np.median([r["budget"]["steps"] for r in have]))
                             if have else None)}


def grid_summary(records: Sequence[dict], reference: tuple = REFERENCE,
                 quick: bool = False, max_D: int = MAX_D) -> dict:
    """The claim-1 verdict at the horizon over the grid records, with the 10,000-step reading
    beside it (module notes).

    Only the points with D <= ``max_D`` (the declared grid) are counted; the others are
    summarized under ``extended``. Returns the horizon counts (all points, the regime's), the
    reference point's record, ``passed`` (what the numbers say), the limit classes (all, regime,
    failing regime points), the censored counts per criterion, the failing regime points split
    into ``moving`` (not at their limit: cause (i)) and ``converged`` (at a limit that fails:
    cause (ii)) with their trends, ``budget`` (the 10,000-step reading: the old rule's counts),
    ``extended``, the cost split into the GD reading and the flow, and ``preview`` (a reduced
    grid: the claim reads it as a preview, never a verdict).
    """
    # every point read by the one rule of the horizon, whatever its record says
    every = [dict(r, passed=point_passed(r)) for r in records]
    records = [r for r in every if _D(r) <= max_D]
    beyond = [r for r in every if _D(r) > max_D]
    regime = [r for r in records if r["in_regime"]]
    n_reg = len(regime)
    k_reg = sum(bool(r["passed"]) for r in regime)
    ref = next((r for r in records if (r["L"], r["C"], r["d"]) == tuple(reference)), None)
    frac = k_reg / n_reg if n_reg else None
    passed = bool(n_reg and frac >= PASS_FRACTION and ref is not None and ref["passed"])
    failing = [r for r in regime if not r["passed"]]
    moving = [r for r in failing if _kind(r) == "moving"]
    converged = [r for r in failing if _kind(r) == "converged"]
    share = [r for r in records if r.get("horizon", {}).get("share") is not None
             and r["horizon"].get("topc") and r["horizon"]["share"] >= SHARE_LEVEL]
    flows = [r.get("flow") or {} for r in every]
    budgets = [r.get("budget") or {} for r in every]
    extended = None
    if beyond:
        reg_b = [r for r in beyond if r["in_regime"]]
        extended = {"max_D": max(_D(r) for r in beyond), "n_points": len(beyond),
                    "n_passed": sum(bool(r["passed"]) for r in beyond),
                    "n_regime": len(reg_b), "n_regime_passed": sum(bool(r["passed"])
                                                                   for r in reg_b),
                    "classes": _classes(beyond), "censored": _censored(beyond),
                    "failures": [_key(r) for r in beyond if not r["passed"]],
                    "budget": _budget(beyond, reg_b, None)}
    return {"n_points": len(records), "n_passed": sum(bool(r["passed"]) for r in records),
            "n_regime": n_reg, "n_regime_passed": k_reg, "regime_fraction": frac,
            "reference": _slim(ref), "reference_key": list(reference),
            "reference_kind": (None if ref is None or ref["passed"] else _kind(ref)),
            "t_max": _common(r.get("flow", {}).get("t_max") for r in records) or T_MAX,
            "classes": _classes(records), "regime_classes": _classes(regime),
            "failing_classes": _classes(failing),
            "censored": _censored(records), "regime_censored": _censored(regime),
            "fraction_share_ge_0_9": (len(share) / len(records)) if records else None,
            "regime_failures": [_key(r) for r in failing],
            "moving": [_key(r) for r in moving], "converged": [_key(r) for r in converged],
            "moving_classes": _classes(moving), "converged_classes": _classes(converged),
            "moving_trend": _trend(moving), "converged_trend": _trend(converged),
            "converged_association": [_key(r) for r in converged
                                      if _class(r) == "association"],
            "outside_failures": [_key(r) for r in records
                                 if not r["in_regime"] and not r["passed"]],
            "flow_not_reached": [_key(r) for r in every if not _flow_reached(r)],
            "time_to_error": _stats(((r.get("times") or {}).get("error") or {}).get("time")
                                    for r in regime),
            "budget": _budget(records, regime, ref), "extended": extended,
            "protocol": PROTOCOL, "verdict_max_D": int(max_D), "pass_fraction": PASS_FRACTION,
            "max_steps": MAX_STEPS,
            "passed": passed, "preview": bool(quick),
            "cell_seconds": float(sum(r.get("seconds", 0.0) for r in every)),
            "cell_cpu_seconds": float(sum(r.get("cpu_seconds", 0.0) for r in every)),
            "gd_seconds": float(sum(b.get("seconds", 0.0) for b in budgets)),
            "gd_cpu_seconds": float(sum(b.get("cpu_seconds", 0.0) for b in budgets)),
            "flow_seconds": float(sum(f.get("seconds", 0.0) for f in flows)),
            "flow_cpu_seconds": float(sum(f.get("cpu_seconds", 0.0) for f in flows)),
            "flow_evaluations": int(sum(f.get("evaluations", 0) for f in flows)),
            "flow_max_rel_bound": max((f.get("max_rel_bound") or 0.0 for f in flows),
                                      default=None),
            "flow_incomplete": sum(1 for f in flows if f and not f.get("complete"))}


def _common(values):
    vals = {v for v in values if v is not None}
    return vals.pop() if len(vals) == 1 else None


def _points(keys) -> str:
    return ", ".join(str(tuple(x)) for x in keys)


def _counts(counts: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"


def _range(st: dict | None, spec: str = ".3g") -> str:
    if not st:
        return "n/a"
    if st["n"] == 1 or st["min"] == st["max"]:
        return format(st["median"], spec)
    return (f"{format(st['median'], spec)} (median; {format(st['min'], spec)} to "
            f"{format(st['max'], spec)})")


def grid_cause(grid: dict) -> tuple[str, str] | None:
    """The cause of a failing horizon verdict on the grid (module notes), ``(code, why)``:
    (ii) when the regime points that reached a failing limit fail the rule on their own (or the
    reference point is one of them), else (i) when points still moving at the horizon make it
    fail; ``None`` when the numbers pass, or fail for another reason (no regime point, no
    reference point). Cause (iii), a control that passes, is :func:`claim1`'s."""
    if grid.get("passed") or not grid.get("n_regime") or not grid.get("reference"):
        return None
    n_reg = grid["n_regime"]
    moving, converged = grid.get("moving") or [], grid.get("converged") or []
    ref_kind = grid.get("reference_kind")
    t_max = grid.get("t_max") or T_MAX
    ii_alone = (n_reg - len(converged)) / n_reg < PASS_FRACTION or ref_kind == "converged"
    ct = grid.get("converged_trend") or {}
    mt = grid.get("moving_trend") or {}
    conv_text = ""
    if converged:
        assoc = grid.get("converged_association") or []
        conv_text = (f"{len(converged)} failing regime point(s) reached a limit that fails at "
                     f"t = {t_max:.0e} (classes: "
                     + _counts(grid.get("converged_classes") or {})
                     + (f"; {len(assoc)} of them associate but fail the horizon reading"
                        if assoc else "")
                     + f"; error/Bayes at the horizon {_range(ct.get('error_over_bayes_to'))})")
    mov_text = ""
    if moving:
        mov_text = (f"{len(moving)} failing regime point(s) have not reached their limit by "
                    f"t = {t_max:.0e} (classes: {_counts(grid.get('moving_classes') or {})}): "
                    f"over the last decade b - c moved at "
                    f"{_range(mt.get('slope_bc'))} per ln t, error/Bayes went from "
                    f"{_range(mt.get('error_over_bayes_from'))} to "
                    f"{_range(mt.get('error_over_bayes_to'))}, share from "
                    f"{_range(mt.get('share_from'))} to {_range(mt.get('share_to'))}")
        stopped = [k for k in moving if k in (grid.get("flow_not_reached") or [])]
        if stopped:
            mov_text += (f"; {len(stopped)} of them because the flow stopped before the horizon "
                         f"(solver): {_points(stopped)}")
    if ii_alone and converged:
        why = conv_text + (" - enough on their own to fail the rule" if ref_kind != "converged"
                           else ", the reference point among them")
        return "ii", why + (f"; besides, {mov_text}" if mov_text else "")
    if moving:
        return "i", mov_text + (f"; {conv_text}, not enough on their own to fail the rule"
                                if conv_text else "")
    if converged:
        return "ii", conv_text
    return None


# -- claim 1 -----------------------------------------------------------------------------------
def claim1_point(pop: dict) -> dict:
    """The claim-1 test at one population run (a :meth:`~patchassoc.simulations.engines.population.trajectory.PopulationResult.summary`): Def. 2.2 in
    every row and error <= 1.3 x Bayes + the certified bound (``max_bound``)."""
    rows, D = pop.get("topc_rows"), pop.get("D")
    err, bayes = pop.get("error"), pop.get("bayes_error")
    if rows is None or err is None or not bayes:
        raise ValueError("the population summary has no Def. 2.2 rows / error / Bayes error")
    bound = float(pop.get("max_bound") or 0.0)
    ok = bool(rows == D and err <= BAYES_FACTOR * bayes + bound)
    return {"passed": ok, "topc_rows": rows, "D": D, "error": err, "bayes_error": bayes,
            "bound": bound, "error_over_bayes": err / bayes, "share": pop.get("share_min"),
            "steps": pop.get("steps")}


def _ref_text(ref: dict) -> str:
    if not ref:
        return "reference missing"
    h, tm = ref.get("horizon") or {}, ((ref.get("times") or {}).get("error") or {})
    t_err = ("censored" if tm.get("censored") else
             (f"{tm['time']:.3g} steps" if tm.get("time") is not None else "n/a"))
    return (f"reference {'passes' if ref.get('passed') else 'FAILS'} ({_class(ref)}, "
            f"error/Bayes {fmt(h.get('error_over_bayes'))}, share {fmt(h.get('share'))}, "
            f"time to 1.3 x Bayes {t_err})")


def _budget_text(b: dict) -> str:
    steps = f"{b.get('max_steps') or MAX_STEPS:,}"
    if not b or not b.get("n_regime"):
        return (f"the reading within {steps} GD steps not computed here (`patchassoc grid`, or "
                f"`patchassoc reproduce --budget-readings`)")
    frac = b.get("regime_fraction")
    ref = ("" if b.get("reference_passed") is None else
           f", reference {'passes' if b['reference_passed'] else 'fails'}"
           + (f" at step {b['reference_steps']}" if b["reference_passed"] else ""))
    pct = fmt(None if frac is None else 100 * frac, ".1f")
    return (f"within {steps} GD steps (a budget reading, not the verdict): regime "
            f"{b['n_regime_passed']}/{b['n_regime']} ({pct} %){ref}, all points "
            f"{b['n_passed']}/{b['n_points']}")


def claim1(grid: dict | None, structure: Structure | None = None, pop: dict | None = None,
           source: str = "claim 1 grid") -> dict:
    """Claim 1 from a grid summary (:func:`grid_summary`): the horizon verdict, the 10,000-step
    reading beside it, and the cause of a FAIL (:func:`grid_cause`; (iii) when a control
    passes).

    Without a grid, a single population run ``pop`` is reported as a preview (one point is not
    the grid). ``structure`` (the reference run's sets) scores the matrix controls.
    """
    controls = matrix_controls(structure, 0.1)
    if not grid:
        threshold = (f"Def. 2.2 in every row, error <= {BAYES_FACTOR:g} x Bayes + bound (one "
                     f"point; the claim is the grid)")
        if pop is None:
            return not_run("1", "no claim-1 grid (run `patchassoc grid`)", source, threshold,
                           claim=CLAIM)
        pt = claim1_point(pop)
        rec = record("1", f"one point only (the reference run): Def. 2.2 {pt['topc_rows']}/"
                          f"{pt['D']} rows, error/Bayes {pt['error_over_bayes']:.3f}, share "
                          f"{fmt(pt['share'])}", threshold, pt["passed"], source,
                     values={"point": pt, "controls": controls}, claim=CLAIM)
        return as_preview(rec, "one point, not the grid")
    t_max = grid.get("t_max") or T_MAX
    threshold = (f">= {100 * PASS_FRACTION:g} % of the points with q <= {REGIME_Q:g}, L >= "
                 f"{REGIME_L} pass at the horizon t = {t_max:.0e} steps (gradient flow: Def. 2.2 "
                 f"in every row, error <= {BAYES_FACTOR:g} x Bayes + bound, limit class "
                 f"association) and the reference point passes; controls fail")
    frac = grid.get("regime_fraction")
    ref = grid.get("reference") or {}
    ok_controls = controls_ok(controls)
    passed = bool(grid.get("passed")) and ok_controls
    cens = grid.get("regime_censored") or {}
    measured = (f"at the horizon t = {t_max:.0e}: regime {grid['n_regime_passed']}/"
                f"{grid['n_regime']} pass ({fmt(None if frac is None else 100 * frac, '.1f')} %)"
                f"; {_ref_text(ref)}; limit classes (regime): "
                f"{_counts(grid.get('regime_classes') or {})}"
                + (f"; censored at the horizon (regime): error {cens.get('error')}, Def. 2.2 "
                   f"{cens.get('def22')}" if cens.get("error") is not None else "")
                + f"; all points {grid['n_passed']}/{grid['n_points']}; "
                + _budget_text(grid.get("budget") or {})
                + (f"; {controls_text(controls)}" if controls else ""))
    detail = ""
    if grid.get("regime_failures"):
        detail = "failing regime points at the horizon (L, C, d): " + _points(
            grid["regime_failures"])
    if grid.get("flow_not_reached"):
        detail += ("; " if detail else "") + (
            "flows that stopped before the horizon (solver; the point fails): "
            + _points(grid["flow_not_reached"]))
    ext = grid.get("extended")
    if ext:
        detail += ("; " if detail else "") + (
            f"beyond the declared grid (32 < D <= {ext['max_D']}, reported, not counted): "
            f"{ext['n_passed']}/{ext['n_points']} pass")
    rec = record("1", measured, threshold, passed, source, detail=detail,
                 values={"grid": {k: v for k, v in grid.items() if k != "points"},
                         "controls": controls}, claim=CLAIM)
    if not ok_controls:
        rec = with_cause(rec, "iii", controls_text(controls))
    else:
        cause = grid_cause(grid)
        if cause is not None:
            rec = with_cause(rec, *cause)
    return as_preview(rec, "reduced grid (--quick)") if grid.get("preview") else rec


# -- the run -----------------------------------------------------------------------------------
def compute(out: Path, *, ds=None, max_D=None, quick: bool = False, seed: int = 0,
            base: str = "ref", jobs: int = 1, dask=None, progress: bool = False,
            max_steps: int | None = None, t_max: float | None = None,
            budget_max_D: int = MAX_D, budget: bool = True) -> dict:
    """Run (or resume) the grid into ``out`` and return its JSON-ready summary (``points``: the
    records of every point, which the map is drawn from; also saved in ``grid.json``).

    ``max_D`` up to ``EXTENDED_MAX_D`` adds points beyond the declared grid (reported, not
    counted), read by the flow alone unless ``budget_max_D`` reaches them too; a smaller grid,
    other ``ds``, another step budget or another horizon is a preview. ``budget=False`` skips
    the GD reading within the step budget at every point (it decides nothing; SPEC section 6:
    opt-in in ``reproduce``)."""
    out = Path(out)
    ds = tuple(ds) if ds else (QUICK_DS if quick else DS)
    max_D = max_D or (QUICK_MAX_D if quick else MAX_D)
    if max_D > EXTENDED_MAX_D:
        raise ValueError(f"--max-D must be <= {EXTENDED_MAX_D} (the grid is declared up to "
                         f"D = {EXTENDED_MAX_D})")
    max_steps = MAX_STEPS if max_steps is None else int(max_steps)
    if max_steps < 1:
        raise ValueError("--max-steps must be >= 1")
    t_max = T_MAX if t_max is None else float(t_max)
    if not (math.isfinite(t_max) and t_max > 1):
        raise ValueError("--t-max must be a finite number of steps > 1")
    reduced = (quick or tuple(sorted(ds)) != tuple(sorted(DS)) or max_D < MAX_D
               or max_steps != MAX_STEPS or t_max != T_MAX)
    cells = grid_cells(ds, max_D)
    if int(budget_max_D) != budget_max_D or budget_max_D < MAX_D:
        raise ValueError(f"--budget-max-D must be an integer >= {MAX_D} (every point of the "
                         f"declared grid keeps its GD reading)")
    if not budget:
        budget_max_D = 0
    task = GridTask(base=base, seed=int(seed), max_steps=max_steps, t_max=t_max,
                    budget_max_D=int(budget_max_D))
    res = run_grid(task, cells, out / "cells", jobs=jobs, dask=dask, progress=progress)
    records = list(res["cells"].values())
    summary = grid_summary(records, quick=reduced, max_D=min(max_D, MAX_D))
    summary.update(quick=bool(quick), reduced=bool(reduced), ds=list(ds), max_D=int(max_D),
                   seed=int(seed), base=base, protocol=PROTOCOL, wall_seconds=res["seconds"],
                   computed=len(res["computed"]), reused=len(res["reused"]),
                   points=records, out=str(out), figures=[])
    write_summary(out / "grid.json", summary)
    return summary


def reproduce(out_dir: Path, config, seed: int, quick: bool, progress: bool,
              budget_readings: bool = False) -> Outcome:
    """Reproduction step: the grid (quick: the reduced preview grid) with 2 local processes;
    the GD reading within the step budget only with ``budget_readings``."""
    summary = compute(out_dir, quick=quick, seed=seed, jobs=min(2, default_jobs()),
                      progress=progress, budget=budget_readings)
    records = summary.pop("points", None)  # the points stay in grid.json and cells/
    return Outcome(summary, {"points": records}, saved=Path(out_dir) / "grid.json")


def verdict(root: Path) -> dict:
    """Claim 1 from a reproduction folder: ``grid/grid.json``; without it, the population
    step's single point (a preview)."""
    grid_path = root / "grid" / "grid.json"
    grid = read_verified(grid_path) if grid_path.exists() else None
    if grid is not None and grid.get("protocol") != PROTOCOL:
        # a grid of another protocol (the step budget's) is not read as the horizon verdict
        return not_run("1", f"{grid_path} holds a grid of protocol "
                            f"{grid.get('protocol') or 'claim1-grid-1'}, not {PROTOCOL}: run "
                            f"`patchassoc grid` (its cells are recomputed)", str(grid_path.parent),
                       claim=CLAIM)
    pop = step_summary(root / "population")
    return claim1(grid, reference_structure(root), pop,
                  source=str(grid_path.parent if grid else root / "population"))


def readings(s: dict) -> dict[str, str]:
    """The report's reading of the grid map, every sentence decided by the summary's numbers."""
    frac = s.get("regime_fraction")
    ref = s.get("reference") or {}
    t_max = s.get("t_max") or T_MAX
    if s.get("preview"):
        verdict = "this is a reduced grid, so it is a preview and decides nothing"
    elif s.get("passed"):
        verdict = "so claim 1 passes on the grid at the horizon"
    else:
        verdict = "so claim 1 FAILS on the grid at the horizon"
    cause = grid_cause(s)
    cause_text = ""
    if cause is not None and not s.get("passed"):
        cause_text = (f" {'Were it a verdict, its' if s.get('preview') else 'Its'} cause is "
                      f"({cause[0]}) {CAUSES[cause[0]]}: {cause[1]}.")
    regime_fail = s.get("regime_failures") or []
    outside = s.get("outside_failures") or []
    cens = s.get("censored") or {}
    b = s.get("budget") or {}
    bfrac = b.get("regime_fraction")
    tte = s.get("time_to_error")
    ext = s.get("extended")
    text = (
        f"Claim 1 on {s.get('n_points')} points (L, C >= 2, D = L C <= "
        f"{s.get('verdict_max_D', s.get('max_D'))}, d in {s.get('ds')}), each at its own "
        f"reference scalings (q = min(1, ln d / D)) with the diagonal fixed, read at the horizon "
        f"t = {t_max:.0e} GD steps of the exact gradient flow (the small-step limit of population "
        f"GD): a point passes when Def. 2.2 holds in every row and the error is <= 1.3 x Bayes + "
        f"the certified bound at the horizon and the flow's limit class is association. "
        f"{s.get('n_passed')} points pass. In the paper's regime (q <= 0.5, L >= 3; outlined) "
        f"{s.get('n_regime_passed')} of {s.get('n_regime')} pass"
        + (f" ({100 * frac:.1f} %, the claim needs >= 90 %)" if frac is not None else "")
        + f" and the {_ref_text(ref)}, {verdict}."
        + f" Limit classes over the grid: {_counts(s.get('classes') or {})}; in the regime: "
          f"{_counts(s.get('regime_classes') or {})}."
        + cause_text
        + (f" Failing regime points (L, C, d): {_points(regime_fail)}." if regime_fail else "")
        + (f" The flow stopped before the horizon (a solver failure; the point fails) at "
           f"{_points(s['flow_not_reached'])}." if s.get("flow_not_reached") else "")
        + (f" Outside the regime {len(outside)} points fail (drawn with a cross)." if outside
           else " Every point outside the regime passes too.")
        + (f" The colour is log10 of the flow's time to error <= 1.3 x Bayes + bound (the time "
           f"after which it holds for good), in GD steps: in the regime it is "
           f"{_range(tte, '.3g')} steps" if tte else " The colour is log10 of the flow's time "
           "to error <= 1.3 x Bayes + bound")
        + (f"; {cens.get('error')} points are censored (the error is above 1.3 x Bayes at the "
           f"horizon; hatched grey)." if cens.get("error") else "; no point is censored.")
        + (f" Beside the verdict, the {b.get('max_steps') or MAX_STEPS:,}-step reading "
           f"(population GD stopped at the first "
           f"check, every 50 steps, where Def. 2.2 and the error criterion hold; a reading within "
           f"a fixed budget, not the verdict; lower row): {b.get('n_passed')} of "
           f"{b.get('n_points')} points, and {b.get('n_regime_passed')} of {b.get('n_regime')} in "
           f"the regime" + (f" ({100 * bfrac:.1f} %)" if bfrac is not None else "")
           + (f", the reference point at step {b.get('reference_steps')}"
              if b.get("reference_passed") else ", not the reference point")
           + f"; the budget's rule would {'pass' if b.get('passed') else 'fail'}."
           if b.get("n_points") else "")
        + (f" Beyond the declared grid (32 < D <= {ext['max_D']}; reported, not counted) "
           f"{ext['n_passed']} of {ext['n_points']} points pass, limit classes "
           f"{_counts(ext['classes'])}." if ext else ""))
    return {"claim1_grid": text}


STUDY = Study(
    name="grid", claim="1", verdict=verdict, readings=readings,
    what="claim 1 on the (L, C, d) grid: the gradient flow to its horizon with the diagonal "
         "fixed (and, with --budget-readings, 10,000 GD steps), map",
    run=reproduce, cost=120, kernels=("exact",), figures=("claim1_grid",),
    version=f"{PROTOCOL}/{FLOW_VERSION}", options=("budget_readings",))
