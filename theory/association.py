"""Patch association as the paper defines it (Definition 2.2), and the set-mate share.

For a structure S (a partition of [D] into L sets of size C, S(i) the set of patch i):

- **Def. 2.2 (``topc``).** Row i of a score matrix M passes when its C largest entries are
  exactly S(i), i itself included. The scores are the logits Q (free logits), the positional
  Gram matrix P P^T (Gram form), or the attention A itself (a bare attention matrix). The model
  performs patch association when every row passes.
- **Set-mate share.** share_i = sum_{j in S(i), j != i} A_ij / (1 - A_ii), with 0/0 read as 0:
  the part of row i's attention that leaves i and lands on its own set. Uniform attention gives
  (C-1)/(D-1), block-uniform 1, identity 0. The denominator is computed as the sum of the
  off-diagonal entries of the row, not as 1 - A_ii, so that an attention concentrated on its
  diagonal (A_ii = 1 - 1e-20, say) keeps its share instead of rounding to 0/0.
- **Association at level eps.** topc holds in every row and min_i share_i >= 1 - eps.
- Within-set mass m_i = sum_{j in S(i)} A_ij counts A_ii and is reported as a description only.

Ties
----
Def. 2.2 is a statement about real numbers: a tie between the C-th and (C+1)-th largest entries
means the top-C set is not determined, and the row fails. In floating point, two entries that
are equal in exact arithmetic (uniform attention, b = c in an invariant matrix, a fixed point
of gradient descent) come out equal only up to rounding, and rounding noise must not decide the
ranking. A row's boundary gap g = x_(C) - x_(C+1) (sorted decreasingly) therefore counts as a
tie when ``g <= TIE_RTOL * scale``, with

- scores that are logits (``logits``, ``gram``): scale = max_j |M_ij|, the rounding scale of the
  stored entries (a sum of terms of that size is exact only to a few ulps of it);
- attention values (``attention``): scale = x_(C), the larger of the two compared values, since
  a softmax output carries relative, not absolute, precision.

``TIE_RTOL = 1e-9``: rounding after 10^4 gradient steps is at most ~1e4 x 2.2e-16 = 2e-12 of the
scale (500x below it), while a gap of 1e-9 of the scale changes attention weights by a factor of
at most ~1 + 1e-9 x scale, which no one would call association.

Attention inputs must be row-stochastic: entries >= 0 and row sums within
``ROW_SUM_ATOL = 1e-4`` of 1 (a float32 softmax over a few hundred patches is within ~1e-5; a
matrix of unnormalized scores or a column-normalized map is off by far more).

References
----------
SPEC section 3; the paper's Definition 2.2 (PAPER.md).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from patchassoc.theory.structure import Structure, within_set_mass

__all__ = ["share_log_odds", "Association", "KINDS", "TIE_RTOL", "ROW_SUM_ATOL", "GRAM_SYMMETRY_RTOL",
           "as_structure", "topc_rows", "topc_disjoint_rows", "set_mate_share", "associate",
           "invariant_association", "attention_from", "CONTROLS", "REFERENCE", "CONTROL_LABELS",
           "control_matrix", "control_records"]

#: What the matrix handed to :func:`associate` is.
KINDS = ("logits", "gram", "attention")
#: Relative size of a boundary gap below which two scores count as tied (module docstring).
TIE_RTOL = 1e-9
#: How far from 1 the rows of an attention input may sum.
ROW_SUM_ATOL = 1e-4
#: How far from symmetric a Gram input P P^T may be, relative to its largest entry (a float32
#: product is symmetric to ~1e-7; a matrix that is not a Gram matrix is off by O(1)).
GRAM_SYMMETRY_RTOL = 1e-5


def as_structure(structure, D: int | None = None) -> Structure:
    """A :class:`~patchassoc.theory.structure.Structure` from a Structure or an (L, C) integer
    array partitioning 0..D-1.

    Raises
    ------
    ValueError
        If the sets are not an (L, C) integer array, do not partition 0..L*C-1, or have
        L*C != D when ``D`` is given.
    """
    if not isinstance(structure, Structure):
        sets = np.asarray(structure)
        if sets.ndim != 2 or sets.size == 0:
            raise ValueError(f"sets must be a non-empty (L, C) integer array, got shape "
                             f"{sets.shape}")
        if not np.issubdtype(sets.dtype, np.integer):
            raise ValueError(f"sets must hold integer patch indices, got dtype {sets.dtype}")
        structure = Structure(sets.astype(np.int64))
    if D is not None and structure.D != D:
        raise ValueError(f"sets cover {structure.D} patches (L={structure.L}, C={structure.C}) "
                         f"but the matrix is {D} x {D}")
    return structure


def _square(M, name: str = "M") -> np.ndarray:
    M = np.asarray(M)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {M.shape}")
    if not (np.issubdtype(M.dtype, np.floating) or np.issubdtype(M.dtype, np.integer)):
        raise ValueError(f"{name} must hold real numbers, got dtype {M.dtype}")
    M = np.asarray(M, dtype=np.float64)
    if not np.all(np.isfinite(M)):
        raise ValueError(f"{name} contains non-finite values (nan or inf)")
    return M


def _check_attention(A: np.ndarray) -> None:
    if np.any(A < 0):
        raise ValueError("attention has negative entries: kind='attention' needs a "
                         "row-stochastic matrix")
    if np.any(A > 1.0 + ROW_SUM_ATOL):
        # checked before the row sums, which overflow for entries near 1e308
        i, j = (int(k) for k in np.argwhere(A > 1.0 + ROW_SUM_ATOL)[0])
        raise ValueError(f"attention entries must lie in [0, 1]; entry ({i}, {j}) is "
                         f"{A[i, j]:.6g}")
    dev = np.abs(A.sum(axis=1) - 1.0)
    if np.any(dev > ROW_SUM_ATOL):
        i = int(np.argmax(dev))
        raise ValueError(f"attention rows must sum to 1 (within {ROW_SUM_ATOL:g}); row {i} "
                         f"sums to {A[i].sum():.6g}")


def topc_rows(M, structure, *, relative_to: str = "row") -> np.ndarray:
    """Which rows satisfy Def. 2.2: the C largest entries of row i are exactly S(i).

    Parameters
    ----------
    M : array_like, shape (D, D)
        Scores ranked per row: logits Q, a Gram matrix P P^T, or an attention matrix.
    structure : Structure or array_like of int, shape (L, C)
        The sets.
    relative_to : {"row", "entry"}
        Scale of the tie test: ``"row"`` (max |M_ij| of the row; for logits) or ``"entry"``
        (the C-th largest value; for attention values). See the module docstring.

    Returns
    -------
    ndarray of bool, shape (D,)
        ``True`` where the row passes. A tie at the boundary (gap <= TIE_RTOL x scale) fails.

    References
    ----------
    SPEC section 3 (Def. 2.2 of the paper).
    """
    M = _square(M)
    S = as_structure(structure, M.shape[0])
    if relative_to not in ("row", "entry"):
        raise ValueError(f"relative_to must be 'row' or 'entry', got {relative_to!r}")
    D, C = S.D, S.C
    B = S.same_set().astype(bool)
    if C == D:  # one set: every row's top-D is the whole row, there is no (C+1)-th entry
        return np.ones(D, dtype=bool)
    inside = np.where(B, M, np.inf).min(axis=1)      # smallest score on S(i)
    outside = np.where(B, -np.inf, M).max(axis=1)    # largest score off S(i)
    gap = inside - outside
    if relative_to == "row":
        scale = np.abs(M).max(axis=1)
    else:
        scale = np.abs(inside)
    return gap > TIE_RTOL * scale


def topc_disjoint_rows(M, structure, *, relative_to: str = "row") -> np.ndarray:
    """Rows whose C largest entries contain no patch of S(i) (i itself included).

    This is the opposite extreme of Def. 2.2, the property of the paper's Theorem 3.2
    construction. The top-C set must be determined: a tie between the C-th and (C+1)-th largest
    entries (same rule as :func:`topc_rows`) fails the row.

    Returns
    -------
    ndarray of bool, shape (D,)

    References
    ----------
    SPEC sections 3 and 6 (claim 3).
    """
    M = _square(M)
    S = as_structure(structure, M.shape[0])
    if relative_to not in ("row", "entry"):
        raise ValueError(f"relative_to must be 'row' or 'entry', got {relative_to!r}")
    D, C = S.D, S.C
    if C == D:
        return np.zeros(D, dtype=bool)
    order = np.argsort(-M, axis=1, kind="stable")
    rows = np.arange(D)
    kth = M[rows, order[:, C - 1]]
    nxt = M[rows, order[:, C]]
    scale = np.abs(M).max(axis=1) if relative_to == "row" else np.abs(kth)
    determined = kth - nxt > TIE_RTOL * scale
    top = order[:, :C]
    hits = (S.labels[top] == S.labels[:, None]).any(axis=1)
    return determined & ~hits


def attention_from(M, kind: str) -> np.ndarray:
    """A = row-softmax(M) for logits / Gram scores; M itself (validated) for attention."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    M = _square(M)
    if kind == "attention":
        _check_attention(M)
        return M
    if kind == "gram":
        sym = np.abs(M - M.T).max()
        if sym > GRAM_SYMMETRY_RTOL * max(np.abs(M).max(), 1e-300):
            raise ValueError(f"a Gram matrix P P^T must be symmetric; |M - M^T| reaches "
                             f"{sym:.3g}")
    E = np.exp(M - M.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def set_mate_share(A, structure) -> np.ndarray:
    """share_i = sum_{j in S(i), j != i} A_ij / sum_{j != i} A_ij, with 0/0 read as 0.

    The denominator is 1 - A_ii for a row-stochastic A, computed from the off-diagonal entries
    so that it does not cancel when A_ii is close to 1.

    Parameters
    ----------
    A : array_like, shape (D, D)
        Attention weights (non-negative).
    structure : Structure or array_like of int, shape (L, C)

    Returns
    -------
    ndarray, shape (D,)

    References
    ----------
    SPEC section 3.
    """
    A = _square(A, "A")
    if np.any(A < 0):
        raise ValueError("A must have non-negative entries")
    S = as_structure(structure, A.shape[0])
    off = ~np.eye(S.D, dtype=bool)
    mate = S.same_set().astype(bool) & off
    num = np.where(mate, A, 0.0).sum(axis=1)
    den = np.where(off, A, 0.0).sum(axis=1)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


@dataclass(frozen=True)
class Association:
    """The paper's association verdict on one matrix (SPEC section 3).

    Attributes
    ----------
    topc_rows : int
        Number of rows satisfying Def. 2.2.
    topc : bool
        All D rows satisfy it.
    share_mean, share_min : float
        Set-mate share over rows.
    mass_mean, mass_min : float
        Within-set mass over rows (descriptive only).
    associated : bool
        ``topc and share_min >= 1 - eps``.
    eps : float
    kind : str
        ``logits``, ``gram`` or ``attention``.
    D, C : int
    """

    topc_rows: int
    topc: bool
    share_mean: float
    share_min: float
    mass_mean: float
    mass_min: float
    associated: bool
    eps: float
    kind: str
    D: int
    C: int

    def to_dict(self) -> dict:
        return asdict(self)


def share_log_odds(Q, structure) -> np.ndarray:
    """u_i = log(share_i / (1 - share_i)) for the attention A = row-softmax(Q): the log-odds of
    row i's set-mate share, computed from the logits without forming the share (no cancellation
    as the share tends to 1):

        u_i = logsumexp_{j in S(i), j != i} Q_ij - logsumexp_{j not in S(i)} Q_ij.

    For invariant logits a I + b (B - I) + c (J - B) it is b - c + ln((C - 1) / (D - C)), so it
    is the sampled analogue of b - c (SPEC section 6, the empirical-risk flow). +inf for a row
    without other sets, -inf for a row without set-mates (C = 1).

    Parameters
    ----------
    Q : array_like, shape (D, D)
        Logits (finite).
    structure : Structure or array_like of int, shape (L, C)

    Returns
    -------
    ndarray, shape (D,)
    """
    Q = _square(Q, "Q")
    if not np.all(np.isfinite(Q)):
        raise ValueError("Q must be finite")
    S = as_structure(structure, Q.shape[0])
    off = ~np.eye(S.D, dtype=bool)
    mate = S.same_set().astype(bool) & off
    other = ~S.same_set().astype(bool)

    def lse(row, mask) -> float:
        # the C library's scalar exp and log (NumPy's vectorized ones give CPU-dependent bits)
        vals = [float(x) for x in row[mask]]
        if not vals:
            return -math.inf
        mx = max(vals)
        return mx + math.log(math.fsum(math.exp(x - mx) for x in vals))

    return np.array([lse(Q[i], mate[i]) - lse(Q[i], other[i]) for i in range(S.D)])


def _check_eps(eps) -> float:
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.floating)) \
            or not math.isfinite(eps) or not 0.0 <= eps <= 1.0:
        raise ValueError(f"eps must be a number in [0, 1], got {eps!r}")
    return float(eps)


