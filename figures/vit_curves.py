"""How the models of a long ViT study learn: test accuracy and training loss against the epoch.

Left: the test accuracy after every epoch of each model (the positional ViT, the standard ViT,
uniform attention, no token mixing, the small CNN), the mean over its seeds as a line and the
range over its seeds (minimum to maximum) as a band, with the claim's floor as a dashed line.
Right: the mean training loss per epoch, likewise (log scale), so that whether the loss stopped
falling by the last epoch can be read off. Drawn beside ``vit_attention``.

Reads a saved :class:`~patchassoc.simulations.engines.vit.curves.CurveResult`; never recomputes.

References
----------
SPEC section 6, claim 6 (the long Fashion-MNIST recipe).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.ticker import MaxNLocator

from patchassoc.simulations.engines.vit.curves import CurveResult

from patchassoc.figures.style import COLORS, new_figure, save_figure, styled

__all__ = ["plot", "save", "main", "NAME", "LABELS", "STYLE"]

NAME = "vit_curves"

LABELS = {"positional": "positional ViT", "logits": "positional ViT (free logits)",
          "content": "standard ViT", "uniform": "uniform attention", "none": "no token mixing",
          "cnn": "small CNN"}
#: Colour and line style of each model (colour-blind-safe palette of :mod:`.style`).
STYLE = {"positional": (COLORS["vermillion"], "-"), "logits": (COLORS["vermillion"], "-"),
         "content": (COLORS["blue"], "-"), "uniform": (COLORS["green"], "--"),
         "none": (COLORS["purple"], "--"), "cnn": ("#000000", ":")}


@styled
def plot(curves: CurveResult, ax=None, *, floor: float | None = None):
    """Draw the two panels; ``ax`` is a pair of axes or None. ``floor`` (a fraction), when
    given, is drawn on the accuracy panel.

    Returns the figure.
    """
    if ax is None:
        fig, ax = new_figure(1, 2, figsize=(10.5, 4.2))
    fig = np.asarray(ax).reshape(-1)[0].figure
    acc_ax, loss_ax = np.asarray(ax).reshape(-1)[:2]
    epochs = np.arange(1, int(curves.meta["epochs"]) + 1)
    for m in curves.models:
        colour, line = STYLE.get(m, ("#000000", "-"))
        label = f"{LABELS.get(m, m)} ({len(curves.seeds_of(m))} seeds)"
        mean, lo, hi = curves.band(m, "test_accuracy")
        acc_ax.plot(epochs, 100 * mean, line, color=colour, lw=1.8, label=label)
        acc_ax.fill_between(epochs, 100 * lo, 100 * hi, color=colour, alpha=0.2, lw=0)
        mean, lo, hi = curves.band(m, "train_loss")
        loss_ax.plot(epochs, mean, line, color=colour, lw=1.8, label=label)
        loss_ax.fill_between(epochs, lo, hi, color=colour, alpha=0.2, lw=0)
    if floor is not None:
        acc_ax.axhline(100 * floor, color="#555555", lw=1.0, ls="--")
        acc_ax.annotate(f"floor {100 * floor:g} %", (epochs[0], 100 * floor),
                        xytext=(2, 3), textcoords="offset points", fontsize=8, color="#555555")
    acc_ax.set_xlabel("epoch")
    acc_ax.set_ylabel("test accuracy (%)")
    acc_ax.set_title("test accuracy after each epoch\n(line: mean over seeds; band: range)")
    loss_ax.set_xlabel("epoch")
    loss_ax.set_ylabel("mean training loss")
    loss_ax.set_yscale("log")
    loss_ax.set_title("training loss per epoch\n(line: mean over seeds; band: range)")
    acc_ax.legend(loc="lower right", fontsize=8)
    r = curves.meta["recipe"]
    for a in (acc_ax, loss_ax):
        a.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.suptitle(f"{curves.meta['data']}: {curves.meta['epochs']} epochs, augment "
                 f"{r['augment']} (pad {r['pad']}), batch {r['batch_size']}, lr {r['lr']:g} "
                 f"(warm-up {r['warmup_epochs']:g} epochs, cosine)")
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return fig


@styled
def save(curves: CurveResult, folder: str | Path, **kwargs) -> list[Path]:
    """Write ``vit_curves.png`` and ``.pdf`` into ``folder``."""
    return save_figure(plot(curves, **kwargs), folder, NAME)


@styled
def main(folder: str | Path = "patchassoc-out/vit-fashion-mnist-long") -> list[Path]:
    """Redraw the figure of a saved long study (its ``curves/`` subfolder), with the floor of
    the data set's declared study."""
    from patchassoc.simulations.studies.claim6_vit import DECLARED

    curves = CurveResult.load(Path(folder) / "curves")
    return save(curves, folder, floor=DECLARED.get(curves.meta["data"], {}).get("floor"))


if __name__ == "__main__":  # pragma: no cover
    import sys

    print("\n".join(str(p) for p in main(*sys.argv[1:2])))
