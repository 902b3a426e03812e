"""Lemma L14: the algebra span(I, B, J) of invariant matrices, for symbolic L and C.

The statement and the notation are those of :mod:`patchassoc.theory.lemmas.algebra`: the three
pair types with valencies 1, C - 1, D - C, the intersection numbers p^t_rs, the products
E_r E_s = sum_t p^t_rs E_t (so B^2 = C B, B J = J B = C J, J^2 = D J), the orthogonal idempotents
J/D, B/C - J/D, I - B/C with traces 1, L - 1, D - L, the eigenvalues
(a + (C-1) b + (D-C) c, a + (C-1) b - C c, a - b) and the functional calculus
g(M) = sum_k g(lam_k) E_k (exp, square root of a positive semidefinite invariant matrix).

References
----------
SPEC section 4; issue 12.
"""
from __future__ import annotations

import itertools

import sympy as sp

from patchassoc.theory.lemmas import algebra as alg
from patchassoc.theory.lemmas._core import Proof, lemma

__all__ = ["prove_L14", "L14_INSTANCES"]

#: (L, C) at which the intersection numbers are counted by brute force (both layouts).
L14_INSTANCES = ((1, 1), (1, 3), (3, 1), (2, 2), (2, 3), (3, 2), (4, 4), (8, 8))


@lemma("L14", "the algebra of invariant matrices",
       "span(I, B - I, J - B) is closed under products with E_r E_s = sum_t p^t_rs E_t (B^2 = C B, "
       "B J = J B = C J, J^2 = D J), commutative and associative; J/D, B/C - J/D, I - B/C are "
       "orthogonal idempotents summing to I with traces 1, L - 1, D - L (the constant vectors, "
       "the set-constant vectors summing to 0, the vectors summing to 0 within each set); "
       "a I + b (B-I) + c (J-B) acts on them by a + (C-1) b + (D-C) c, a + (C-1) b - C c, a - b; "
       "g(M) = sum_k g(lam_k) E_k is a functional calculus (exp(M) exp(N) = exp(M + N), "
       "d/dt exp(t M) = M exp(t M), sqrt(M)^2 = M for M >= 0)",
       "L, C positive integer symbols, D = L C; the intersection numbers counted by cases on k "
       "(sums over r, s checked against the valencies) and derived from the entries: every "
       "product E_r E_s, its entries written with Kronecker deltas in (l, c), (m, e) and summed "
       "over the middle patch (n, f) by sympy over the symbolic ranges, equals "
       "sum_t p^t_rs E_t; the valencies likewise from the entries; products, idempotents, "
       "traces, eigenvalues (from the action on vectors u_i, S_l, T) and the functional calculus "
       "reduced coordinatewise to 0 (cancel); exact brute-force counts of the intersection "
       "numbers at (L, C) = " + ", ".join(f"({L},{C})" for L, C in L14_INSTANCES)
       + " (contiguous and interleaved sets)",
       general=True, scope="all L, C >= 1 (C = 1: B = I; L = 1: B = J)")