def associate(M, structure, kind: str = "logits", eps: float = 0.1) -> Association:
    """Score a matrix with the paper's definition of patch association.

    Parameters
    ----------
    M : array_like, shape (D, D)
        ``kind="logits"``: logits Q, A = row-softmax(Q), Def. 2.2 ranked on Q.
        ``kind="gram"``: a Gram matrix P P^T used as logits (same as logits; must be symmetric).
        ``kind="attention"``: A itself (rows sum to 1), Def. 2.2 ranked on A.
    structure : Structure or array_like of int, shape (L, C)
        The sets; must partition 0..D-1.
    kind : {"logits", "gram", "attention"}
    eps : float in [0, 1]
        Level of association: ``associated`` needs ``share_min >= 1 - eps``.

    Returns
    -------
    Association

    Raises
    ------
    ValueError
        Non-square or non-finite M, sets that do not partition 0..D-1, an attention whose rows do
        not sum to 1 or has negative entries, a non-symmetric Gram matrix, a bad kind or eps.

    References
    ----------
    SPEC section 3.
    """
    eps = _check_eps(eps)
    A = attention_from(M, kind)
    M = _square(M)
    S = as_structure(structure, M.shape[0])
    rows = topc_rows(M, S, relative_to="entry" if kind == "attention" else "row")
    share = set_mate_share(A, S)
    mass = within_set_mass(A, S)
    n = int(rows.sum())
    return Association(topc_rows=n, topc=bool(n == S.D), share_mean=float(share.mean()),
                       share_min=float(share.min()), mass_mean=float(mass.mean()),
                       mass_min=float(mass.min()),
                       associated=bool(n == S.D and share.min() >= 1.0 - eps),
                       eps=eps, kind=kind, D=S.D, C=S.C)


