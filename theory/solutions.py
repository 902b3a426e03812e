"""Explicit solutions of the idealized problem, each scaled by lambda, and what they compute.

Setting (SPEC sections 4-5). In the idealized model (no projection noise) <v, X_j> = alpha s_j,
so a solution is a pair (alpha, Q): the value scale alpha = <v, w*> and the D x D logits Q.
The model computes

    f(s) = sum_i act(alpha u_i),   u = A s,   A = row-softmax(Q).

Scaling convention. Every construction is a fixed logit pattern Q_hat scaled by lambda >= 0,

    Q = lambda Q_hat,   alpha fixed (a stated value, the same for every construction),

so lambda = 0 is uniform attention for all of them and lambda -> infinity is the hard
(0/1-block) limit of the pattern. The constructions (``structure`` = the true partition S):

- ``block`` (patch association): Q_hat = B, the same-set indicator of S. Invariant,
  (a, b, c) = (lambda, lambda, 0); A -> B / C.
- ``identity``: Q_hat = I. Invariant, (a, b, c) = (lambda, 0, 0); A -> I.
- ``uniform``: Q_hat = 0 (A = J / D for every lambda). Invariant, (0, 0, 0).
- ``wrong`` (association to a wrong partition): Q_hat = B' of the partition S' obtained by
  listing the patches set by set and dealing them round-robin into L sets; for L = C each set
  of S' takes exactly one patch of each set of S (maximally different), so the hard limit has
  within-set mass 1/C under S (= C/D when L = C). Not invariant.
- ``shifted`` (association to another set): Q_hat[i, j] = [l(j) = l(i) + 1 mod L]: every patch
  attends to the *next* set of S, none of its own (within-set mass -> 0 as lambda grows; for
  L = 1 it coincides with ``block``). Not invariant under the set permutations of G.

Facts the toolkit measures and the tests check (alpha > 0, act odd and increasing):

1. Row permutations. f depends on A only through the multiset of its rows (f sums over the
   queries i). ``shifted`` is a row permutation of ``block`` (rows of set l take the block
   rows of set l + 1), so the two have the same f for every s, hence the same risk and error
   at every (alpha, lambda), although their attention maps are disjoint (mean row total
   variation distance 1). Generalization therefore cannot imply patch association; which one
   gradient descent reaches is a selection effect of the start Q0 = kappa I.
2. Sign of the sum. If Q is invariant with b = c (``identity``, ``uniform``), A = Pd I + R (J - I)
   with Pd >= R, u_i = (Pd - R) s_i + R T with T = sum_j s_j, and sign f = sign T for every
   alpha > 0 and lambda >= 0 (group the patches by s_i: the +1 terms dominate the -1 terms
   when T > 0, the rest share the sign of T; T = 0 gives f = 0, a tie). With y = +1,
   T = C + sum of the (L-1) C noise deltas, so

       error = P(sum delta < -C) + P(sum delta = -C) / 2,

   computed exactly by :func:`sign_of_sum_error`. It does not depend on alpha or lambda.
3. Block limit. As lambda -> infinity, ``block`` gives f = C sum_l act(alpha S_l / C) (S_l the
   sum of s over set l). Its error equals the Bayes error (SPEC 5: the Bayes rule compares the
   numbers of all-+1 and all--1 sets; on ties both are right half the time by symmetry) iff
   act(alpha) > (L - 1) act(alpha (C - 1) / C) (for 0 < q < 1), the worst case being one
   decisive constant set against L - 1 sets of sum -(C - 1). :func:`block_bayes_alpha` returns the
   threshold on alpha.

Patch association (SPEC 3) at level eps: min_i m_i(A) >= 1 - eps, with m_i the within-set mass
(which counts A_ii). Because it counts self-attention, ``identity`` has m_i -> 1: to tell the
two apart, :func:`attention_metrics` also reports the *other-patch share*
o_i = (m_i - A_ii) / (1 - A_ii), the fraction of the attention patch i pays to other patches
that stays in its set, and :func:`association` labels an attention ``set`` (m and o both
>= 1 - eps), ``self`` (m >= 1 - eps only: the mass sits on the diagonal) or ``none``.

Generalization: error <= factor * Bayes + slack, factor = 2, slack = 0.001 (0.1 %).

References
----------
SPEC sections 3 (patch association), 4 (invariant logits), 5 (exact risk, Bayes error) and
6 (claim 3).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from patchassoc.theory.model import softmax_rows
from patchassoc.theory.structure import Structure

__all__ = ["CONSTRUCTIONS", "INVARIANT", "LABELS", "EPS", "GENERALIZATION_FACTOR",
           "GENERALIZATION_SLACK", "Solution", "pattern", "construct", "wrong_partition",
           "next_set", "attention_metrics", "association", "generalization_threshold",
           "generalizes", "sign_of_sum_error", "block_bayes_alpha", "row_tv_distance",
           "invariant_coordinates"]

#: The constructions, in the order tables list them.
CONSTRUCTIONS = ("block", "identity", "uniform", "wrong", "shifted")

#: Which constructions are G-invariant (evaluated by the exact multiset engine).
INVARIANT = ("block", "identity", "uniform")

#: Human-readable names.
LABELS = {
    "block": "block-uniform (patch association)",
    "identity": "identity attention",
    "uniform": "uniform attention",
    "wrong": "wrong partition (round-robin)",
    "shifted": "shifted blocks (next set)",
    "gd-population": "GD, exact population dynamics",
    "gd-sampled": "GD, sampled data (full v and Q)",
}

#: Patch-association level: min_i m_i(A) >= 1 - EPS.
EPS = 0.1

#: A solution generalizes when error <= GENERALIZATION_FACTOR * Bayes + GENERALIZATION_SLACK.
GENERALIZATION_FACTOR = 2.0
GENERALIZATION_SLACK = 1e-3


def _check_lambda(lam: float) -> float:
    lam = float(lam)
    if not (math.isfinite(lam) and lam >= 0):
        raise ValueError(f"lambda must be finite and >= 0, got {lam!r}")
    return lam


def wrong_partition(structure: Structure) -> Structure:
    """The partition S' that cuts across S: patches listed set by set, dealt round-robin.

    For L = C every set of S' holds exactly one patch of each set of S.
    """
    order = structure.order()
    L = structure.L
    return Structure(np.stack([order[k::L] for k in range(L)]), "custom")


def next_set(structure: Structure) -> np.ndarray:
    """N[i, j] = [l(j) = l(i) + 1 mod L]: every patch points to the next set of S."""
    lab = structure.labels
    L = structure.L
    return (lab[None, :] == (lab[:, None] + 1) % L).astype(np.float64)


def pattern(name: str, structure: Structure) -> np.ndarray:
    """The unscaled logit pattern Q_hat of a construction (D x D)."""
    D = structure.D
    if name == "block":
        return structure.same_set()
    if name == "identity":
        return np.eye(D)
    if name == "uniform":
        return np.zeros((D, D))
    if name == "wrong":
        return wrong_partition(structure).same_set()
    if name == "shifted":
        return next_set(structure)
    raise ValueError(f"unknown construction {name!r} (choose from {', '.join(CONSTRUCTIONS)})")


def invariant_coordinates(name: str, lam: float) -> tuple[float, float, float] | None:
    """(a, b, c) of lambda Q_hat for the invariant constructions, ``None`` for the others."""
    lam = _check_lambda(lam)
    if name == "block":
        return (lam, lam, 0.0)
    if name == "identity":
        return (lam, 0.0, 0.0)
    if name == "uniform":
        return (0.0, 0.0, 0.0)
    if name in CONSTRUCTIONS:
        return None
    raise ValueError(f"unknown construction {name!r} (choose from {', '.join(CONSTRUCTIONS)})")


@dataclass(frozen=True, eq=False)
class Solution:
    """One parameter setting (alpha, Q) of the idealized model.

    Attributes
    ----------
    name : str
        The construction (one of :data:`CONSTRUCTIONS`).
    lam : float
        The scale lambda (Q = lambda Q_hat).
    alpha : float
        <v, w*>.
    Q : (D, D) ndarray
        The logits (read-only).
    invariant : tuple or None
        (a, b, c) with Q = a I + b (B - I) + c (J - B) when Q is G-invariant, else ``None``.
    """

    name: str
    lam: float
    alpha: float
    Q: np.ndarray
    invariant: tuple | None

    @property
    def A(self) -> np.ndarray:
        """The attention matrix row-softmax(Q)."""
        return softmax_rows(self.Q)


def construct(name: str, structure: Structure, lam: float, alpha: float) -> Solution:
    """The construction ``name`` at scale ``lam`` with value scale ``alpha``.

    References
    ----------
    SPEC section 6, claim 3 (module notes for the conventions).
    """
    lam = _check_lambda(lam)
    alpha = float(alpha)
    if not math.isfinite(alpha):
        raise ValueError(f"alpha must be finite, got {alpha!r}")
    Q = lam * pattern(name, structure)
    Q.setflags(write=False)
    return Solution(name=name, lam=lam, alpha=alpha, Q=Q,
                    invariant=invariant_coordinates(name, lam))


def attention_metrics(A: np.ndarray, structure: Structure) -> dict:
    """Within-set mass m_i (SPEC 3) and other-patch share o_i = (m_i - A_ii) / (1 - A_ii).

    Returns mean and min of both. o_i is computed from the off-diagonal entries themselves
    (sum over j in S_l(i), j != i, over the sum over j != i), so it stays accurate when A_ii
    rounds to 1; it is 1 by convention for a row whose off-diagonal entries all underflow.
    """
    A = np.asarray(A, dtype=np.float64)
    B = structure.same_set()
    m = (A * B).sum(axis=1)
    off = A.copy()
    np.fill_diagonal(off, 0.0)
    within = (off * B).sum(axis=1)   # summed from the entries: no cancellation in 1 - A_ii
    total = off.sum(axis=1)
    o = np.where(total > 0, within / np.where(total > 0, total, 1.0), 1.0)
    return {"mass_mean": float(m.mean()), "mass_min": float(m.min()),
            "other_share_mean": float(o.mean()), "other_share_min": float(o.min())}


def association(metrics: dict, eps: float = EPS) -> str:
    """``set``, ``self`` or ``none`` (module notes); SPEC's criterion is ``!= 'none'``."""
    if metrics["mass_min"] < 1.0 - eps:
        return "none"
    return "set" if metrics["other_share_min"] >= 1.0 - eps else "self"


