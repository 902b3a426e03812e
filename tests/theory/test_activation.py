"""The activation's one definition (issue 25, "Activation in one place").

- each evaluation order (repeated squaring, sequential product, ``**``) equals exact rational
  arithmetic to a few roundings, and its derivative equals sympy's;
- the properties the certified bounds assume: odd (bit for bit), act(0) = 0, convex on
  [0, inf) (sympy, with even p as the control that fails), act(r a) / r nondecreasing in r;
- :func:`check_parameters` rejects what breaks them;
- arrays and scalars give the same bits, and an array argument is not modified;
- no other module of the package writes the activation's formula (an ast scan).
"""
import ast
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from patchassoc.theory import activation as act_mod
from patchassoc.theory.activation import (act, act_pair, act_pair_chain, act_prime,
                                          check_parameters)

from tests.tolerances import ACT_EXACT_UNITS

_ROOT = Path(__file__).resolve().parents[2]
#: From underflow (the monomial of 1e-300 is 0: the bound's absolute floor) to 1e30 (1e30^9 is
#: still finite).
_POINTS = [0.0, 1e-300, 3e-9, 0.1, 0.37, 0.5, 1.0, 1.3, 2.0, 7.25, 1e3, 1.7e17, 1e30]
_FLOOR = Fraction(2) ** -1070
_PARAMS = [(3, 0.0), (3, 0.03), (5, 0.03), (7, 0.0), (7, 1.5), (9, 0.03)]
_ORDERS = {"squaring": act_pair, "chain": act_pair_chain,
           "act": lambda t, p, nu: (act(t, p, nu), act_prime(t, p, nu))}


@pytest.mark.parametrize("order", sorted(_ORDERS))
@pytest.mark.parametrize("p, nu", _PARAMS)
def test_each_order_equals_exact_arithmetic(order, p, nu):
    for t in _POINTS + [-x for x in _POINTS]:
        value, slope = _ORDERS[order](t, p, nu)
        T, NU = Fraction(t), Fraction(nu)
        exact_value, exact_slope = T ** p + NU * T, p * T ** (p - 1) + NU
        scale_v = abs(T) ** p + NU * abs(T)
        scale_s = p * abs(T) ** (p - 1) + NU
        unit = Fraction(2) ** -53
        assert abs(Fraction(value) - exact_value) <= ACT_EXACT_UNITS * unit * scale_v + _FLOOR
        assert abs(Fraction(slope) - exact_slope) <= ACT_EXACT_UNITS * unit * scale_s + _FLOOR


@pytest.mark.parametrize("p", [3, 5, 7, 9])
def test_derivative_is_sympys(p):
    t, nu = sp.symbols("t nu")
    assert sp.expand(sp.diff(act(t, p, nu), t) - act_prime(t, p, nu)) == 0
    # the orders share the formula: on symbols the squaring and chain orders give the same
    # polynomials as ``**``
    for pair in (act_pair, act_pair_chain):
        value, slope = pair(t, p, nu)
        assert sp.expand(value - act(t, p, nu)) == 0
        assert sp.expand(slope - act_prime(t, p, nu)) == 0


def test_properties_the_bounds_assume():
    """Odd, act(0) = 0, convex on [0, inf) for odd p >= 3 and nu >= 0; even p fails (control)."""
    t = sp.Symbol("t", nonnegative=True)
    nu = sp.Symbol("nu", nonnegative=True)
    s = sp.Symbol("s")
    for p in (3, 5, 7, 9):
        assert sp.expand(act(-s, p, nu) + act(s, p, nu)) == 0
        assert act(sp.Integer(0), p, nu) == 0
        assert sp.diff(act(t, p, nu), t, 2).is_nonnegative
    assert sp.expand(act(-s, 4, nu) + act(s, 4, nu)) != 0       # control: even p is not odd
    rng = np.random.default_rng(0)
    z = np.concatenate([rng.standard_normal(2000) * 3, _POINTS[:-2]])  # no overflow of b b
    for p, nu in _PARAMS:
        for name, pair in _ORDERS.items():
            v, s1 = pair(z, p, nu)
            vm, s2 = pair(-z, p, nu)
            assert np.array_equal(vm, -v) and np.array_equal(s1, s2), name   # bit for bit
            assert pair(0.0, p, nu)[0] == 0.0
        # act(r a) / r nondecreasing in r (convexity and act(0) = 0): the certified bounds'
        # shrinking of act(|alpha|) to act(|alpha| r) / r
        a = np.abs(z[:50])[:, None]
        r = np.linspace(0.05, 1.0, 40)[None, :]
        ratio = act(a * r, p, nu) / r
        assert np.all(np.diff(ratio, axis=1) >= -1e-15 * np.abs(ratio[:, 1:]))


@pytest.mark.parametrize("p, nu", [(4, 0.03), (1, 0.03), (2.5, 0.0), (True, 0.0), (5, -0.1),
                                   (5, float("nan")), (5, float("inf")), (5, "x")])
def test_check_parameters_rejects_what_breaks_the_properties(p, nu):
    with pytest.raises(ValueError):
        check_parameters(p, nu)


def test_check_parameters_returns_int_and_float():
    assert check_parameters(5.0, 0) == (5, 0.0)
    assert isinstance(check_parameters(np.int64(7), np.float32(0.5))[0], int)


