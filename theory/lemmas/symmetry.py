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
    Instance-only: verified on the exact finite population at (2, 2) and (2, 3), per sample at
    (4, 4).

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

from patchassoc.theory.lemmas._core import Proof, lemma
from patchassoc.theory.lemmas._symbolic import (act, backprop_softmax, conjugation_sub, ell,
                                                ell_prime, act_prime, exp_to_symbols, generators,
                                                grad_A_integrand, group_elements, invariant_logits,
                                                model_terms, patch_sub, patterns, permute_matrix,
                                                risk_integrand, sets_of, softmax, strided,
                                                structure_matrices, symbol_matrix)

__all__ = ["prove_L3", "prove_L4", "commutant_dimension", "orbital_count"]

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


@lemma("L4", "G-equivariance of the risk",
       "R(v, Pi Q Pi^T) = R(v, Q) and grad_Q R(Pi Q Pi^T) = Pi grad_Q R(Q) Pi^T for every Pi in G, "
       "any loss, any activation, any exchangeable noise projections",
       "finite population at L=2, C=2: an exact sum over all (y, l*, delta) with symbolic "
       "probabilities (symbolic q), symbolic Q (16 entries), alpha, noise projections n_j "
       "(free symbols: the identity holds after relabelling n_pi(j) <- n_j, which leaves any "
       "exchangeable law unchanged), and generic sympy functions ell and act. "
       "R(Pi Q Pi^T) - R(Q) reduces to 0 for all 8 elements of G; grad_A of the integrand "
       "(chain rule, checked against sympy.diff) and the softmax backprop are equivariant under "
       "the generators, so grad_Q is; the risk identity is proved for symbolic A and combined "
       "with softmax(Pi Q Pi^T) = Pi softmax(Q) Pi^T; also at L=2, C=3 on the generators; at "
       "(4, 4) (interleaved sets) the per-sample identities f(Pi u; Pi A Pi^T) = f(u; A) and "
       "softmax(Pi Q Pi^T) = Pi softmax(Q) Pi^T for the 15 generators; at (8, 8) the identity of "
       "f for a transposition inside a set and a swap of two sets. Not general: the statement "
       "is about the law of the data under a permutation of symbolic size, which these sympy "
       "computations cannot express; the population sum has 3^((L-1)C) patterns (3^12 at "
       "(4, 4)), and at (8, 8) the symbolic 64 x 64 softmax identity for all 63 generators "
       "takes over a minute, so only f is checked there",
       general=False, scope="verified at (L, C) = (2, 2) (all of G), (2, 3) (generators); "
       "per-sample identities at (4, 4) (generators) and (8, 8) (f, two generators)")
def prove_L4(proof: Proof) -> None:
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
