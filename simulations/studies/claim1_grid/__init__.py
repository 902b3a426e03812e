"""Claim 1 (Theorem 4.1, idealized) on a grid of problem sizes, read at a declared horizon.

The grid (SPEC section 6, claim 1): every (L, C) with L, C >= 2 and D = L C <= 32, times
d in {64, 256, 1024, 4096}; each point uses the reference rules of SPEC sections 1-2 at its own
sizes (q = min(1, ln d / D), kappa = ln ln d, eta_v = 0.1, eta_Q = 50, the seed's alpha0) with
the diagonal fixed (the paper's Simplification 3.1).

Each point (:func:`~.grid_points.run_point`) is read twice from the same start (same configuration, same seed):

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
  population gradient descent (:func:`~.grid_points.run_cell`, unchanged from the step-budget protocol),
  stopped at the first check (every ``CHECK_EVERY`` steps) where Def. 2.2 holds in every row and
  error <= 1.3 x Bayes + bound, or after ``MAX_STEPS`` steps. Beside it the flow's time to the
  same two conditions (the first recorded time where both hold, and the time after which they
  hold for good), so the steps GD needed and the flow's time can be compared.

Verdict (the rule unchanged, read at the horizon): on the points of the paper's regime (sparse
feature noise and several sets: q <= 0.5 and L >= 3), the claim passes when >= 90 % of them pass
and the reference point (L, C, d) = (4, 4, 256) passes; the matrix controls must fail
association. Points outside the regime are run and drawn too.
``patchassoc grid --max-patches 48`` adds the points with 32 < D <= 48, read by the flow alone
(``--budget-max-patches`` adds the GD reading, which costs many times the flow there): they are
reported beside the verdict, never counted in it.

A failing claim names its cause (:func:`~patchassoc.simulations.studies.common.horizon_rule.grid_cause`, SPEC section 6): (iii) a control passes;
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

from patchassoc.simulations.engines.population.flow import T_MAX  # noqa: F401

from patchassoc.simulations.studies.claim1_grid.grid_points import (  # noqa: F401
    GridTask,
    cell_config,
    run_cell,
    run_grid,
    run_point,
)
from patchassoc.simulations.studies.claim1_grid.grid_verdict import CLAIM, claim1, claim1_point, verdict  # noqa: F401
from patchassoc.simulations.studies.claim1_grid.grid_step import STUDY, compute, readings, reproduce  # noqa: F401
from patchassoc.simulations.studies.common.horizon_rule import (  # noqa: F401
    BAYES_FACTOR,
    CHECK_EVERY,
    DS,
    EXTENDED_MAX_D,
    FALLING,
    LIMIT_ORDER,
    MAX_D,
    MAX_STEPS,
    PASS_FRACTION,
    PROTOCOL,
    QUICK_DS,
    QUICK_MAX_D,
    REFERENCE,
    REGIME_L,
    REGIME_Q,
    SHARE_LEVEL,
    GridCell,
    _kind,
    grid_cause,
    grid_cells,
    grid_summary,
    horizon_record,
    in_regime,
    point_passed,
    point_verdict,
)

__all__ = ["GridCell", "GridTask", "PROTOCOL", "MAX_STEPS", "CHECK_EVERY", "DS", "QUICK_DS",
           "MAX_D", "QUICK_MAX_D", "EXTENDED_MAX_D", "BAYES_FACTOR", "REGIME_Q",
           "REGIME_L", "PASS_FRACTION", "SHARE_LEVEL", "REFERENCE", "LIMIT_ORDER", "FALLING",
           "grid_cells", "cell_config", "run_cell", "run_point", "horizon_record",
           "point_verdict", "point_passed", "run_grid", "grid_summary", "grid_cause", "in_regime",
           "CLAIM", "claim1", "claim1_point", "compute", "reproduce", "verdict", "readings",
           "STUDY"]
