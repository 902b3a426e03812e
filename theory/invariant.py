"""The G-invariant logit matrices: the 3-dimensional space the population dynamics live in.

A logit matrix invariant under the structure group G (permutations inside a set, and of whole
sets) is

    Q = a I + b (B - I) + c (J - B),

B the same-set indicator, J all-ones. Its row softmax has three values,

    Pd = e^a / Z (diagonal),  Qs = e^b / Z (same set, off-diagonal),  R = e^c / Z (across sets),
    Z = e^a + (C-1) e^b + (D-C) e^c,

and the within-set mass of every row is Pd + (C-1) Qs. The row sum a + (C-1) b + (D-C) c is
conserved by gradient descent (softmax ignores a shift of a row).

Chain rule from the attention values to the logits. With gP, gQ, gR the derivatives of a
function with respect to the scalars Pd, Qs, R (each scalar standing for all its entries) and
m = Pd gP + Qs gQ + R gR:

    d/da = Pd (gP - m),  d/db = Qs (gQ - (C-1) m),  d/dc = R (gR - (D-C) m),

so d/da + d/db + d/dc = 0 (shift invariance).

Per-entry gradient descent. The full D x D gradient of an invariant point is invariant; its
diagonal entries equal (d/da)/D, its within-set off-diagonal entries (d/db)/(D(C-1)) and its
across-set entries (d/dc)/(D(D-C)). A per-entry step of size eta therefore moves

    a -= eta (d/da)/D,  b -= eta (d/db)/(D(C-1)),  c -= eta (d/dc)/(D(D-C)).

A class with no entries (C = 1: no within-set off-diagonal entry; L = 1: no across-set entry)
has no coordinate to move: its step is 0 and :func:`project_invariant` reports 0 for it.

Gram form. Gradient descent on P with Q = P P^T, started from the invariant P0 = sqrt(kappa) I,
keeps P symmetric and invariant (grad_P = (grad_Q + grad_Q^T) P is a product of invariant
matrices), so P = x I + y (B - I) + w (J - B) and

    a = x^2 + (C-1) y^2 + (D-C) w^2,
    b = 2 x y + (C-2) y^2 + (D-C) w^2,
    c = 2 x w + 2 (C-1) y w + (D-2C) w^2.

The reduced coordinates are (x, y, w), moved per entry with the same scales (D, D(C-1), D(D-C)).

References
----------
SPEC section 4 (symmetry reduction), section 2 (Gram parameterization).
"""
from __future__ import annotations

import math

import numpy as np

from patchassoc.theory.structure import Structure

__all__ = ["invariant_fraction", "noninvariant_residual", "attention_values", "invariant_logits", "invariant_attention", "project_invariant",
           "row_sum", "within_mass", "chain_to_logits", "entry_counts", "gram_to_logits",
           "gram_jacobian", "chain_to_gram"]


