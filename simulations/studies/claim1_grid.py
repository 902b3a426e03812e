"""Claim 1 (Theorem 4.1, idealized) on a grid of problem sizes, not on one point.

The grid (SPEC section 6, claim 1): every (L, C) with L, C >= 2 and D = L C <= 32, times
d in {64, 256, 1024, 4096}; each point uses the reference rules of SPEC sections 1-2 at its own
sizes (q = min(1, ln d / D), kappa = ln ln d, eta_v = 0.1, eta_Q = 50, the seed's alpha0) with
the diagonal fixed (the paper's Simplification 3.1), and runs exact population gradient descent
(:func:`patchassoc.simulations.engines.population.trajectory.population_descent`).

A point passes when, within ``MAX_STEPS`` = 10,000 steps, both hold at once:

- Def. 2.2 in every row (closed form for invariant logits: a > c and b > c, ties fail;
  :func:`patchassoc.theory.association.invariant_association`);
- population error <= 1.3 x Bayes + the certified bound of the evaluation (0 here: every point
  of the grid is enumerated completely).

The run stops at the first check where both hold; checks happen every ``CHECK_EVERY`` steps (the
reported step is that check's). The set-mate share at the stopping step is reported, and the
fraction of points with share >= 0.9 (association at eps = 0.1) beside the verdict.

Verdict: on the points of the paper's regime (sparse feature noise and several sets: q <= 0.5
and L >= 3), the claim passes when >= 90 % of them pass and the reference point (L, C, d) =
(4, 4, 256) passes. Points outside the regime are run and drawn too.

Cells are independent and resumable: each finished point is stored as
``<folder>/L<L>-C<C>-d<d>.json`` (atomic write) with the grid's fingerprint, and a re-run
computes only the missing ones, on ``jobs`` local processes or a Dask scheduler
(:mod:`patchassoc.simulations.runtime.executor`).

References
----------
SPEC section 6 (claim 1), section 3 (Def. 2.2, share), section 5 (exact population risk).
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
from patchassoc.simulations.engines.population.trajectory import initial_point, population_descent
from patchassoc.simulations.runtime.cells import fingerprint, run_cells
from patchassoc.simulations.runtime.executor import default_jobs
from patchassoc.simulations.runtime.results import read_json, write_json
from patchassoc.simulations.studies.study import Outcome, Study
from patchassoc.simulations.studies.verdicts import (as_preview, controls_ok, controls_text, fmt,
                                                     matrix_controls, not_run, record,
                                                     reference_structure, step_summary)

__all__ = ["GridCell", "GridTask", "PROTOCOL", "MAX_STEPS", "CHECK_EVERY", "DS", "QUICK_DS",
           "MAX_D", "QUICK_MAX_D", "BAYES_FACTOR", "REGIME_Q", "REGIME_L", "PASS_FRACTION", "SHARE_LEVEL",
           "REFERENCE", "grid_cells", "cell_config", "run_cell", "run_grid", "grid_summary",
           "in_regime", "CLAIM", "claim1", "claim1_point", "compute", "reproduce", "verdict",
           "readings", "STUDY"]

#: The claim (SPEC section 6, item 1), as the claims table states it.
CLAIM = "population GD (diagonal fixed) associates (Def. 2.2) with error near Bayes, on a grid"
#: Version of the cell computation: stored cells of another version are recomputed.
PROTOCOL = "claim1-grid-1"
#: SPEC section 6, claim 1.
MAX_STEPS = 10_000
DS = (64, 256, 1024, 4096)
MAX_D = 32
BAYES_FACTOR = 1.3
REGIME_Q = 0.5
REGIME_L = 3
PASS_FRACTION = 0.9
#: Reported beside the verdict: the fraction of points associated at eps = 0.1.
SHARE_LEVEL = 0.9
REFERENCE = (4, 4, 256)
#: Steps between two checks of the stopping rule.
CHECK_EVERY = 50
#: The quick grid (``reproduce --quick``): a preview on fewer d, never a verdict.
QUICK_DS = (256,)
QUICK_MAX_D = 16


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
    """What every cell shares (picklable): the base preset, seed, step budget and check period."""

    base: str = "ref"
    seed: int = 0
    max_steps: int = MAX_STEPS
    check_every: int = CHECK_EVERY

    def fingerprint(self) -> str:
        return fingerprint({"protocol": PROTOCOL, **asdict(self)})


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
    """Population GD at one point until both conditions hold or the budget is spent.

    Returns a JSON-ready record: ``passed``, ``steps`` (the check at which it stopped),
    ``topc``, ``error``, ``bayes_error``, ``bound``, ``error_over_bayes``, ``share``,
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


def _matches(rec: dict, cell: GridCell) -> bool:
    return (rec.get("L"), rec.get("C"), rec.get("d")) == (cell.L, cell.C, cell.d)


def run_grid(task: GridTask, cells: Sequence[GridCell], folder: str | Path, *,
             jobs: int = 1, dask=None, progress: bool = False,
             compute: Callable[[GridTask, GridCell], dict] = run_cell) -> dict:
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


