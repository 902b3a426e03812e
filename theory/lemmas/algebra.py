"""The algebra of invariant matrices, with the sizes L and C as sympy symbols.

Patches are the pairs (l, c), l in [0, L), c in [0, C), D = L C. Every ordered pair of patches
(i, j) has one of three types (the orbitals of the structure group G, lemma L3):

====  ===================  ==========================  ==================
type  pairs                indicator matrix             valency (j per i)
====  ===================  ==========================  ==================
0     i = j                E0 = I                      1
1     same set, i != j     E1 = B - I                  C - 1
2     different sets       E2 = J - B                  D - C
====  ===================  ==========================  ==================

B is the same-set indicator and J the all-ones matrix. The three indicators have disjoint
supports and sum to J, so an entrywise function acts coordinatewise on
M = a E0 + b E1 + c E2 (the coordinates (a, b, c) used throughout).

**Structure constants.** (E_r E_s)_ij counts the k with type(i, k) = r and type(k, j) = s; this
number p^t_rs depends only on t = type(i, j) (the intersection numbers, counted by hand in
:func:`intersection_numbers`, derived from the entries with symbolic sizes in lemma L14, and
counted exactly at sizes up to (8, 8)). Hence
E_r E_s = sum_t p^t_rs E_t: span(I, B, J) is a commutative algebra, with B^2 = C B,
B J = J B = C J, J^2 = D J.

**Eigenspaces.** E_const = J / D, E_set = B / C - J / D, E_in = I - B / C are orthogonal
idempotents summing to I, with traces 1, L - 1, D - L: the constant vectors, the vectors constant on
each set that sum to zero, the vectors that sum to zero within each set. On them
M = a E0 + b E1 + c E2 has the eigenvalues

    lam_const = a + (C - 1) b + (D - C) c   (the row sum of M),
    lam_set   = a + (C - 1) b - C c,
    lam_in    = a - b,

and a function of a matrix is g(M) = sum_k g(lam_k) E_k. Row-softmax is not a matrix function but
an entrywise exp followed by a division by the row sum:
softmax(M) = exp.(M) / lam_const(exp.(M)).

**Vectors.** For a vector u and a patch i = (l, c), (I u)_i = u_i, (B u)_i = S_l (the sum of u over
set l) and (J u)_i = T (the sum over all patches), so (M u)_i = a u_i + b (S_l - u_i) + c (T - S_l).
:func:`indexed_apply` derives the same from the entries of M with sympy sums over symbolic ranges.

References
----------
SPEC section 4; issue 12.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

__all__ = ["L", "C", "D", "TYPES", "Inv", "I_", "B_", "J_", "basis", "valencies",
           "intersection_numbers", "idempotents", "count_intersections", "partition_labels",
           "canon", "in_range", "indexed_apply", "sum_deltas", "delta_cases",
           "normal_deltas", "set_sum", "total_sum", "u", "l_",
           "c_", "m_", "e_"]

#: The sizes: number of sets and set size (positive integer symbols); D = L C patches.
L, C = sp.symbols("L C", integer=True, positive=True)
D = L * C

TYPES = ("I", "B - I", "J - B")

#: Patch indices (l, c) and summation indices (m, e) for the indexed (entrywise) computations.
l_, c_, m_, e_ = sp.symbols("l c m e", integer=True, nonnegative=True)
u = sp.IndexedBase("u")


def valencies(L_=L, C_=C) -> tuple:
    """Number of j of each type for a fixed i: (1, C - 1, D - C)."""
    return (sp.Integer(1), C_ - 1, L_ * C_ - C_)


def intersection_numbers(L_=L, C_=C) -> dict:
    """p[t][(r, s)]: for a pair (i, j) of type t, the number of k with type(i, k) = r and
    type(k, j) = s. Counted by cases on where k lies (pairs not listed are 0)."""
    D_ = L_ * C_
    return {
        # i = j: k = i; k a set-mate of i; k in another set
        0: {(0, 0): 1, (1, 1): C_ - 1, (2, 2): D_ - C_},
        # i != j in one set: k = i; k = j; k another mate of both; k outside the set
        1: {(0, 1): 1, (1, 0): 1, (1, 1): C_ - 2, (2, 2): D_ - C_},
        # i in set l, j in set m != l: k = i; k = j; k another member of l; k another member
        # of m; k in neither set
        2: {(0, 2): 1, (2, 0): 1, (1, 2): C_ - 1, (2, 1): C_ - 1, (2, 2): D_ - 2 * C_},
    }


def partition_labels(L_: int, C_: int, layout: str = "interleaved") -> np.ndarray:
    """Set label of each patch: contiguous blocks, or interleaved (S_l = {l, l + L, ...})."""
    idx = np.arange(L_ * C_)
    return idx // C_ if layout == "blocks" else idx % L_


def count_intersections(labels: np.ndarray) -> dict:
    """The intersection numbers counted by brute force for a concrete partition (exact ints);
    ``{t: {(r, s): count}}`` with a ValueError if a count depends on the pair, not only on t."""
    labels = np.asarray(labels)
    n = labels.size
    same = labels[:, None] == labels[None, :]
    eye = np.eye(n, dtype=bool)
    T = np.where(eye, 0, np.where(same, 1, 2))
    out: dict = {0: {}, 1: {}, 2: {}}
    for r in range(3):
        for s in range(3):
            # counts[i, j] = #{k : T[i, k] = r and T[k, j] = s}
            counts = (T == r).astype(np.int64) @ (T == s).astype(np.int64)
            for t in range(3):
                vals = np.unique(counts[T == t])
                if vals.size > 1:
                    raise ValueError(f"p^{t}_{r}{s} is not constant: {vals}")
                if vals.size == 1 and vals[0] != 0:
                    out[t][(r, s)] = int(vals[0])
    return out


@dataclass(frozen=True)
class Inv:
    """An invariant matrix a I + b (B - I) + c (J - B), by its coordinates (sympy expressions),
    at sizes (L, C) (symbols by default)."""

    a: sp.Expr
    b: sp.Expr
    c: sp.Expr
    L: sp.Expr = L
    C: sp.Expr = C

    @property
    def D(self):
        return self.L * self.C

    @property
    def coords(self) -> tuple:
        return (self.a, self.b, self.c)

    def _new(self, a, b, c) -> "Inv":
        return Inv(a, b, c, self.L, self.C)

    def __add__(self, other: "Inv") -> "Inv":
        return self._new(*(x + y for x, y in zip(self.coords, other.coords)))

    def __sub__(self, other: "Inv") -> "Inv":
        return self._new(*(x - y for x, y in zip(self.coords, other.coords)))

    def scale(self, k) -> "Inv":
        return self._new(*(k * x for x in self.coords))

    def __mul__(self, other: "Inv") -> "Inv":
        """Matrix product, by the structure constants E_r E_s = sum_t p^t_rs E_t."""
        p = intersection_numbers(self.L, self.C)
        out = [sp.Integer(0)] * 3
        for r, x in enumerate(self.coords):
            for s, y in enumerate(other.coords):
                for t in range(3):
                    out[t] += x * y * p[t].get((r, s), 0)
        return self._new(*out)

    def hadamard(self, other: "Inv") -> "Inv":
        """Entrywise product (the supports of I, B - I, J - B are disjoint)."""
        return self._new(*(x * y for x, y in zip(self.coords, other.coords)))

    def entrywise(self, fn) -> "Inv":
        """fn applied to every entry."""
        return self._new(*(fn(x) for x in self.coords))

    def row_sum(self):
        """The common row sum: sum over the three types of coordinate x valency."""
        return sp.Add(*[x * v for x, v in zip(self.coords, valencies(self.L, self.C))])

    def entry_counts(self) -> tuple:
        """Number of entries of each type: D x valency = (D, D (C - 1), D (D - C))."""
        return tuple(self.D * v for v in valencies(self.L, self.C))

    def frobenius(self, other: "Inv"):
        """<M, N> = sum_ij M_ij N_ij."""
        return sp.Add(*[x * y * n for x, y, n in zip(self.coords, other.coords,
                                                      self.entry_counts())])

    def trace(self):
        return self.D * self.a

    def eigenvalues(self) -> tuple:
        """(lam_const, lam_set, lam_in): eigenvalues on the eigenspaces of dimensions
        1, L - 1, D - L."""
        a, b, c = self.coords
        return (a + (self.C - 1) * b + (self.D - self.C) * c, a + (self.C - 1) * b - self.C * c,
                a - b)

    def softmax(self) -> "Inv":
        """Row softmax: entrywise exp over the row sum (the eigenvalue on constant vectors)."""
        E = self.entrywise(sp.exp)
        Z = E.row_sum()
        return E.entrywise(lambda x: x / Z)

    def apply(self, ui, Sl, T):
        """(M u)_i from the three sums seen by patch i: u_i, S_l(i), T."""
        return self.a * ui + self.b * (Sl - ui) + self.c * (T - Sl)

    def is_zero(self, up_to: str = "cancel") -> bool:
        from patchassoc.theory.lemmas._core import is_zero
        return all(is_zero(x, up_to) for x in self.coords)

    def matrix(self, labels) -> sp.Matrix:
        """The explicit D x D matrix for a concrete partition (set label of each patch)."""
        labels = list(labels)
        n = len(labels)
        return sp.Matrix(n, n, lambda i, j: self.a if i == j else
                         (self.b if labels[i] == labels[j] else self.c))


def I_(L_=L, C_=C) -> Inv:
    return Inv(sp.Integer(1), sp.Integer(0), sp.Integer(0), L_, C_)


def B_(L_=L, C_=C) -> Inv:
    return Inv(sp.Integer(1), sp.Integer(1), sp.Integer(0), L_, C_)


def J_(L_=L, C_=C) -> Inv:
    return Inv(sp.Integer(1), sp.Integer(1), sp.Integer(1), L_, C_)


def basis(L_=L, C_=C) -> tuple[Inv, Inv, Inv]:
    """(E0, E1, E2) = (I, B - I, J - B): the unit coordinates, also dQ/da, dQ/db, dQ/dc."""
    return tuple(Inv(*(sp.Integer(int(k == t)) for k in range(3)), L_, C_) for t in range(3))


def idempotents(L_=L, C_=C) -> tuple[Inv, Inv, Inv]:
    """(E_const, E_set, E_in) = (J / D, B / C - J / D, I - B / C)."""
    D_ = L_ * C_
    J, B, I = J_(L_, C_), B_(L_, C_), I_(L_, C_)
    return J.scale(1 / D_), B.scale(1 / C_) - J.scale(1 / D_), I - B.scale(1 / C_)


# -- indexed sums over symbolic ranges ---------------------------------------------------------
def in_range(expr, bounds=None):
    """Resolve sympy's range conditions for the patch indices: l <= L - 1 and c <= C - 1 hold
    (l, c are declared nonnegative), so a Piecewise branch guarded by them is the value."""
    bounds = bounds or {l_: L, c_: C}
    facts = {sp.Le(idx, hi - 1): sp.true for idx, hi in bounds.items()}
    facts.update({sp.Ge(hi - 1, idx): sp.true for idx, hi in bounds.items()})
    facts.update({sp.Lt(idx, hi): sp.true for idx, hi in bounds.items()})
    return expr.xreplace(facts)


KD = sp.KroneckerDelta


def sum_deltas(expr, bounds: dict, distinct=()):
    """Evaluate every sum whose summand has a Kronecker delta in its summation index.

    sum_{k=lo}^{hi} delta(k, x) g(k) = g(x) holds when x is an index whose range lies in
    [lo, hi]. The indices x may be declared in ``bounds`` (x -> n: the range [0, n)); the index of
    every enclosing sum is declared with its own limits; any other delta raises ``ValueError``.
    Sums are taken innermost first (sympy merges nested sums into one ``Sum`` with several
    limits, the innermost first). Sums without a delta in their index are kept as they are (no
    closed-form summation is attempted).

    Parameters
    ----------
    expr : sympy.Expr
        An expression holding sums.
    bounds : dict
        Index symbol -> n: the index lies in [0, n).
    distinct : iterable of tuple
        Pairs (a, b) of indices known to differ: delta(a, b) = 0 wherever it appears.

    Returns
    -------
    sympy.Expr
        ``expr`` with the delta sums evaluated.

    Notes
    -----
    Only a delta that is a direct factor of a term is substituted on: a delta inside a function
    (``exp(delta(k, x) y)``, ``act(...)``, another sum) is first lifted by cases,
    g(delta) = delta g(1) + (1 - delta) g(0), which holds because a delta is 0 or 1. Substituting
    on a nested delta as if it were a factor is wrong: sum_k exp(delta(k, x)) g(k) is not e g(x).
    Every term is then normalised (:func:`normal_deltas`), so that equal terms cancel.
    """
    ranges = {x: (sp.Integer(0), sp.sympify(n) - 1) for x, n in bounds.items()}
    zeros = _zero_facts(distinct)
    return _walk(sp.sympify(expr), ranges, zeros)


def delta_cases(expr, indices, distinct=()):
    """``expr`` written by cases on the deltas that hold one of ``indices``: every such delta
    nested inside a function is lifted, g(delta) = delta g(1) + (1 - delta) g(0), so that each term
    is a product of direct-factor deltas and a delta-free (in ``indices``) rest; each term
    normalised (:func:`normal_deltas`). For identities in free indices (an entry (a, b) of a
    matrix), where :func:`sum_deltas` has no sum to take.

    Parameters
    ----------
    expr : sympy.Expr
        The expression.
    indices : iterable of sympy.Symbol
        The free indices whose deltas are lifted.
    distinct : iterable of tuple
        Pairs (a, b) of indices known to differ: delta(a, b) = 0.

    Returns
    -------
    sympy.Expr
        The same value, as a sum of normalised terms.
    """
    indices = set(indices)
    zeros = _zero_facts(distinct)
    out = []
    for term in _lifted(sp.sympify(expr), lambda kd: bool(indices & set(kd.args)), zeros):
        out.append(normal_deltas(term, zeros))
    return sp.Add(*out)


def normal_deltas(term, zeros=None):
    """A term with its direct-factor deltas between symbols in a canonical form.

    The symbols joined by the deltas of ``term`` fall into classes (delta(a, b) delta(b, c): a, b
    and c are equal wherever the term is non-zero); each class is written with one
    representative r (the last in sympy's sort order, so delta(a, b) g(a) becomes
    delta(a, b) g(b)): the deltas become delta(x, r) for the other members x, and r replaces every
    x in the rest of the term. A class that joins two indices of a pair in ``zeros`` (the
    :func:`_zero_facts` of the distinct pairs) makes the term 0.
    """
    zeros = zeros or {}
    term = _tidy(sp.sympify(term), zeros)
    factors = sp.Mul.make_args(term)
    links = [f for f in factors if isinstance(f, KD) and all(isinstance(x, sp.Symbol)
                                                               for x in f.args)]
    if not links:
        return term
    parent: dict = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for kd in links:
        ra, rb = find(kd.args[0]), find(kd.args[1])
        if ra != rb:
            parent[ra] = rb
    classes: dict = {}
    for x in list(parent):
        classes.setdefault(find(x), []).append(x)
    swap, deltas = {}, []
    for members in classes.values():
        rep = max(members, key=sp.default_sort_key)
        for x in members:
            if x != rep:
                swap[x] = rep
                deltas.append(KD(x, rep))
    if any(KD(x, y) in zeros for members in classes.values() for x in members
           for y in members if x != y):
        return sp.Integer(0)
    rest = _substitute(sp.Mul(*[f for f in factors if f not in links]), swap)
    return _tidy(sp.Mul(*deltas) * rest, zeros)


def _zero_facts(distinct) -> dict:
    return {KD(a, b): sp.Integer(0) for a, b in distinct}


def _tidy(expr, zeros: dict):
    """``expr`` with the deltas of ``zeros`` set to 0, and delta^n = delta (n >= 1) among its
    factors (a power of a delta arises only from a product of direct factors; one inside a
    function goes when that delta is lifted)."""
    if zeros:
        expr = expr.xreplace(zeros)
    factors = sp.Mul.make_args(expr)
    if any(isinstance(f, sp.Pow) and isinstance(f.base, KD) for f in factors):
        expr = sp.Mul(*[f.base if isinstance(f, sp.Pow) and isinstance(f.base, KD)
                        and f.exp.is_positive else f for f in factors])
    return expr


def _drop_empty_sums(expr):
    """A sum of 0 (left where a lifted delta is set to 0) is 0."""
    if not expr.has(sp.Sum):
        return expr
    return expr.replace(lambda z: isinstance(z, sp.Sum) and z.function == 0,
                        lambda z: sp.Integer(0))


def _substitute(expr, mapping: dict):
    """``expr`` with the symbols of ``mapping`` replaced; ``subs`` (which respects bound
    variables) only when a sum in ``expr`` binds one of them, the much faster ``xreplace``
    otherwise."""
    if not mapping:
        return expr
    bound = {v for s in expr.atoms(sp.Sum) for v in s.variables}
    if bound & set(mapping):
        return expr.subs(mapping, simultaneous=True)
    return expr.xreplace(mapping)


def _products(expr) -> list:
    """The terms of ``expr`` with every product distributed over every sum, but nothing inside a
    function's arguments touched (``expand_mul(deep=False)`` stops one level down:
    a (b + c (d + e)) stays a b + a c (d + e); ``expand_mul`` also rewrites the arguments)."""
    if isinstance(expr, sp.Add):
        return [t for x in expr.args for t in _products(x)]
    if isinstance(expr, sp.Mul):
        out = [sp.Integer(1)]
        for factor in expr.args:
            out = [x * y for x in out for y in _products(factor)]
        return out
    if isinstance(expr, sp.Pow) and isinstance(expr.base, sp.Add) and expr.exp.is_Integer \
            and expr.exp > 1:
        return _products(sp.Mul(*[expr.base] * int(expr.exp), evaluate=False))
    return [expr]


def _lifted(expr, chosen, zeros):
    """The terms of ``expr`` (expanded over products) with every delta selected by ``chosen``
    that sits inside a function lifted to a direct factor: g(delta) = delta g(1) +
    (1 - delta) g(0). Deltas are lifted one at a time, in sympy's sort order."""
    pending = list(sp.Add.make_args(sp.Add(*_products(expr))))
    out = []
    while pending:
        term = _tidy(pending.pop(), zeros)
        if term == 0:
            continue
        direct = set(sp.Mul.make_args(term))
        nested = sorted((kd for kd in term.atoms(KD) if chosen(kd) and kd not in direct),
                        key=sp.default_sort_key)
        if not nested:
            out.append(term)
            continue
        kd = nested[0]
        one = term.xreplace({kd: sp.Integer(1)})
        if all(isinstance(x, sp.Symbol) for x in kd.args):
            # where delta(a, b) = 1, a = b: write the branch with one of them at once, so that
            # the other deltas it is in resolve now (delta(a, c) -> delta(b, c)), not by more lifts
            rep = max(kd.args, key=sp.default_sort_key)
            one = _substitute(one, {x: rep for x in kd.args if x != rep})
        split = kd * one + (1 - kd) * _drop_empty_sums(term.xreplace({kd: sp.Integer(0)}))
        pending.extend(_products(split))
    return out


