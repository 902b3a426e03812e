"""The shared figure style: non-interactive backend, colour-blind-safe palette, PNG + PDF output.

The palette is Okabe & Ito's (2008), safe for the common colour-vision deficiencies; sequential
maps use ``viridis`` (attention weights) and ``cividis``.
"""
from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from patchassoc.simulations.runtime.results import atomic_write_bytes  # noqa: E402

__all__ = ["PALETTE", "COLORS", "apply", "save_figure", "new_figure", "ATTENTION_CMAP", "plt",
           "step_axis", "plot_association"]

#: Okabe-Ito colours, in the order series are drawn.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
COLORS = dict(blue=PALETTE[0], vermillion=PALETTE[1], green=PALETTE[2], purple=PALETTE[3],
              orange=PALETTE[4], sky=PALETTE[5], yellow=PALETTE[6], black=PALETTE[7])
ATTENTION_CMAP = "viridis"

_RC = {
    "figure.dpi": 110,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "legend.frameon": False,
    "legend.fontsize": 8,
    "lines.linewidth": 1.6,
    "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
    "image.cmap": ATTENTION_CMAP,
}


def apply() -> None:
    """Install the shared rc settings (idempotent)."""
    plt.rcParams.update(_RC)


def new_figure(*args, **kwargs):
    """``plt.subplots`` under the shared style."""
    apply()
    return plt.subplots(*args, **kwargs)


def save_figure(fig, folder: str | Path, name: str) -> list[Path]:
    """Write ``name``.png and ``name``.pdf into ``folder`` and close the figure."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("png", "pdf"):
        buf = io.BytesIO()
        fig.savefig(buf, format=ext)
        paths.append(atomic_write_bytes(folder / f"{name}.{ext}", buf.getvalue()))
    plt.close(fig)
    return paths


def step_axis(steps):
    """Gradient steps as x values for a log axis: step 0 is drawn at 1/2 so the initial point
    stays visible."""
    import numpy as np

    steps = np.asarray(steps, dtype=float)
    return np.where(steps == 0, 0.5, steps)


def plot_association(ax, x, *, D: int, C: int, eps: float, share_mean, topc_rows, mass_mean,
                     share_min=None) -> None:
    """The association panel of the training and population figures (SPEC section 3): the
    set-mate share (mean and min; one curve when every row has the same share, as for
    invariant attention), the fraction of rows passing Def. 2.2, the within-set mass as a faint
    description, and the reference lines (C-1)/(D-1) (uniform attention) and 1 - eps."""
    import numpy as np

    if share_mean is not None:
        one = share_min is None
        ax.plot(x, share_mean, color=COLORS["green"],
                label="set-mate share (every row)" if one else "set-mate share, mean")
        if not one:
            ax.plot(x, share_min, color=COLORS["purple"], ls="--", label="set-mate share, min")
        ax.step(x, np.asarray(topc_rows) / D, where="post", color=COLORS["blue"], lw=1.0,
                label="rows passing Def. 2.2 (fraction)")
    if mass_mean is not None:
        ax.plot(x, mass_mean, color="grey", lw=0.8, alpha=0.6,
                label="within-set mass (descriptive)")
    if D > 1:
        ax.axhline((C - 1) / (D - 1), color="grey", lw=0.8, ls=":",
                   label=f"uniform share (C-1)/(D-1) = {(C - 1) / (D - 1):.2f}")
    ax.axhline(1.0 - eps, color=COLORS["vermillion"], lw=0.8, ls=":", label=f"1 - eps = {1 - eps:g}")
    ax.set_ylim(0, 1.05)
    ax.set_xscale("log")
    ax.set_xlabel("gradient step")
    ax.set_title("patch association (paper Def. 2.2, share)")
    ax.legend(loc="center left", fontsize=7)