def _sizes(L: int, C: int) -> tuple[int, int, int]:
    for name, v in (("L", L), ("C", C)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    L, C = int(L), int(C)
    return L, C, L * C


def attention_values(a: float, b: float, c: float, L: int, C: int) -> tuple[float, float, float]:
    """(Pd, Qs, R): diagonal, within-set and across-set attention of the invariant Q (stable).

    References
    ----------
    SPEC section 4.
    """
    L, C, D = _sizes(L, C)
    a, b, c = float(a), float(b), float(c)
    # Only the classes that have entries take part in the softmax (and in its maximum).
    mx = max([a] + ([b] if C > 1 else []) + ([c] if L > 1 else []))
    ea = math.exp(a - mx)
    eb = math.exp(b - mx) if C > 1 else 0.0
    ec = math.exp(c - mx) if L > 1 else 0.0
    Z = ea + (C - 1) * eb + (D - C) * ec
    return ea / Z, eb / Z, ec / Z


def entry_counts(L: int, C: int) -> tuple[int, int, int]:
    """Number of entries of each class: (D, D(C-1), D(D-C))."""
    L, C, D = _sizes(L, C)
    return D, D * (C - 1), D * (D - C)


def row_sum(a: float, b: float, c: float, L: int, C: int) -> float:
    """The conserved row sum a + (C-1) b + (D-C) c of the invariant Q."""
    L, C, D = _sizes(L, C)
    return float(a + (C - 1) * b + (D - C) * c)


def within_mass(a: float, b: float, c: float, L: int, C: int) -> float:
    """Within-set mass Pd + (C-1) Qs of every row (SPEC section 3)."""
    Pd, Qs, _ = attention_values(a, b, c, L, C)
    return Pd + (C - 1) * Qs


def invariant_logits(a: float, b: float, c: float, structure: Structure) -> np.ndarray:
    """Q = a I + b (B - I) + c (J - B) for the sets of ``structure``."""
    B = structure.same_set()
    eye = np.eye(structure.D)
    return a * eye + b * (B - eye) + c * (1.0 - B)


def invariant_attention(a: float, b: float, c: float, structure: Structure) -> np.ndarray:
    """A = row-softmax(Q) of the invariant Q, built from (Pd, Qs, R) directly."""
    Pd, Qs, R = attention_values(a, b, c, structure.L, structure.C)
    B = structure.same_set()
    eye = np.eye(structure.D)
    return Pd * eye + Qs * (B - eye) + R * (1.0 - B)


def project_invariant(Q: np.ndarray, structure: Structure) -> tuple[float, float, float]:
    """Orthogonal projection of any D x D matrix onto the invariant space, as (a, b, c).

    a, b, c are the means of the diagonal, of the within-set off-diagonal entries and of the
    across-set entries (0 for a class without entries).
    """
    Q = np.asarray(Q, dtype=np.float64)
    D = structure.D
    if Q.shape != (D, D):
        raise ValueError(f"Q must have shape ({D}, {D}), got {Q.shape}")
    B = structure.same_set().astype(bool)
    eye = np.eye(D, dtype=bool)
    within = B & ~eye
    across = ~B
    a = float(np.mean(np.diag(Q)))
    b = float(Q[within].mean()) if within.any() else 0.0
    c = float(Q[across].mean()) if across.any() else 0.0
    return a, b, c


def chain_to_logits(gP: float, gQ: float, gR: float, a: float, b: float, c: float, L: int,
                    C: int) -> tuple[float, float, float]:
    """Chain rule from derivatives in (Pd, Qs, R) to derivatives in (a, b, c) (module notes)."""
    L, C, D = _sizes(L, C)
    Pd, Qs, R = attention_values(a, b, c, L, C)
    m = Pd * gP + Qs * gQ + R * gR
    return Pd * (gP - m), Qs * (gQ - (C - 1) * m), R * (gR - (D - C) * m)


def gram_to_logits(x: float, y: float, w: float, L: int, C: int) -> tuple[float, float, float]:
    """(a, b, c) of Q = P P^T for the invariant symmetric P = x I + y (B - I) + w (J - B)."""
    L, C, D = _sizes(L, C)
    a = x * x + (C - 1) * y * y + (D - C) * w * w
    b = 2 * x * y + (C - 2) * y * y + (D - C) * w * w
    c = 2 * x * w + 2 * (C - 1) * y * w + (D - 2 * C) * w * w
    return float(a), float(b), float(c)


def gram_jacobian(x: float, y: float, w: float, L: int, C: int) -> np.ndarray:
    """J[r, k] = d(a, b, c)_r / d(x, y, w)_k of :func:`gram_to_logits`."""
    L, C, D = _sizes(L, C)
    return np.array([
        [2 * x, 2 * (C - 1) * y, 2 * (D - C) * w],
        [2 * y, 2 * x + 2 * (C - 2) * y, 2 * (D - C) * w],
        [2 * w, 2 * (C - 1) * w, 2 * x + 2 * (C - 1) * y + 2 * (D - 2 * C) * w],
    ])


def chain_to_gram(ga: float, gb: float, gc: float, x: float, y: float, w: float, L: int,
                  C: int) -> tuple[float, float, float]:
    """Derivatives in (x, y, w) from derivatives in (a, b, c): J^T (ga, gb, gc)."""
    g = gram_jacobian(x, y, w, L, C).T @ np.array([ga, gb, gc], dtype=np.float64)
    return float(g[0]), float(g[1]), float(g[2])


# -- claim 2 -----------------------------------------------------------------------------------
def noninvariant_residual(Q: np.ndarray, structure: Structure) -> float:
    """||Q' - Pi Q'||_F, Q' = Q - row means: the part of Q outside the invariant space (the
    absolute residual of :func:`invariant_fraction`; 0 for invariant logits). The sampled
    dynamics leave the population trajectory through it (SPEC section 6, claim 2)."""
    frac, rel = invariant_fraction(Q, structure)
    Q = np.asarray(Q, dtype=np.float64)
    Qp = Q - Q.mean(axis=1, keepdims=True)
    return rel * math.sqrt(float((Qp * Qp).sum()))


def invariant_fraction(Q: np.ndarray, structure: Structure) -> tuple[float, float]:
    """(fraction, relative distance) of Q' = Q - row means in the invariant space.

    Pi is the orthogonal projection (Frobenius) onto span(I, B - I, J - B): class means of the
    diagonal, within-set and across-set entries. fraction = ||Pi Q'||^2 / ||Q'||^2 and the
    relative distance ||Q' - Pi Q'|| / ||Q'|| = sqrt(1 - fraction).
    """
    Q = np.asarray(Q, dtype=np.float64)
    D = structure.D
    if Q.shape != (D, D):
        raise ValueError(f"Q must have shape ({D}, {D}), got {Q.shape}")
    Qp = Q - Q.mean(axis=1, keepdims=True)
    B = structure.same_set().astype(bool)
    eye = np.eye(D, dtype=bool)
    P = np.zeros_like(Qp)
    for mask in (eye, B & ~eye, ~B):
        if mask.any():
            P[mask] = Qp[mask].mean()
    total = float((Qp * Qp).sum())
    if total == 0.0:
        return 1.0, 0.0  # a constant Q is invariant
    dist2 = float(((Qp - P) ** 2).sum())
    return 1.0 - dist2 / total, math.sqrt(dist2 / total)
