"""The shuffled-patch experiment: accuracy against block size, and learned positional similarity.

Left: test accuracy (mean over seeds, 95 % t-interval bars) of the positional ViT, the standard
ViT and the small CNN against the shuffle block size B (pixels; the image side means no shuffle),
each model at the blocks it ran (the ViTs skip blocks that cut through patches).
Right: the learned positional similarity of one query patch (seed 0), drawn over the patch grid:
top row the positional ViT's attention (mean over layers and heads), bottom row the cosine
similarity of the standard ViT's positional encodings. Columns: trained on unshuffled images;
trained on the finest shuffle the ViTs ran, drawn in token order as trained (the query is token q); the same map
once the shuffle is undone (the query is grid position q, every entry moved back to its patch's
true position). Each panel's title gives the locality z-score of its map family (all seeds; SPEC
section 6, claim 6): positive means each patch's top-k patches are closer than under a random
relabelling of the grid.

Reads a saved :class:`~patchassoc.simulations.engines.vit.comparison.ShuffleResult`; never
recomputes.

References
----------
SPEC section 6, claim 6.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.transforms import offset_copy

from patchassoc.simulations.engines.vit.comparison import ShuffleResult
from patchassoc.simulations.analysis.stats import mean_interval
from patchassoc.simulations.engines.vit.locality_stats import locality_z, undo_permutation

from patchassoc.figures.style import ATTENTION_CMAP, COLORS, save_figure, styled

__all__ = ["plot", "save", "NAME", "panel_maps", "default_query"]

NAME = "vit_shuffle"

_LABELS = {"positional": "positional ViT", "content": "standard ViT", "cnn": "small CNN",
           "logits": "positional ViT (logits)", "uniform": "uniform attention",
           "none": "no token mixing"}
_COLORS = {"positional": COLORS["blue"], "content": COLORS["vermillion"],
           "cnn": COLORS["green"]}
_ROWS = {"attention": "positional ViT\nattention", "pos_content": "standard ViT\nencodings (cos)",
         "pos_positional": "positional ViT\nencodings (cos)"}


def default_query(grid: tuple[int, int]) -> int:
    """An interior patch: grid position (gh // 2, gw // 2) in row-major order."""
    gh, gw = grid
    return (gh // 2) * gw + gw // 2


def panel_maps(result: ShuffleResult, source: str, query: int, seed_index: int = 0
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three (gh, gw) images of one row: the unshuffled map's row ``query``; the finest
    shuffle's map row ``query`` in token order (as trained); the same map undone (grid order).
    """
    blocks = result.vit_blocks
    gh, gw = result.grid
    coarse, fine = max(blocks), min(blocks)
    M0 = undo_permutation(result.maps(source, coarse)[seed_index], result.tau(coarse))
    Mf = result.maps(source, fine)[seed_index]
    Mu = undo_permutation(Mf, result.tau(fine))
    return (M0[query].reshape(gh, gw), Mf[query].reshape(gh, gw), Mu[query].reshape(gh, gw))


#: colour-bar label of each map source (each row has its own scale: different quantities)
_BAR_LABELS = {"attention": "attention weight", "pos_content": "cosine similarity"}


def _accuracy_panel(ax, result: ShuffleResult) -> None:

    blocks = sorted(result.blocks)
    x = np.log2(blocks)
    side = int(max(result.meta["image_shape"][:2]))
    models = list(result.meta["models"])
    for k, m in enumerate(models):
        mine = sorted(result.blocks_of(m))
        # the models side by side at each B (shifted by a few points on the page, the data
        # keep their B), so that their error bars do not hide one another
        dodge = offset_copy(ax.transData, fig=ax.figure,
                            x=6.0 * (k - (len(models) - 1) / 2), y=0.0, units="points")
        acc = np.array([result.accuracy_of(m, b) for b in mine])  # blocks x seeds
        cis = [mean_interval(row) for row in acc]
        mean = np.array([c["mean"] for c in cis])
        half = np.array([0.0 if c["n"] < 2 else c["half_width"] for c in cis])
        ax.errorbar(np.log2(mine), 100 * mean, yerr=100 * half, marker="o", capsize=3,
                    transform=dodge,
                    color=_COLORS.get(m), label=_LABELS.get(m, m))
        for ends in (mean - half, mean + half):   # the shifted artists do not autoscale
            ax.update_datalim(np.column_stack([np.log2(mine), 100 * ends]))
    ax.margins(x=0.08)
    ax.autoscale_view()
    ax.set_xticks(x)
    ax.set_xticklabels([f"{b}\n(none)" if b == side else str(b) for b in blocks])
    ax.set_xlabel("shuffle block size B (pixels)")
    ax.set_ylabel("test accuracy (%)")
    lo, hi = ax.get_ylim()
    ax.set_ylim(max(lo, 0.0), min(hi, 100.0))
    ax.set_title(f"accuracy, {len(result.meta['seeds'])} seeds (95 % CI)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=len(models))


@styled
def plot(result: ShuffleResult, *, query: int | None = None, seed_index: int = 0):
    """Draw the figure; returns it."""
    grid = result.grid
    gh, gw = grid
    query = default_query(grid) if query is None else int(query)
    if not 0 <= query < gh * gw:
        raise ValueError(f"query must lie in 0..{gh * gw - 1}, got {query}")
    sources = [s for s in ("attention", "pos_content") if s in result.map_sources()]
    coarse, fine = max(result.vit_blocks), min(result.vit_blocks)
    fig = Figure(figsize=(11.5, 4.6), layout="constrained")
    left, right = fig.subfigures(1, 2, width_ratios=[1.0, 1.45])
    _accuracy_panel(left.subplots(), result)
    if sources:
        axes = np.asarray(right.subplots(len(sources), 3, squeeze=False))
        titles = [f"unshuffled (B={coarse})", f"B={fine}, as trained\n(token order)",
                  f"B={fine}, shuffle undone"]
        qr, qc = divmod(query, gw)
        for row, src in enumerate(sources):
            maps = panel_maps(result, src, query, seed_index)
            z_coarse = locality_z(result.maps(src, coarse), grid, result.tau(coarse))["z"]
            z_fine = locality_z(result.maps(src, fine), grid, result.tau(fine))
            zs = [z_coarse, _z_token_order(result, src, fine), z_fine["z"]]
            others = np.ones((gh, gw), dtype=bool)
            others[qr, qc] = False  # the query's self-similarity would set the colour scale
            vmin = min(float(m[others].min()) for m in maps)
            vmax = max(float(m[others].max()) for m in maps)
            for col, (img, z) in enumerate(zip(maps, zs)):
                a = axes[row, col]
                img = img.copy()
                img[qr, qc] = np.nan  # the query itself (self-similarity) is left blank
                im = a.imshow(img, cmap=ATTENTION_CMAP, vmin=vmin, vmax=vmax)
                a.add_patch(Rectangle((qc - 0.5, qr - 0.5), 1, 1, fill=False, lw=2.0,
                                      ec=COLORS["vermillion"]))
                a.set_xticks([])
                a.set_yticks([])
                a.grid(False)
                a.set_title((titles[col] + "\n" if row == 0 else "") + f"locality z {z:+.1f}",
                            fontsize="small")
                if col == 0:
                    a.set_ylabel(_ROWS.get(src, src))
            right.colorbar(im, ax=list(axes[row]), shrink=0.85,
                           label=_BAR_LABELS.get(src, src) + "\n(query left blank)")
        right.suptitle(f"learned positional similarity of query patch ({qr}, {qc}) "
                       f"(outlined), seed {result.meta['seeds'][seed_index]}", fontsize="medium")
    m = result.meta
    fig.suptitle(f"{m['data']}: shuffled patches ({gh} x {gw} patch grid, "
                 f"{m['recipe']['epochs']} epochs)")
    return fig


def _z_token_order(result: ShuffleResult, source: str, block: int) -> float:
    """Locality z of the maps as trained (token order taken as grid order)."""
    return locality_z(result.maps(source, block), result.grid, None)["z"]


@styled
def save(result: ShuffleResult, folder: str | Path, **kwargs) -> list[Path]:
    """Write ``vit_shuffle.png`` and ``.pdf`` into ``folder``."""
    return save_figure(plot(result, **kwargs), folder, NAME)


@styled
def main(folder: str | Path = "patchassoc-out/vit") -> list[Path]:
    """Redraw the figure of a saved result folder (the experiment is in its ``shuffle/``)."""
    folder = Path(folder)
    return save(ShuffleResult.load(folder / "shuffle"), folder)


if __name__ == "__main__":  # pragma: no cover
    import sys

    print("\n".join(str(p) for p in main(*sys.argv[1:2])))
