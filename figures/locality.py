"""Spatial locality: with square-window structures on the patch grid, the learned attention of a
patch is drawn over the image. Rows are training steps, columns are query patches; the query
is starred and its window outlined. Attention starts on the patch itself (Q0 = kappa I) and
ends spread over the patch's spatial neighbourhood: local attention, as ViTs learn on images.

References
----------
SPEC sections 1 (square windows) and 3.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.patches import Rectangle

from patchassoc.figures.attention_maps import pick_snapshots
from patchassoc.figures.style import ATTENTION_CMAP, new_figure, save_figure, styled

__all__ = ["plot", "save", "default_queries"]


def default_queries(g: int) -> list[int]:
    """A corner, an edge and two interior patches of a g x g grid (distinct, row-major)."""
    cands = [0, (g // 2) * g + g - 1, (g // 2) * g + g // 2 - 1, (g - 1) * g + g // 2]
    out = []
    for c in cands:
        if c not in out:
            out.append(c)
    return out


@styled
def plot(A, steps, structure, queries=None, count: int = 4, mass=None):
    """Attention rows A[i, :] on the grid for the ``queries`` at ``count`` recorded steps."""
    D, C = structure.D, structure.C
    g, w = math.isqrt(D), math.isqrt(C)
    if g * g != D or w * w != C:
        raise ValueError("the locality figure needs square windows on a square patch grid")
    queries = default_queries(g) if queries is None else list(queries)
    idx = pick_snapshots(np.asarray(steps), count, mass)
    fig, axes = new_figure(len(idx), len(queries), figsize=(2.1 * len(queries) + 0.8,
                                                          2.1 * len(idx) + 0.4), squeeze=False)
    vmax = max(float(np.max(np.asarray(A)[idx][:, queries, :])), 1e-12)
    im = None
    for r, k in enumerate(idx):
        for c, i in enumerate(queries):
            ax = axes[r, c]
            im = ax.imshow(np.asarray(A[k])[i].reshape(g, g), cmap=ATTENTION_CMAP, vmin=0,
                           vmax=vmax, interpolation="nearest")
            qi, qj = divmod(i, g)
            ax.plot(qj, qi, marker="*", color="white", markersize=9, markeredgecolor="black")
            members = structure.sets[structure.labels[i]]
            rows, cols = np.divmod(members, g)
            ax.add_patch(Rectangle((cols.min() - 0.5, rows.min() - 0.5), w, w, fill=False,
                                   edgecolor="#D55E00", lw=1.6))
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(False)
            if r == 0:
                ax.set_title(f"query patch {i}", fontsize=8)
            if c == 0:
                ax.set_ylabel(f"step {int(steps[k])}", fontsize=8)
    fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8, label="attention weight")
    fig.suptitle(f"Attention over the {g}x{g} patch grid (star: query; box: its {w}x{w} window)",
                 fontsize=10)
    return fig


@styled
def save(A, steps, structure, folder: str | Path, name: str = "locality", mass=None,
         queries=None) -> list[Path]:
    return save_figure(plot(A, steps, structure, queries=queries, mass=mass), folder, name)
