"""What a command will allocate, against what the machine has: a size refused before any array
is made.

A command's largest arrays are known from its configuration before it runs (the command line
states them as :class:`Need` records, arithmetic on the sizes, with no loop over values); they
are compared with the memory this machine has available now (:func:`available_bytes`:
``MemAvailable`` of ``/proc/meminfo``, else ``os.sysconf``), and a run that cannot fit is refused
in one line that names the parameters behind the largest array (:func:`check_fits`), instead of
failing minutes later, or after swapping, or with NumPy's "array is too big".
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable

from patchassoc.simulations.runtime.errors import UsageError

__all__ = ["Need", "available_bytes", "check_fits", "describe_bytes"]


@dataclass(frozen=True)
class Need:
    """One array (or group of arrays) a command will hold at once.

    Attributes
    ----------
    nbytes : int
        Its size in bytes (a Python integer: it may be far beyond 2**63).
    what : str
        What it is, with the parameters that set its size (``"Q0 = kappa I, D x D with D = L C
        = 40000 (L = 200, C = 200)"``).
    fix : str
        How to make it smaller (``"lower L or C"``).
    """

    nbytes: int
    what: str
    fix: str = ""


def available_bytes() -> int | None:
    """The memory this machine can give a new allocation now, in bytes: ``MemAvailable`` of
    ``/proc/meminfo`` (Linux), else the available physical pages times the page size
    (``os.sysconf``); ``None`` when neither can be read."""
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, AttributeError):
        return None


def describe_bytes(nbytes: int) -> str:
    """``nbytes`` in the largest binary unit that keeps it >= 1 (``"11.9 GiB"``)."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if value < 1024 or unit == "EiB":
            return f"{value:.3g} {unit}" if unit != "B" else f"{int(nbytes)} B"
        value /= 1024
    raise AssertionError("unreachable")


def check_fits(needs: Iterable[Need], command: str, available: int | None = None) -> int:
    """Refuse a command whose arrays cannot fit in the memory available.

    Parameters
    ----------
    needs : iterable of Need
        The arrays the command holds at once (their sizes add up).
    command : str
        The command's name, for the message.
    available : int, optional
        Bytes available (default: :func:`available_bytes`; nothing is refused when unknown).

    Returns
    -------
    int
        The total bytes needed.

    Raises
    ------
    UsageError
        The total exceeds ``available``: one line with the total, the largest array and the
        parameters behind it, and what is available.
    """
    needs = [n for n in needs if n.nbytes > 0]
    total = sum(int(n.nbytes) for n in needs)
    if available is None:
        available = available_bytes()
    if available is None or total <= available:
        return total
    big = max(needs, key=lambda n: n.nbytes)
    fix = f": {big.fix}" if big.fix else ""
    raise UsageError(f"{command} needs about {describe_bytes(total)} of memory, more than the "
                     f"{describe_bytes(available)} this machine has available; the largest "
                     f"part is {big.what} ({describe_bytes(big.nbytes)}){fix}")
