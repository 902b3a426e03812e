"""The proof harness: lemma records, the registry, and the only ways a check may pass.

A lemma is a function that receives a :class:`Proof` and feeds it symbolic identities. A check
passes only when sympy reduces ``lhs - rhs`` to exactly ``0`` (structurally, after ``expand``,
after ``cancel`` or after ``simplify``, cheapest first), or, for exact facts that are not
expressions (a rank, a group order), when an exact integer comparison holds. Floating-point
evaluation is never used: numeric spot checks belong to the property tests, not to proofs.

A lemma is proved when it ran without error, made at least one check, and every check passed.

References
----------
SPEC section 4; issue 4 (proved-lemmas layer).
"""
from __future__ import annotations

import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Callable

import sympy as sp

__all__ = ["LemmaRecord", "Proof", "lemma", "REGISTRY", "is_zero"]

#: Reductions tried, cheapest first, to show an expression is identically zero.
_REDUCTIONS = ("structural", "expand", "cancel", "simplify")


def is_zero(expr, up_to: str = "simplify") -> bool:
    """True when sympy reduces ``expr`` (a scalar or a matrix) to exactly zero.

    ``up_to`` names the most expensive reduction allowed (see ``_REDUCTIONS``). A ``False`` answer
    means "not shown to vanish", not "shown to be non-zero".
    """
    if isinstance(expr, sp.MatrixBase):
        return all(is_zero(e, up_to) for e in expr)
    expr = sp.sympify(expr)
    last = _REDUCTIONS.index(up_to)
    for step in _REDUCTIONS[:last + 1]:
        if step == "structural":
            reduced = expr
        elif step == "expand":
            reduced = sp.expand(expr)
        elif step == "cancel":
            reduced = sp.cancel(sp.together(expr))
        else:
            reduced = sp.simplify(expr)
        if reduced == 0:
            return True
    return False


@dataclass(frozen=True)
class LemmaRecord:
    """The outcome of one lemma: what it states, how it was proved, and whether it was.

    Attributes
    ----------
    name : str
        ``"L1"`` ... ``"L10"``.
    title : str
        A few words.
    statement : str
        The identity, in SPEC notation.
    method : str
        How sympy proves it (which symbolic computation, at which sizes).
    proved : bool
        Every check passed (and there was at least one).
    seconds : float
        Wall-clock time of the proof.
    checks : int
        Number of symbolic identities (or exact facts) verified.
    details : dict
        Lemma-specific exact results (e.g. dimensions found by L3).
    failures : tuple of str
        Descriptions of the checks that did not pass (empty when proved).
    error : str or None
        The exception that interrupted the proof, if any.
    """

    name: str
    title: str
    statement: str
    method: str
    proved: bool
    seconds: float
    checks: int = 0
    details: dict = field(default_factory=dict)
    failures: tuple = ()
    error: str | None = None

    def to_dict(self) -> dict:
        out = asdict(self)
        out["failures"] = list(self.failures)
        return out


class Proof:
    """Collects the checks of one lemma."""

    def __init__(self) -> None:
        self.checks = 0
        self.failures: list[str] = []
        self.details: dict = {}

    def zero(self, expr, what: str, up_to: str = "simplify") -> bool:
        """Check that ``expr`` (scalar or matrix) is identically zero."""
        self.checks += 1
        ok = is_zero(expr, up_to)
        if not ok:
            self.failures.append(f"not shown to vanish: {what}")
        return ok

    def equal(self, lhs, rhs, what: str, up_to: str = "simplify") -> bool:
        """Check that ``lhs - rhs`` is identically zero."""
        if isinstance(lhs, sp.MatrixBase) or isinstance(rhs, sp.MatrixBase):
            lhs, rhs = sp.Matrix(lhs), sp.Matrix(rhs)
            if lhs.shape != rhs.shape:
                self.checks += 1
                self.failures.append(f"shape mismatch {lhs.shape} != {rhs.shape}: {what}")
                return False
        return self.zero(lhs - rhs, what, up_to)

    def exact(self, ok: bool, what: str) -> bool:
        """Record an exact (integer, combinatorial) fact computed without rounding."""
        self.checks += 1
        if not ok:
            self.failures.append(f"false: {what}")
        return bool(ok)


#: name -> lemma function (in definition order, L1 first).
REGISTRY: dict[str, Callable[[], LemmaRecord]] = {}


def lemma(name: str, title: str, statement: str, method: str,
          registry: dict | None = REGISTRY):
    """Register ``fn(proof)`` as lemma ``name`` in ``registry`` (the package's by default; None
    registers nowhere); the decorated callable takes no argument and returns a record."""

    def decorate(fn: Callable[[Proof], None]) -> Callable[[], LemmaRecord]:
        def run() -> LemmaRecord:
            proof = Proof()
            error = None
            t0 = time.perf_counter()
            try:
                fn(proof)
            except Exception as exc:  # a crashed proof is an unproved lemma, with its reason
                error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"
            seconds = time.perf_counter() - t0
            proved = error is None and proof.checks > 0 and not proof.failures
            return LemmaRecord(name=name, title=title, statement=statement, method=method,
                               proved=proved, seconds=seconds, checks=proof.checks,
                               details=proof.details, failures=tuple(proof.failures),
                               error=error)

        run.__name__ = f"prove_{name}"
        run.__doc__ = f"{name} ({title}): {statement}\n\nMethod: {method}"
        run.lemma_name = name
        if registry is not None:
            if name in registry:
                raise RuntimeError(f"lemma {name} registered twice")
            registry[name] = run
        return run

    return decorate
