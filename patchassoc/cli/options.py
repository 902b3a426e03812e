"""Argument types the commands share: each turns one command-line word into a value or raises
:class:`argparse.ArgumentTypeError`, which the parser prints as one error line (exit 2)."""
from __future__ import annotations

import argparse
import math

__all__ = ["nonneg_int", "positive_int", "positive_float"]


def _int_at_least(text: str, minimum: int, words: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise argparse.ArgumentTypeError(f"expected a {words} integer, got {text!r}")
    return value


def nonneg_int(text: str) -> int:
    """An integer >= 0."""
    return _int_at_least(text, 0, "non-negative")


def positive_int(text: str) -> int:
    """An integer >= 1."""
    return _int_at_least(text, 1, "positive")


def positive_float(text: str) -> float:
    """A finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value
