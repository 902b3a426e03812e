"""Confidence intervals over seeds: the t-interval of a mean and of a paired difference.

For K values x_1..x_K (one per seed), the 95 % interval of their mean is
mean +- t_{0.975, K-1} s / sqrt(K), s the sample standard deviation (ddof = 1). The gap between
two models trained on the same seeds is a paired difference: the interval is the t-interval of
the per-seed differences. With K = 1 the interval is undefined (NaN).

References
----------
SPEC section 6, claim 6.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["mean_ci", "paired_gap_ci", "attention_distance", "uniform_distance"]


def mean_ci(values, level: float = 0.95) -> dict:
    """Mean of ``values`` with its t confidence interval.

    Returns
    -------
    dict
        ``mean``, ``ci_low``, ``ci_high``, ``half_width``, ``sd`` and ``n``.
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError("mean_ci needs at least one finite value")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    from scipy import stats  # here, not at import: spawned training workers never need it

    mean = float(x.mean())
    if x.size < 2:
        half, sd = math.nan, math.nan
    else:
        sd = float(x.std(ddof=1))
        half = float(stats.t.ppf(0.5 + level / 2, x.size - 1) * sd / math.sqrt(x.size))
    return dict(mean=mean, ci_low=mean - half, ci_high=mean + half, half_width=half, sd=sd,
                n=int(x.size))


def paired_gap_ci(a, b, level: float = 0.95) -> dict:
    """Mean of the paired differences a_k - b_k with its t confidence interval
    (see :func:`mean_ci`)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired values must have the same shape, got {a.shape} and {b.shape}")
    return mean_ci(a - b, level)


def _coords(grid: tuple[int, int], permutation) -> np.ndarray:
    gh, gw = grid
    perm = np.arange(gh * gw) if permutation is None else np.asarray(permutation)
    return np.stack(np.divmod(perm, gw), axis=1).astype(np.float64)


def attention_distance(A, grid: tuple[int, int], permutation=None) -> np.ndarray:
    """Mean attention distance sum_j A_ij ||pos_i - pos_j|| averaged over queries i, in patch
    units on the grid, for each map in ``A`` (..., D, D) given in token order (token t sits at
    grid position ``permutation[t]``)."""
    A = np.asarray(A, dtype=np.float64)
    xy = _coords(grid, permutation)
    dist = np.linalg.norm(xy[:, None, :] - xy[None, :, :], axis=-1)
    if A.shape[-2:] != dist.shape:
        raise ValueError(f"attention maps must be {dist.shape}, got {A.shape[-2:]}")
    return (A * dist).sum(-1).mean(-1)


def uniform_distance(grid: tuple[int, int]) -> float:
    """The attention distance of uniform attention (every query spreads 1/D everywhere)."""
    D = grid[0] * grid[1]
    return float(attention_distance(np.full((D, D), 1.0 / D), grid))
