"""Scalar Numba helpers shared by the sampled and the exact engines."""
from __future__ import annotations

import math

from patchassoc.simulations.engines._jit import jit

__all__ = ["logistic", "zero_one"]


@jit
def logistic(m):
    """The logistic loss l(m) = log(1 + exp(-m)) and its derivative l'(m) = -1/(1 + exp(m)),
    evaluated without overflow for any finite m."""
    if m > 0:
        e = math.exp(-m)
        return math.log1p(e), -e / (1.0 + e)
    e = math.exp(m)
    return -m + math.log1p(e), -1.0 / (1.0 + e)


@jit
def zero_one(m):
    """The zero-one error of a margin m = y f: 1 when m < 0, 1/2 at a tie m = 0 (the sign of
    f = 0 is a coin toss), 0 when m > 0."""
    if m < 0:
        return 1.0
    if m == 0:
        return 0.5
    return 0.0
