"""Lemmas L3-L4: the structure group G, its invariant logit matrices, and the equivariance of the
risk.

L3. The commutant {Q : Pi Q Pi^T = Q for all Pi in G} is the space of matrices constant on the
    orbits of G on pairs (orbitals); for symbolic L, C an orbit-stabilizer count shows there are
    three orbitals, the pair types of :mod:`.algebra` (cross-checked by solving the linear system
    Q[pi(i), pi(j)] = Q[i, j] for the generators at small sizes and by counting orbits with
    union-find at (4, 4) and (8, 8)); for L >= 2 and C >= 2 it is the
    3-dimensional space Q = a I + b (B - I) + c (J - B), and row-softmax takes three values on it:
    P = e^a / Z on the diagonal, Qs = e^b / Z within a set, R = e^c / Z across sets,
    Z = e^a + (C - 1) e^b + (D - C) e^c. Degenerate sizes: with C = 1 (B = I) or L = 1 (B = J)
    the space is 2-dimensional (a I + c (J - I), resp. a I + b (J - I)); with D = 1 it is R.
L4. The distribution is G-invariant, hence R(v, Pi Q Pi^T) = R(v, Q) and
    grad_Q R(Pi Q Pi^T) = Pi grad_Q R(Q) Pi^T for every Pi in G, for any loss and activation.
    General (L, C symbols): a transposition tau = (p q) of symbolic indices is written by cases
    with Kronecker deltas (:func:`transposed`), and the sums over symbolic ranges are evaluated by
    :func:`patchassoc.theory.lemmas.algebra.sum_deltas`. Three steps: the per-sample identity
    f(tau u; tau Q tau) = f(u; Q), the per-sample gradient read at (tau a, tau b), and the
    invariance of the law of the patches under the two kinds of generators of G. Cross-checked
    on the exact finite population at (2, 2) and (2, 3), per sample at (4, 4) and (8, 8).

References
----------
SPEC section 4.
"""
from __future__ import annotations

import math

import sympy as sp
from sympy.combinatorics import Permutation, PermutationGroup
from sympy.polys.matrices import DomainMatrix

from patchassoc.theory.structure import blocks

from patchassoc.theory.lemmas import algebra as alg
from patchassoc.theory.lemmas._core import Proof, lemma
from patchassoc.theory.lemmas._symbolic import (act, backprop_softmax, conjugation_sub, ell,
                                                ell_prime, act_prime, exp_to_symbols, generators,
                                                grad_A_integrand, group_elements, invariant_logits,
                                                model_terms, patch_sub, patterns, permute_matrix,
                                                risk_integrand, sets_of, softmax, strided,
                                                structure_matrices, symbol_matrix)

__all__ = ["prove_L3", "prove_L4", "commutant_dimension", "orbital_count", "transposed",
           "transpose_entries", "per_sample_output", "patch_density"]

#: (L, C, layout) at which L3 derives the commutant; layout "strided" = non-contiguous sets.
L3_SIZES = ((2, 2, "blocks"), (2, 3, "strided"), (3, 2, "blocks"), (3, 3, "strided"),
            (2, 4, "blocks"), (4, 2, "strided"))
#: Degenerate sizes (C = 1 or L = 1), documented in the details.
L3_DEGENERATE = ((1, 1), (1, 2), (1, 3), (2, 1), (3, 1))
#: Largest D at which the three softmax values are checked symbolically.
L3_SOFTMAX_MAX_D = 9


def _sets(L: int, C: int, layout: str = "blocks") -> list[list[int]]:
    return sets_of(strided(L, C) if layout == "strided" else blocks(L, C))


def _constraints(sets) -> sp.Matrix:
    """Rows of the linear system Q[pi(i), pi(j)] - Q[i, j] = 0, unknowns vec(Q) (row-major)."""
    D = sum(len(s) for s in sets)
    rows = []
    for pi in generators(sets):
        for i in range(D):
            for j in range(D):
                a, b = pi[i] * D + pi[j], i * D + j
                if a != b:
                    row = [0] * (D * D)
                    row[a], row[b] = 1, -1
                    rows.append(row)
    return sp.Matrix(rows) if rows else sp.zeros(0, D * D)


def commutant_dimension(sets) -> tuple[int, DomainMatrix, DomainMatrix]:
    """(dimension, basis rows, constraint matrix) of {Q : Pi Q Pi^T = Q for the generators}."""
    D = sum(len(s) for s in sets)
    M = _constraints(sets)
    if M.rows == 0:
        basis = DomainMatrix.eye(D * D, sp.QQ)
        return D * D, basis, DomainMatrix.zeros((0, D * D), sp.QQ)
    dM = DomainMatrix.from_Matrix(M).convert_to(sp.QQ)
    basis = dM.nullspace()
    return basis.shape[0], basis, dM


