"""Seeded sampling from the spatially structured distribution D(w*, S, q, sigma).

    y ~ U{-1, +1};  l* ~ U[L];  X_j = y w* + xi_j (j in S_l*);  X_j = delta_j w* + xi_j otherwise,
    delta_j in {+1, -1, 0} with probabilities q/2, q/2, 1 - q;  xi_j ~ N(0, sigma^2 I_d)
    (or N(0, sigma^2 (I - w* w*^T)) with ``orthogonal=True``).

All randomness comes from explicit :class:`numpy.random.Generator` objects. :func:`streams`
derives the independent generators of one run (structure, feature, initialization, train and
test data) from a single integer seed with :class:`numpy.random.SeedSequence`, so the same seed
gives the same numbers bit for bit, and changing e.g. ``n_test`` does not change the training
data.

The paper's Fig. 2 negative control (``Config.data = "gaussian-cnn"``) has no feature and no
signal set: every patch is i.i.d. N(0, sigma^2 I_d) on a sqrt(D) x sqrt(D) grid, and the label is

    y = sign f*(X),   f*(X) = sum_l ( sum_{r < C} <W_r, X_{S_l[r]}> )^3,

a one-hidden-layer CNN with one cubic channel whose C x d filter W (one d-vector per position r
of a sqrt(C) x sqrt(C) window, drawn once from the run's ``feature`` stream, unit Frobenius norm)
is applied to each window S_l of the ``windows`` structure (stride = window side) and summed.
f* is a sum over the windows, yet the inputs carry no spatial structure: nothing in X tells which
patches belong together. (f* = 0 has probability 0; :func:`gaussian_cnn_sample` still breaks it
as y = +1.)

References
----------
SPEC section 1; PAPER.md (negative result, Fig. 2).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from patchassoc.theory.structure import Structure

from patchassoc.simulations.engines import fixed_order

__all__ = ["Sample", "sample", "unit_vector", "streams", "STREAMS", "MAX_SAMPLE_BYTES",
           "check_sample_size", "cnn_filter", "cnn_target", "gaussian_cnn_sample", "draw_target",
           "draw"]

#: Named, independent random streams of one run.
STREAMS = ("structure", "feature", "init", "train", "test", "extra")

#: Largest float64 sample (N * D * d * 8 bytes) a run may hold in memory.
MAX_SAMPLE_BYTES = 6 * 2**30


def streams(seed: int) -> dict[str, np.random.Generator]:
    """Independent generators for each named stream of a run seeded by ``seed``."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    children = np.random.SeedSequence(int(seed)).spawn(len(STREAMS))
    return {name: np.random.default_rng(child) for name, child in zip(STREAMS, children)}


