"""Claim 1's cells: each grid point's flow to the horizon, read by the horizon rule, beside the
GD reading within the step budget; resumable.

References
----------
SPEC section 6, claim 1.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from patchassoc.simulations.engines.criteria import time_to
from patchassoc.simulations.engines.population.flow import FLOW_VERSION, T_MAX, run_flow
from patchassoc.simulations.engines.population.trajectory import initial_point, population_descent
from patchassoc.simulations.runtime.cells import fingerprint, run_cells
from patchassoc.simulations.runtime.errors import raise_if_interrupted
from patchassoc.simulations.studies.common.horizon_rule import (
    BAYES_FACTOR,
    CHECK_EVERY,
    MAX_D,
    MAX_STEPS,
    PROTOCOL,
    SHARE_LEVEL,
    GridCell,
    horizon_record,
    in_regime,
)
from patchassoc.theory.association import invariant_association
from patchassoc.theory.bayes import bayes_error
from patchassoc.theory.config import Config, preset


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


def cell_config(task: GridTask, cell: GridCell) -> Config:
    """The point's configuration: the base preset at (L, C, d) with its own reference scalings
    (q = min(1, ln d / D), sigma, kappa) and the diagonal fixed."""
    return preset(task.base, L=cell.L, C=cell.C, d=cell.d, diagonal="fixed")


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
        ``passed`` (the horizon test, :func:`~patchassoc.simulations.studies.common.horizon_rule.point_verdict`) and ``verdict`` (its conditions);
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
