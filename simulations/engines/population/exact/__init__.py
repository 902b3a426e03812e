"""Exact population risk, zero-one error and gradient for G-invariant attention (Numba).

A symmetry-reduced enumeration over the multisets of noise-set states (SPEC sections 4-5),
complete or truncated with certified bounds on what it leaves out, and the exact Bayes error.
The package's parts, each named for what it does:

- :mod:`.evaluator`: :func:`~.evaluator.evaluate`, :func:`~.evaluator.evaluate_gram`, :class:`~.evaluator.Evaluator` (along a
  trajectory) and the result :class:`~.evaluator.Evaluation`;
- :mod:`.states`: the noise-set states, the counts and task lists, and :func:`~.states.plan` (the
  truncation and the pruning thresholds for a tolerance);
- :mod:`.bounds`: the certified bounds of the omitted part;
- :mod:`.replay`: replays of a search's leaves at the next points of a trajectory;
- :mod:`._search`: the Numba kernels of the search (the enumeration of the multisets);
- :mod:`._kernels`: the Numba kernels it shares with the replays (the tables, a leaf's terms,
  the compensated sums) and the replays' own.

The Bayes error is :func:`patchassoc.theory.bayes.bayes_error`, re-exported here. The
derivations are in ``docs/exact_engine.md``.
"""
from patchassoc.theory.bayes import bayes_error
from patchassoc.simulations.engines.population.exact.bounds import tail_moments
from patchassoc.simulations.engines.population.exact.evaluator import (
    PARALLEL_MIN_CONFIGURATIONS, Evaluation, Evaluator, check_point, check_problem, evaluate,
    evaluate_gram, warm_up)
from patchassoc.simulations.engines.population.exact.states import (
    MAX_CONFIGURATIONS, SECONDS_PER_CONFIGURATION, TAIL_SHARE, TIE_RTOL, Plan,
    count_configurations, plan)

__all__ = ["Evaluation", "evaluate", "evaluate_gram", "bayes_error", "plan", "Plan",
           "count_configurations", "tail_moments", "TIE_RTOL", "MAX_CONFIGURATIONS",
           "SECONDS_PER_CONFIGURATION", "check_problem", "warm_up", "PARALLEL_MIN_CONFIGURATIONS",
           "TAIL_SHARE", "Evaluator", "check_point"]
