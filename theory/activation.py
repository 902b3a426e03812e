"""The activation act(t) = t^p + nu t: the one definition every engine evaluates.

The family. For an odd integer p >= 3 and nu >= 0,

    act(t) = t^p + nu t,        act'(t) = p t^(p-1) + nu,        act''(t) = p (p-1) t^(p-2).

It has the properties the exact engine's certified bounds assume (``docs/exact_engine.md``,
section 3): act is odd, act(0) = 0, and act is convex on [0, inf) (act'' >= 0 there). From
convexity and act(0) = 0 follow the two facts the bounds use: act(r a) / r is nondecreasing in
r > 0 for a >= 0, and |act(t)| <= act(|t|), |act'(t)| <= act'(|t|). :func:`check_parameters`
validates (p, nu) for exactly these properties.

One formula, two evaluation orders. :func:`_value` and :func:`_slope` are the formula, written
once: given the monomials t^p and t^(p-1), act = t^p + nu t and act' = p t^(p-1) + nu. What differs
between the engines is only how the monomial is rounded, and that order is part of each engine's
reproducible numbers (the reproduction compares them bit for bit), so each order is declared
here, by name, and each is a fixed sequence of IEEE 754 multiplications, whose results the
standard fixes: the same bits on every CPU.

- repeated squaring (:func:`power`): :func:`act_pair` takes t^(p-1) so and t^p = t^(p-1) t, the
  order of the sampled kernels and the brute-force oracle; :func:`act` and :func:`act_prime` take
  t^p and t^(p-1) so, the order of the NumPy model and of the scales and certified bounds built
  on act(|alpha|) (for p = 3 and 5 the two give the same bits);
- the sequential product ((t t) t) ... t (:func:`power_chain`): :func:`act_pair_chain`, the exact
  population engine's order.

For p = 3 squaring and the sequential product give the same bits (t t either way); for p = 5
they differ in about 20 % of arguments by one rounding of t^4. Each order is exact on the
integers it meets and odd bit for bit (every product of an even count of t's is even in t). (Until issue 41 ``act`` used
``**``, NumPy's pow: on a CPU with AVX-512 NumPy runs a vectorized pow there whose results are
neither the scalar pow's nor odd bit for bit, so the property held on one CPU only.)

Every function here is plain Python (no import beyond the standard library, so that importing
the configuration stays cheap) that runs on NumPy arrays, on scalars and on sympy symbols alike.
The engines' jit policy registers the functions of :data:`JITABLE` with Numba
(:mod:`patchassoc.simulations.engines._jit`), and the kernels compile them into themselves;
their cached machine code is keyed on this file's contents too
(:data:`~patchassoc.simulations.engines._jit.SHARED_SOURCES`), so an edit here recompiles them.

References
----------
SPEC section 2 (the model); ``docs/exact_engine.md`` section 3 (the bounds' assumptions).
"""
from __future__ import annotations

import functools
import math

__all__ = ["act", "act_prime", "act_second", "act_pair", "act_pair_chain", "act_symbolic",
           "power", "power_chain", "leading_term",
           "check_parameters", "check_range", "largest_argument", "largest_argument_cached",
           "FAMILY", "JITABLE",
           "HEADROOM", "P_MAX"]

#: The family, as stored with results and printed by reports.
FAMILY = "t^p + nu t"
#: The largest degree: 2^1023 is the largest power of 2 in float64.
P_MAX = 1023