def test_arrays_and_scalars_give_the_same_bits_and_arrays_are_not_modified():
    z = np.random.default_rng(1).standard_normal(300) * 2
    keep = z.copy()
    for name, pair in _ORDERS.items():
        v, s = pair(z, 5, 0.03)
        assert np.array_equal(z, keep), name
        scalars = [pair(float(x), 5, 0.03) for x in z]
        assert np.array_equal(v, [a for a, _ in scalars]) and np.array_equal(s, [b for _, b in
                                                                                 scalars]), name


def test_compiled_gives_the_bits_of_plain_python():
    """Numba compiles the definition into the kernels; compiled, it computes the same bits."""
    import numba

    from patchassoc.simulations.engines import _jit  # noqa: F401  (registers the definition)

    z = np.random.default_rng(2).standard_normal(500) * 2

    @numba.njit
    def run(z, p, nu):
        out = np.empty((3, 2, z.shape[0]))
        for i in range(z.shape[0]):
            out[0, 0, i], out[0, 1, i] = act_pair(z[i], p, nu)
            out[1, 0, i], out[1, 1, i] = act_pair_chain(z[i], p, nu)
            out[2, 0, i], out[2, 1, i] = act(z[i], p, nu), act_prime(z[i], p, nu)
        return out

    for p in (3, 5, 7):
        out = run(z, p, 0.03)
        for k, pair in enumerate(_ORDERS.values()):
            v, s = pair(z, p, 0.03)
            assert np.array_equal(out[k, 0], v) and np.array_equal(out[k, 1], s)


# -- the one definition --------------------------------------------------------------------------
#: Files allowed to write a power with exponent p or a product by nu, and why.
_ALLOWED = {
    "theory/activation.py": "the definition",
    "theory/solutions.py": "the closed-form fixed point of the polynomial family "
                           "(sum of powers r^p of attention weights), derived for it",
}
_PACKAGE_DIRS = ("patchassoc", "theory", "simulations", "figures", "benchmarks")


def _formula_sites(tree):
    """Line numbers of ``x ** p``, ``x ** (p - 1)`` and ``nu * x`` / ``x * nu``: the shapes of
    the activation's formula."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            names = {n.id for n in ast.walk(node.right) if isinstance(n, ast.Name)}
            if "p" in names:
                found.append(node.lineno)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            if any(isinstance(side, ast.Name) and side.id == "nu"
                   for side in (node.left, node.right)):
                found.append(node.lineno)
    return found


def test_the_activation_is_defined_once():
    sites = []
    for top in _PACKAGE_DIRS:
        for path in sorted((_ROOT / top).rglob("*.py")):
            rel = path.relative_to(_ROOT).as_posix()
            if rel in _ALLOWED or "/lemmas/" in rel:  # lemmas: symbolic proofs over the family
                continue
            sites += [f"{rel}:{line}" for line in _formula_sites(ast.parse(path.read_text()))]
    assert sites == [], "the activation's formula outside theory/activation.py: " + ", ".join(
        sites)


def test_the_scan_finds_a_formula():
    """Control: the scan flags the formula in its usual shapes."""
    for src in ("f = z ** p + nu * z", "g = p * t ** (p - 1) + nu", "a = nu*t + t**p"):
        assert _formula_sites(ast.parse(src)), src
    assert _formula_sites(ast.parse(Path(act_mod.__file__).read_text()))


def test_largest_argument_is_found_once_per_activation_not_per_evaluation(monkeypatch):
    """Issue 46: the overflow refusal's bisection (about 50 evaluations of the bound in Python)
    ran on every call of the exact engine's :func:`evaluate`, work repeated thousands of times
    a flow. It depends on (p, nu, count) only: it is computed once for each, and every
    evaluation is refused against the stored value. A work count, not a timing: the number of
    evaluations of the bound over many evaluations. (A trajectory's :class:`Evaluator` checks
    its problem once and never calls it.)"""
    from patchassoc.simulations.engines.population.exact import Evaluator, evaluate

    calls = []
    real = act_mod._log_terms
    monkeypatch.setattr(act_mod, "_log_terms", lambda *a: calls.append(a) or real(*a))
    act_mod._largest_argument.cache_clear()
    act_mod.largest_argument_cached.cache_clear()
    # a (p, nu) no other test uses
    for i in range(40):
        evaluate(2, 2, 0.3, 7, 0.0175, 0.5 + 0.01 * i, 1.0, 0.2, 0.0)
    one = len(calls)
    assert 0 < one <= 80   # one bisection, for (p, nu, D) = (7, 0.0175, 4), not 40
    # the refusal still holds, with no new bisection
    with pytest.raises(ValueError, match="overflows float64"):
        evaluate(2, 2, 0.3, 7, 0.0175, 1e300, 1.0, 0.2, 0.0)
    assert len(calls) == one
    ev = Evaluator(2, 2, 0.3, 7, 0.0175)
    for i in range(10):
        ev(0.5 + 0.01 * i, 1.0, 0.2, 0.0)
    assert len(calls) == one


def test_cached_largest_argument_equals_a_fresh_bisection():
    """The cache returns the bisection's own number, for each (p, nu, count)."""
    for p, nu, count in [(3, 0.0, 1.0), (5, 0.03, 16.0), (7, 1.5, 64.0), (5, 1e300, 4.0)]:
        cached = act_mod.largest_argument(p, nu, count)
        fresh = act_mod._largest_argument.__wrapped__(p, nu, count)
        assert cached == fresh
        assert act_mod.largest_argument(p, nu, int(count)) == fresh