def prove_L14(proof: Proof) -> None:
    L, C, D = alg.L, alg.C, alg.D
    KD = sp.KroneckerDelta
    l, c, m, e = alg.l_, alg.c_, alg.m_, alg.e_
    p = alg.intersection_numbers()
    v = alg.valencies()
    # the intersection numbers are consistent with the valencies
    for t in range(3):
        proof.zero(sp.Add(*p[t].values()) - D, f"sum_rs p^{t}_rs = D", up_to="expand")
        for r in range(3):
            proof.zero(sp.Add(*[p[t].get((r, s), 0) for s in range(3)]) - v[r],
                       f"sum_s p^{t}_{r}s = valency {r}", up_to="expand")
    # the valencies from the entries: row sums of the indicators over symbolic ranges
    entries = (KD(l, m) * KD(c, e), KD(l, m) * (1 - KD(c, e)), 1 - KD(l, m))
    for t, ent in enumerate(entries):
        row = sp.Sum(sp.Sum(sp.expand(ent), (e, 0, C - 1)), (m, 0, L - 1)).doit()
        proof.equal(alg.canon(alg.in_range(row)), v[t],
                    f"row sum of {alg.TYPES[t]} is {v[t]} (sum over symbolic ranges)",
                    up_to="expand")
    # the products from the entries: (E_r E_s)[(l,c),(m,e)] = sum_{n<L} sum_{f<C} E_r[(l,c),(n,f)]
    # E_s[(n,f),(m,e)], summed over the symbolic ranges, is sum_t p^t_rs E_t[(l,c),(m,e)]
    n_, f_ = sp.symbols("n f", integer=True, nonnegative=True)

    def entry(t, a_, b_, x_, y_):
        return (KD(a_, x_) * KD(b_, y_), KD(a_, x_) * (1 - KD(b_, y_)), 1 - KD(a_, x_))[t]

    def idempotent_deltas(x_):  # delta^2 = delta
        return sp.expand(x_).replace(lambda z: isinstance(z, sp.Pow) and isinstance(z.base, KD),
                                     lambda z: z.base)

    bounds = {l: L, c: C, m: L, e: C}
    for r, s in itertools.product(range(3), repeat=2):
        summand = sp.expand(entry(r, l, c, n_, f_) * entry(s, n_, f_, m, e))
        prod = sp.Sum(sp.Sum(summand, (f_, 0, C - 1)), (n_, 0, L - 1))
        got = idempotent_deltas(alg.canon(alg.sum_deltas(prod, bounds)))
        want = idempotent_deltas(sum(sp.sympify(p[t].get((r, s), 0)) * entry(t, l, c, m, e)
                                     for t in range(3)))
        proof.equal(got, want, f"E{r} E{s} = sum_t p^t_{r}{s} E_t from the entries (symbolic "
                    "L, C)", up_to="expand")
        if (r, s) == (2, 2):
            wrong = idempotent_deltas(want + entry(2, l, c, m, e) * C)
            proof.control(got - wrong, "negative control: p^2_22 = D - C", up_to="expand")
    # brute-force counts at concrete sizes
    for Lk, Ck in L14_INSTANCES:
        for layout in ("blocks", "interleaved"):
            counted = alg.count_intersections(alg.partition_labels(Lk, Ck, layout))
            formula = {t: {rs: int(sp.sympify(n).subs({L: Lk, C: Ck})) for rs, n in p[t].items()}
                       for t in range(3)}
            # a type with no pair (C = 1: type 1; L = 1: type 2) has no counts to compare
            present = {0} | ({1} if Ck > 1 else set()) | ({2} if Lk > 1 else set())
            ok = all({rs: n for rs, n in formula[t].items() if n} == counted[t] for t in present)
            proof.exact(ok, f"intersection numbers counted at L={Lk}, C={Ck} ({layout})")
    # structure constants
    I, B, J = alg.I_(), alg.B_(), alg.J_()
    for lhs, rhs, what in ((B * B, B.scale(C), "B^2 = C B"), (B * J, J.scale(C), "B J = C J"),
                           (J * B, J.scale(C), "J B = C J"), (J * J, J.scale(D), "J^2 = D J"),
                           (I * B, B, "I B = B")):
        proof.zero(sp.Matrix((lhs - rhs).coords), what, up_to="expand")
    basis = alg.basis()
    for r, s in itertools.product(range(3), repeat=2):
        proof.zero(sp.Matrix((basis[r] * basis[s] - basis[s] * basis[r]).coords),
                   f"E{r} E{s} = E{s} E{r}", up_to="expand")
    for r, s, t in itertools.product(range(3), repeat=3):
        proof.zero(sp.Matrix(((basis[r] * basis[s]) * basis[t]
                              - basis[r] * (basis[s] * basis[t])).coords),
                   f"(E{r} E{s}) E{t} = E{r} (E{s} E{t})", up_to="expand")
    # idempotents, traces, spectral decomposition
    E = alg.idempotents()
    for i, j in itertools.product(range(3), repeat=2):
        target = E[i] if i == j else alg.Inv(0, 0, 0)
        proof.zero(sp.Matrix((E[i] * E[j] - target).coords), f"E_{i} E_{j} = delta E_{i}",
                   up_to="cancel")
    proof.zero(sp.Matrix((E[0] + E[1] + E[2] - I).coords), "E_const + E_set + E_in = I",
               up_to="cancel")
    for Ek, dim in zip(E, (1, L - 1, D - L)):
        proof.equal(Ek.trace(), dim, f"trace = {dim}", up_to="cancel")
    a, b, cc, a2, b2, c2, t_ = sp.symbols("a b c a2 b2 c2 t")
    M, N = alg.Inv(a, b, cc), alg.Inv(a2, b2, c2)
    lam = M.eigenvalues()
    spectral = E[0].scale(lam[0]) + E[1].scale(lam[1]) + E[2].scale(lam[2])
    proof.zero(sp.Matrix((spectral - M).coords), "M = sum_k lam_k E_k", up_to="cancel")
    # eigenvalues from the action on vectors: constant (u_i = 1, S_l = C, T = D), set-constant
    # summing to 0 (u_i = x_l, S_l = C x_l, T = 0), zero-sum within sets (S_l = 0, T = 0)
    x = sp.Symbol("x")
    for (ui, Sl, T), lk, name in (((1, C, D), lam[0], "constant"), ((x, C * x, 0), lam[1] * x,
                                  "set-constant, sum 0"), ((x, 0, 0), lam[2] * x,
                                                           "zero sum within sets")):
        proof.equal(M.apply(ui, Sl, T), lk, f"M acts by lam on the {name} vectors",
                    up_to="expand")
    # functional calculus
    def fn(Mx, g):
        return sp.Matrix(sum((Ek.scale(g(lk)) for Ek, lk in zip(E, Mx.eigenvalues())),
                             alg.Inv(0, 0, 0)).coords)

    def to_inv(vec):
        return alg.Inv(*vec)

    expM, expN, expMN = fn(M, sp.exp), fn(N, sp.exp), fn(M + N, sp.exp)
    prod = to_inv(expM) * to_inv(expN)
    proof.zero(sp.powsimp(sp.expand(sp.Matrix(prod.coords) - expMN)),
               "exp(M) exp(N) = exp(M + N)", up_to="cancel")
    etM = fn(M.scale(t_), sp.exp)
    proof.zero(sp.expand(etM.diff(t_) - sp.Matrix((M * to_inv(etM)).coords)),
               "d/dt exp(t M) = M exp(t M)", up_to="cancel")
    lpos = sp.symbols("lam0:3", positive=True)
    Mpos = sum((Ek.scale(lk) for Ek, lk in zip(E, lpos)), alg.Inv(0, 0, 0))
    root = sum((Ek.scale(sp.sqrt(lk)) for Ek, lk in zip(E, lpos)), alg.Inv(0, 0, 0))
    proof.zero(sp.Matrix((root * root - Mpos).coords),
               "sqrt(M)^2 = M for lam >= 0 (an invariant Gram factor P, Q = P P^T)",
               up_to="cancel")
    # negative controls: a wrong structure constant, a wrong eigenvalue
    proof.control(sp.Matrix((B * B - B.scale(D)).coords)[0], "negative control: B^2 = D B",
                  up_to="cancel")
    proof.control(M.apply(x, C * x, 0) - (a + (C - 1) * b + C * cc) * x,
                  "negative control: lam_set = a + (C-1) b + C c", up_to="cancel")
    proof.details["eigenspace_dimensions"] = ["1", "L - 1", "D - L"]
    proof.details["instances"] = [list(s) for s in L14_INSTANCES]