def check_parameters(p, nu) -> tuple[int, float]:
    """Validate (p, nu) for the properties the engines and bounds assume; return them as
    (int, float).

    Raises
    ------
    ValueError
        p is not an odd integer >= 3 (act would not be odd, or not convex on [0, inf)) or is
        above :data:`P_MAX`, or nu is not a finite number >= 0 (act' >= nu must be nonnegative
        for act to be increasing).

    Notes
    -----
    SPEC section 2; ``docs/exact_engine.md`` section 3.
    """
    if isinstance(p, bool) or int(p) != p or p < 3 or int(p) % 2 == 0:
        raise ValueError(f"p must be an odd integer >= 3, got {p!r}")
    if p > P_MAX:
        # the engines form t^p by p - 1 products (the exact engine's order): a larger p would
        # loop for as long, and 2^p is no float64 past it (a trained model has |t| ~ 1 to 2)
        raise ValueError(f"p must be at most {P_MAX} (2^p overflows float64 beyond it), "
                         f"got {p!r}")
    try:
        nu_f = float(nu)
    except (TypeError, ValueError):
        raise ValueError(f"nu must be a number, got {nu!r}") from None
    if not nu_f >= 0.0 or nu_f == float("inf"):
        raise ValueError(f"nu must be a finite number >= 0, got {nu!r}")
    return int(p), nu_f


#: The factor below the largest float64 that the sums and products built on act keep free (the
#: risk, its gradient and the certified bounds multiply act by a few more terms).
HEADROOM = 2.0 ** 64

_LOG_MAX = 709.782712893384  # ln of the largest float64, 1.7976931348623157e308


def _log_terms(t: float, p: int, nu: float, count: float) -> float:
    """ln of count (p |t|^p + (p + 1) nu (|t| + 1) + p |t|^(p-1)), a bound on count times
    |act(t)| + |act'(t)| + |act(t) t|, in logarithms (no power is formed: it would overflow)."""
    t = abs(float(t))
    parts = [math.log(p) + p * math.log(t) if t > 0 else -math.inf,
             math.log(p) + (p - 1) * math.log(t) if t > 0 else -math.inf,
             math.log((p + 1) * nu) + math.log1p(t) if nu > 0 else -math.inf]
    top = max(parts)
    if top == -math.inf:
        return -math.inf
    return math.log(count) + top + math.log(sum(math.exp(x - top) for x in parts))


def largest_argument(p: int, nu: float, count: float = 1.0) -> float:
    """The largest |t| at which ``count`` terms of act(t), act'(t) and act(t) t stay below the
    largest float64 by :data:`HEADROOM` (0 when even t = 0 does not: ``nu`` too large), found in
    logarithms: no power of t is formed.

    Parameters
    ----------
    p, nu : the activation (:func:`check_parameters`).
    count : how many such terms a sum holds (the number of patches, say).

    Returns
    -------
    float

    Notes
    -----
    It depends on (p, nu, count) only, and is computed once for each (a bisection of about 50
    evaluations of the bound in Python): the engines refuse an argument against it at every
    evaluation (:func:`check_range`).
    """
    p, nu = check_parameters(p, nu)
    return _largest_argument(p, nu, float(count))


@functools.lru_cache(maxsize=1024, typed=True)
def largest_argument_cached(p, nu, count) -> float:
    """:func:`largest_argument` keyed on the arguments as given (validated on the first call of
    each (p, nu, count), a dictionary lookup afterwards): the bound a hot path refuses against.
    Arguments that are not valid raise every time (an exception is not cached)."""
    return largest_argument(p, nu, count)


@functools.lru_cache(maxsize=1024)
def _largest_argument(p: int, nu: float, count: float) -> float:
    """:func:`largest_argument` for validated (p, nu) and a float count, cached."""
    limit = _LOG_MAX - math.log(HEADROOM)
    if _log_terms(0.0, p, nu, count) > limit:
        return 0.0
    lo, hi = 0.0, 1.0
    while _log_terms(hi, p, nu, count) <= limit:
        lo, hi = hi, hi * 1e10
    for _ in range(200):   # bisection in ln t, to a relative 1e-12
        mid = math.sqrt(lo * hi) if lo > 0 else hi / 2
        if _log_terms(mid, p, nu, count) <= limit:
            lo = mid
        else:
            hi = mid
        if lo > 0 and hi / lo < 1 + 1e-12:
            break
    return lo


