"""Attention-map evolution: A = softmax(Q) at several training steps.

Top row: A in the natural patch order (what the model sees; a random partition looks like
noise). Bottom row: the same maps with patches reordered so that each set S_l is contiguous; patch
association shows up as C x C blocks on the diagonal. A panel on the left draws the partition
itself: on the sqrt(D) x sqrt(D) patch grid when D is a square, as a strip otherwise.

Each map's title gives the paper's metrics (SPEC section 3): the rows whose top-C entries are
exactly their own set (Def. 2.2; ranked on A, which ranks each row like its logits) and the
set-mate share (mean and min), and the mean diagonal A_ii. The within-set mass is not shown: it
counts A_ii. The colour shows the off-diagonal weights only, on one scale from 0 to their largest
value over the maps drawn: the diagonal (Q0 = kappa I puts most of each row there, and it stays
large) would saturate a 0-1 scale and hide the within-set structure, so it is drawn light grey.
The tick labels are the patch numbers, coloured by set.

References
----------
SPEC section 3 (plots show A twice).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import ListedColormap

from patchassoc.theory.association import set_mate_share, topc_rows
from patchassoc.theory.structure import Structure

from patchassoc.figures.style import ATTENTION_CMAP, PALETTE, new_figure, save_figure, styled

__all__ = ["plot", "draw_map", "plot_partition", "pick_snapshots", "save", "offdiag_max"]


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
        if D <= 40:
            for i in range(D):
                ax.text(i, 0, str(i), ha="center", va="center", fontsize=6, color="white")
        ax.set_title("partition S\n(colour = set, number = patch)", fontsize=8)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)


def offdiag_max(maps) -> float:
    """The largest off-diagonal entry over ``maps`` (the top of their shared colour scale); 1
    when there is none above 0."""
    top = 0.0
    for a in maps:
        a = np.asarray(a, dtype=float)
        if a.shape[0] > 1:
            top = max(top, float(a[~np.eye(a.shape[0], dtype=bool)].max()))
    return top if top > 0 else 1.0


def _tick_labels(ax, labels, colors, axis: str) -> None:
    """Patch numbers along ``axis`` ('x' or 'y'), each coloured by its set (at most 16 shown)."""
    n = len(labels)
    k = max(1, -(-n // 16))
    pos = list(range(0, n, k))
    set_ticks, set_labels = (ax.set_xticks, ax.set_xticklabels) if axis == "x" else \
        (ax.set_yticks, ax.set_yticklabels)
    set_ticks(pos)
    texts = set_labels([str(labels[i]) for i in pos], fontsize=5.5,
                       rotation=90 if axis == "x" else 0)
    for text, i in zip(texts, pos):
        text.set_color(colors[i])
        text.set_fontweight("bold")
    ax.tick_params(axis=axis, length=1.5, pad=1)


def draw_map(ax, mat: np.ndarray, structure: Structure, contiguous: bool = False,
             vmax: float | None = None, order=None, ticks: str = ""):
    """One attention map on ``ax``; returns the image, for a colour bar.

    With ``vmax`` None, the weights are drawn on 0 to 1. With a ``vmax``, only the
    off-diagonal entries are coloured, on 0 to ``vmax`` (the diagonal A_ii, which saturates a
    0-1 scale and hides the within-set structure, is light grey). With ``contiguous``
    (``mat`` already in set order) thin lines separate the sets. ``ticks`` ("x", "y", "xy")
    labels those axes with the patch numbers (``order``: the patch at each position; the
    identity when None), each coloured by its set."""
    mat = np.asarray(mat, dtype=float)
    if vmax is None:
        im = ax.imshow(mat, cmap=ATTENTION_CMAP, vmin=0.0, vmax=1.0, interpolation="nearest")
    else:
        cmap = colormaps[ATTENTION_CMAP].with_extremes(bad="0.82")
        shown = np.ma.masked_array(mat, mask=np.eye(mat.shape[0], dtype=bool))
        im = ax.imshow(shown, cmap=cmap, vmin=0.0, vmax=vmax, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    if ticks:
        order = np.arange(structure.D) if order is None else np.asarray(order)
        labels = np.asarray(structure.labels)
        colors = [PALETTE[int(labels[i]) % len(PALETTE)] for i in order]
        for axis in ticks:
            _tick_labels(ax, order, colors, axis)
    if contiguous:
        for e in range(structure.C, structure.D, structure.C):
            ax.axhline(e - 0.5, color="white", lw=0.4, alpha=0.6)
            ax.axvline(e - 0.5, color="white", lw=0.4, alpha=0.6)
    return im


@styled
def plot(A: Sequence[np.ndarray], steps: Sequence[int], structure: Structure, fig=None,
         title: str | None = None):
    """Draw the attention maps ``A[k]`` recorded at ``steps[k]``; return the figure.

    The colour scale is shared by every map and covers the off-diagonal entries only (0 to
    their largest value over the maps): the diagonal A_ii, near 1 early and often well above
    the within-set weights, is light grey and its mean is in each map's title. Tick labels are
    the patch numbers, coloured by set as in the partition panel."""
    A = [np.asarray(a) for a in A]
    n = len(A)
    if fig is None:
        fig, _ = new_figure(figsize=(2.1 * n + 3.6, 5.6))
        fig.clf()
    # partition | spacer (room for the first map's row labels) | n maps | colour bar
    gs = fig.add_gridspec(2, n + 3, width_ratios=[1.3, 0.32] + [1] * n + [0.06], wspace=0.12,
                          hspace=0.42, top=0.80, bottom=0.08, left=0.02, right=0.93)
    plot_partition(structure, fig.add_subplot(gs[:, 0]))
    order = structure.order()
    vmax = offdiag_max(A)
    im = None
    for k, (a, step) in enumerate(zip(A, steps)):
        share = set_mate_share(a, structure)
        rows = int(topc_rows(a, structure, relative_to="entry").sum())
        for row, (mat, label, idx) in enumerate(((a, "natural order", None),
                                                 (a[np.ix_(order, order)], "sets contiguous",
                                                  order))):
            ax = fig.add_subplot(gs[row, k + 2])
            im = draw_map(ax, mat, structure, contiguous=row == 1, vmax=vmax, order=idx,
                          ticks="xy" if k == 0 else "x")
            if row == 0:
                ax.set_title(f"step {int(step)}: top-C {rows}/{structure.D}\n"
                             f"share {share.mean():.2f} (min {share.min():.2f})\n"
                             f"mean A_ii {np.diag(a).mean():.2f} (grey)", fontsize=7.5)
            if k == 0:
                ax.set_ylabel(f"{label}\nrow i (query patch)", fontsize=8)
    cax = fig.add_subplot(gs[:, -1])
    fig.colorbar(im, cax=cax, label="attention weight A_ij, i != j\n"
                                    "(diagonal A_ii grey: off this scale)")
    fig.suptitle((title or "Attention maps A = softmax(Q) during training")
                 + "\ncolour: off-diagonal weights only, one scale for every map; "
                   "tick labels: patch numbers, coloured by set", fontsize=10, y=0.985)
    return fig


@styled
def save(A, steps, structure: Structure, folder: str | Path, name: str = "attention_maps",
         title: str | None = None, count: int = 5, mass=None) -> list[Path]:
    """Pick ``count`` snapshots (see :func:`pick_snapshots`), draw them and write
    ``name``.png/.pdf into ``folder``."""
    idx = pick_snapshots(np.asarray(steps), count, mass)
    fig = plot([A[i] for i in idx], [steps[i] for i in idx], structure, title=title)
    return save_figure(fig, folder, name)
