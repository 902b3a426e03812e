"""The proof harness: lemma records, the registry, and the only ways a check may pass.

A lemma is a function that receives a :class:`Proof` and feeds it symbolic identities. A check
passes only when sympy reduces ``lhs - rhs`` to exactly ``0`` (structurally, after ``expand``,
after ``cancel`` or after ``simplify``, cheapest first), or, for exact facts that are not
expressions (a rank, a group order), when an exact integer comparison holds. Floating-point
evaluation is never used: numeric spot checks belong to the property tests, not to proofs.

A lemma is proved when it ran without error, made at least one check, and every check passed.

A negative control (:meth:`Proof.control`) is a perturbed identity that must NOT reduce to 0 (and,
when it has no generic function in it, must be non-zero at an exact rational point): it shows
that the reductions used by the proof can fail. A control that vanishes fails the lemma.

Every lemma declares its scope: ``general=True`` when the statement is proved for symbolic sizes
(L, C, D, n as sympy symbols, ``scope`` naming the domain, e.g. "all L, C >= 1"), or
``general=False`` when it is only verified at the fixed sizes listed in ``scope``.

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
from sympy.core.function import AppliedUndef

__all__ = ["LemmaRecord", "Proof", "lemma", "REGISTRY", "is_zero", "exactly_nonzero"]

#: Functions a negative control may contain and still be evaluated at a rational point.
_ELEMENTARY = (sp.exp, sp.log)

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


def exactly_nonzero(value) -> bool:
    """True when ``value``, a number built from rationals and exponentials of rationals, is
    shown to be non-zero without rounding.

    Each e^r (r = n / N, N the common denominator) is written t^n with t = e^(1/N); t is
    transcendental (e is), so the value, a rational function of t with rational coefficients, is
    zero only if its numerator is the zero polynomial. Anything else (a free symbol, another
    constant, an unevaluated function) is not decided: False.
    """
    value = sp.sympify(value)
    if value.free_symbols or value.atoms(AppliedUndef, sp.Sum):
        return False
    value = value.replace(lambda z: z == sp.E, lambda z: sp.exp(1, evaluate=False))
    powers = [z for z in value.atoms(sp.exp)]
    if not all(z.args[0].is_Rational for z in powers):
        return False
    N = sp.ilcm(1, *[z.args[0].q for z in powers]) if powers else 1
    t = sp.Dummy("t", positive=True)
    as_poly = value.xreplace({z: t ** (z.args[0] * N) for z in powers})
    numerator, _ = sp.fraction(sp.cancel(sp.together(as_poly)))
    try:
        return not sp.Poly(numerator, t, domain=sp.QQ).is_zero
    except (sp.PolynomialError, sp.CoercionFailed):
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
    general : bool
        Proved for symbolic sizes over the domain in ``scope`` (False: instance checks only).
    scope : str
        The domain of a general proof, or the sizes at which an instance-only lemma is verified.
    controls : int
        Number of negative controls (perturbed identities shown not to vanish).
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
    general: bool = False
    scope: str = ""
    controls: int = 0

    def to_dict(self) -> dict:
        out = asdict(self)
        out["failures"] = list(self.failures)
        return out


class Proof:
    """Collects the checks of one lemma."""

    def __init__(self) -> None:
        self.checks = 0
        self.controls = 0
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

    def control(self, expr, what: str, up_to: str = "simplify", witness=None) -> bool:
        """Negative control: ``expr`` (a perturbed identity's residual) must not reduce to 0.

        When ``expr`` has no undefined function, it must also be non-zero at an exact rational
        point (its free symbols set to 2/3, 3/4, 4/5, ... in sorted order; an index symbol of a
        sum to its lower bound), so "not shown to vanish" is witnessed, not only failed.
        A residual with sums over symbolic ranges or generic functions has no value at such a
        point; ``witness``, a callable, then gives its exact value at a point the lemma chooses
        (sizes, indices and concrete functions), which must be a number shown non-zero by
        :func:`exactly_nonzero`.
        """
        self.controls += 1
        if is_zero(expr, up_to):
            self.failures.append(f"negative control vanished: {what}")
            return False
        if witness is not None:
            value = witness(expr)
            if not exactly_nonzero(value):
                self.failures.append(f"negative control not shown non-zero at its witness "
                                     f"point ({value}): {what}")
                return False
        exprs = list(expr) if isinstance(expr, sp.MatrixBase) else [sp.sympify(expr)]
        # a generic function (loss, activation) or a symbolic sum has no value at a point
        if any(e.atoms(AppliedUndef) or e.atoms(sp.Indexed) or e.atoms(sp.Sum)
               or any(type(fn) not in _ELEMENTARY for fn in e.atoms(sp.Function))
               for e in exprs):
            return True
        symbols = sorted(set().union(*(e.free_symbols for e in exprs)), key=str)
        point = {x: sp.Rational(k + 2, k + 3) for k, x in enumerate(symbols)}
        if all(sp.simplify(e.xreplace(point)) == 0 for e in exprs):
            self.failures.append(f"negative control is 0 at a rational point: {what}")
            return False
        return True

    def exact(self, ok: bool, what: str) -> bool:
        """Record an exact (integer, combinatorial) fact computed without rounding."""
        self.checks += 1
        if not ok:
            self.failures.append(f"false: {what}")
        return bool(ok)


#: name -> lemma function (in definition order, L1 first).
REGISTRY: dict[str, Callable[[], LemmaRecord]] = {}


def lemma(name: str, title: str, statement: str, method: str,
          registry: dict | None = REGISTRY, general: bool = False, scope: str = ""):
    """Register ``fn(proof)`` as lemma ``name`` in ``registry`` (the package's by default; None
    registers nowhere); the decorated callable takes no argument and returns a record.

    ``general``: the proof holds for symbolic sizes over ``scope``; otherwise ``scope`` lists the
    sizes at which the lemma is verified.
    """

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
                               error=error, general=general, scope=scope,
                               controls=proof.controls)

        run.__name__ = f"prove_{name}"
        run.__doc__ = f"{name} ({title}): {statement}\n\nMethod: {method}"
        run.lemma_name = name
        run.general = general
        run.scope = scope
        if registry is not None:
            if name in registry:
                raise RuntimeError(f"lemma {name} registered twice")
            registry[name] = run
        return run

    return decorate
