"""Progress reporting: tqdm bars on stderr (never stdout, which ``--json`` keeps clean).

A bar appears only after a couple of seconds (``delay``), so short commands stay silent, and
never when disabled (``--quiet``).
"""
from __future__ import annotations

import sys

from tqdm import tqdm

__all__ = ["progress_bar"]


def progress_bar(total: int, desc: str, enable: bool = True, unit: str = "step") -> tqdm:
    """A tqdm bar on stderr that shows itself after 2 s, or a disabled one."""
    # Redirected stderr (a log file, CI) gets a line every 10 s instead of a redraw per update.
    interval = 0.1 if sys.stderr.isatty() else 10.0
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not enable,
                delay=2.0, dynamic_ncols=True, leave=False, mininterval=interval)
