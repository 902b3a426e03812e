"""The memory a command will allocate, from its configuration alone, checked before it runs.

A command declares what it allocates with ``ALLOCATES`` (a tuple of the kinds below, default
none); :func:`check_memory` turns the resolved configuration into the arrays held at once
(:class:`~patchassoc.simulations.runtime.memory.Need`, arithmetic on the sizes, no loop over
values) and refuses, in one line naming the parameters, a run that cannot fit in the memory this
machine has (:func:`~patchassoc.simulations.runtime.memory.check_fits`):

- ``"start"``: every run of the model starts from v0 ~ N(0, omega^2 I_d) and w* (d entries each)
  and from Q0 = kappa I, a D x D matrix made as ``eye(D)`` and then scaled (two at once), and
  lays out its ``records`` record times;
- ``"sample"``: sampled data, N x D x d for the training sample and n_test x D x d for the
  test sample, while the larger of them is drawn with one temporary of its size (the feature
  added to the noise), and the records of training (the attention and v at each record, D x D
  + d numbers).
"""
from __future__ import annotations

from patchassoc.simulations.runtime.memory import Need, check_fits
from patchassoc.theory.config import Config

__all__ = ["needs", "check_memory", "KINDS"]

#: What a command may declare in ``ALLOCATES``.
KINDS = ("start", "sample")


def needs(config: Config, kinds) -> list[Need]:
    """The arrays of ``kinds`` (see the module notes) that a run of ``config`` holds at once.

    Parameters
    ----------
    config : Config
        The resolved configuration.
    kinds : iterable of str
        Members of :data:`KINDS`.

    Returns
    -------
    list of Need
    """
    kinds = tuple(kinds)
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise ValueError(f"unknown allocation kind(s) {unknown} (known: {', '.join(KINDS)})")
    d, D, L, C = int(config.d), int(config.D), int(config.L), int(config.C)
    out = []
    if "start" in kinds:
        out.append(Need(8 * 2 * d, f"v0 and w* with d = {d} entries each", "lower d"))
        out.append(Need(8 * 2 * D * D, f"the initial logits Q0 = kappa I, D x D with D = L C = "
                                       f"{D} (L = {L}, C = {C}), made twice",
                        "lower L or C"))
        r = int(config.records)
        out.append(Need(8 * r, f"the record times, records = {r} numbers", "lower records"))
    if "sample" in kinds:
        n, m = int(config.n_train), int(config.n_test)
        out.append(Need(8 * D * d * (n + m + max(n, m)),
                        f"the samples, (n_train + n_test) x D x d = ({n} + {m}) x {D} x {d} "
                        f"numbers and one temporary as large as the larger",
                        "lower n_train, n_test, d, L or C"))
        r = int(config.records)
        out.append(Need(8 * r * (D * D + d), f"the records of training, records x (D x D + d) "
                                             f"= {r} x ({D} x {D} + {d}) numbers (the "
                                             f"attention and v at each)", "lower records"))
    return out


def check_memory(config: Config, kinds, command: str, available: int | None = None) -> int:
    """Refuse ``command`` (a :class:`~patchassoc.simulations.runtime.errors.UsageError`, one
    line) when the arrays of ``kinds`` for ``config`` exceed the memory available.

    Parameters
    ----------
    config : Config
        The resolved configuration.
    kinds : iterable of str
        What the command allocates (members of :data:`KINDS`).
    command : str
        Its name, for the message.
    available : int, optional
        Bytes available (default: what the machine has now).

    Returns
    -------
    int
        The bytes the arrays need.
    """
    return check_fits(needs(config, kinds), command, available)