def generalization_threshold(bayes: float, factor: float = GENERALIZATION_FACTOR,
                             slack: float = GENERALIZATION_SLACK) -> float:
    """factor * Bayes + slack."""
    return factor * float(bayes) + slack


def generalizes(error_low: float, error_high: float, bayes: float,
                factor: float = GENERALIZATION_FACTOR,
                slack: float = GENERALIZATION_SLACK) -> str:
    """``yes`` when the whole interval [error_low, error_high] is within the threshold, ``no``
    when it is all above it, ``undetermined`` otherwise (a Monte Carlo interval straddling it)."""
    thr = generalization_threshold(bayes, factor, slack)
    if error_high <= thr:
        return "yes"
    if error_low > thr:
        return "no"
    return "undetermined"


def _sum_distribution(N: int, q: float) -> dict[int, float]:
    """P(sum of N deltas = k): deltas i.i.d. +1, -1 w.p. q/2 each, 0 w.p. 1 - q."""
    half = q / 2.0
    terms: dict[int, list[float]] = {}
    for npos in range(N + 1):
        for nneg in range(N - npos + 1):
            prob = (math.comb(N, npos) * math.comb(N - npos, nneg) * half ** (npos + nneg)
                    * (1.0 - q) ** (N - npos - nneg))
            terms.setdefault(npos - nneg, []).append(prob)
    return {k: math.fsum(v) for k, v in terms.items()}


