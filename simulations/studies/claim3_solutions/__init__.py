"""Certified risk and error of the explicit solutions of :mod:`patchassoc.theory.solutions`, and of the
solutions gradient descent finds, next to the exact Bayes error.

Every number is labelled with how it was obtained:

- ``exact-multiset``: the G-invariant settings (block-uniform, identity, uniform, the population GD
  end point, and any construction whose logits happen to be invariant, e.g. lambda = 0), by the
  multiset enumeration of :mod:`patchassoc.simulations.engines.population.exact`: complete (exact up
  to rounding) when affordable, otherwise truncated with a certified bound (the table then shows the
  interval [value, value + bound]);
- ``brute-force``: the non-invariant settings (wrong partition, shifted blocks, the sampled GD
  solution), by enumerating all 2 L 3^((L-1) C) (y, l*, noise) patterns
  (:func:`patchassoc.simulations.engines.population.bruteforce.bruteforce_risk`; at the reference D
  = 16 this is 4.25 million patterns, a few seconds);
- ``monte-carlo``: a non-invariant setting too large for brute force: n i.i.d. draws of the
  noiseless projection s, with a 95 % interval (normal for the risk, Wilson for the error). Its
  verdict ``generalizes`` is ``undetermined`` when the interval straddles the threshold.

The model is the idealized one (SPEC 4-5): <v, X_j> = alpha s_j. Conventions (scaling by lambda,
fixed alpha, association level, generalization threshold) are those of
:mod:`patchassoc.theory.solutions`. The fixed alpha of the constructions defaults to the value scale
that population gradient descent reaches (its alpha after ``gd_steps`` steps), so that the
constructions differ from the learned solution only in their attention; identity and uniform
attention have an error independent of alpha (patchassoc.theory.solutions, fact 2), and
block-uniform's hard limit is Bayes-optimal for every alpha above
:func:`patchassoc.theory.solutions.block_bayes_alpha`.

The gradient-descent rows:

- ``gd-population``: the end point (alpha, a, b, c) of the exact population dynamics
  (:func:`patchassoc.simulations.engines.population.trajectory.run_population`) from the reference
  initialization after ``gd_steps`` steps;
- ``gd-sampled``: the solution of sampled-data GD
  (:func:`patchassoc.simulations.engines.sampled_descent.train`, full v and full D x D Q, the
  config's steps and N), evaluated exactly on its full non-invariant Q with alpha = <v, w*> (the
  idealized model), and scored as a whole by Monte Carlo (``full``): the trained v meets the patch
  noise through <v, xi_j> ~ N(0, sigma^2 |v|^2) (|v_perp| for noise orthogonal to w*), drawn with
  the noise deltas, 95 % intervals. The run's own test error is reported beside it.

Association is the paper's (SPEC section 3), ranked on each row's logits: Def. 2.2 rows, the
set-mate share, association at eps (0.1; the sampled row 0.25), and whether every row's top-C
misses its own set (``topc_disjoint``, the kind of solution of the paper's Theorem 3.2). The
within-set mass is kept as a description only. The summary lists the negative controls of
:func:`patchassoc.theory.association.control_records` scored on the same structure.

For each GD row the table names the nearest construction (smallest mean row total-variation
distance between attention maps, constructions at the largest lambda): this is what "GD
selects the associated solution" is measured by.

References
----------
SPEC sections 3, 5 and 6 (claim 3).
"""
from __future__ import annotations

from patchassoc.simulations.studies.claim3_solutions.solutions_verdict import (  # noqa: F401
    CLAIM,
    STUDY,
    claim3,
    compute,
    readings,
    reproduce,
    verdict,
)
from patchassoc.simulations.studies.claim3_solutions.measurement import (  # noqa: F401
    ALT_Q,
    BAYES_FACTOR,
    MC_SAMPLES,
    METHODS,
    TRUNCATION_TOL,
    Measurement,
    alt_config,
    measure,
    monte_carlo,
)
from patchassoc.simulations.studies.claim3_solutions.table import (  # noqa: F401
    CURVE_FIELDS,
    DEFAULT_LAMBDAS,
    GD_STEPS,
    QUICK_GD_STEPS,
    QUICK_LAMBDAS,
    SAMPLED_EPS,
    SolutionRow,
    SolutionsResult,
    solutions_table,
)

__all__ = ["METHODS", "DEFAULT_LAMBDAS", "QUICK_LAMBDAS", "GD_STEPS", "QUICK_GD_STEPS",
           "ALT_Q", "MC_SAMPLES", "TRUNCATION_TOL", "SAMPLED_EPS", "Measurement", "SolutionRow",
           "SolutionsResult", "measure", "monte_carlo", "solutions_table", "alt_config", "CLAIM",
           "claim3", "compute", "reproduce", "readings", "verdict", "STUDY"]
