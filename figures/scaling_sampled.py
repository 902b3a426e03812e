"""Claim 7, study (c): sampled GD, fraction of seeds that associate against N, one line per d.

A seed associates with Def. 2.2 in every row and share_min >= 0.75 (claim 2's test); the dotted
line is the 80 % level that defines N_assoc(d). Right: the mean over seeds of share_min, against
the 0.75 level, to show how far the seeds got.

References
----------
SPEC section 6, items 2 and 7.
"""
from __future__ import annotations

from pathlib import Path

from matplotlib.ticker import NullLocator

from patchassoc.figures.style import PALETTE, new_figure, save_figure, styled

__all__ = ["plot", "save"]


@styled
def plot(summary, axes=None):
    """Associated fraction (left) and mean share_min (right) against N per d; returns the axes."""
    c = summary["c"]
    if axes is None:
        _, axes = new_figure(1, 2, figsize=(11, 4.4))
    ax, ax2 = axes
    Ns_all = sorted({x["N"] for p in c["per_d"] for x in p["per_N"]})
    for i, p in enumerate(c["per_d"]):
        pts = [(x["N"], x["share_min_mean"]) for x in p["per_N"]
               if x.get("share_min_mean") is not None]
        if pts:
            ax2.plot([q[0] for q in pts], [q[1] for q in pts], marker="o",
                     color=PALETTE[i % len(PALETTE)], label=f"d = {p['d']} (L = C = {p['L']})")
        Ns = [x["N"] for x in p["per_N"] if x["seeds"]]
        fr = [x["associated"] / x["seeds"] for x in p["per_N"] if x["seeds"]]
        na = p["N_assoc"]
        ax.plot(Ns, fr, marker="o", color=PALETTE[i % len(PALETTE)],
                label=f"d = {p['d']} (L = C = {p['L']}): N_assoc "
                      + (f"= {na}" if na is not None else f"> {p['N_max']}"))
    ax.axhline(0.8, color="k", ls=":", lw=0.9)
    ax2.axhline(0.75, color="k", ls=":", lw=0.9, label="share_min = 0.75 (association)")
    for a in axes:
        a.set_xscale("log")
        a.xaxis.set_minor_locator(NullLocator())
        a.set_xticks(Ns_all)
        a.set_xticklabels([str(n) for n in Ns_all])
        a.set_xlabel("training sample size N")
    ax2.set_ylim(0, 1.02)
    ax2.set_ylabel("set-mate share, min over rows (mean over seeds)")
    ax2.set_title("how far the seeds got", fontsize=9)
    ax2.legend(fontsize=7.5, loc="lower right")
    ax.set_ylim(-0.05, 1.05)
    ax.set_ylabel(f"fraction of {c['seeds']} seeds that associate")
    ax.set_title("sampled GD, diagonal fixed: Def. 2.2 + share_min >= 0.75", fontsize=9)
    ax.legend(fontsize=7.5, loc="upper left")
    return axes


@styled
def save(summary, folder: str | Path, name: str = "scaling_sampled") -> list[Path]:
    axes = plot(summary)
    return save_figure(axes[0].figure, folder, name)
