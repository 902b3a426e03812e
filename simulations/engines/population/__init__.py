"""The exact population engine: symmetry-reduced risk, gradient and dynamics (SPEC sections 4-5).

- :mod:`.exact`: multiset enumeration (Numba) of the exact population risk, zero-one error and
  gradient for invariant attention, with certified truncation, and the exact Bayes error;
- :mod:`.bruteforce`: the oracle for an arbitrary D x D logit matrix at tiny D;
- :mod:`.dynamics`: population gradient descent on (alpha, a, b, c) and its saved result.
"""
from patchassoc.simulations.engines.population.bruteforce import BruteForce, bruteforce_risk
from patchassoc.simulations.engines.population.trajectory import (
    PopulationResult, PopulationTrajectory, initial_point, population_descent, run_population)
from patchassoc.simulations.engines.population.exact import (
    MAX_CONFIGURATIONS, Evaluation, bayes_error, count_configurations, evaluate, evaluate_gram,
    plan)

__all__ = ["Evaluation", "evaluate", "evaluate_gram", "bayes_error", "plan",
           "count_configurations", "MAX_CONFIGURATIONS", "BruteForce", "bruteforce_risk",
           "PopulationResult", "PopulationTrajectory", "population_descent", "run_population", "initial_point"]
