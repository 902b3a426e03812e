"""The exact Bayes error of the noiseless-projection model (SPEC section 5).

With no projection noise the label y is recoverable only through the signal set, the one set
whose C entries all equal y; a noise set is constant (all +1 or all -1) with probability
r = (q/2)^C each way, independently. The Bayes classifier picks the sign with more constant
sets, so its error is a finite sum over the counts of constant noise sets: plain Python, no
enumeration of configurations.
"""
from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["bayes_error", "check_sizes"]


def check_sizes(L, C, q) -> tuple[int, int, float]:
    """Validate and coerce (L, C, q): integers L, C >= 1 and a rate q in [0, 1]."""
    for name, v in (("L", L), ("C", C)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    if isinstance(q, bool) or not (0.0 <= float(q) <= 1.0):
        raise ValueError(f"q must lie in [0, 1], got {q!r}")
    return int(L), int(C), float(q)


def bayes_error(L: int, C: int, q: float) -> float:
    """Exact Bayes error of the noiseless-projection model.

    Given s, P(s | y) = N_y(s) prod_l p(s_l) / (L (q/2)^C), N_y the number of sets that are all
    y: the posterior favours the sign with more constant sets. With y = +1, N+ = 1 + M+ and
    N- = M-, where (M+, M-) count the noise sets that are all +1 / all -1 (each with probability
    r = (q/2)^C, independently): error = P(M- > M+ + 1) + P(M- = M+ + 1) / 2.

    References
    ----------
    SPEC section 5.
    """
    return _bayes_error(*check_sizes(L, C, q))


@functools.lru_cache(maxsize=256)
def _bayes_error(L: int, C: int, q: float) -> float:
    """:func:`bayes_error` of checked sizes (cached: the exact engine reports it with every
    evaluation)."""
    M = L - 1
    r = (q / 2.0) ** C
    rest = 1.0 - 2.0 * r
    err = 0.0
    for mp in range(M + 1):
        for mm in range(M - mp + 1):
            if mm < mp + 1:
                continue
            prob = (math.comb(M, mp) * math.comb(M - mp, mm) * r ** (mp + mm)
                    * rest ** (M - mp - mm))
            err += prob if mm > mp + 1 else 0.5 * prob
    return float(err)
