"""Claim 7, study (c): sampled GD, fraction of seeds that associate against N, one line per d.

A seed associates with Def. 2.2 in every row and share_min >= 0.75 (claim 2's test); the dotted
line is the 80 % level that defines N_assoc(d).

References
----------
SPEC section 6, items 2 and 7.
"""
from __future__ import annotations

from pathlib import Path

from .style import PALETTE, new_figure, save_figure

__all__ = ["plot", "save"]


def plot(summary, ax=None):
    """Associated fraction against N per d; returns the axes."""
    c = summary["c"]
    if ax is None:
        _, ax = new_figure(figsize=(6, 4.4))
    for i, p in enumerate(c["per_d"]):
        Ns = [x["N"] for x in p["per_N"] if x["seeds"]]
        fr = [x["associated"] / x["seeds"] for x in p["per_N"] if x["seeds"]]
        na = p["N_assoc"]
        ax.plot(Ns, fr, marker="o", color=PALETTE[i % len(PALETTE)],
                label=f"d = {p['d']} (L = C = {p['L']}): N_assoc "
                      + (f"= {na}" if na is not None else f"> {p['N_max']}"))
    ax.axhline(0.8, color="k", ls=":", lw=0.9)
    ax.set_xscale("log")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("training sample size N")
    ax.set_ylabel(f"fraction of {c['seeds']} seeds that associate")
    ax.set_title("sampled GD, diagonal fixed: Def. 2.2 + share_min >= 0.75", fontsize=9)
    ax.legend(fontsize=7.5, loc="upper left")
    return ax


def save(summary, folder: str | Path, name: str = "scaling_sampled") -> list[Path]:
    ax = plot(summary)
    return save_figure(ax.figure, folder, name)