def grid_summary(records: Sequence[dict], reference: tuple = REFERENCE,
                 quick: bool = False) -> dict:
    """The claim-1 verdict over the grid records (module notes).

    Returns the counts and fractions (all points, the regime's), the reference point's record,
    the fraction associated at eps = 0.1, ``passed`` (what the numbers say) and ``preview``
    (a reduced grid: the claim reads it as a preview, never a verdict).
    """
    records = list(records)
    regime = [r for r in records if r["in_regime"]]
    n_reg = len(regime)
    k_reg = sum(bool(r["passed"]) for r in regime)
    ref = next((r for r in records if (r["L"], r["C"], r["d"]) == tuple(reference)), None)
    frac = k_reg / n_reg if n_reg else None
    passed = bool(n_reg and frac >= PASS_FRACTION and ref is not None and ref["passed"])
    share = [r for r in records if r.get("associated_eps01")]
    return {"n_points": len(records), "n_passed": sum(bool(r["passed"]) for r in records),
            "n_regime": n_reg, "n_regime_passed": k_reg, "regime_fraction": frac,
            "reference": ref, "reference_key": list(reference),
            "fraction_share_ge_0_9": (len(share) / len(records)) if records else None,
            "regime_failures": [[r["L"], r["C"], r["d"]] for r in regime if not r["passed"]],
            "outside_failures": [[r["L"], r["C"], r["d"]] for r in records
                                 if not r["in_regime"] and not r["passed"]],
            "max_steps": MAX_STEPS, "pass_fraction": PASS_FRACTION,
            "passed": passed, "preview": bool(quick),
            "cell_seconds": float(sum(r.get("seconds", 0.0) for r in records)),
            "cell_cpu_seconds": float(sum(r.get("cpu_seconds", 0.0) for r in records)),
            "median_steps": float(np.median([r["steps"] for r in records])) if records else None}