def unit_vector(d: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random unit vector of R^d (the feature w*)."""
    w = rng.standard_normal(d)
    return w / fixed_order.norm(w)


@dataclass(frozen=True, eq=False)
class Sample:
    """N draws of D: images ``X`` (N, D, d), labels ``y`` (N,), feature coefficients ``s``
    (N, D) with s_j = <signal part of X_j, w*>, and the signal sets ``lstar`` (N,)."""

    X: np.ndarray
    y: np.ndarray
    s: np.ndarray
    lstar: np.ndarray

    @property
    def n(self) -> int:
        return self.y.shape[0]


def check_sample_size(n: int, D: int, d: int, what: str = "sample") -> None:
    """Refuse a sample that would not fit in memory, with a clear message."""
    nbytes = 8 * int(n) * int(D) * int(d)
    if nbytes > MAX_SAMPLE_BYTES:
        raise ValueError(f"{what} of {n} images x {D} patches x d={d} needs "
                         f"{nbytes / 2**30:.1f} GiB (limit {MAX_SAMPLE_BYTES / 2**30:.0f} GiB); "
                         f"lower n_train/n_test or d")


def sample(n: int, w_star: np.ndarray, structure: Structure, q: float, sigma: float,
           rng: np.random.Generator, orthogonal: bool = False) -> Sample:
    """Draw ``n`` i.i.d. pairs (X, y) from D(w*, S, q, sigma) (SPEC section 1)."""
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must lie in [0, 1], got {q}")
    if not (sigma >= 0.0 and np.isfinite(sigma)):
        raise ValueError(f"sigma must be finite and >= 0, got {sigma}")
    w_star = np.ascontiguousarray(w_star, dtype=np.float64)
    if w_star.ndim != 1 or not np.isclose(fixed_order.norm(w_star), 1.0):
        raise ValueError("w_star must be a unit vector")
    n, D, d = int(n), structure.D, w_star.shape[0]
    check_sample_size(n, D, d)
    y = rng.choice(np.array([-1.0, 1.0]), size=n)
    lstar = rng.integers(structure.L, size=n)
    u = rng.random((n, D))
    s = np.where(u < q / 2, 1.0, np.where(u < q, -1.0, 0.0))
    rows = structure.sets[lstar]                       # (n, C) signal patches of each image
    s[np.arange(n)[:, None], rows] = y[:, None]
    X = rng.standard_normal((n, D, d))
    X *= sigma
    if orthogonal:
        X -= fixed_order.row_dots(X, w_star)[..., None] * w_star
    X += s[..., None] * w_star
    return Sample(X=X, y=y, s=s, lstar=lstar)


def cnn_filter(C: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """A random C x d filter with unit Frobenius norm (row r acts on position r of a window)."""
    for name, v in (("C", C), ("d", d)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    W = rng.standard_normal((int(C), int(d)))
    return W / fixed_order.norm(W)


def cnn_target(X: np.ndarray, W: np.ndarray, structure: Structure) -> np.ndarray:
    """f*(X) = sum_l (sum_r <W_r, X_{S_l[r]}>)^3 for a batch X of shape (n, D, d)."""
    X = np.asarray(X, dtype=np.float64)
    W = np.asarray(W, dtype=np.float64)
    if X.ndim != 3 or X.shape[1] != structure.D:
        raise ValueError(f"X must have shape (n, {structure.D}, d), got {X.shape}")
    if W.shape != (structure.C, X.shape[2]):
        raise ValueError(f"W must have shape ({structure.C}, {X.shape[2]}), got {W.shape}")
    windows = X[:, structure.sets, :]                  # (n, L, C, d)
    pre = np.einsum("nlcd,cd->nl", windows, W)
    return (pre ** 3).sum(axis=1)


def gaussian_cnn_sample(n: int, W: np.ndarray, structure: Structure, sigma: float,
                        rng: np.random.Generator) -> Sample:
    """Draw ``n`` pairs of the paper's Fig. 2 data: i.i.d. Gaussian patches, y = sign f*(X).

    ``s`` (no feature) is all zeros and ``lstar`` (no signal set) is -1.
    """
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if not (sigma > 0.0 and np.isfinite(sigma)):
        raise ValueError(f"sigma must be finite and > 0, got {sigma}")
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != structure.C:
        raise ValueError(f"W must have shape ({structure.C}, d), got {W.shape}")
    n, D, d = int(n), structure.D, W.shape[1]
    check_sample_size(n, D, d)
    X = rng.standard_normal((n, D, d))
    X *= sigma
    y = np.where(cnn_target(X, W, structure) >= 0, 1.0, -1.0)
    return Sample(X=X, y=y, s=np.zeros((n, D)), lstar=np.full(n, -1, dtype=np.int64))


def draw_target(config, rng: np.random.Generator) -> np.ndarray:
    """The target's parameter from the ``feature`` stream: w* (structured) or the CNN filter W."""
    if config.data == "gaussian-cnn":
        return cnn_filter(config.C, config.d, rng)
    return unit_vector(config.d, rng)


def draw(config, n: int, target: np.ndarray, structure: Structure,
         rng: np.random.Generator) -> Sample:
    """``n`` draws of the distribution named by ``config.data`` (target from :func:`draw_target`).

    Parameters
    ----------
    config : Config
        Supplies ``data``, ``q``, ``sigma`` and ``noise``.
    n : int
    target : ndarray
        w* (shape (d,)) for ``structured``; the filter W (shape (C, d)) for ``gaussian-cnn``.
    structure : Structure
    rng : numpy.random.Generator
    """
    if config.data == "gaussian-cnn":
        return gaussian_cnn_sample(n, target, structure, config.sigma, rng)
    return sample(n, target, structure, config.q, config.sigma, rng,
                  config.noise == "orthogonal")