def _expected_dimension(L: int, C: int) -> int:
    if L * C == 1:
        return 1
    if L == 1 or C == 1:
        return 2
    return 3


def _commutant(proof: Proof, L: int, C: int, layout: str) -> int:
    sets = _sets(L, C, layout)
    D = L * C
    tag = f"L={L}, C={C} ({layout})"
    gens = generators(sets)
    # the generators preserve the partition and generate all of G
    as_sets = {frozenset(s) for s in sets}
    proof.exact(all({frozenset(pi[j] for j in s) for s in sets} == as_sets for pi in gens),
                f"generators map sets to sets, {tag}")
    if gens:
        order = PermutationGroup([Permutation(list(pi)) for pi in gens]).order()
    else:
        order = 1
    proof.exact(order == math.factorial(C) ** L * math.factorial(L),
                f"generators generate G of order (C!)^L L!, {tag}")
    dim, basis, dM = commutant_dimension(sets)
    proof.exact(dim == _expected_dimension(L, C), f"commutant dimension {dim}, {tag}")
    I, B, J = structure_matrices(sets)
    named = [M for M in (I, B - I, J - B) if not M.is_zero_matrix]
    vecs = DomainMatrix.from_Matrix(sp.Matrix([list(M) for M in named])).convert_to(sp.QQ)
    if dM.shape[0]:
        proof.exact((dM * vecs.transpose()).to_Matrix().is_zero_matrix,
                    f"I, B - I, J - B solve the system, {tag}")
    stacked = DomainMatrix.from_Matrix(
        sp.Matrix.vstack(basis.to_Matrix(), vecs.to_Matrix())).convert_to(sp.QQ)
    proof.exact(vecs.rank() == dim and stacked.rank() == dim,
                f"the solutions are exactly span(I, B - I, J - B), {tag}")
    if L >= 2 and C >= 2 and D <= L3_SOFTMAX_MAX_D:
        a, b, c = sp.symbols("a b c")
        A = softmax(invariant_logits(sets, a, b, c))
        Z = sp.exp(a) + (C - 1) * sp.exp(b) + (D - C) * sp.exp(c)
        P, Qs, R = sp.exp(a) / Z, sp.exp(b) / Z, sp.exp(c) / Z
        claimed = P * I + Qs * (B - I) + R * (J - B)
        proof.zero(exp_to_symbols(A - claimed, (a, b, c)), f"softmax takes P, Qs, R, {tag}",
                   up_to="cancel")
        proof.zero(exp_to_symbols(P + (C - 1) * Qs + (D - C) * R - 1, (a, b, c)),
                   f"P + (C-1) Qs + (D-C) R = 1, {tag}", up_to="cancel")
    return dim


def orbital_count(sets) -> int:
    """Number of orbits of the group generated by ``generators`` on ordered pairs (i, j),
    by union-find over the generators (exact, no group enumeration): the dimension of the
    commutant, since a matrix commutes with every Pi iff it is constant on each orbit."""
    D = sum(len(s) for s in sets)
    parent = list(range(D * D))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for pi in generators(sets):
        for i in range(D):
            for j in range(D):
                ra, rb = find(i * D + j), find(pi[i] * D + pi[j])
                if ra != rb:
                    parent[ra] = rb
    return len({find(x) for x in range(D * D)})


#: (L, C) at which the orbit count of G on pairs is computed exactly (union-find).
L3_ORBITAL_SIZES = ((4, 4), (8, 8), (2, 5), (5, 2), (1, 4), (4, 1))


