"""Attention-map evolution: A = softmax(Q) at several training steps.

Top row: A in the natural patch order (what the model sees; a random partition looks like
noise). Bottom row: the same maps with patches reordered so that each set S_l is contiguous; patch
association shows up as C x C blocks on the diagonal. A panel on the left draws the partition
itself: on the sqrt(D) x sqrt(D) patch grid when D is a square, as a strip otherwise.

Each map's title gives the paper's metrics (SPEC section 3): the rows whose top-C entries are
exactly their own set (Def. 2.2; ranked on A, which ranks each row like its logits) and the
set-mate share (mean and min). The within-set mass is not shown: it counts A_ii.

References
----------
SPEC section 3 (plots show A twice).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib.colors import ListedColormap

from patchassoc.theory.association import set_mate_share, topc_rows
from patchassoc.theory.structure import Structure

from patchassoc.figures.style import ATTENTION_CMAP, PALETTE, new_figure, save_figure, styled

__all__ = ["plot", "draw_map", "plot_partition", "pick_snapshots", "save"]


def pick_snapshots(steps: np.ndarray, count: int = 5, mass=None) -> list[int]:
    """Indices of ``count`` recorded steps that show the evolution: the first, the last and
    log-spaced steps between the onset of change and the end. The onset is the first step where
    the signal ``mass`` (the mean set-mate share, or any per-step summary of A) has moved by 5 %
    of its largest excursion (step 1 when ``mass`` is not given or never moves)."""
    steps = np.asarray(steps)
    n = steps.size
    if n <= count:
        return list(range(n))
    start = 1
    if mass is not None:
        dev = np.abs(np.asarray(mass) - mass[0])
        if dev.max() > 1e-3:
            start = max(1, int(np.argmax(dev >= 0.05 * dev.max())) - 1)
    lo, hi = max(1, steps[start]), max(1, steps[-1])
    idx = {0, n - 1}
    for t in np.geomspace(lo, hi, count - 1)[:-1]:
        idx.add(int(np.argmin(np.abs(np.log(np.maximum(steps, 0.5)) - np.log(t)))))
    return sorted(idx)


def _partition_cmap(L: int) -> ListedColormap:
    colors = [PALETTE[i % len(PALETTE)] for i in range(L)]
    return ListedColormap(colors)


def plot_partition(structure: Structure, ax) -> None:
    """Draw the partition: each patch coloured (and labelled) by its set."""
    D, L = structure.D, structure.L
    g = math.isqrt(D)
    labels = np.asarray(structure.labels)
    if g * g == D:
        grid = labels.reshape(g, g)
        ax.imshow(grid, cmap=_partition_cmap(L), vmin=-0.5, vmax=L - 0.5)
        for r in range(g):
            for c in range(g):
                ax.text(c, r, str(r * g + c), ha="center", va="center", fontsize=6,
                        color="white")
        ax.set_title(f"partition S on the {g}x{g} grid\n(colour = set, number = patch)",
                     fontsize=8)
    else:
        ax.imshow(labels[None, :], cmap=_partition_cmap(L), vmin=-0.5, vmax=L - 0.5,
                  aspect="auto")
        ax.set_title("partition S (colour = set)", fontsize=8)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)


def draw_map(ax, mat: np.ndarray, structure: Structure, contiguous: bool = False):
    """One attention map on ``ax`` (weights 0 to 1); with ``contiguous`` (``mat`` already in set
    order) thin lines between the sets. Returns the image, for a colour bar."""
    im = ax.imshow(mat, cmap=ATTENTION_CMAP, vmin=0.0, vmax=1.0, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    if contiguous:
        for e in range(structure.C, structure.D, structure.C):
            ax.axhline(e - 0.5, color="white", lw=0.4, alpha=0.6)
            ax.axvline(e - 0.5, color="white", lw=0.4, alpha=0.6)
    return im


@styled
def plot(A: Sequence[np.ndarray], steps: Sequence[int], structure: Structure, fig=None,
         title: str | None = None):
    """Draw the attention maps ``A[k]`` recorded at ``steps[k]``; return the figure."""
    A = [np.asarray(a) for a in A]
    n = len(A)
    if fig is None:
        fig, _ = new_figure(figsize=(2.0 * (n + 1) + 0.6, 4.6))
        fig.clf()
    gs = fig.add_gridspec(2, n + 2, width_ratios=[1.3] + [1] * n + [0.06], wspace=0.15,
                          hspace=0.3)
    plot_partition(structure, fig.add_subplot(gs[:, 0]))
    order = structure.order()
    im = None
    for k, (a, step) in enumerate(zip(A, steps)):
        share = set_mate_share(a, structure)
        rows = int(topc_rows(a, structure, relative_to="entry").sum())
        for row, (mat, label) in enumerate(((a, "natural order"),
                                            (a[np.ix_(order, order)], "sets contiguous"))):
            ax = fig.add_subplot(gs[row, k + 1])
            im = draw_map(ax, mat, structure, contiguous=row == 1)
            if row == 0:
                ax.set_title(f"step {int(step)}: top-C {rows}/{structure.D}\nshare "
                             f"{share.mean():.2f} (min {share.min():.2f})", fontsize=8)
            if k == 0:
                ax.set_ylabel(label, fontsize=8)
    cax = fig.add_subplot(gs[:, -1])
    fig.colorbar(im, cax=cax, label="attention weight A_ij")
    fig.suptitle(title or "Attention maps A = softmax(Q) during training", fontsize=10, y=1.0)
    return fig


@styled
def save(A, steps, structure: Structure, folder: str | Path, name: str = "attention_maps",
         title: str | None = None, count: int = 5, mass=None) -> list[Path]:
    """Pick ``count`` snapshots (see :func:`pick_snapshots`), draw them and write
    ``name``.png/.pdf into ``folder``."""
    idx = pick_snapshots(np.asarray(steps), count, mass)
    fig = plot([A[i] for i in idx], [steps[i] for i in idx], structure, title=title)
    return save_figure(fig, folder, name)