def check_range(t: float, p: int, nu: float, count: float = 1.0, *, what: str = "t") -> None:
    """Refuse an argument at which act cannot be evaluated in float64 with its headroom.

    Parameters
    ----------
    t : float
        The largest |argument| act will meet.
    p, nu : the activation.
    count : how many terms a sum holds (:func:`largest_argument`).
    what : str
        What ``t`` is, with the parameters behind it, for the message.

    Raises
    ------
    ValueError
        ``count`` terms of act(t) = t^p + nu t overflow float64, naming ``what``.
    """
    top = largest_argument_cached(p, nu, count)
    if not abs(float(t)) <= top:
        p, nu = check_parameters(p, nu)
        if top == 0.0:
            raise ValueError(f"nu = {nu:g} is too large: act(t) = t^{p} + nu t overflows "
                             f"float64 for every t != 0 in a sum of {count:g} terms")
        raise ValueError(f"{what}: act(t) = t^{p} + nu t overflows float64 there (|t| must "
                         f"stay below {top:.3g} for p = {p}, nu = {nu:g} in a sum of "
                         f"{count:g} terms)")


def _value(t, tp, nu):
    """The formula of act(t), given the monomial tp = t^p."""
    return tp + nu * t


def _slope(tpm1, p, nu):
    """The formula of act'(t), given the monomial tpm1 = t^(p-1)."""
    return p * tpm1 + nu


def _pair(t, m, p, nu):
    """(act(t), act'(t)) from m = t^(p-1) (t^p = m t)."""
    return _value(t, m * t, nu), _slope(m, p, nu)


def leading_term(t, p: int):
    """The activation's dominant degree-p part, t^p, elementwise (``t ** p``): what act(t) =
    t^p + nu t is for large |t|, and the p-homogeneous model the implicit-bias theory of
    homogeneous networks speaks of (:mod:`patchassoc.simulations.studies.implicit_bias`)."""
    return t ** p


def power(t, e):
    """t^e for an integer e >= 0 by repeated squaring: r = 1, b = t; while e > 0: (r = r b if e
    is odd), b = b b, e = e // 2. Never in place, so an array t is left as it was."""
    r = 1.0
    b = t
    while e > 0:
        if e & 1:
            r = r * b
        b = b * b
        e >>= 1
    return r


def power_chain(t, e):
    """t^e for an integer e >= 0 as the sequential product ((1 t) t) ... t."""
    r = 1.0
    for _ in range(e):
        r = r * t
    return r


def act_pair(t, p, nu):
    """(act(t), act'(t)), the monomial t^(p-1) by repeated squaring (:func:`power`)."""
    return _pair(t, power(t, p - 1), p, nu)


def act_pair_chain(t, p, nu):
    """(act(t), act'(t)), the monomial t^(p-1) by the sequential product (:func:`power_chain`)."""
    return _pair(t, power_chain(t, p - 1), p, nu)


def act(t, p, nu):
    """act(t) = t^p + nu t, the monomial by repeated squaring
    (:func:`~patchassoc.theory.activation.power`)."""
    return _value(t, power(t, p), nu)


def act_prime(t, p, nu):
    """act'(t) = p t^(p-1) + nu, the monomial by repeated squaring
    (:func:`~patchassoc.theory.activation.power`)."""
    return _slope(power(t, p - 1), p, nu)


def act_second(t, p, nu):
    """act''(t) = p (p - 1) t^(p-2), the monomial by repeated squaring
    (:func:`~patchassoc.theory.activation.power`); ``nu`` plays no role (the linear term has
    no curvature) and is kept for the family's signature."""
    return p * (p - 1) * power(t, p - 2)


def act_symbolic(t, p, nu):
    """act(t) with the monomial written as the power ``t ** p``: the formula for a proof over a
    symbolic exponent (sympy), not an evaluation order; no engine calls it."""
    return _value(t, t ** p, nu)


#: The functions the Numba kernels call (each calls only functions of this tuple): the jit
#: policy registers them (``numba.extending.register_jitable``).
JITABLE = (_value, _slope, _pair, power, power_chain, act_pair, act_pair_chain, act, act_prime)
