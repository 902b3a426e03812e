"""Where the ViTs look: attention of a few query patches drawn over the patch grid.

Top row: the positional-attention ViT's learned attention (the same for every image), for a few
query patches (outlined), averaged over the heads of one layer. Bottom row: the standard ViT's
attention for the same queries, averaged over the heads and over the test images. When the
patches were permuted (the control), the maps are drawn back at the patches' true grid
positions, so a model that learned spatial structure still shows local blobs. Every map is
drawn on one colour scale, diverging at the uniform level 1/D (white): the rows compare two
models, and attention near uniform would otherwise be one flat colour.

Reads a saved :class:`~patchassoc.simulations.engines.vit.comparison.ViTResult`; never recomputes.

References
----------
SPEC section 3 (attention maps) and section 6, claim 6.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib.colors import TwoSlopeNorm
from matplotlib.patches import Rectangle

from patchassoc.simulations.engines.vit.comparison import REFERENCE, ViTResult

from patchassoc.figures.style import COLORS, new_figure, save_figure, styled

__all__ = ["plot", "save", "default_queries", "query_maps", "NAME"]

NAME = "vit_attention"

#: Diverging map (colour-blind safe) centred on uniform attention.
_DIVERGING = "PuOr_r"

_LABELS = {"positional": "positional ViT", "logits": "positional ViT\n(free logits)",
           "content": "standard ViT\n(mean over images)"}


def default_queries(grid: tuple[int, int]) -> list[int]:
    """Four query patches spread over the grid: a corner, the centre, an upper-right and a
    lower-left position (fewer on tiny grids)."""
    gh, gw = grid
    cells = [(0, 0), (gh // 2, gw // 2), (gh // 4, (3 * gw) // 4), ((3 * gh) // 4, gw // 4)]
    out = []
    for r, c in cells:
        q = min(r, gh - 1) * gw + min(c, gw - 1)
        if q not in out:
            out.append(q)
    return out


def query_maps(result: ViTResult, kind: str, queries: Sequence[int], layer: int = 0,
               seed_index: int = 0) -> np.ndarray:
    """Head-averaged attention rows of ``queries`` (grid positions) as (len(queries), gh, gw)
    images over the patch grid."""
    A = result.grid_attention(kind)[seed_index, layer].mean(axis=0)  # D x D, grid order
    gh, gw = result.grid
    return np.stack([A[q].reshape(gh, gw) for q in queries])


@styled
def plot(result: ViTResult, ax=None, *, queries: Sequence[int] | None = None, layer: int = 0,
         seed_index: int = 0):
    """Draw the attention maps; ``ax`` is a (rows, len(queries)) array of axes or None.

    Returns the figure.
    """
    # the positional model(s) above the standard ViT; the controls' maps (uniform, identity)
    # are fixed by construction and not drawn
    kinds = [k for k in result.kinds if k in ("positional", "logits")] + (
        [REFERENCE] if REFERENCE in result.kinds else [])
    grid = result.grid
    queries = list(default_queries(grid) if queries is None else queries)
    depth = result.attention.shape[2]
    if not 0 <= layer < depth:
        raise ValueError(f"layer must lie in 0..{depth - 1}, got {layer}")
    if ax is None:
        fig, ax = new_figure(len(kinds), len(queries),
                             figsize=(1.9 * len(queries) + 0.8, 1.9 * len(kinds) + 0.4),
                             squeeze=False)
    else:
        ax = np.asarray(ax).reshape(len(kinds), len(queries))
        fig = ax[0, 0].figure
    gh, gw = grid
    # one colour scale for every row (the rows compare two models), diverging at the uniform
    # level 1/D: above uniform warm, below it cool, so that small departures from uniform show
    maps_of = {kind: query_maps(result, kind, queries, layer, seed_index) for kind in kinds}
    uniform = 1.0 / (gh * gw)
    lo = min(float(v.min()) for v in maps_of.values())
    hi = max(float(v.max()) for v in maps_of.values())
    lo, hi = min(lo, uniform * (1 - 1e-6)), max(hi, uniform * (1 + 1e-6))
    norm = TwoSlopeNorm(vcenter=uniform, vmin=lo, vmax=hi)
    im = None
    for row, kind in enumerate(kinds):
        maps = maps_of[kind]
        for col, q in enumerate(queries):
            a = ax[row, col]
            im = a.imshow(maps[col], cmap=_DIVERGING, norm=norm)
            r, c = divmod(q, gw)
            a.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, lw=2.0,
                                  ec=COLORS["black"]))
            a.set_xticks([])
            a.set_yticks([])
            a.grid(False)
            for spine in a.spines.values():
                spine.set_visible(False)
            if row == 0:
                a.set_title(f"query patch ({r}, {c})")
            if col == 0:
                a.set_ylabel(_LABELS.get(kind, kind))
    bar = fig.colorbar(im, ax=list(ax.ravel()), shrink=0.8,
                       label=f"attention weight (one scale for every map;\n"
                             f"white = uniform 1/{gh * gw} = {uniform:.4f})")
    bar.ax.axhline(uniform, color=COLORS["black"], lw=1.0)
    m = result.meta
    note = "\npatches permuted for training, drawn at their true positions" if m.get(
        "permuted") else ""
    fig.suptitle(f"{m['data']}: layer {layer + 1} of {depth}, heads averaged, seed "
                 f"{m['seeds'][seed_index]}, {gh} x {gw} patch grid{note}")
    return fig


@styled
def save(result: ViTResult, folder: str | Path, **kwargs) -> list[Path]:
    """Write ``vit_attention.png`` and ``.pdf`` into ``folder``."""
    return save_figure(plot(result, **kwargs), folder, NAME)


@styled
def main(folder: str | Path = "patchassoc-out/vit") -> list[Path]:
    """Redraw the figure of a saved result folder."""
    return save(ViTResult.load(folder), folder)


if __name__ == "__main__":  # pragma: no cover
    import sys

    print("\n".join(str(p) for p in main(*sys.argv[1:2])))