# -- the claim ---------------------------------------------------------------------------------
# -- claim 1 -----------------------------------------------------------------------------------
def claim1_point(pop: dict) -> dict:
    """The claim-1 test at one population run (a :meth:`PopulationResult.summary`): Def. 2.2 in
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


def claim1(grid: dict | None, structure: Structure | None = None, pop: dict | None = None,
           source: str = "claim 1 grid") -> dict:
    """Claim 1 from a grid summary (:func:`grid_summary`).

    Without a grid, a single population run ``pop`` is reported as a preview (one point is not
    the grid). ``structure`` (the reference run's sets) scores the matrix controls.
    """
    controls = matrix_controls(structure, 0.1)
    threshold = (f">= {100 * PASS_FRACTION:g} % of the points with q <= {REGIME_Q:g}, L >= "
                 f"{REGIME_L} pass (Def. 2.2 in every row, error <= {BAYES_FACTOR:g} x "
                 f"Bayes + bound, <= 10,000 steps) and the reference point passes; controls "
                 f"fail")
    if not grid:
        if pop is None:
            return not_run("1", "no claim-1 grid (run `patchassoc grid`)", source, threshold,
                           claim=CLAIM)
        pt = claim1_point(pop)
        rec = record("1", f"one point only (the reference run): Def. 2.2 {pt['topc_rows']}/"
                          f"{pt['D']} rows, error/Bayes {pt['error_over_bayes']:.3f}, share "
                          f"{fmt(pt['share'])}", threshold, pt["passed"], source,
                     values={"point": pt, "controls": controls}, claim=CLAIM)
        return as_preview(rec, "one point, not the grid")
    frac = grid.get("regime_fraction")
    ref = grid.get("reference") or {}
    passed = bool(grid.get("passed")) and controls_ok(controls)
    measured = (f"regime: {grid['n_regime_passed']}/{grid['n_regime']} pass "
                f"({fmt(None if frac is None else 100 * frac, '.1f')} %); reference "
                + ("missing" if not ref else
                   f"{'passes' if ref.get('passed') else 'FAILS'} (step {ref.get('steps')}, "
                   f"share {fmt(ref.get('share'))})")
                + f"; all points {grid['n_passed']}/{grid['n_points']}; share >= 0.9 at the "
                f"stop: {fmt(100 * (grid.get('fraction_share_ge_0_9') or 0), '.1f')} %"
                + (f"; {controls_text(controls)}" if controls else ""))
    detail = ""
    if grid.get("regime_failures"):
        detail = "failing regime points (L, C, d): " + ", ".join(
            str(tuple(x)) for x in grid["regime_failures"])
    rec = record("1", measured, threshold, passed, source, detail=detail,
                 values={"grid": {k: v for k, v in grid.items() if k != "points"},
                         "controls": controls}, claim=CLAIM)
    return as_preview(rec, "reduced grid (--quick)") if grid.get("preview") else rec


# -- the run -----------------------------------------------------------------------------------
def compute(out: Path, *, ds=None, max_D=None, quick: bool = False, seed: int = 0,
            base: str = "ref", jobs: int = 1, dask=None,
            progress: bool = False, max_steps: int | None = None) -> dict:
    """Run (or resume) the grid into ``out`` and return its JSON-ready summary (``points``: the
    records of every point, which the map is drawn from; also saved in ``grid.json``)."""
    out = Path(out)
    ds = tuple(ds) if ds else (QUICK_DS if quick else DS)
    max_D = max_D or (QUICK_MAX_D if quick else MAX_D)
    max_steps = MAX_STEPS if max_steps is None else int(max_steps)
    if max_steps < 1:
        raise ValueError("--max-steps must be >= 1")
    reduced = (quick or tuple(sorted(ds)) != tuple(sorted(DS)) or max_D < MAX_D
               or max_steps != MAX_STEPS)
    cells = grid_cells(ds, max_D)
    task = GridTask(base=base, seed=int(seed), max_steps=max_steps)
    res = run_grid(task, cells, out / "cells", jobs=jobs, dask=dask, progress=progress)
    records = list(res["cells"].values())
    summary = grid_summary(records, quick=reduced)
    summary.update(quick=bool(quick), reduced=bool(reduced), ds=list(ds), max_D=int(max_D),
                   seed=int(seed), base=base, wall_seconds=res["seconds"],
                   computed=len(res["computed"]), reused=len(res["reused"]),
                   points=records, out=str(out), figures=[])
    write_json(out / "grid.json", summary)
    return summary


def reproduce(out_dir: Path, config, seed: int, quick: bool, progress: bool) -> Outcome:
    """Reproduction step: the grid (quick: the reduced preview grid) with 2 local processes."""
    summary = compute(out_dir, quick=quick, seed=seed, jobs=min(2, default_jobs()),
                      progress=progress)
    records = summary.pop("points", None)  # the points stay in grid.json and cells/
    return Outcome(summary, {"points": records}, saved=Path(out_dir) / "grid.json")


def verdict(root: Path) -> dict:
    """Claim 1 from a reproduction folder: ``grid/grid.json``; without it, the population
    step's single point (a preview)."""
    grid_path = root / "grid" / "grid.json"
    grid = read_json(grid_path) if grid_path.exists() else None
    pop = step_summary(root / "population")
    return claim1(grid, reference_structure(root), pop,
                  source=str(grid_path.parent if grid else root / "population"))


def readings(s: dict) -> dict[str, str]:
    """The report's reading of the grid map, every sentence decided by the summary's numbers."""
    frac = s.get("regime_fraction")
    ref = s.get("reference") or {}
    if s.get("preview"):
        verdict = "this is a reduced grid, so it is a preview and decides nothing"
    elif s.get("passed"):
        verdict = "so claim 1 passes on the grid"
    else:
        verdict = "so claim 1 FAILS on the grid"
    ref_text = ("the reference point (4, 4, 256) is not in this grid" if not ref else
                f"the reference point (4, 4, 256) {'passes' if ref.get('passed') else 'fails'} "
                f"(stopped at step {ref.get('steps')}, share {ref.get('share', float('nan')):.3f},"
                f" error/Bayes {ref.get('error_over_bayes') or float('nan'):.3f})")
    outside = s.get("outside_failures") or []
    regime_fail = s.get("regime_failures") or []
    return {"claim1_grid": (
        f"Claim 1 on {s.get('n_points')} points (L, C >= 2, D = L C <= {s.get('max_D')}, d in "
        f"{s.get('ds')}), each run by exact population GD with the diagonal fixed at its own "
        f"reference scalings (q = min(1, ln d / D)) and stopped once Def. 2.2 holds in every row "
        f"and the error is <= 1.3 x Bayes + the certified bound (at most 10,000 steps; checked "
        f"every 50). {s.get('n_passed')} points pass. In the paper's regime (q <= 0.5, L >= 3; "
        f"outlined) {s.get('n_regime_passed')} of {s.get('n_regime')} pass"
        + (f" ({100 * frac:.1f} %, the claim needs >= 90 %)" if frac is not None else "")
        + f" and {ref_text}, {verdict}."
        + (f" Failing regime points (L, C, d): {', '.join(str(tuple(x)) for x in regime_fail)}."
           if regime_fail else "")
        + (f" Outside the regime {len(outside)} points fail (drawn as crosses)." if outside
           else " Every point outside the regime passes too.")
        + f" The colour is the set-mate share at the stopping step: "
          f"{100 * (s.get('fraction_share_ge_0_9') or 0):.1f} % of the points reach 0.9 "
          f"(association at eps = 0.1) when they stop; a point that stops early stops as soon as "
          f"both conditions hold, not when the share has converged.")}


STUDY = Study(
    name="grid", claim="1", verdict=verdict, readings=readings,
    what="claim 1 on the (L, C, d) grid: population GD with the diagonal fixed, map",
    run=reproduce, cost=520, kernels=("exact",), figures=("claim1_grid",))