@lemma("L3", "invariant logits: a 3-dim space",
       "{Q : Pi Q Pi^T = Q for all Pi in G} = span(I, B - I, J - B): dimension 3 for L, C >= 2, "
       "2 when exactly one of L, C is 1 (C = 1: B = I; L = 1: B = J), 1 when D = 1; softmax takes "
       "three values on it: P = e^a/Z, Qs = e^b/Z, R = e^c/Z, Z = e^a + (C-1) e^b + (D-C) e^c",
       "general (L, C symbols): a matrix commutes with every Pi in G iff it is constant on the "
       "orbits of G on pairs (orbitals), so the dimension is the number of orbitals. "
       "Orbit-stabilizer with |G| = (C!)^L L!: the stabilizer G_i of a patch (Sym(S(i) - i) x "
       "the wreath product on the other sets) has order (C-1)! (C!)^(L-1) (L-1)!, |G|/|G_i| = D "
       "(gammasimp), so G is transitive; the G_i-orbit of a set-mate j of i has |G_i|/|G_ij| = "
       "C - 1 elements and lies among the C - 1 mates (G_i keeps S(i)), so it is all of them; "
       "likewise the orbit of a patch of another set has D - C elements, all of them; 1 + "
       "(C - 1) + (D - C) = D, so the orbitals are the three types of L14, with sizes D, D(C-1), "
       "D(D-C); the nonempty ones are counted at C = 1, L = 1; softmax values from the algebra "
       "(entrywise exp, row sum = lam_const). Instance cross-checks: exact nullspace (over Q) of "
       "Q[pi(i), pi(j)] = Q[i, j] for the generators at (L, C) = "
       + ", ".join(f"({L},{C})" for L, C, _ in L3_SIZES) + " and the degenerate "
       + ", ".join(f"({L},{C})" for L, C in L3_DEGENERATE) + "; orbit count by union-find at "
       + ", ".join(f"({L},{C})" for L, C in L3_ORBITAL_SIZES),
       general=True, scope="all L, C >= 1 (dim 3 for L, C >= 2; 2 if L = 1 or C = 1; 1 if D = 1)")
def prove_L3(proof: Proof) -> None:
    from patchassoc.theory.lemmas import algebra as alg
    Ls, Cs = alg.L, alg.C
    D = Ls * Cs
    f = sp.factorial
    order_G = f(Cs) ** Ls * f(Ls)
    order_Gi = f(Cs - 1) * f(Cs) ** (Ls - 1) * f(Ls - 1)
    order_Gij_mate = f(Cs - 2) * f(Cs) ** (Ls - 1) * f(Ls - 1)          # C >= 2
    order_Gij_other = f(Cs - 1) ** 2 * f(Cs) ** (Ls - 2) * f(Ls - 2)     # L >= 2
    proof.zero(sp.gammasimp(order_G / order_Gi) - D, "|G| / |G_i| = D: G is transitive",
               up_to="expand")
    proof.zero(sp.gammasimp(order_Gi / order_Gij_mate) - (Cs - 1),
               "G_i-orbit of a set-mate of i has C - 1 elements (C >= 2)", up_to="expand")
    proof.zero(sp.gammasimp(order_Gi / order_Gij_other) - (D - Cs),
               "G_i-orbit of a patch of another set has D - C elements (L >= 2)", up_to="expand")
    sizes = alg.valencies()
    proof.zero(sp.Add(*sizes) - D, "the G_i-orbits {i}, S(i) - i, rest cover the D patches",
               up_to="expand")
    orbital_sizes = [D * v for v in sizes]
    proof.zero(sp.Add(*orbital_sizes) - D ** 2, "orbital sizes D, D(C-1), D(D-C) sum to D^2",
               up_to="expand")
    # the dimension is the number of nonempty orbitals
    for name, sub, dim in (("L, C >= 2", {Ls: Ls + 1, Cs: Cs + 1}, 3),
                           ("C = 1, L >= 2", {Cs: 1, Ls: Ls + 1}, 2),
                           ("L = 1, C >= 2", {Ls: 1, Cs: Cs + 1}, 2),
                           ("L = C = 1", {Ls: 1, Cs: 1}, 1)):
        # L + 1, C + 1 with L, C positive symbols stand for L, C >= 2: each size factors into
        # positive factors, or is exactly 0
        signs = [sp.factor(n.subs(sub)) for n in orbital_sizes]
        proof.exact(all(x.is_positive or x.is_zero for x in signs)
                    and sum(bool(x.is_positive) for x in signs) == dim,
                    f"{dim} nonempty orbitals when {name}")
    # softmax on the commutant (L14's algebra): three values summing to 1 along a row
    a, b, c = sp.symbols("a b c")
    A = alg.Inv(a, b, c).softmax()
    Z = sp.exp(a) + (Cs - 1) * sp.exp(b) + (D - Cs) * sp.exp(c)
    proof.equal(sp.Matrix(A.coords), sp.Matrix([sp.exp(a), sp.exp(b), sp.exp(c)]) / Z,
                "softmax(a I + b (B-I) + c (J-B)) = (e^a, e^b, e^c) / Z", up_to="cancel")
    proof.zero(exp_to_symbols(A.row_sum() - 1, (a, b, c)), "P + (C-1) Qs + (D-C) R = 1",
               up_to="cancel")
    proof.control(sp.gammasimp(order_G / order_Gi) - Ls,
                  "negative control: |G|/|G_i| = L (sets only) is false")
    proof.control(exp_to_symbols(A.a + (Cs - 1) * A.b - 1, (a, b, c)),
                  "negative control: a row without its cross-set mass does not sum to 1",
                  up_to="cancel")
    # instance cross-checks
    dims = {}
    for L, C, layout in L3_SIZES:
        dims[f"{L}x{C}"] = _commutant(proof, L, C, layout)
    degenerate = {}
    for L, C in L3_DEGENERATE:
        degenerate[f"{L}x{C}"] = _commutant(proof, L, C, "blocks")
    orbitals = {}
    for L, C in L3_ORBITAL_SIZES:
        n = orbital_count(_sets(L, C, "strided"))
        orbitals[f"{L}x{C}"] = n
        proof.exact(n == _expected_dimension(L, C), f"{n} orbitals of G on pairs at L={L}, C={C}")
    proof.details["dimension"] = dims
    proof.details["degenerate_dimension"] = degenerate
    proof.details["orbitals"] = orbitals
    proof.details["degenerate_note"] = (
        "C = 1: B = I, the space is {a I + c (J - I)} (dim 2); L = 1: B = J, the space is "
        "{a I + b (J - I)} (dim 2); L = C = 1: dim 1")


