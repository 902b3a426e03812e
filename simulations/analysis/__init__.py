"""Statistics shared by the engines, the studies and the figures (:mod:`.stats`).

It sits beside :mod:`patchassoc.simulations.runtime`, below the engines and the studies, and
imports neither: NumPy and SciPy only.
"""
from patchassoc.simulations.analysis.stats import (bootstrap_indices, linear_fit, mean_interval,
                                                   percentile_interval, slope, t_quantile,
                                                   wilson_interval)

__all__ = ["slope", "linear_fit", "t_quantile", "mean_interval", "wilson_interval",
           "bootstrap_indices", "percentile_interval"]
