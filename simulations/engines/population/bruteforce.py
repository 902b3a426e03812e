"""Brute-force oracle: the population risk of an arbitrary D x D logit matrix at tiny D.

With no projection noise (<v, X_j> = alpha s_j) the population risk is a finite sum over the
label y (2 values), the signal set l* (L values) and the 3^((L-1)C) noise patterns delta of the
other sets, each with probability (q/2)^n (1-q)^((L-1)C - n) / (2L), n the number of nonzero
delta. This module enumerates all of them for any Q, assuming no symmetry whatsoever, and is
what the exact engine of :mod:`.exact` (which assumes invariance) is tested against.

Independence. The oracle shares no code with the engines it checks: the softmax, the
logistic loss and its derivative, the tie rule and the softmax backpropagation
(grad_Q = A o (grad_A - rowsum(A o grad_A))) are written here, plainly in NumPy, vectorized over
the patterns; nothing is imported from :mod:`.exact`, :mod:`~patchassoc.simulations.engines.sampled_kernels` or ``_scalar``. A
bug in an engine primitive therefore shows up as a disagreement
(tests/engines/population/test_bruteforce.py breaks one on purpose). The one exception is the
activation act(t) = t^p + nu t: it is the model's definition, not an engine primitive, and the
oracle evaluates that one definition (:func:`patchassoc.theory.activation.act_pair`, on arrays),
so that a change of the activation is checked end to end against the oracle; the definition
itself is checked on its own against exact rational arithmetic and sympy's derivatives
(tests/theory/test_activation.py).

Sums. The per-pattern terms of the risk, the error, the probability and d risk / d alpha are
summed pairwise (NumPy) within chunks of patterns and the chunk sums with :func:`math.fsum`;
the D x D gradient in A is summed as matrix products over blocks of ``_BLOCK`` patterns
(:func:`_blocked_gram`). ``BruteForce.grad_A_abs`` and ``BruteForce.grad_alpha_abs``
are the sums of the absolute values of the same terms: the scale that rounding errors are
proportional to, for tolerances on gradients that can vanish. The Bayes error depends on the
partition and q only and is cached per (partition, q).

Bayes error, from the likelihoods directly,

    P(s | y) = (1/L) sum_l [s_{S_l} = y 1] prod_{l' != l} p(s_{S_l'}),

predicting the sign of the larger one (ties, to relative ``BAYES_TIE``, count 1/2).

Ties of the model. A margin |m| <= ``TIE_RTOL`` D act(|alpha|) counts as a tie (error 1/2):
the convention of the engines (SPEC section 5), restated here, so that exact zeros (e.g. T = 0
under uniform attention) are not split at random by rounding.

References
----------
SPEC section 5 (brute-force oracle, Bayes error).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from patchassoc.theory.activation import act as act_value, act_pair
from patchassoc.theory.structure import Structure

__all__ = ["BruteForce", "bruteforce_risk", "MAX_PATTERN_WORK", "pattern_count", "TIE_RTOL",
           "BAYES_TIE", "softmax", "activation", "logistic", "grad_logits"]

#: Largest 2 L 3^((L-1)C) D^2 (the oracle's work) accepted.
MAX_PATTERN_WORK = 4_000_000_000

#: Relative tie threshold on the margin, in units of the largest possible |f| = D act(|alpha|)
#: (the engines' convention, SPEC section 5).
TIE_RTOL = 1e-10

#: Relative tolerance under which the two likelihoods of the Bayes decision are equal.
BAYES_TIE = 1e-12

#: Patterns evaluated at once (bounds the memory to a few tens of MB at D = 16).
_CHUNK = 1 << 15
#: Patterns per block of the gradient's matrix products (see :func:`_blocked_gram`).
_BLOCK = 256


# -- primitives (plain NumPy, independent of the engines) --------------------------------------
def softmax(Q: np.ndarray) -> np.ndarray:
    """Row-softmax, shifted by the row maximum."""
    E = np.exp(Q - Q.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def activation(z: np.ndarray, p: int, nu: float) -> tuple[np.ndarray, np.ndarray]:
    """(act(z), act'(z)) of an array: the activation's one definition,
    :func:`patchassoc.theory.activation.act_pair` (the oracle's earlier products (z^2)^k, for
    p <= 7 the same bits)."""
    return act_pair(z, p, nu)


def logistic(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """l(m) = log(1 + exp(-m)) = logaddexp(0, -m) and l'(m) = -1 / (1 + exp(m)), the latter
    from e = exp(-|m|) <= 1 so that nothing overflows."""
    e = np.exp(-np.abs(m))
    dl = np.where(m > 0, -e / (1.0 + e), -1.0 / (1.0 + e))
    return np.logaddexp(0.0, -m), dl


def grad_logits(A: np.ndarray, gA: np.ndarray) -> np.ndarray:
    """Backpropagation through the row-softmax: grad_Q = A o (gA - rowsum(A o gA))."""
    return A * (gA - np.sum(A * gA, axis=1, keepdims=True))


@dataclass(frozen=True, eq=False)
class BruteForce:
    """What :func:`bruteforce_risk` computed (gradients are ``None`` unless requested).

    ``grad_A_abs`` / ``grad_alpha_abs``: sums of |term| behind ``grad_A`` / ``grad_alpha``
    (module notes), for rounding bounds.
    """

    risk: float
    error: float
    bayes_error: float
    probability: float
    patterns: int
    grad_alpha: float | None = None
    grad_Q: np.ndarray | None = None
    grad_A: np.ndarray | None = None
    grad_A_abs: np.ndarray | None = None
    grad_alpha_abs: float | None = None


def pattern_count(L: int, C: int) -> int:
    """Number of (y, l*, noise pattern) triples the oracle visits."""
    return 2 * L * 3 ** ((L - 1) * C)


def _check(structure, q, p, nu, alpha):
    if not isinstance(structure, Structure):
        raise ValueError("structure must be a patchassoc.theory.structure.Structure")
    if isinstance(q, bool) or not (0.0 <= float(q) <= 1.0):
        raise ValueError(f"q must lie in [0, 1], got {q!r}")
    if isinstance(p, bool) or int(p) != p or p < 3 or int(p) % 2 == 0:
        raise ValueError(f"p must be an odd integer >= 3, got {p!r}")
    nu = float(nu)
    if not (math.isfinite(nu) and nu >= 0):
        raise ValueError(f"nu must be finite and >= 0, got {nu!r}")
    alpha = float(alpha)
    if not math.isfinite(alpha):
        raise ValueError(f"alpha must be finite, got {alpha!r}")
    return float(q), int(p), nu, alpha


def _noise_patterns(n: int) -> np.ndarray:
    """All 3^n vectors in {0, +1, -1}^n (rows), the first coordinate varying fastest."""
    pats = np.zeros((3 ** n, n))
    idx = np.arange(3 ** n)
    for k in range(n):
        digit = (idx // 3 ** k) % 3
        pats[:, k] = np.where(digit == 1, 1.0, np.where(digit == 2, -1.0, 0.0))
    return pats


def bruteforce_risk(Q: np.ndarray, structure: Structure, q: float, p: int, nu: float,
                    alpha: float, *, grad: bool = False,
                    max_work: int = MAX_PATTERN_WORK) -> BruteForce:
    """Population risk, zero-one error and Bayes error of logits ``Q``, by full enumeration.

    Parameters
    ----------
    Q : (D, D) array
        Any logit matrix (A = row-softmax(Q)); no invariance is assumed.
    structure : Structure
        The partition S.
    q, p, nu : float, int, float
        Feature-noise rate and activation act(t) = t^p + nu t.
    alpha : float
        <v, w*> (no projection noise).
    grad : bool
        Also return d risk / d alpha and d risk / d Q (D x D).
    max_work : int
        Refuse when 2 L 3^((L-1)C) D^2 exceeds this (ValueError with the count).

    References
    ----------
    SPEC section 5.
    """
    q, p, nu, alpha = _check(structure, q, p, nu, alpha)
    L, C, D = structure.L, structure.C, structure.D
    Q = np.asarray(Q, dtype=np.float64)
    if Q.shape != (D, D):
        raise ValueError(f"Q must have shape ({D}, {D}), got {Q.shape}")
    if not np.all(np.isfinite(Q)):
        raise ValueError("Q contains non-finite values")
    n_pat = pattern_count(L, C)
    if n_pat * D * D > max_work:
        raise ValueError(f"brute force at L={L}, C={C} visits {n_pat:,} patterns "
                         f"(work {n_pat * D * D:.3g} > cap {max_work:.3g}); use the exact "
                         f"engine for invariant Q")
    A = softmax(Q)
    Aabs = abs(alpha)
    tie = TIE_RTOL * D * act_value(Aabs, p, nu)
    sets = np.asarray(structure.sets, dtype=np.int64)
    terms: dict[str, list] = {k: [] for k in ("risk", "error", "prob", "galpha",
                                              "galpha_abs")}
    gA = np.zeros((D, D))
    gA_abs = np.zeros((D, D))
    for y, w, sig, noise, P in _chunks(sets, q):
        # u_i = sum_j A_ij s_j, with s_j = y on the signal set and the pattern P elsewhere
        # (einsum: single-threaded, unlike a BLAS product that spins threads on a busy machine)
        u = np.einsum("nk,ik->ni", P, A[:, noise]) + y * A[:, sig].sum(axis=1)
        act, dact = activation(alpha * u, p, nu)
        m = y * act.sum(axis=1)
        loss, dl = logistic(m)
        # per chunk: NumPy's pairwise sum (rounding <= ~log2(n) eps sum |terms|)
        terms["risk"].append(np.sum(w * loss))
        terms["error"].append(np.sum(w * np.where(m < -tie, 1.0,
                                                  np.where(m <= tie, 0.5, 0.0))))
        terms["prob"].append(np.sum(w))
        if grad:
            G = (w * y * dl)[:, None] * dact        # d loss / d z_i, weighted
            Gu = G * u
            terms["galpha"].append(np.sum(Gu))
            terms["galpha_abs"].append(np.sum(np.abs(Gu)))
            # d risk / d A_ij = alpha sum_patterns G_i s_j, in blocks of _BLOCK
            gA[:, noise] += alpha * _blocked_gram(G, P)
            gA[:, sig] += alpha * y * _blocked_gram(G, np.ones((w.size, 1)))
            absG = np.abs(G)
            gA_abs[:, noise] += Aabs * np.einsum("ni,nk->ik", absG, np.abs(P))
            gA_abs[:, sig] += Aabs * absG.sum(axis=0)[:, None]
    total = {k: math.fsum(v) if v else None for k, v in terms.items()}
    bayes = _bayes_error(tuple(map(tuple, sets.tolist())), q)
    out = dict(risk=total["risk"], error=total["error"], bayes_error=bayes,
               probability=total["prob"], patterns=n_pat)
    if not grad:
        return BruteForce(**out)
    return BruteForce(**out, grad_alpha=total["galpha"], grad_Q=grad_logits(A, gA), grad_A=gA,
                      grad_A_abs=gA_abs, grad_alpha_abs=total["galpha_abs"])


def _blocked_gram(G: np.ndarray, s: np.ndarray) -> np.ndarray:
    """G^T s summed as blocks of ``_BLOCK`` patterns (matrix products), then block by block:
    rounding <= ~(_BLOCK + number of blocks) eps sum |G_pi s_pj| per entry."""
    n, D = G.shape
    k = s.shape[1]
    nb = -(-n // _BLOCK)
    pad = nb * _BLOCK - n
    if pad:
        G = np.concatenate([G, np.zeros((pad, D))])
        s = np.concatenate([s, np.zeros((pad, k))])
    Gb = G.reshape(nb, _BLOCK, D)
    sb = s.reshape(nb, _BLOCK, k)
    return np.sum(np.matmul(Gb.transpose(0, 2, 1), sb), axis=0)


@functools.lru_cache(maxsize=32)
def _bayes_error(sets: tuple, q: float) -> float:
    """Bayes error by the same enumeration (it depends on the partition and q only, so it is
    computed once per (partition, q))."""
    sets = np.array(sets, dtype=np.int64)
    C = sets.shape[1]
    pset = (q / 2.0) ** np.arange(C + 1) * (1.0 - q) ** (C - np.arange(C + 1))
    parts = []
    for y, w, sig, noise, P in _chunks(sets, q):
        parts.append(np.sum(w * _bayes_wrong(P, y, sig, noise, sets, pset)))
    return math.fsum(parts)


def _chunks(sets: np.ndarray, q: float):
    """Every (y, l*, noise pattern), in chunks of at most ``_CHUNK`` patterns: yields
    (y, w, sig, noise, P) with w the probabilities (q/2)^n (1-q)^((L-1)C - n) / (2L), sig the
    patches of the signal set l* (feature coefficient y), noise the other patches and P the
    (chunk, (L-1)C) patterns of their coefficients."""
    L, C = sets.shape
    D = L * C
    N = (L - 1) * C
    pats = _noise_patterns(N)
    nnz = np.count_nonzero(pats, axis=1)
    prob = (q / 2.0) ** nnz * (1.0 - q) ** (N - nnz) / (2.0 * L)
    for lstar in range(L):
        noise = np.setdiff1d(np.arange(D), sets[lstar])
        for y in (1.0, -1.0):
            for lo in range(0, pats.shape[0], _CHUNK):
                yield y, prob[lo:lo + _CHUNK], sets[lstar], noise, pats[lo:lo + _CHUNK]


def _bayes_wrong(P: np.ndarray, y: float, sig: np.ndarray, noise: np.ndarray,
                 sets: np.ndarray, pset: np.ndarray) -> np.ndarray:
    """Per pattern: 1 if the Bayes decision is wrong, 1/2 on a tie of the likelihoods, else 0.
    Set l's coefficients are y on the signal set ``sig`` and the columns of ``P`` of its patches
    (P's columns are the patches ``noise``, in order) elsewhere."""
    n = P.shape[0]
    L, C = sets.shape
    p_set = np.empty((n, L))                            # probability of each set's state
    all_pos = np.empty((n, L), dtype=bool)
    all_neg = np.empty((n, L), dtype=bool)
    for l in range(L):
        if np.array_equal(sets[l], sig):
            p_set[:, l] = pset[C]
            all_pos[:, l] = y > 0
            all_neg[:, l] = y < 0
            continue
        S = P[:, np.searchsorted(noise, sets[l])]      # (n, C)
        p_set[:, l] = pset[np.count_nonzero(S, axis=1)]
        all_pos[:, l] = np.all(S == 1.0, axis=1)
        all_neg[:, l] = np.all(S == -1.0, axis=1)
    # prod_{l' != l} p(s_l') as (product of the sets before l) x (product of those after l)
    before = np.ones((n, L))
    after = np.ones((n, L))
    before[:, 1:] = np.cumprod(p_set[:, :-1], axis=1)
    after[:, :-1] = np.cumprod(p_set[:, :0:-1], axis=1)[:, ::-1]
    others = before * after
    like_p = np.sum(np.where(all_pos, others, 0.0), axis=1)
    like_m = np.sum(np.where(all_neg, others, 0.0), axis=1)
    tie = np.abs(like_p - like_m) <= BAYES_TIE * np.maximum(like_p, like_m)
    return np.where(tie, 0.5, np.where((like_p > like_m) != (y > 0), 1.0, 0.0))