#: (L, C) of the structure on which L4 is proved for every group element.
L4_FULL = (2, 2)
#: (L, C) on which the risk invariance is also checked on the generators.
L4_EXTRA = ((2, 3),)
#: (L, C) at which the per-sample identities are checked on the generators.
L4_PER_SAMPLE = (4, 4)
#: (L, C) at which the per-sample identity of f is checked on two generators.
L4_PER_SAMPLE_LARGE = (8, 8)
#: Pattern terms on which the hand-written chain rule is compared with sympy.diff.
L4_CHAIN_RULE_TERMS = (0, 7, 23)


# -- L4 for symbolic sizes: transpositions written by cases -----------------------------------
KD = sp.KroneckerDelta
#: Flat patch indices (i, j, k < D), a transposed pair (p, q) and a gradient entry (a, b).
_i, _j, _k, _p, _q, _a, _b = sp.symbols("i j k p q a b", integer=True, nonnegative=True)
#: Sets: l0 holds a transposition; l1, l2 are swapped; l, m index sets and e a place in a set.
_l0, _l1, _l2 = sp.symbols("l0 l1 l2", integer=True, nonnegative=True)
_l, _m, _e = alg.l_, alg.m_, alg.e_
_u, _Q, _x = sp.IndexedBase("u"), sp.IndexedBase("Q"), sp.IndexedBase("x")
_y = sp.Symbol("y")
#: The log-densities of a signal patch and of another patch (generic: any per-patch laws).
log_phi_s, log_phi_o = sp.Function("log_phi_s"), sp.Function("log_phi_o")
#: The transposed indices differ: delta(p, q) = 0 (flat indices, or places in one set).
_FLAT_DISTINCT = ((_p, _q),)
#: The swapped sets differ: delta(l1, l2) = 0.
_SETS_DISTINCT = ((_l1, _l2),)


def transposed(h, k, p, q):
    """h(tau(k)) for the transposition tau = (p q), p != q, by cases on k.

    delta(k, p) h(q) + delta(k, q) h(p) + (1 - delta(k, p)) (1 - delta(k, q)) h(k): the last case
    is "k is neither p nor q". It equals (1 - delta(k, p) - delta(k, q)) h(k) because
    delta(k, p) delta(k, q) = delta(k, p) delta(p, q) = 0, which uses p != q; the proofs declare
    delta(p, q) = 0 to the delta helper rather than build it in. In the last case a delta(k, p)
    or delta(k, q) inside h is 0, and is written so (it would otherwise be lifted by cases
    later, at a cost, to the same end).
    """
    neither = h.xreplace({KD(k, p): sp.Integer(0), KD(k, q): sp.Integer(0)})
    return (KD(k, p) * h.xreplace({k: q}) + KD(k, q) * h.xreplace({k: p})
            + (1 - KD(k, p)) * (1 - KD(k, q)) * neither)


