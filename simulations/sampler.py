"""Seeded sampling from the spatially structured distribution D(w*, S, q, sigma).

    y ~ U{-1, +1};  l* ~ U[L];  X_j = y w* + xi_j (j in S_l*);  X_j = delta_j w* + xi_j otherwise,
    delta_j in {+1, -1, 0} with probabilities q/2, q/2, 1 - q;  xi_j ~ N(0, sigma^2 I_d)
    (or N(0, sigma^2 (I - w* w*^T)) with ``orthogonal=True``).

All randomness comes from explicit :class:`numpy.random.Generator` objects. :func:`streams`
derives the independent generators of one run (structure, feature, initialization, train and
test data) from a single integer seed with :class:`numpy.random.SeedSequence`, so the same seed
gives the same numbers bit for bit, and changing e.g. ``n_test`` does not change the training
data.

References
----------
SPEC section 1.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from patchassoc.theory.structure import Structure

__all__ = ["Sample", "sample", "unit_vector", "streams", "STREAMS", "MAX_SAMPLE_BYTES",
           "check_sample_size"]

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
    return w / np.linalg.norm(w)


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
    if w_star.ndim != 1 or not np.isclose(np.linalg.norm(w_star), 1.0):
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
        X -= (X @ w_star)[..., None] * w_star
    X += s[..., None] * w_star
    return Sample(X=X, y=y, s=s, lstar=lstar)
