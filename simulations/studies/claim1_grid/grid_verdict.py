"""Claim 1's record: the horizon verdict on the grid, the budget reading beside it, the cause of
a FAIL, the controls.

References
----------
SPEC section 6, claim 1.
"""
from __future__ import annotations

from pathlib import Path

from patchassoc.simulations.engines.population.flow import T_MAX
from patchassoc.simulations.runtime.verified import read_verified
from patchassoc.simulations.studies.common.horizon_rule import (
    BAYES_FACTOR,
    MAX_STEPS,
    PASS_FRACTION,
    PROTOCOL,
    REGIME_L,
    REGIME_Q,
    _class,
    _counts,
    _points,
    grid_cause,
)
from patchassoc.simulations.studies.verdicts import (
    as_preview,
    controls_ok,
    controls_text,
    fmt,
    matrix_controls,
    not_run,
    record,
    reference_structure,
    step_summary,
    with_cause,
)
from patchassoc.theory.structure import Structure

#: The claim (SPEC section 6, item 1), as the claims table states it.
CLAIM = ("population dynamics (diagonal fixed) associate (Def. 2.2) with error near Bayes, on a "
         "grid, read at the horizon")


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
    """Claim 1 from a grid summary (:func:`~patchassoc.simulations.studies.common.horizon_rule.grid_summary`): the horizon verdict, the 10,000-step
    reading beside it, and the cause of a FAIL (:func:`~patchassoc.simulations.studies.common.horizon_rule.grid_cause`; (iii) when a control
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