def transpose_entries(expr, base, positions, p=_p, q=_q):
    """``expr`` with every entry of ``base`` read at tau = (p q) of its indices in ``positions``:
    u[k] -> u[tau k] with positions (0,); Q[i, j] -> Q[tau i, tau j] with (0, 1) (conjugation),
    Q[tau i, j] with (0,) (the rows only)."""
    for pos in positions:
        # a fresh symbol holds the index at ``pos`` while it is split, so that the same symbol
        # elsewhere in the entry (Q[i, i]) is left alone; the index may be any expression
        def entry(z, pos=pos):
            t = sp.Dummy("t", integer=True, nonnegative=True)
            held = base[tuple(t if n == pos else x for n, x in enumerate(z.indices))]
            return transposed(held, t, p, q).xreplace({t: z.indices[pos]})
        expr = expr.replace(lambda z: isinstance(z, sp.Indexed) and z.base == base, entry)
    return expr


def per_sample_output(u=_u, Q=_Q, D=alg.D):
    """f(u; Q) = sum_{i<D} act(sum_{j<D} softmax(Q)_ij u_j), softmax(Q)_ij =
    exp(Q_ij) / sum_{k<D} exp(Q_ik), over symbolic D (u_j = <v, X_j>, the patch projections)."""
    Z = sp.Sum(sp.exp(Q[_i, _k]), (_k, 0, D - 1))
    return sp.Sum(act(sp.Sum(sp.exp(Q[_i, _j]) / Z * u[_j], (_j, 0, D - 1))), (_i, 0, D - 1))


def patch_density(x_of):
    """(1/L) sum_{l<L} exp sum_{m<L} sum_{e<C} [delta(m, l) log phi_s(x_me) +
    (1 - delta(m, l)) log phi_o(x_me)]: the density of the patches of one label, the signal set
    l drawn uniformly; ``x_of(m, e)`` is the patch at place e of set m of the image."""
    cell = KD(_m, _l) * log_phi_s(x_of(_m, _e)) + (1 - KD(_m, _l)) * log_phi_o(x_of(_m, _e))
    exponent = sp.Sum(sp.Sum(cell, (_e, 0, alg.C - 1)), (_m, 0, alg.L - 1))
    return sp.Sum(sp.exp(exponent), (_l, 0, alg.L - 1)) / alg.L


def _canon_exponents(expr):
    """The exponents of ``expr`` in :func:`~patchassoc.theory.lemmas.algebra.canon` form (sums
    split over their terms, constants out), so that equal exponents are equal expressions."""
    return expr.replace(lambda z: isinstance(z, sp.exp), lambda z: sp.exp(alg.canon(z.args[0])))


#: The witness point of the per-sample controls: (L, C) = (2, 2), tau = (0 1), entry (0, 2),
#: u_k = (k + 2) / (k + 3), exp(Q_ij) = 1 + i + 3 j (so that the value is rational), act(t) =
#: t^3 + t / 10, the square loss l(m) = (1 - m)^2 / 2 and y = 1.
_SAMPLE_WITNESS = {"L": 2, "C": 2, "p": 0, "q": 1, "a": 0, "b": 2}


def _sample_witness(expr):
    """The exact value of a per-sample residual at :data:`_SAMPLE_WITNESS`."""
    w = _SAMPLE_WITNESS
    D = w["L"] * w["C"]
    e = expr.subs({alg.L: w["L"], alg.C: w["C"], _p: w["p"], _q: w["q"], _a: w["a"],
                   _b: w["b"], _y: 1}).doit()
    values = {_u[k]: sp.Rational(k + 2, k + 3) for k in range(D)}
    values.update({_Q[i, j]: sp.log(1 + i + 3 * j) for i in range(D) for j in range(D)})
    e = e.xreplace(values)
    t = sp.Symbol("t")
    for fn, value in ((act, t ** 3 + t / 10), (act_prime, 3 * t ** 2 + sp.Rational(1, 10)),
                      (ell, (1 - t) ** 2 / 2), (ell_prime, t - 1)):
        e = e.replace(fn, sp.Lambda(t, value))
    return e


#: The witness point of the law's control: (L, C) = (2, 2), patch place p = 0, sets l1 = 0 and
#: l2 = 1, log phi_s(t) = 2 t, log phi_o(t) = -t^2, x_me = (1 + m + 2 e) / 3.
_LAW_WITNESS = {"L": 2, "C": 2, "p": 0, "l1": 0, "l2": 1}


def _law_witness(expr):
    """The exact value of a law residual at :data:`_LAW_WITNESS`."""
    w = _LAW_WITNESS
    e = expr.subs({alg.L: w["L"], alg.C: w["C"], _p: w["p"], _l1: w["l1"],
                   _l2: w["l2"]}).doit()
    e = e.xreplace({_x[m, c]: sp.Rational(1 + m + 2 * c, 3) for m in range(w["L"])
                    for c in range(w["C"])})
    t = sp.Symbol("t")
    e = e.replace(log_phi_s, sp.Lambda(t, 2 * t)).replace(log_phi_o, sp.Lambda(t, -t ** 2))
    return sp.factor_terms(sp.powsimp(sp.expand(e)))