def _walk(expr, ranges: dict, zeros: dict):
    """Evaluate the delta sums of ``expr``, inner sums first, with ``ranges`` the declared
    indices (symbol -> (lo, hi))."""
    if isinstance(expr, sp.Sum):
        inside = dict(ranges)
        inside.update({idx: (lo, hi) for idx, lo, hi in expr.limits})
        out = _walk(expr.function, inside, zeros)
        for n, (idx, lo, hi) in enumerate(expr.limits):     # the innermost limit first
            seen = dict(ranges)
            seen.update({i: (a, b) for i, a, b in expr.limits[n + 1:]})
            out = _sum_one(out, idx, lo, hi, seen, zeros)
        return out
    if not expr.has(sp.Sum):
        return expr
    return expr.func(*[_walk(x, ranges, zeros) for x in expr.args])


def _sum_one(function, idx, lo, hi, ranges: dict, zeros: dict):
    """sum_{idx=lo}^{hi} function, each term's delta in ``idx`` evaluated (see
    :func:`sum_deltas`); ``ranges``: the indices declared outside this sum."""
    out = []
    for term in _lifted(function, lambda kd: idx in kd.args, zeros):
        factors = sp.Mul.make_args(term)
        direct = [f for f in factors if isinstance(f, KD) and idx in f.args]
        if not direct:
            out.append(sp.Sum(normal_deltas(term, zeros), (idx, lo, hi)))
            continue
        kd = direct[0]
        other = kd.args[1] if kd.args[0] == idx else kd.args[0]
        if other.has(idx) or other not in ranges or not _within(ranges[other], (lo, hi)):
            raise ValueError(f"cannot sum {kd} over {idx} in [{lo}, {hi}]")
        rest = sp.Mul(*[f for f in factors if f is not kd])
        out.append(normal_deltas(_substitute(rest, {idx: other}), zeros))
    return sp.Add(*out)


