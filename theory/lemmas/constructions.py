"""Lemmas L11-L12: the paper's constructions and parameterization, for symbolic sizes.

L11 (paper Theorem 3.2's construction). f(X) = sum_i act(z_i) sums over the query patches i, and
    a row permutation Pi of A permutes z (z' = Pi z), so f is unchanged for every input. Shifted
    blocks, where every patch of set l attends uniformly to set l + 1 (mod L),
    A'[(l, c), (m, e)] = delta_{m, l+1 mod L} / C, is a row permutation of block-uniform B / C
    and computes exactly its f: f' = C sum_l act((alpha S_{l+1} + N_{l+1}) / C) = f. For L >= 2
    its top-C of row (l, c) is S_{l+1}, disjoint from S_l: a generalizing model without patch
    association. The same holds at finite temperature: row-softmax commutes with row
    permutations, so logits Pi (kappa B) give f(kappa B) for every kappa.
L12 (the paper's parameterization). F(X) = sum_i act(D sum_j softmax(A / sqrt d)_ij <v', X_j>)
    equals f(X) at v = D v', Q = A / sqrt d. Gradient descent on (v', A) with step sizes
    (eta'_v, eta'_A) is gradient descent on (v, Q) with eta_v = D^2 eta'_v and
    eta_Q = eta'_A / d, step by step: the two runs are the same trajectory. The map is entrywise,
    so it also holds with the diagonal frozen, and the invariant coordinates scale as
    (a, b, c) = (a', b', c') / sqrt d.

References
----------
SPEC sections 2, 3 and 4; PAPER.md (Theorem 3.2, model (T)); issue 12.
"""
from __future__ import annotations

import itertools

import numpy as np
import sympy as sp

from patchassoc.theory.lemmas import algebra as alg
from patchassoc.theory.lemmas._core import Proof, lemma
from patchassoc.theory.lemmas._symbolic import act, generic_function, softmax, symbol_matrix

__all__ = ["prove_L11", "prove_L12", "shifted_blocks"]

#: Sizes at which the top-C disjointness is checked with the project's topc test (exact).
L11_INSTANCES = ((2, 2), (3, 2), (4, 4), (8, 8))
#: Patches of the symbolic image on which every row permutation is checked.
L11_PERMUTATION_D = 4


def shifted_blocks(L: int, C: int) -> np.ndarray:
    """Shifted blocks with contiguous sets: row i of set l is 1/C on set l + 1 (mod L)."""
    D = L * C
    label = np.arange(D) // C
    return (label[None, :] == (label[:, None] + 1) % L).astype(float) / C


@lemma("L11", "shifted blocks: a row permutation of block-uniform (Theorem 3.2)",
       "for every row permutation Pi, f(X; Pi A) = f(X; A) for every input; shifted blocks "
       "A'[(l,c),(m,e)] = delta_{m, l+1 mod L} / C is block-uniform with rows permuted and gives "
       "f' = C sum_l act((alpha S_l + N_l) / C), block-uniform's f; for L >= 2 the top-C of every "
       "row of A' is S_{l+1}, disjoint from S(i); the same at finite temperature, since "
       "softmax(Pi Q) = Pi softmax(Q) for a row permutation",
       "general (L, C symbols): z'_(l,c) = sum_m sum_e A'[(l,c),(m,e)] u[m,e] summed over symbolic "
       "ranges with sigma = l + 1 mod L an in-range index gives (alpha S_sigma + N_sigma) / C; "
       "f' = sum_l C act(S_{l+1 mod L}/C) is reindexed (l -> l + 1 on 0..L-2, plus the wrapped "
       "term l = L - 1) to sum_l C act(S_l / C) with sympy's change_index; sigma(l) - l is 1 for "
       "l <= L - 2 and 1 - L < 0 for l = L - 1 (L >= 2); the C entries 1/C exceed the D - C >= 1 "
       "zeros. The general proof covers the set shift used by the construction; that any row "
       "permutation leaves f unchanged is the reindexing of the finite sum over i, checked here "
       "for all 24 row permutations of a symbolic 4 x 4 A (generic activation), with "
       "row-softmax commuting with them; the project's topc test passes 0 rows of shifted "
       "blocks at (L, C) = "
       + ", ".join(f"({L},{C})" for L, C in L11_INSTANCES),
       general=True, scope="all L, C >= 1 (top-C disjointness: L >= 2)")
