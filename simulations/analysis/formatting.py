"""Numbers as the readings, claim records and commands print them: one place for the missing
value, the non-finite value and the format.

A missing value (None, or something that is not a number) prints as ``missing`` (``"n/a"``); a
non-finite one as ``nonfinite`` when given, else as Python formats it (``inf``, ``-inf``,
``nan``); every other value through Python's built-in ``format`` with ``spec``. An int is
formatted as an int (``format`` converts it for a float presentation type, as it converts a
float).
"""
from __future__ import annotations

import math

__all__ = ["num", "percent"]


def num(x, spec: str = ".3f", *, missing: str = "n/a", nonfinite: str | None = None) -> str:
    """``x`` formatted with ``spec`` (``format(x, spec)``).

    Parameters
    ----------
    x : float, int, str or None
        The value; None, or a value ``float`` refuses, prints as ``missing``.
    spec : str
        A format specification (``".3f"``, ``".3g"``, ``".0e"``).
    missing : str
        The text of a missing value.
    nonfinite : str, optional
        The text of a non-finite value (default: Python's ``inf`` / ``nan``).

    Returns
    -------
    str
    """
    if x is None:
        return missing
    try:
        value = float(x)
    except (TypeError, ValueError):
        return missing
    if nonfinite is not None and not math.isfinite(value):
        return nonfinite
    return format(x if isinstance(x, int) and not isinstance(x, bool) else value, spec)


def percent(x, digits: int = 2, *, missing: str = "n/a") -> str:
    """A fraction ``x`` as a percentage with ``digits`` decimals: ``0.1234`` -> ``"12.34 %"``."""
    if x is None:
        return missing
    return f"{100 * float(x):.{digits}f} %"
