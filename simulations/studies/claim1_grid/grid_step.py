"""Claim 1's run (:func:`~patchassoc.simulations.studies.claim1_grid.grid_step.compute`), its
reproduction step and the report's readings.

References
----------
SPEC section 6, claim 1.
"""
from __future__ import annotations

import math
from pathlib import Path

from patchassoc.simulations.engines.population.flow import FLOW_VERSION, T_MAX
from patchassoc.simulations.engines.population.trajectory import run_population
from patchassoc.simulations.runtime.executor import default_jobs
from patchassoc.simulations.runtime.verified import write_summary
from patchassoc.simulations.studies.claim1_grid.grid_points import GridTask, run_grid
from patchassoc.simulations.studies.claim1_grid.grid_verdict import CLAIM, _ref_text, claim1, verdict
from patchassoc.simulations.studies.common.horizon_rule import (
    DS,
    EXTENDED_MAX_D,
    MAX_D,
    MAX_STEPS,
    PROTOCOL,
    QUICK_DS,
    QUICK_MAX_D,
    _counts,
    _points,
    _range,
    grid_cause,
    grid_cells,
    grid_summary,
)
from patchassoc.simulations.studies.study import LiveContext, Outcome, Study
from patchassoc.simulations.studies.verdicts import CAUSES


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
        raise ValueError(f"--max-patches must be <= {EXTENDED_MAX_D} (the grid is declared up "
                         f"to D = {EXTENDED_MAX_D})")
    max_steps = MAX_STEPS if max_steps is None else int(max_steps)
    if max_steps < 1:
        raise ValueError("--steps must be >= 1")
    t_max = T_MAX if t_max is None else float(t_max)
    if not (math.isfinite(t_max) and t_max > 1):
        raise ValueError("--t-max must be a finite number of steps > 1")
    reduced = (quick or tuple(sorted(ds)) != tuple(sorted(DS)) or max_D < MAX_D
               or max_steps != MAX_STEPS or t_max != T_MAX)
    cells = grid_cells(ds, max_D)
    if int(budget_max_D) != budget_max_D or budget_max_D < MAX_D:
        raise ValueError(f"--budget-max-patches must be an integer >= {MAX_D} (every point of "
                         f"the declared grid keeps its GD reading)")
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


def live(ctx: LiveContext) -> dict:
    """Claim 1 now, at the reference point only: population GD for 3000 steps (a preview; the
    claim is the grid's, ``patchassoc grid``). The run is shared with claim 2's live check."""
    ctx.say("[check] claim 1: population GD at the reference point (the grid: `patchassoc grid`)")
    pop = ctx.cached("population", lambda: run_population(ctx.config, ctx.seed, steps=3000))
    return claim1(None, pop.structure, pop.summary(), source="population GD now (3000 steps)")


STUDY = Study(
    name="grid", claim="1", verdict=verdict, readings=readings,
    what="claim 1 on the (L, C, d) grid: the gradient flow to its horizon with the diagonal "
         "fixed (and, with --budget-readings, 10,000 GD steps), map",
    run=reproduce, cost=120, kernels=("exact",), figures=("claim1_grid",),
    version=f"{PROTOCOL}/{FLOW_VERSION}", options=("budget_readings",), statement=CLAIM,
    live=live)