def prove_L11(proof: Proof) -> None:
    Ls, Cs = alg.L, alg.C
    l = alg.l_
    alpha = sp.Symbol("alpha")
    s_, n_ = sp.IndexedBase("s"), sp.IndexedBase("n")
    sigma = sp.Symbol("sigma", integer=True, nonnegative=True)  # l + 1 mod L, in [0, L)
    entry = sp.KroneckerDelta(alg.m_, sigma) / Cs
    z = alpha * alg.indexed_apply(entry, s_) + alg.indexed_apply(entry, n_)
    z = alg.canon(alg.in_range(z, {sigma: Ls}))
    closed = alg.canon((alpha * alg.set_sum(sigma, s_) + alg.set_sum(sigma, n_)) / Cs)
    proof.equal(z, closed, "z'_(l,c) = (alpha S_sigma(l) + N_sigma(l)) / C", up_to="expand")
    # f' = sum_l h(l + 1 mod L) with h(l) = C act((alpha S_l + N_l) / C): the cyclic reindexing
    inner = sp.Sum(act(z.xreplace({sigma: l + 1})), (alg.c_, 0, Cs - 1)).doit()
    proof.zero(sp.factor_terms(inner - Cs * act(closed.xreplace({sigma: l + 1}))),
               "sum over the C patches of set l: C act(z'_l)", up_to="expand")
    h = sp.Function("h")
    moved = sp.Sum(h(l + 1), (l, 0, Ls - 2)).change_index(l, l + 1)  # l + 1 <= L - 1: no wrap
    shifted = moved + sp.Sum(h(l), (l, 0, 0))                      # l = L - 1 wraps to 0
    proof.zero(sp.simplify(shifted - sp.Sum(h(l), (l, 0, Ls - 1))),
               "sum_l h(l + 1 mod L) = sum_l h(l) (any h, symbolic L)", up_to="structural")
    proof.control(sp.simplify(moved + sp.Sum(h(l), (l, 0, 0))
                              - sp.Sum(h(l + 1), (l, 0, Ls - 1))),
                  "negative control: sum_l h(l + 1) without the wrap-around", up_to="simplify")
    proof.control(z - alg.canon((alpha * alg.set_sum(l, s_) + alg.set_sum(l, n_)) / Cs),
                  "negative control: z'_(l,c) equals block-uniform's z_(l,c) (it does not: "
                  "only the sums over patches agree)", up_to="expand")
    # top-C disjointness for L >= 2: sigma(l) != l
    L2 = sp.Symbol("L_2", integer=True, nonnegative=True)  # L = L_2 + 2
    proof.exact(((l + 1) - l) == 1, "sigma(l) - l = 1 for l <= L - 2")
    wrap = (0 - (Ls - 1)).subs(Ls, L2 + 2)
    proof.exact(bool(wrap.is_negative), "sigma(L - 1) - (L - 1) = 1 - L < 0 for L >= 2")
    C1 = sp.Symbol("C_1", integer=True, nonnegative=True)  # C = C_1 + 1
    proof.exact(bool((1 / Cs).is_positive) and bool((alg.D - Cs - 1).subs({Ls: L2 + 2, Cs: C1 + 1})
                                                    .expand().is_nonnegative),
                "1/C > 0 on the C entries of S_sigma(l) and D - C >= 1 zeros: top-C = S_sigma(l)")
    # instances: every row permutation at D = 4; softmax commutes with row permutations
    D4 = L11_PERMUTATION_D
    A = symbol_matrix("A", D4)
    uu = sp.symbols(f"u0:{D4}")
    Qm = symbol_matrix("Q", D4)

    def f_of(M):
        zz = M * sp.Matrix(uu)
        return sp.Add(*[act(zz[i]) for i in range(D4)])

    base = f_of(A)
    for perm in itertools.permutations(range(D4)):
        P = sp.Matrix(D4, D4, lambda i, j: 1 if perm[i] == j else 0)
        proof.zero(f_of(P * A) - base, f"f(Pi A) = f(A), rows {perm}", up_to="structural")
        proof.equal(softmax(P * Qm), P * softmax(Qm), f"softmax(Pi Q) = Pi softmax(Q), {perm}",
                    up_to="structural")
    col = sp.Matrix(D4, D4, lambda i, j: 1 if (j + 1) % D4 == i else 0)
    proof.control(f_of(A * col) - base, "negative control: a column permutation changes f",
                  up_to="expand")
    from patchassoc.theory.association import topc_rows
    from patchassoc.theory.structure import blocks
    passes = {}
    for Lk, Ck in L11_INSTANCES:
        rows = topc_rows(shifted_blocks(Lk, Ck), blocks(Lk, Ck))
        passes[f"{Lk}x{Ck}"] = int(np.sum(rows))
        proof.exact(int(np.sum(rows)) == 0, f"topc passes 0 rows of shifted blocks, L={Lk}, "
                    f"C={Ck}")
    proof.details["topc_rows_passing"] = passes