def invariant_association(a: float, b: float, c: float, L: int, C: int,
                          eps: float = 0.1) -> Association:
    """:func:`associate` for the invariant logits Q = a I + b (B - I) + c (J - B), in closed form.

    Def. 2.2 holds in every row iff every score in S(i) beats every score outside it: a > c and,
    when C >= 2, b > c (with the tie rule of the module docstring, scale max(|a|, |b|, |c|) over
    the classes present). With L = 1 there is nothing outside S(i) and every row passes. The
    share is (C-1) e^b / ((C-1) e^b + (D-C) e^c) = (C-1) / ((C-1) + (D-C) e^(c-b)), the same in
    every row (0 when C = 1 or when there is no off-diagonal entry).

    Parameters
    ----------
    a, b, c : float
        Diagonal, within-set and across-set logits.
    L, C : int
    eps : float

    Returns
    -------
    Association
        ``kind="logits"``, identical in every row.

    References
    ----------
    SPEC sections 3-4.
    """
    for name, v in (("L", L), ("C", C)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    L, C = int(L), int(C)
    D = L * C
    vals = [float(a), float(b), float(c)]
    if not all(math.isfinite(x) for x in vals):
        raise ValueError(f"a, b, c must be finite, got {vals}")
    a, b, c = vals
    eps = _check_eps(eps)
    if L == 1:
        topc = True
    else:
        present = [a, c] + ([b] if C > 1 else [])
        tol = TIE_RTOL * max(abs(x) for x in present)
        inside = min(a, b) if C > 1 else a
        topc = inside - c > tol
    if C == 1 or D == C:
        share = 0.0 if C == 1 else 1.0
    else:
        share = (C - 1) / ((C - 1) + (D - C) * math.exp(min(c - b, 700.0)))
    # Within-set mass, stable: e^a + (C-1) e^b over Z, all relative to the largest logit.
    mx = max([a] + ([b] if C > 1 else []) + ([c] if L > 1 else []))
    ea = math.exp(a - mx)
    eb = (C - 1) * math.exp(b - mx) if C > 1 else 0.0
    ec = (D - C) * math.exp(c - mx) if L > 1 else 0.0
    mass = (ea + eb) / (ea + eb + ec)
    return Association(topc_rows=D if topc else 0, topc=bool(topc), share_mean=float(share),
                       share_min=float(share), mass_mean=float(mass), mass_min=float(mass),
                       associated=bool(topc and share >= 1.0 - eps), eps=eps, kind="logits",
                       D=D, C=C)


# -- negative controls (SPEC section 6: every claim's controls must fail association) ----------

#: The negative controls, in the order tables list them, and the positive reference.
CONTROLS = ("identity-heavy", "identity", "uniform", "wrong-partition")
REFERENCE = "block-uniform"
#: Logit scale of the hard constructions (identity, block-uniform, wrong partition): large
#: enough that every softmax row is within e^-50 of its hard limit.
CONTROL_SCALE = 50.0
CONTROL_LABELS = {
    "identity-heavy": "identity-heavy attention 0.85 I + 0.15 J/D",
    "identity": f"identity logits {CONTROL_SCALE:g} I",
    "uniform": "uniform attention (zero logits)",
    "wrong-partition": f"block-uniform on a wrong partition ({CONTROL_SCALE:g} B')",
    "block-uniform": f"block-uniform on S ({CONTROL_SCALE:g} B)",
}


def control_matrix(name: str, structure) -> tuple[np.ndarray, str]:
    """The matrix of a control (or of the reference ``block-uniform``) and its kind.

    - ``identity-heavy``: the attention 0.85 I + 0.15 J/D (within-set mass 0.85 + 0.15 C/D in
      every row, yet share (C-1)/(D-1) and every off-diagonal entry tied);
    - ``identity``: logits 50 I (off-diagonal entries tied);
    - ``uniform``: logits 0 (every entry tied);
    - ``wrong-partition``: logits 50 B' with B' the same-set indicator of the round-robin
      partition S' that cuts across S (:func:`patchassoc.theory.solutions.wrong_partition`);
    - ``block-uniform``: logits 50 B, the positive reference (associated).
    """
    from patchassoc.theory.solutions import wrong_partition
    S = as_structure(structure)
    D = S.D
    if name == "identity-heavy":
        return 0.85 * np.eye(D) + 0.15 / D * np.ones((D, D)), "attention"
    if name == "identity":
        return CONTROL_SCALE * np.eye(D), "logits"
    if name == "uniform":
        return np.zeros((D, D)), "logits"
    if name == "wrong-partition":
        return CONTROL_SCALE * wrong_partition(S).same_set(), "logits"
    if name == REFERENCE:
        return CONTROL_SCALE * S.same_set(), "logits"
    raise ValueError(f"unknown control {name!r} (choose from "
                     f"{', '.join(CONTROLS + (REFERENCE,))})")


def control_records(structure, eps: float = 0.1, include_reference: bool = True) -> list[dict]:
    """Every negative control (and the positive reference) scored by :func:`associate`.

    Returns
    -------
    list of dict
        One per matrix: ``name``, ``label``, ``expected`` (``"fail"`` for controls, ``"pass"``
        for the reference), the :class:`Association` fields, and ``ok``: the control failed
        association (the reference passed). A control with ``ok = False`` fails its claim.

    References
    ----------
    SPEC section 6 (controls of claims 1-3).
    """
    S = as_structure(structure)
    if S.L < 2 or S.C < 2:
        raise ValueError(f"the controls need L >= 2 and C >= 2 (with one set, or sets of one "
                         f"patch, every attention is trivially associated or never is); got "
                         f"L={S.L}, C={S.C}")
    names = CONTROLS + ((REFERENCE,) if include_reference else ())
    records = []
    for name in names:
        M, kind = control_matrix(name, S)
        result = associate(M, S, kind=kind, eps=eps)
        expected = "pass" if name == REFERENCE else "fail"
        records.append({"name": name, "label": CONTROL_LABELS[name], "expected": expected,
                        **result.to_dict(),
                        "ok": bool(result.associated == (expected == "pass"))})
    return records
