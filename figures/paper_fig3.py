"""The analogue of the paper's Figure 3: one data point of the structured distribution drawn on
its patch grid.

A 6 x 6 grid of patches split into nine 2 x 2 sets (the ``windows`` structure, L = 9, C = 4).
Each patch is marked with its feature coefficient s_j = <signal part of X_j, w*>: +1 or -1 (a
copy of the feature w* with that sign) or 0 (noise only). The signal set S_l*, every patch of
which carries y w*, is boxed; outside it the +-1 patches are the feature noise (each patch with
probability q/2 per sign). Thin lines separate the sets.

:func:`patchassoc.simulations.studies.paper_settings.draw_point` draws the point from a seed (the
sampler of :mod:`patchassoc.simulations.engines.sampler`); :func:`plot` only draws what it is given.

References
----------
SPEC section 1 (sampling); PAPER.md (Assumption 1, Fig. 3).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.patches import Rectangle

from patchassoc.figures.style import COLORS, new_figure, save_figure, styled

__all__ = ["plot", "save"]

@styled
def plot(point: dict):
    """Draw the point of :func:`~patchassoc.simulations.studies.paper_settings.draw_point`; returns the figure."""
    s = np.asarray(point["s"], dtype=int)
    sets = np.asarray(point["sets"], dtype=int)
    g = math.isqrt(s.size)
    if g * g != s.size:
        raise ValueError(f"the point must have a square number of patches, got {s.size}")
    fig, ax = new_figure(figsize=(4.6, 4.9))
    colors = {1: COLORS["blue"], -1: COLORS["vermillion"], 0: "#EEEEEE"}
    for j, val in enumerate(s):
        r, c = divmod(j, g)
        ax.add_patch(Rectangle((c, r), 1, 1, facecolor=colors[int(val)], edgecolor="white",
                               lw=1.0))
        ax.text(c + 0.5, r + 0.5, {1: "+1", -1: "-1", 0: "0"}[int(val)], ha="center",
                va="center", fontsize=11, color="white" if val else "#666666",
                fontweight="bold" if val else "normal")
    # set boundaries, and the signal set boxed
    for k, members in enumerate(sets):
        rows, cols = np.divmod(members, g)
        r0, c0 = rows.min(), cols.min()
        h, w = rows.max() - r0 + 1, cols.max() - c0 + 1
        signal = k == point["lstar"]
        ax.add_patch(Rectangle((c0, r0), w, h, fill=False,
                               edgecolor=COLORS["black"] if signal else "#999999",
                               lw=3.0 if signal else 0.8, zorder=3))
    ax.set_xlim(-0.05, g + 0.05)
    ax.set_ylim(g + 0.05, -0.05)
    ax.set_aspect("equal")
    ax.axis("off")
    n_noise = int(np.count_nonzero(s)) - sets.shape[1]
    ax.set_title(f"one data point, y = {point['y']:+d}: the boxed set carries y w* in every "
                 f"patch;\n{n_noise} other patch(es) carry +-w* (feature noise, q = "
                 f"{point['q']:.3g}); 0 = noise only", fontsize=8)
    fig.suptitle("Analogue of the paper's Fig. 3: 6 x 6 patches, nine 2 x 2 sets", fontsize=10)
    return fig


@styled
def save(point: dict, folder: str | Path, name: str = "paper_fig3") -> list[Path]:
    """Write ``name``.png/.pdf into ``folder``."""
    return save_figure(plot(point), folder, name)