def _general_L4(proof: Proof) -> None:
    D = alg.D
    flat = {_p: D, _q: D}
    # 1. per sample: f(tau u; tau Q tau) = f(u; Q) for a transposition of flat indices
    f = per_sample_output()
    image = transpose_entries(transpose_entries(f, _u, (0,)), _Q, (0, 1))
    proof.zero(alg.sum_deltas(image, flat, _FLAT_DISTINCT) - f,
               "f(tau u; tau Q tau) = f(u; Q), tau = (p q) of flat indices < D", up_to="expand")
    columns = transpose_entries(transpose_entries(f, _u, (0,)), _Q, (1,))
    proof.zero(alg.sum_deltas(columns, flat, _FLAT_DISTINCT) - f,
               "f(tau u; Q tau) = f(u; Q): the columns moved with u (true, not a control)",
               up_to="expand")
    for moved, what in ((transpose_entries(f, _u, (0,)), "u permuted, Q not"),
                        (transpose_entries(transpose_entries(f, _u, (0,)), _Q, (0,)),
                         "u and the rows of Q permuted, the columns not"),
                        (transpose_entries(f, _Q, (0, 1)), "Q conjugated, u not")):
        proof.control(alg.sum_deltas(moved, flat, _FLAT_DISTINCT) - f,
                      f"negative control: f changes when {what}", up_to="expand",
                      witness=_sample_witness)
    # 2. the per-sample gradient at (tau u, tau Q tau), read at (tau a, tau b)
    grad = sp.diff(ell(_y * f), _Q[_a, _b])
    proof.exact(not grad.has(sp.Subs, sp.Derivative) and grad.has(act_prime, ell_prime),
                "d l(y f) / d Q_ab by the chain rule, in act' and l' (no Subs)")
    G = alg.sum_deltas(grad, {_a: D, _b: D})
    entry = {**flat, _a: D, _b: D}
    G_image = alg.sum_deltas(transpose_entries(transpose_entries(G, _u, (0,)), _Q, (0, 1)),
                             entry, _FLAT_DISTINCT)
    at_moved = transposed(transposed(G_image, _a, _p, _q), _b, _p, _q)
    proof.zero(alg.delta_cases(at_moved - G, (_a, _b), _FLAT_DISTINCT),
               "grad(tau u; tau Q tau)[tau a, tau b] = grad(u; Q)[a, b]", up_to="expand")
    # (the witness decides this control: writing it by cases first would only cost time)
    proof.control(G_image - G, "negative control: the gradient at the image read at the "
                  "unmoved entry (a, b)", up_to="expand", witness=_sample_witness)
    # 3. the law of the patches: invariant under the two kinds of generators of G
    sets = {_p: alg.C, _q: alg.C, _l0: alg.L, _l1: alg.L, _l2: alg.L}
    law = _canon_exponents(alg.sum_deltas(patch_density(lambda m, e: _x[m, e]), sets))
    inside = patch_density(lambda m, e: KD(m, _l0) * transposed(_x[m, e], e, _p, _q)
                           + (1 - KD(m, _l0)) * _x[m, e])
    proof.zero(_canon_exponents(alg.sum_deltas(inside, sets, _FLAT_DISTINCT)) - law,
               "the law is invariant under the transposition of places p, q of set l0",
               up_to="expand")
    swap = patch_density(lambda m, e: transposed(_x[m, e], m, _l1, _l2))
    proof.zero(_canon_exponents(alg.sum_deltas(swap, sets, _SETS_DISTINCT)) - law,
               "the law is invariant under the swap of sets l1 and l2", up_to="expand")
    cross = patch_density(lambda m, e: KD(e, _p) * transposed(_x[m, e], m, _l1, _l2)
                          + (1 - KD(e, _p)) * _x[m, e])
    residual = _canon_exponents(alg.sum_deltas(cross, sets, _SETS_DISTINCT)) - law
    proof.control(residual, "negative control: swapping the patch (l1, p) with (l2, p), of "
                  "two different sets, changes the law", up_to="expand", witness=_law_witness)
    proof.details["law_control_residual_2x2"] = str(_law_witness(residual))


