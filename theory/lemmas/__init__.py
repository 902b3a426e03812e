"""The proved lemmas of SPEC section 4, each established with sympy.

Every lemma is a symbolic proof: either an expression that sympy reduces to exactly 0, or an
exact symbolic computation with symbolic parameters at small (L, C) (an exact nullspace, a finite
population summed over every pattern with symbolic probabilities and generic loss and activation
functions). No floating-point number enters a proof; numeric spot checks of the same identities
on the engines are the property tests (``tests/properties``).

=====  ==================================================================================
L1     softmax Jacobian: da_i/dq_k = a_i (delta_ik - a_k); backprop a * (g - <a, g>)
L2     sum_k dR/dQ_ik = 0 for any loss: gradient descent conserves the row sums of Q
L3     invariant logits: the commutant of G is span(I, B - I, J - B), softmax has 3 values
L4     R(Pi Q Pi^T) = R(Q) and grad_Q R(Pi Q Pi^T) = Pi grad_Q R(Q) Pi^T for Pi in G
L5     closed form of z_i for invariant attention
L6     reduced step sizes: per-entry gradient = reduced gradient / block size
L7     odd symmetry f(-X) = -f(X) and the label symmetry (fix y = +1)
L8     grad_v parallel to w* in the noiseless projection
L9     output of the block-uniform solution A = B / C
L10    uniform attention is a fixed point of the population dynamics of Q
=====  ==================================================================================

Usage::

    from patchassoc.theory.lemmas import prove_all
    records = prove_all()            # list of LemmaRecord, L1 first
    all(r.proved for r in records)

References
----------
SPEC section 4; issue 4.
"""
from __future__ import annotations


from ._core import REGISTRY, LemmaRecord, Proof, is_zero
from .closed_forms import prove_L5, prove_L7, prove_L8, prove_L9
from .dynamics import prove_L6, prove_L10
from .softmax import prove_L1, prove_L2
from .symmetry import prove_L3, prove_L4

__all__ = ["LemmaRecord", "Proof", "is_zero", "LEMMAS", "names", "prove", "prove_all",
           "prove_L1", "prove_L2", "prove_L3", "prove_L4", "prove_L5", "prove_L6", "prove_L7",
           "prove_L8", "prove_L9", "prove_L10"]


def _order(name: str) -> int:
    return int(name[1:])


#: name -> zero-argument function returning the lemma's :class:`LemmaRecord`, L1 first.
LEMMAS = dict(sorted(REGISTRY.items(), key=lambda item: _order(item[0])))


def names() -> list[str]:
    """The lemma names, in order."""
    return list(LEMMAS)


def prove(name: str) -> LemmaRecord:
    """Prove one lemma by name (``"L1"`` ... ``"L10"``, case-insensitive)."""
    key = name.strip().upper()
    if key not in LEMMAS:
        raise ValueError(f"unknown lemma {name!r}; known: {', '.join(LEMMAS)}")
    return LEMMAS[key]()


def prove_all(selection=None, progress=None) -> list[LemmaRecord]:
    """Prove the lemmas named in ``selection`` (all by default), in order.

    ``progress``, if given, is called with each record as soon as it is done.
    """
    chosen = names() if not selection else [s.strip().upper() for s in selection]
    for key in chosen:
        if key not in LEMMAS:
            raise ValueError(f"unknown lemma {key!r}; known: {', '.join(LEMMAS)}")
    records = []
    for key in sorted(dict.fromkeys(chosen), key=_order):
        record = LEMMAS[key]()
        records.append(record)
        if progress is not None:
            progress(record)
    return records
