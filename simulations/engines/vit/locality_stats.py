"""Confidence intervals over seeds: the t-interval of a mean and of a paired difference.

For K values x_1..x_K (one per seed), the 95 % interval of their mean is
mean +- t_{0.975, K-1} s / sqrt(K), s the sample standard deviation (ddof = 1). The gap between
two models trained on the same seeds is a paired difference: the interval is the t-interval of
the per-seed differences. With K = 1 the interval is undefined (NaN).

Locality of a learned positional map (the shuffled-patch experiment). Let M be a D x D similarity
map over the patch grid (rows are queries: a positional attention matrix, or the cosine-similarity
Gram matrix of the positional encodings), indexed by grid position, and let x_i be the grid
coordinates of patch i (in patch units). For each query i, take its top-k patches j != i by
M_ij (ties broken towards the lower index), and their mean distance
r_i = (1/k) sum_j ||x_i - x_j||; the statistic is r(M) = mean_i r_i (averaged over the maps of
several seeds when given several). A map learned on shuffled images is indexed by token; it is
first mapped back through the inverse of the token permutation tau (token t holds the patch at grid
position tau(t)): M_grid[tau(i), tau(j)] = M[i, j]. The null: the same statistic after relabelling
the grid positions by a uniformly random permutation pi (M_grid[pi(i), pi(j)]), R = 200 draws
from a seeded generator; z = (mean_null - r) / sd_null (ddof = 1), positive when the top-k
patches are closer than under a random relabelling (NaN when the null has no spread), and the
one-sided p-value
(1 + #{null <= r}) / (1 + R).

References
----------
SPEC section 6, claim 6.
"""
from __future__ import annotations

import math

import numpy as np

from patchassoc.simulations.analysis.stats import mean_interval

__all__ = ["mean_ci", "paired_gap_ci", "attention_distance", "uniform_distance",
           "cosine_gram", "undo_permutation", "topk_distance", "locality_z", "LOCALITY_TOP_K",
           "LOCALITY_NULL_DRAWS"]

#: Top-k of the locality statistic (the 4 neighbours of an interior patch), and the number of
#: random relabellings of its null (declared in SPEC section 6, claim 6).
LOCALITY_TOP_K = 4
LOCALITY_NULL_DRAWS = 200


def mean_ci(values, level: float = 0.95) -> dict:
    """Mean of ``values`` with its t confidence interval.

    Returns
    -------
    dict
        ``mean``, ``ci_low``, ``ci_high``, ``half_width``, ``sd`` and ``n``.
    """
    return mean_interval(values, level)


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


def cosine_gram(P) -> np.ndarray:
    """Cosine similarities of the rows of ``P`` (..., D, dim): the (..., D, D) Gram matrix of
    the normalized positional encodings."""
    P = np.asarray(P, dtype=np.float64)
    norm = np.linalg.norm(P, axis=-1, keepdims=True)
    if np.any(norm == 0) or not np.all(np.isfinite(P)):
        raise ValueError("positional encodings must be finite and nonzero")
    U = P / norm
    return U @ np.swapaxes(U, -1, -2)


def undo_permutation(M, token_perm) -> np.ndarray:
    """Maps ``M`` (..., D, D) in token order, re-indexed by grid position:
    out[..., tau[i], tau[j]] = M[..., i, j]."""
    M = np.asarray(M, dtype=np.float64)
    tau = np.asarray(token_perm)
    D = M.shape[-1]
    if M.shape[-2:] != (D, D) or not np.array_equal(np.sort(tau), np.arange(D)):
        raise ValueError(f"token_perm must be a permutation of 0..{D - 1} for {D} x {D} maps")
    inv = np.argsort(tau)
    return M[..., inv[:, None], inv[None, :]]


def _grid_dist(grid: tuple[int, int]) -> np.ndarray:
    xy = _coords(grid, None)
    return np.linalg.norm(xy[:, None, :] - xy[None, :, :], axis=-1)


