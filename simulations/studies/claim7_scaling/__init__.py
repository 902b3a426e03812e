"""Scaling studies (claim 7): how errors and phase times move with d along a declared family.

The family (SPEC section 6, item 7) gives the sizes as functions of the patch dimension d:

    L(d) = C(d) = max(2, round(ln d)),   q(d) = min(1, ln d / D),   kappa(d) = ln ln d,

on the grid d_k = round(e^k) (so L = C = k exactly). Under it the Bayes error is
~ (L-1)/2 (q/2)^C = d^(-ln(2 ln d) + o(1)): d^(-omega(1)), as the paper's Definition 2.1 asks.
Each rule can be changed (:class:`~patchassoc.simulations.studies.common.scaling_family.Family`): ``log`` (round(ln d)), ``log2`` (round(log2 d)) or a
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
    (:func:`~patchassoc.simulations.studies.common.scaling_family.omega_test`).
(b) Dynamics against d and D: the time to each criterion of the flows of (a) (Def. 2.2 in every
    row, share >= 0.9, error <= 1.3 x Bayes + bound, and all three:
    :func:`patchassoc.simulations.engines.criteria.times_to_criteria`), fitted by least squares
    against ln d (exponent gamma) and ln ln d (polylog exponent beta) (:func:`~patchassoc.simulations.studies.common.scaling_family.loglog_fit`); a
    censored time (the criterion fails at the horizon) is listed as censored and left out of the
    fit. Beside them, the budget GD runs' phase times t_alpha, t_share and final share
    (:func:`patchassoc.simulations.engines.population.trajectory.phases`), against d and D, with
    the same fits.
(c) Sampled data against d: the smallest N of a grid at which >= 8 of 10 seeds of sampled GD
    associate (Def. 2.2 in every row and share_min >= 0.75, claim 2's test).

Claim 7 (:func:`~.rule.claim7`) is decided on the flow's certified errors over the declared range; a
FAIL names its cause (:func:`~.rule.cause_of`): (iii) a control passes; else (i) a flow did not reach
the horizon or its error still moved over the last decade by more than tol(d) (the level the
claim reads errors at), with that trend; else (ii) the flows are at their limits and the limit
errors themselves fail the rule.

References
----------
SPEC sections 1-3, 5 and 6 (item 7; claims read at a declared horizon).
"""
from __future__ import annotations

from patchassoc.simulations.studies.claim7_scaling.scaling_cells import (  # noqa: F401
    BLOCK_ALPHA,
    BLOCK_LAMBDA_PER_LOG,
    D_SWEEP_KS,
    FLOW_KS,
    FLOW_T_MAX,
    KS,
    N_SEEDS,
    PASS_SEEDS,
    POLYLOG_GAMMA,
    PROTOCOL,
    SAMPLED_KS,
    SAMPLED_NS,
    STEPS_PER_LOG,
    TIME_CRITERIA,
    TRAJ_TOL,
    ScalingCell,
    ScalingTask,
    block_cells,
    closed_forms,
    compute_cell,
    flow_cells,
    gd_cells,
    n_assoc,
    run_study_cells,
    sampled_cells,
    steps_for,
    sweep_cells,
)
from patchassoc.simulations.studies.claim7_scaling.scaling_readings import readings  # noqa: F401
from patchassoc.simulations.studies.claim7_scaling.rule import CLAIM, cause_of, claim7, verdict  # noqa: F401
from patchassoc.simulations.studies.claim7_scaling.scaling_step import STUDY, reproduce  # noqa: F401
from patchassoc.simulations.studies.claim7_scaling.studies import QUICK, REDUCED, compute, time_fits  # noqa: F401
from patchassoc.simulations.studies.common.scaling_family import (  # noqa: F401
    GD_KS,
    MAX_CONFIGURATIONS,
    MIN_RISE,
    TOL_FACTOR,
    Family,
    flow_trend,
    grid_d,
    local_exponents,
    loglog_fit,
    omega_test,
)

__all__ = ["Family", "ScalingCell", "ScalingTask", "PROTOCOL", "KS", "GD_KS", "FLOW_KS",
           "D_SWEEP_KS", "SAMPLED_KS", "SAMPLED_NS", "N_SEEDS", "PASS_SEEDS", "TOL_FACTOR",
           "TRAJ_TOL", "STEPS_PER_LOG", "BLOCK_ALPHA", "BLOCK_LAMBDA_PER_LOG", "MIN_RISE",
           "MAX_CONFIGURATIONS", "FLOW_T_MAX", "TIME_CRITERIA", "POLYLOG_GAMMA",
           "grid_d", "steps_for", "local_exponents", "omega_test", "loglog_fit", "closed_forms",
           "compute_cell", "run_study_cells", "gd_cells", "flow_cells", "block_cells",
           "sweep_cells", "sampled_cells", "n_assoc", "time_fits", "flow_trend", "cause_of",
           "claim7", "readings", "verdict", "compute", "reproduce", "STUDY", "CLAIM"]
