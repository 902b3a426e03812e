"""The shared figure style: colour-blind-safe palette, PNG + PDF output, and the style context
every figure is drawn in.

Importing the figures changes nothing in the user's matplotlib: no backend is chosen (the
command line picks a non-interactive one for itself) and no global ``rcParams`` is set. The
project's own settings (:data:`RC`) apply only inside :func:`style` (a
``matplotlib.rc_context``), which every drawing function enters through :func:`styled`;
figures are :class:`matplotlib.figure.Figure` objects made without pyplot, so they never
join pyplot's list of open figures, and :func:`save_figure` writes them with the Agg and PDF
canvases whatever the backend.

The palette is Okabe & Ito's (2008), safe for the common colour-vision deficiencies; sequential
maps use ``viridis`` (attention weights) and ``cividis``. Its eight colours are too few for a
figure that draws one line per seed (claim 2 runs ten): :func:`seed_style` gives each seed a
colour of its own among ten (Paul Tol's colour-blind-safe "muted" scheme, and black) and a
marker, so that no two of up to 70 seeds look alike in a legend.
"""
from __future__ import annotations

import functools
import io
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

from patchassoc.simulations.runtime.results import atomic_write_bytes

__all__ = ["PALETTE", "COLORS", "RC", "style", "styled", "save_figure", "new_figure",
           "ATTENTION_CMAP", "step_axis", "plot_association", "close",
           "plot_floored", "sci", "SEED_COLORS", "SEED_MARKERS", "seed_style"]

#: Okabe-Ito colours, in the order series are drawn.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
COLORS = dict(blue=PALETTE[0], vermillion=PALETTE[1], green=PALETTE[2], purple=PALETTE[3],
              orange=PALETTE[4], sky=PALETTE[5], yellow=PALETTE[6], black=PALETTE[7])
ATTENTION_CMAP = "viridis"

#: One colour per seed, for figures with a line per seed: Paul Tol's "muted" qualitative scheme
#: (nine colours told apart with the common colour-vision deficiencies), then black.
SEED_COLORS = ["#332288", "#CC6677", "#117733", "#DDCC77", "#88CCEE", "#882255", "#44AA99",
               "#999933", "#AA4499", "#000000"]
#: The marker of each seed; 7 is prime to the 10 colours, so (colour, marker) differs for every
#: pair of seeds below 70.
SEED_MARKERS = ["o", "s", "^", "D", "v", "P", "X"]


def seed_style(seed: int) -> dict:
    """Line keywords (``color``, ``marker``, ``markevery``, ``ms``) that tell seed ``seed`` from
    every other seed below 70: seed k takes colour k mod 10 and marker k mod 7. The markers are
    sparse and start at a different place for each seed, so that the lines stay readable where
    they overlap."""
    seed = int(seed)
    return dict(color=SEED_COLORS[seed % len(SEED_COLORS)],
                marker=SEED_MARKERS[seed % len(SEED_MARKERS)],
                markevery=(0.012 * (seed % len(SEED_COLORS)), 0.12), ms=3.5)

#: The project's rc settings, in force only inside :func:`style`.
RC = {
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
_RC = RC   # the name earlier versions used


def style():
    """The project's figure style as a context: ``with style(): ...`` draws with :data:`RC`
    and restores every rc setting on leaving (the backend is never touched)."""
    return matplotlib.rc_context(RC)


def styled(func):
    """Decorator: run ``func`` (a function that draws or saves a figure) inside
    :func:`style`. Every ``plot`` and ``save`` of the figure modules is wrapped in it, so a
    figure looks the same from the command line, a script or a notebook, and the caller's
    rcParams are as they were afterwards."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with style():
            return func(*args, **kwargs)
    return wrapper


_SUBPLOTS_KW = ("sharex", "sharey", "squeeze", "width_ratios", "height_ratios", "subplot_kw",
                "gridspec_kw")


@styled
def new_figure(nrows: int = 1, ncols: int = 1, **kwargs):
    """A :class:`~matplotlib.figure.Figure` and its axes, like ``plt.subplots`` but without
    pyplot (the figure is not registered with any backend or GUI) and under :func:`style`.
    Returns ``(fig, axes)``."""
    sub = {k: kwargs.pop(k) for k in _SUBPLOTS_KW if k in kwargs}
    fig = Figure(**kwargs)
    return fig, fig.subplots(nrows, ncols, **sub)


@styled
def save_figure(fig, folder: str | Path, name: str) -> list[Path]:
    """Write ``name``.png and ``name``.pdf into ``folder`` and close the figure."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    try:
        for ext in ("png", "pdf"):
            buf = io.BytesIO()
            fig.savefig(buf, format=ext)
            paths.append(atomic_write_bytes(folder / f"{name}.{ext}", buf.getvalue()))
    finally:
        close(fig)
    return paths


def close(fig) -> None:
    """Close ``fig`` in pyplot when pyplot manages it (a figure the caller made there); a
    figure of :func:`new_figure` belongs to no backend and needs nothing more."""
    import sys
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None and getattr(fig.canvas, "manager", None) is not None:
        pyplot.close(fig)


def __getattr__(name):
    # ``plt`` (pyplot) on demand, for callers that close figures with it; importing the
    # figures does not import pyplot.
    if name == "plt":
        import matplotlib.pyplot as plt
        return plt
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def plot_floored(ax, x, y, *, floor: float, color, label: str, what: str = "",
                 max_marks: int = 40, floor_label: str | None = None, **line_kw) -> None:
    """A positive quantity on a log y axis that can fall to (or below) ``floor``, where float64
    can no longer resolve it (a difference of two equal numbers, 0 or a rounding-sized
    negative). The values above ``floor`` are a line (broken where the value is not); those at
    or below it are open downward triangles on the floor, labelled "below ``floor``" (or
    ``floor_label``; thinned to ``max_marks`` along the axis), so that the floor never reads as
    data."""
    import numpy as np

    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    low = ~(y > floor)
    ax.plot(x, np.where(low, np.nan, y), color=color, label=label, **line_kw)
    if low.any():
        k = np.flatnonzero(low)
        k = k[::max(1, -(-k.size // max_marks))]
        ax.plot(x[k], np.full(k.size, floor), ls="none", marker="v", ms=4, mfc="none",
                mec=color, mew=0.9,
                label=floor_label or f"{what or label} below {sci(floor)} (not resolved in "
                                     f"float64)")


def sci(v: float) -> str:
    """``v`` in short scientific notation for a label: 1e-16, 2.5e+03 -> "2.5e3"."""
    m, e = f"{v:.1e}".split("e")
    m = m.rstrip("0").rstrip(".")
    return f"{m}e{int(e)}"


def step_axis(steps):
    """Gradient steps as x values for a log axis: step 0 is drawn at 1/2 so the initial point
    stays visible."""
    import numpy as np

    steps = np.asarray(steps, dtype=float)
    return np.where(steps == 0, 0.5, steps)


def plot_association(ax, x, *, D: int, C: int, eps: float, share_mean, topc_rows, mass_mean,
                     share_min=None, legend: bool = True) -> None:
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
    if legend:
        ax.legend(loc="center left", fontsize=7)
