"""Argument types the commands share: each turns one command-line word into a value or raises
:class:`argparse.ArgumentTypeError`, which the parser prints as one error line (exit 2)."""
from __future__ import annotations

import argparse
import math
from pathlib import Path

__all__ = ["nonneg_int", "positive_int", "positive_float", "out_path", "add_dask_options"]


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


def out_path(text: str) -> Path:
    """A folder path; an empty one is refused (it would mean the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a folder, got an empty path (use . for the "
                                         "current folder)")
    return Path(text)


def add_dask_options(parser, help_text: str) -> None:
    """``--dask ADDRESS`` and ``--dask-timeout SECONDS``: the command line connects to the
    scheduler before the run (:func:`patchassoc.simulations.runtime.executor.connect_dask`),
    waiting at most that long for it and for a first worker, and says so in one line."""
    from patchassoc.simulations.runtime.executor import DASK_TIMEOUT
    parser.add_argument("--dask", default=None, metavar="ADDRESS", help=help_text)
    parser.add_argument("--dask-timeout", type=positive_float, default=DASK_TIMEOUT,
                        metavar="SECONDS",
                        help=f"wait at most this long for the Dask scheduler, for its first "
                             f"worker and, during the run, for a worker to come back "
                             f"(default {DASK_TIMEOUT:g})")
