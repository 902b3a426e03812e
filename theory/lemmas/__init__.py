"""The lemmas of SPEC section 4, each established with sympy, most for symbolic sizes.

Every lemma is a symbolic proof: expressions that sympy reduces to exactly 0, or exact integer
facts. No floating-point number enters a proof; numeric spot checks of the same identities on the
engines are the property tests (``tests/properties``).

**General proofs** work in the algebra of invariant matrices (:mod:`.algebra`, lemma L14):
L and C are positive integer symbols, D = L C, an invariant matrix is its coordinates (a, b, c)
in the basis {I, B - I, J - B}, products use the structure constants (B^2 = C B,
B J = J B = C J, J^2 = D J), functions of a matrix use the eigenspaces of dimensions 1, L - 1,
D - L, and sums over patches are sympy sums over symbolic ranges. Each record says whether its
proof is ``general`` and gives its ``scope`` (the domain, or the sizes of an instance-only check);
each general proof also keeps instance cross-checks at fixed sizes and runs negative controls
(perturbed identities that must not reduce to 0).

=====  ========  ===========================================================================
L1     general   softmax Jacobian: da_i/dq_k = a_i (delta_ik - a_k); backprop a * (g - <a, g>)
L2     general   sum_k dR/dQ_ik = 0 for any loss: gradient descent conserves the row sums of Q
L3     general   the commutant of G is span(I, B - I, J - B) (orbit count), softmax has 3 values
L4     general   R(Pi Q Pi^T) = R(Q), grad_Q R(Pi Q Pi^T) = Pi grad_Q R(Q) Pi^T for Pi in G
L5     general   closed form of z_i for invariant attention
L6     general   reduced step sizes: per-entry gradient = reduced gradient / block size
L7     general   odd symmetry f(-X) = -f(X) and the label symmetry (fix y = +1)
L8     general   grad_v parallel to w* in the noiseless projection
L9     general   output of the block-uniform solution A = B / C
L10    general   uniform attention is a fixed point of the population dynamics of Q
L11    general   shifted blocks (Theorem 3.2): a row permutation of block-uniform, same f
L12    general   the paper's parameterization: v = D v', Q = A / sqrt d, same trajectory
L13    general   frozen diagonal: a fixed, (b, c) move; row sums are not conserved
L14    general   the algebra span(I, B, J): structure constants, eigenspaces, exp
=====  ========  ===========================================================================

Usage::

    from patchassoc.theory.lemmas import prove_all
    records = prove_all()            # list of LemmaRecord, L1 first
    all(r.proved for r in records), [r.name for r in records if not r.general]

References
----------
SPEC section 4; issues 4 and 12.
"""
from __future__ import annotations

from patchassoc.theory.lemmas._core import REGISTRY, LemmaRecord, Proof, is_zero
from patchassoc.theory.lemmas.closed_forms import prove_L5, prove_L7, prove_L8, prove_L9
from patchassoc.theory.lemmas.constructions import prove_L11, prove_L12
from patchassoc.theory.lemmas.dynamics import prove_L6, prove_L10, prove_L13
from patchassoc.theory.lemmas.invariant_algebra import prove_L14
from patchassoc.theory.lemmas.softmax import prove_L1, prove_L2
from patchassoc.theory.lemmas.symmetry import prove_L3, prove_L4

__all__ = ["LemmaRecord", "Proof", "is_zero", "LEMMAS", "names", "select", "prove", "prove_all",
           "prove_L1", "prove_L2", "prove_L3", "prove_L4", "prove_L5", "prove_L6", "prove_L7",
           "prove_L8", "prove_L9", "prove_L10", "prove_L11", "prove_L12", "prove_L13",
           "prove_L14"]


def _order(name: str) -> int:
    return int(name[1:])


#: name -> zero-argument function returning the lemma's :class:`LemmaRecord`, L1 first.
LEMMAS = dict(sorted(REGISTRY.items(), key=lambda item: _order(item[0])))


def names() -> list[str]:
    """The lemma names, in order."""
    return list(LEMMAS)


def prove(name: str) -> LemmaRecord:
    """Prove one lemma by name (``"L1"`` ... ``"L14"``, case-insensitive)."""
    key = name.strip().upper()
    if key not in LEMMAS:
        raise ValueError(f"unknown lemma {name!r}; known: {', '.join(LEMMAS)}")
    return LEMMAS[key]()


def select(selection=None) -> list[str]:
    """The lemma names of ``selection`` (all by default; case-insensitive, repeats dropped), in
    order, L1 first; ``ValueError`` naming an unknown one."""
    chosen = names() if not selection else [s.strip().upper() for s in selection]
    for key in chosen:
        if key not in LEMMAS:
            raise ValueError(f"unknown lemma {key!r}; known: {', '.join(LEMMAS)}")
    return sorted(dict.fromkeys(chosen), key=_order)


def prove_all(selection=None, progress=None) -> list[LemmaRecord]:
    """Prove the lemmas named in ``selection`` (all by default), in order.

    ``progress``, if given, is called with each record as soon as it is done.
    """
    records = []
    for key in select(selection):
        record = LEMMAS[key]()
        records.append(record)
        if progress is not None:
            progress(record)
    return records