@lemma("L4", "G-equivariance of the risk",
       "R(v, Pi Q Pi^T) = R(v, Q) and grad_Q R(Pi Q Pi^T) = Pi grad_Q R(Q) Pi^T for every Pi in G, "
       "any loss, any activation, any exchangeable noise projections",
       "general (L, C symbols, D = L C): a transposition tau = (p q) of symbolic indices is "
       "written by cases, h(tau k) = delta(k,p) h(q) + delta(k,q) h(p) + (1 - delta(k,p)) "
       "(1 - delta(k,q)) h(k) with delta(p,q) = 0, and sums over symbolic ranges are evaluated "
       "by the delta helper (substitution on direct-factor deltas, nested deltas lifted by "
       "cases). Checked by sympy (each reduced to exactly 0): (1) f(tau u; tau Q tau) = f(u; Q) "
       "for f = sum_i act(sum_j softmax(Q)_ij u_j), tau a transposition of flat indices < D (also "
       "f(tau u; Q tau) = f(u; Q)); controls: u permuted but Q not, u and the rows of Q only, Q "
       "conjugated but u not, each non-zero at an exact (2,2) witness; (2) the per-sample "
       "gradient d l(y f)/dQ_ab (sympy.diff, generic l and act) at (tau u, tau Q tau) read at "
       "(tau a, tau b) equals it at (u, Q) read at (a, b); control: the entry left unmoved; (3) "
       "the density of the patches of one label, (1/L) sum_l exp sum_m sum_e [delta(m,l) "
       "A(x_me) + (1 - delta(m,l)) B(x_me)] with generic A = log phi_s, B = log phi_o, is "
       "invariant under the transposition of two places of one set and the swap of two sets; "
       "control: swapping (l1, p) with (l2, p) leaves a residual whose exact value at (2,2), "
       "A(t) = 2t, B(t) = -t^2, x_me = (1 + m + 2e)/3 is non-zero. Prose: the two kinds of "
       "generators generate G (L3 counts its order at small sizes) and a generator is a product "
       "of transpositions of flat indices, so (1) and (2) hold for every Pi in G; equal laws "
       "give equal expectations (for each label y, and for exchangeable noise projections); the "
       "gradient statement is the derivative in Q of an identity in Q; a density argument covers "
       "the discrete law at sigma = 0 (both sides are polynomials in the per-patch laws). "
       "Instance cross-checks: finite population at L=2, C=2 (exact sum over all (y, l*, delta) "
       "with symbolic q, Q, alpha, noise projections and generic ell, act) for all 8 elements "
       "of G, with the gradient's chain rule checked against sympy.diff and the softmax backprop "
       "equivariant under the generators; L=2, C=3 on the generators; at (4, 4) (interleaved "
       "sets) the per-sample identities of f and softmax for the 15 generators; at (8, 8) the "
       "identity of f for a transposition inside a set and a swap of two sets",
       general=True, scope="all L, C >= 1")
def prove_L4(proof: Proof) -> None:
    _general_L4(proof)
    _instances_L4(proof)


