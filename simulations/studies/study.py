"""The record that declares a study once: its run, its claim, its readings and its place in the
reproduction.

A study is one module of :mod:`patchassoc.simulations.studies` that ends with a ``STUDY``
record. :mod:`patchassoc.simulations.studies.registry` lists them in the order the report shows
them; ``patchassoc reproduce`` runs them, ``patchassoc check`` reads their claims and the report
prints their readings, all by iterating over that list. Adding a claim is adding one module and
one line to the registry (and, if it draws a figure, one drawer in :mod:`patchassoc.figures`).

A study's ``run`` computes and saves its results in a folder and returns an :class:`Outcome`:
the JSON-ready summary (kept as the step's ``step.json``) and the in-memory results its figures
are drawn from. Studies never import :mod:`patchassoc.figures`: the command line draws the
figures from the outcome (:func:`patchassoc.figures.catalog.draw`), so the arrows go
``cli -> studies -> engines -> theory`` and ``cli -> figures``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

__all__ = ["Study", "Outcome", "LiveContext"]


@dataclass
class Outcome:
    """What a study's run returns: ``summary`` (JSON-ready; ``exit_status`` 1 when the run did
    not finish as it should), ``products`` (name -> in-memory result, for its figures) and
    ``saved``, the JSON file where the run saved its summary, if it did (the figures drawn from
    the outcome are listed there too)."""

    summary: dict
    products: dict[str, Any] = field(default_factory=dict)
    saved: Path | None = None


@dataclass(frozen=True)
class Study:
    """One study of the reproduction.

    Attributes
    ----------
    name : str
        The step's name and its folder in a reproduction.
    what : str
        One line saying what it does (printed when it starts).
    run : callable
        ``run(folder, config, seed, quick, progress) -> Outcome``; ``quick`` asks for the
        declared reduced version (a preview, never a verdict).
    claim : str, optional
        The id of the claim of SPEC section 6 it decides.
    verdict : callable, optional
        ``verdict(root) -> dict``: the claim record (:mod:`.verdicts`) from a reproduction
        folder ``root``, read from saved results only.
    readings : callable, optional
        ``readings(summary) -> {figure stem: paragraph}`` for the report, every sentence
        decided by the summary's numbers.
    inputs : tuple of str
        The studies whose saved results it reads in the same folder: it starts after them.
        ``("*",)`` reads every other study.
    cost : float
        Single-core CPU-seconds in a full reproduction; it only orders the steps (the longest
        chain first), so an estimate is enough.
    kernels : tuple of str
        The Numba kernel families it compiles on a cold cache (``"exact"``, ``"sampled"``): two
        steps compiling the same family do not start side by side.
    figures : tuple of str
        The figures (file stems) drawn from its outcome.
    version : str
        The version of its protocol (what it computes and how): part of the fingerprint of a
        reproduction step, so that a step saved by another version is computed again. Change
        it when the step's results would change for the same configuration and seed.
    options : tuple of str
        Keyword options of ``run`` that ``reproduce`` sets from its command line (e.g.
        ``budget_readings``); they are part of the step's work, so that a step computed with
        other options is computed again.
    statement : str
        The claim as SPEC section 6 states it, in one line (a claim study's record carries it).
    live : callable, optional
        ``live(ctx) -> dict``: the claim computed now, cheaply (a reference point, one seed),
        as ``patchassoc check`` without ``--from`` shows it (a preview: never the declared
        study); ``ctx`` is a :class:`LiveContext`. A claim study without one is reported
        ``not run`` there, with the command that computes it.
    table : callable, optional
        ``table(root) -> dict | None``: a table a study without a claim of its own reports
        beside the claims (``patchassoc check --from`` prints it), read from a reproduction
        folder ``root``: ``title``, ``columns``, ``rows`` (each ``variant`` and ``cells``, a
        cell ``verdict`` and ``key``), ``notes``; ``None`` when the study did not run there.
    """

    name: str
    what: str
    run: Callable[..., Outcome]
    claim: str | None = None
    verdict: Callable[[Path], dict] | None = None
    readings: Callable[[dict], dict[str, str]] | None = None
    inputs: tuple[str, ...] = ()
    cost: float = 0.0
    kernels: tuple[str, ...] = ()
    figures: tuple[str, ...] = ()
    version: str = "1"
    table: Callable[[Path], dict | None] | None = None
    options: tuple[str, ...] = ()
    statement: str = ""
    live: Callable[["LiveContext"], dict] | None = None

    def __post_init__(self) -> None:
        if (self.claim is None) != (self.verdict is None):
            raise ValueError(f"study {self.name}: a claim needs a verdict and a verdict a claim")
        if self.live is not None and self.claim is None:
            raise ValueError(f"study {self.name}: a live check computes a claim; it has none")


@dataclass
class LiveContext:
    """What the live checks of ``patchassoc check`` (without ``--from``) share.

    ``config`` is the configuration the claims are read at (diagonal fixed), ``seed`` its seed,
    ``train`` False when training is skipped (``--no-train``). ``shared`` holds what one check
    computed for the next (:meth:`cached`): claims 1 and 2 read one population run, claim 3
    the training run of claim 2.
    """
    config: Any
    seed: int = 0
    train: bool = True
    progress: bool = False
    log: Callable[[str], None] | None = None
    shared: dict[str, Any] = field(default_factory=dict)

    def say(self, message: str) -> None:
        """One line of progress (to ``log``, when given)."""
        if self.log is not None:
            self.log(message)

    def cached(self, key: str, compute: Callable[[], Any]) -> Any:
        """``shared[key]``, computed by ``compute()`` on first use."""
        if key not in self.shared:
            self.shared[key] = compute()
        return self.shared[key]