def _topk_index(M: np.ndarray, k: int) -> np.ndarray:
    """Indices (..., D, k) of each row's k largest off-diagonal entries (lower index on ties)."""
    D = M.shape[-1]
    X = np.array(M, dtype=np.float64, copy=True)
    X[..., np.arange(D), np.arange(D)] = -np.inf
    return np.argsort(-X, axis=-1, kind="stable")[..., :k]


def _check_maps(M: np.ndarray, grid: tuple[int, int], k: int) -> np.ndarray:
    dist = _grid_dist(grid)
    D = dist.shape[0]
    if M.shape[-2:] != (D, D):
        raise ValueError(f"maps must be {D} x {D} for a {grid[0]} x {grid[1]} grid, "
                         f"got {M.shape[-2:]}")
    if not 1 <= k < D:
        raise ValueError(f"k must lie in 1..{D - 1}, got {k}")
    if not np.all(np.isfinite(M)):
        raise ValueError("maps must be finite")
    return dist


def _topk_per_map(M: np.ndarray, dist: np.ndarray, k: int) -> np.ndarray:
    """Mean top-k distance of each map (...,) of ``M`` (..., D, D)."""
    idx = _topk_index(M, k)
    rows = np.arange(dist.shape[0])[:, None]
    return dist[rows, idx].mean(axis=(-2, -1))


def topk_distance(M, grid: tuple[int, int], k: int = LOCALITY_TOP_K) -> float:
    """The locality statistic r(M): mean over maps and queries of the mean grid distance of each
    query's top-k other patches (``M`` (..., D, D) indexed by grid position)."""
    M = np.asarray(M, dtype=np.float64)
    dist = _check_maps(M, grid, k)
    return float(_topk_per_map(M, dist, k).mean())


def locality_z(M, grid: tuple[int, int], token_perm=None, k: int = LOCALITY_TOP_K,
               draws: int = LOCALITY_NULL_DRAWS, seed: int = 0) -> dict:
    """Locality of maps ``M`` (..., D, D) given in token order, after undoing ``token_perm``
    (None: the identity), against ``draws`` random relabellings of the grid (module docstring).

    Returns
    -------
    dict
        ``statistic`` (r, in patches), ``null_mean``, ``null_sd``, ``z``, ``p_value``, ``k``,
        ``draws``, ``n_maps``, and ``statistic_token_order`` (r of the maps as trained, without
        undoing the permutation: what the scrambled maps look like).
    """
    M = np.asarray(M, dtype=np.float64)
    D = M.shape[-1]
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 2:
        raise ValueError(f"draws must be an integer >= 2, got {draws!r}")
    tau = np.arange(D) if token_perm is None else np.asarray(token_perm)
    G = undo_permutation(M, tau)
    r = topk_distance(G, grid, k)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x10CA1]))
    pis = np.stack([rng.permutation(D) for _ in range(draws)])  # draws x D
    G3 = G.reshape((-1, D, D))
    dist = _grid_dist(grid)
    # every relabelling at once: (draws, maps, D, D)
    relabelled = G3[:, pis[:, :, None], pis[:, None, :]].transpose(1, 0, 2, 3)
    null = _topk_per_map(relabelled, dist, k).mean(axis=1)
    sd = float(null.std(ddof=1))
    mean = float(null.mean())
    # a null without spread (e.g. a constant map: every relabelling gives the same statistic)
    # leaves z undefined; its sd is then rounding noise of the mean of equal distances
    resolvable = sd > 64 * np.finfo(float).eps * max(1.0, abs(mean))
    z = (mean - r) / sd if resolvable else math.nan
    return dict(statistic=r, null_mean=mean, null_sd=sd, z=float(z),
                p_value=float((1 + np.sum(null <= r)) / (1 + draws)), k=int(k),
                draws=int(draws), n_maps=int(np.prod(M.shape[:-2], dtype=int)),
                statistic_token_order=topk_distance(M, grid, k))