def _instances_L4(proof: Proof) -> None:
    L, C = L4_FULL
    sets = _sets(L, C)
    D = L * C
    q = sp.Symbol("q")
    proof.zero(sp.Add(*[prob for *_, prob in patterns(sets, q)]) - 1,
               "pattern probabilities sum to 1", up_to="expand")
    Q = symbol_matrix("Q", D)
    As = symbol_matrix("A", D)
    n = sp.symbols(f"n0:{D}")
    elements = group_elements(sets)
    terms = model_terms(As, sets, n)
    h = risk_integrand(terms)
    for pi in elements:
        # R(Pi Q Pi^T) = E h(softmax(Pi Q Pi^T), n) = E h(Pi A Pi^T, n) = E h(Pi A Pi^T, P n)
        # = E h(A, n): softmax equivariance, exchangeability of n, then the integrand identity
        proof.equal(softmax(permute_matrix(Q, pi)), permute_matrix(softmax(Q), pi),
                    f"softmax(Pi Q Pi^T) = Pi softmax(Q) Pi^T, pi={pi}", up_to="structural")
        sub = {**conjugation_sub(As, pi), **patch_sub(n, pi)}
        proof.zero(h.xreplace(sub) - h, f"h(Pi A Pi^T, P n) = h(A, n), pi={pi}",
                   up_to="structural")
    # gradient: grad_A of the integrand (chain rule, checked against sympy.diff), then the
    # softmax backprop (L1)
    for t in L4_CHAIN_RULE_TERMS:
        prob, y, u, z, f = terms[t]
        one = prob * ell(y * f)
        manual = sp.Matrix(D, D, lambda i, j: prob * y * ell_prime(y * f) * act_prime(z[i]) * u[j])
        proof.equal(sp.Matrix(D, D, lambda i, j: sp.diff(one, As[i, j])), manual,
                    f"chain rule for grad_A, pattern {t}", up_to="expand")
    GA = grad_A_integrand(terms, D)
    Gs = symbol_matrix("G", D)
    for pi in generators(sets):
        sub = {**conjugation_sub(As, pi), **patch_sub(n, pi)}
        moved = sp.Matrix(D, D, lambda i, j: GA[pi[i], pi[j]].xreplace(sub))
        proof.equal(moved, GA, f"grad_A(Pi A Pi^T)[pi i, pi j] = grad_A(A)[i, j], pi={pi}",
                    up_to="structural")
        proof.equal(backprop_softmax(permute_matrix(As, pi), permute_matrix(Gs, pi)),
                    permute_matrix(backprop_softmax(As, Gs), pi),
                    f"softmax backprop commutes with Pi, pi={pi}", up_to="expand")
    for L2_, C2 in L4_EXTRA:
        sets2 = _sets(L2_, C2)
        D2 = L2_ * C2
        A2 = symbol_matrix("A", D2)
        n2 = sp.symbols(f"n0:{D2}")
        h2 = risk_integrand(model_terms(A2, sets2, n2))
        for pi in generators(sets2):
            sub = {**conjugation_sub(A2, pi), **patch_sub(n2, pi)}
            proof.zero(h2.xreplace(sub) - h2, f"h(Pi A Pi^T, P n) = h(A, n), L={L2_}, C={C2}, "
                       f"pi={pi}", up_to="structural")
    # per-sample identities at (4, 4): the equivariance of softmax and of f, generator by generator
    L4_, C4 = L4_PER_SAMPLE
    sets4 = sets_of(strided(L4_, C4))
    D4 = L4_ * C4
    A4, Q4 = symbol_matrix("A", D4), symbol_matrix("Q", D4)
    n4 = sp.symbols(f"n0:{D4}")
    f4 = sp.Add(*[act(sp.Add(*[A4[i, j] * n4[j] for j in range(D4)])) for i in range(D4)])
    soft4 = softmax(Q4)
    gens4 = generators(sets4)
    for pi in gens4:
        sub = {**conjugation_sub(A4, pi), **patch_sub(n4, pi)}
        proof.zero(f4.xreplace(sub) - f4, f"f(Pi u; Pi A Pi^T) = f(u; A), (4,4), pi={pi}",
                   up_to="structural")
        proof.equal(permute_matrix(soft4, pi), softmax(permute_matrix(Q4, pi)),
                    f"softmax(Pi Q Pi^T) = Pi softmax(Q) Pi^T, (4,4), pi={pi}",
                    up_to="structural")
    swap = [0, 2, 1, 3]  # exchanges patches of the two sets of blocks(2, 2): not in G
    proof.control(h.xreplace({**conjugation_sub(As, swap), **patch_sub(n, swap)}) - h,
                  "negative control: a permutation mixing the sets is not a symmetry of the "
                  "population integrand (the reduction of the identities above)",
                  up_to="structural")
    proof.details["per_sample_generators_4x4"] = len(gens4)
    # at (8, 8): the per-sample identity of f for one generator of each kind (the symbolic
    # softmax of a 64 x 64 matrix is too slow to compare)
    L8_, C8 = L4_PER_SAMPLE_LARGE
    sets8 = sets_of(strided(L8_, C8))
    D8 = L8_ * C8
    A8 = symbol_matrix("A", D8)
    n8 = sp.symbols(f"n0:{D8}")
    f8 = sp.Add(*[act(sp.Add(*[A8[i, j] * n8[j] for j in range(D8)])) for i in range(D8)])
    gens8 = generators(sets8)
    for pi in (gens8[0], gens8[-1]):   # a transposition inside a set, a swap of two sets
        sub = {**conjugation_sub(A8, pi), **patch_sub(n8, pi)}
        proof.zero(f8.xreplace(sub) - f8, f"f(Pi u; Pi A Pi^T) = f(u; A), (8,8), pi moves "
                   f"{sum(1 for k, x in enumerate(pi) if k != x)} patches", up_to="structural")
    proof.control(f8.xreplace(patch_sub(n8, gens8[-1])) - f8,
                  "negative control: relabelling the patches without conjugating A changes f",
                  up_to="structural")
    proof.details["group_order"] = len(elements)
    proof.details["patterns"] = sum(1 for _ in patterns(sets, q))
