"""Structure recovery: read the partition S back from a learned attention matrix A.

Two methods (SPEC section 3):

- ``top-C``: connect i and j when each is among the other's C largest attention weights
  (the row's own patch included); the connected components are the recovered sets. When every
  row puts more weight on each member of its set than on any other patch, this returns S.
- ``spectral``: spectral clustering of the symmetrised affinity W = A + A^T into L groups: the
  L leading eigenvectors of the normalised affinity D^-1/2 W D^-1/2, rows normalised, grouped by
  k-means (seeded, several restarts, best inertia).

Recovery is exact when the adjusted Rand index (ARI) with the true labels is 1.
"""
from __future__ import annotations

import numpy as np
from scipy.cluster.vq import kmeans2
from scipy.sparse.csgraph import connected_components

from patchassoc.theory.structure import Structure, adjusted_rand_index

__all__ = ["recover_top_c", "recover_spectral", "recovery_report"]


def _check_attention(A: np.ndarray) -> np.ndarray:
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be a square matrix, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError("A contains non-finite values")
    return A


def recover_top_c(A: np.ndarray, C: int) -> np.ndarray:
    """Labels from the mutual top-C graph of A (connected components)."""
    A = _check_attention(A)
    D = A.shape[0]
    if not 1 <= C <= D:
        raise ValueError(f"C must lie in [1, {D}], got {C}")
    top = np.argsort(-A, axis=1, kind="stable")[:, :C]
    member = np.zeros((D, D), dtype=bool)
    member[np.arange(D)[:, None], top] = True
    mutual = member & member.T
    _, labels = connected_components(mutual, directed=False)
    return labels


def recover_spectral(A: np.ndarray, L: int, seed: int = 0, restarts: int = 10) -> np.ndarray:
    """Labels from spectral clustering of A + A^T into L groups (seeded k-means)."""
    A = _check_attention(A)
    D = A.shape[0]
    if not 1 <= L <= D:
        raise ValueError(f"L must lie in [1, {D}], got {L}")
    W = A + A.T
    deg = W.sum(axis=1)
    Dm = 1.0 / np.sqrt(deg)
    M = Dm[:, None] * W * Dm[None, :]
    _, vecs = np.linalg.eigh(M)
    U = vecs[:, -L:]
    U = U / np.maximum(np.linalg.norm(U, axis=1, keepdims=True), 1e-300)
    rng = np.random.default_rng(seed)
    best, best_inertia = None, np.inf
    for _ in range(restarts):
        centroids, labels = kmeans2(U, L, minit="++", seed=rng)
        inertia = float(((U - centroids[labels]) ** 2).sum())
        if inertia < best_inertia:
            best, best_inertia = labels, inertia
    return best


def recovery_report(A: np.ndarray, structure: Structure, seed: int = 0) -> dict:
    """ARI of both methods against the true sets, and whether each recovers S exactly."""
    top = recover_top_c(A, structure.C)
    spec = recover_spectral(A, structure.L, seed=seed)
    ari_top = adjusted_rand_index(top, structure.labels)
    ari_spec = adjusted_rand_index(spec, structure.labels)
    return {"ari_top_c": ari_top, "ari_spectral": ari_spec,
            "exact_top_c": bool(ari_top == 1.0), "exact_spectral": bool(ari_spec == 1.0)}