@lemma("L12", "the paper's parameterization: same trajectory",
       "F(X; v', A) = sum_i act(D sum_j softmax(A / sqrt d)_ij <v', X_j>) = "
       "f(X; D v', A / sqrt d); "
       "grad_v' = D grad_v, grad_A = grad_Q / sqrt d; gradient descent on (v', A) with "
       "(eta'_v, eta'_A) maps step by step onto gradient descent on (v, Q) with "
       "eta_v = D^2 eta'_v and eta_Q = eta'_A / d (also with the diagonal frozen: the map is "
       "entrywise); the invariant coordinates are (a, b, c) = (a', b', c') / sqrt d",
       "general (D, d positive symbols): the inner sums over j as sympy sums over the symbolic "
       "range (D pulled inside), equal at v = D v', Q = A / sqrt d; the risk as a generic "
       "function of one coordinate of v and one entry of Q (the map is coordinatewise, the other "
       "coordinates are held fixed), differentiated by sympy; one step of each descent mapped "
       "onto the other reduces to 0; negative controls: eta_v = D eta'_v and eta_Q = eta'_A / "
       "sqrt d do not give the same step",
       general=True, scope="all D, d >= 1 (any L, C with D = L C)")
def prove_L12(proof: Proof) -> None:
    Dn, d = sp.symbols("D d", integer=True, positive=True)
    j, r = sp.symbols("j r", integer=True, nonnegative=True)
    S, X, vp = sp.IndexedBase("S"), sp.IndexedBase("X"), sp.IndexedBase("v'")
    i = sp.Symbol("i", integer=True, nonnegative=True)
    # <v, X_j> = sum_r v_r X_jr with v = D v'
    paper = Dn * sp.Sum(S[i, j] * sp.Sum(vp[r] * X[j, r], (r, 0, d - 1)), (j, 0, Dn - 1))
    ours = sp.Sum(S[i, j] * sp.Sum(Dn * vp[r] * X[j, r], (r, 0, d - 1)), (j, 0, Dn - 1))
    proof.equal(alg.canon(paper), alg.canon(ours),
                "D sum_j S_ij <v', X_j> = sum_j S_ij <D v', X_j>", up_to="expand")
    # gradients and steps, coordinatewise
    R, (R_v, R_Q) = generic_function("R", 2)
    x, y, eta_v1, eta_A1 = sp.symbols("x y eta'_v eta'_A")   # x = v'_k, y = A_ij
    Rp = R(Dn * x, y / sp.sqrt(d))
    gx, gy = sp.diff(Rp, x), sp.diff(Rp, y)
    v, Q = Dn * x, y / sp.sqrt(d)
    proof.equal(gx, Dn * R_v(v, Q), "dR'/dv'_k = D dR/dv_k", up_to="expand")
    proof.equal(gy, R_Q(v, Q) / sp.sqrt(d), "dR'/dA_ij = dR/dQ_ij / sqrt d", up_to="expand")
    x1, y1 = x - eta_v1 * gx, y - eta_A1 * gy   # one step of the paper's descent
    eta_v, eta_Q = Dn ** 2 * eta_v1, eta_A1 / d
    proof.equal(Dn * x1, v - eta_v * R_v(v, Q), "v_{t+1} = D v'_{t+1} with eta_v = D^2 eta'_v",
                up_to="expand")
    proof.equal(y1 / sp.sqrt(d), Q - eta_Q * R_Q(v, Q),
                "Q_{t+1} = A_{t+1} / sqrt d with eta_Q = eta'_A / d", up_to="expand")
    proof.control(Dn * x1 - (v - Dn * eta_v1 * R_v(v, Q)),
                  "negative control: eta_v = D eta'_v", up_to="expand")
    proof.control(y1 / sp.sqrt(d) - (Q - eta_A1 / sp.sqrt(d) * R_Q(v, Q)),
                  "negative control: eta_Q = eta'_A / sqrt d", up_to="expand")
    # invariant coordinates: Q = A / sqrt d entrywise, so the coordinates scale alike
    a1, b1, c1 = sp.symbols("a' b' c'")
    scaled = alg.Inv(a1, b1, c1).scale(1 / sp.sqrt(d))
    proof.zero(sp.Matrix(scaled.coords) - sp.Matrix([a1, b1, c1]) / sp.sqrt(d),
               "(a, b, c) = (a', b', c') / sqrt d", up_to="expand")
