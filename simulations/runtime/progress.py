"""Progress reporting: tqdm bars on stderr (never stdout, which ``--json`` keeps clean), and
one-line notices.

A bar appears only after a couple of seconds (``delay``), so short commands stay silent, and
never when disabled (``--quiet``). A notice (:func:`notice`: a cell or step recomputed because
its stored file is corrupt or belongs to other work) is printed even with ``--quiet``: it says
why the run does more than the user expects.
"""
from __future__ import annotations

import sys

from tqdm import tqdm

__all__ = ["progress_bar", "notice"]


def progress_bar(total: int, desc: str, enable: bool = True, unit: str = "step") -> tqdm:
    """A tqdm bar on stderr that shows itself after 2 s, or a disabled one."""
    # Redirected stderr (a log file, CI) gets a line every 10 s instead of a redraw per update.
    interval = 0.1 if sys.stderr.isatty() else 10.0
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not enable,
                delay=2.0, dynamic_ncols=True, leave=False, mininterval=interval)


def notice(message: str) -> None:
    """One line on stderr, ``patchassoc: <message>`` (written around any progress bar)."""
    tqdm.write(f"patchassoc: {message}", file=sys.stderr)