def sign_of_sum_error(L: int, C: int, q: float) -> float:
    """Exact error of every predictor with sign f = sign T (identity, uniform; module fact 2):

        P(sum delta < -C) + P(sum delta = -C) / 2,   over (L - 1) C noise deltas.
    """
    if int(L) != L or int(C) != C or L < 1 or C < 1:
        raise ValueError(f"L and C must be integers >= 1, got {L!r}, {C!r}")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must lie in [0, 1], got {q!r}")
    dist = _sum_distribution((int(L) - 1) * int(C), float(q))
    below = math.fsum(p for k, p in dist.items() if k < -C)
    return float(below + 0.5 * dist.get(-int(C), 0.0))


def block_bayes_alpha(L: int, C: int, p: int, nu: float) -> float:
    """Smallest alpha above which the hard block limit is Bayes-optimal (module fact 3).

    The condition act(alpha) > (L - 1) act(alpha r), r = (C - 1) / C, reads
    alpha^(p-1) (1 - (L - 1) r^p) > nu ((L - 1) r - 1). Returns 0.0 when it holds for every
    alpha > 0 and ``inf`` when it holds for none.
    """
    if L <= 1 or C <= 1:
        return 0.0  # no noise set, or sets of one patch (r = 0): always Bayes-optimal
    r = (C - 1) / C
    lead = 1.0 - (L - 1) * r ** p
    lin = nu * ((L - 1) * r - 1.0)
    if lead > 0:
        return 0.0 if lin <= 0 else float((lin / lead) ** (1.0 / (p - 1)))
    if lead == 0:
        return 0.0 if lin < 0 else math.inf
    return math.inf  # the p-th power term loses for large alpha: no threshold above which


def row_tv_distance(A1: np.ndarray, A2: np.ndarray) -> float:
    """Mean over rows of the total variation distance (1/2) ||A1_i - A2_i||_1, in [0, 1]."""
    A1 = np.asarray(A1, dtype=np.float64)
    A2 = np.asarray(A2, dtype=np.float64)
    if A1.shape != A2.shape:
        raise ValueError(f"shapes differ: {A1.shape} vs {A2.shape}")
    return float(0.5 * np.abs(A1 - A2).sum(axis=1).mean())