def _within(inner: tuple, outer: tuple) -> bool:
    """[inner] lies in [outer], as sympy can tell from the symbols' assumptions."""
    below, above = sp.expand(inner[0] - outer[0]), sp.expand(outer[1] - inner[1])
    return all(d == 0 or d.is_nonnegative is True for d in (below, above))


def set_sum(l=l_, x=u):
    """S_l = sum_{e < C} x[l, e]."""
    return sp.Sum(x[l, e_], (e_, 0, C - 1))


def total_sum(x=u):
    """T = sum_{m < L} sum_{e < C} x[m, e]."""
    return sp.Sum(sp.Sum(x[m_, e_], (e_, 0, C - 1)), (m_, 0, L - 1))


def _linear_sum(x: sp.Sum):
    """A sum split over the terms of its (expanded) summand, constant factors pulled out and
    terms free of the summation indices counted (sum_{e<C} y = C y)."""
    function = sp.expand(x.function)
    terms = function.args if isinstance(function, sp.Add) else (function,)
    out = []
    for term in terms:
        indices = {lim[0] for lim in x.limits}
        coeff, rest = term.as_independent(*indices, as_Add=False)
        if rest == 1:
            out.append(sp.Sum(coeff, *x.limits).doit())
        else:
            out.append(coeff * sp.Sum(rest, *x.limits))
    return sp.Add(*out)


def canon(expr):
    """A canonical form for expressions in (nested) sums: sums split over their terms, constants
    pulled out of the sums, then expanded."""
    expr = sp.expand(expr)
    expr = expr.replace(lambda x: isinstance(x, sp.Sum), _linear_sum)
    return sp.expand(expr)


def indexed_apply(entry, x=u):
    """(M x)_(l, c) = sum_{m < L} sum_{e < C} M[(l, c), (m, e)] x[m, e] with the entry given as
    an expression in l, c, m, e (Kronecker deltas), evaluated over the symbolic ranges.

    Each term is summed over m first, then over e, or in the other order when that leaves no
    Kronecker delta (sympy evaluates a delta only in the innermost sum)."""
    out = []
    for term in sp.Add.make_args(sp.expand(entry * x[m_, e_])):
        z = sp.Sum(sp.Sum(term, (e_, 0, C - 1)), (m_, 0, L - 1)).doit()
        if z.has(sp.KroneckerDelta):
            z = sp.Sum(sp.Sum(term, (m_, 0, L - 1)), (e_, 0, C - 1)).doit()
        out.append(in_range(z))
    return canon(sp.Add(*out))
