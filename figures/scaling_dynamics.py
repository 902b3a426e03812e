"""Claim 7, study (b): phase times of population GD against d (along the family) and D.

Left: t_alpha and t_share against d, log-log, with the fitted exponent gamma of t_share and its
95 % interval (polylog(d) growth shows as gamma near 0). Right: the same at fixed d against the
number of patches D = L^2 (L = C). The final share is written beside each point.

References
----------
SPEC section 3 (phases), section 6, item 7.
"""
from __future__ import annotations

from pathlib import Path

from matplotlib.ticker import NullLocator, ScalarFormatter

from patchassoc.figures.style import COLORS, new_figure, save_figure

__all__ = ["plot", "save"]


def _fit_text(fit) -> str:
    if not fit:
        return "no fit"
    if fit.get("ci_low") is None:
        return f"{fit['slope']:.3f} (2 points)"
    return f"{fit['slope']:.3f} [{fit['ci_low']:.3f}, {fit['ci_high']:.3f}]"


def _panel(ax, rows, xkey, fits, xlabel, title):
    for t, color, marker in (("t_alpha", COLORS["blue"], "o"),
                             ("t_share", COLORS["vermillion"], "s")):
        pts = [(r[xkey], r[t]) for r in rows if r.get(t)]
        if not pts:
            continue
        fit = fits.get(t) if fits else None
        if isinstance(fit, dict) and "gamma" in fit:
            fit = fit["gamma"]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, marker=marker,
                label=f"{t}: exponent {_fit_text(fit)}")
    for r in rows:
        if r.get("t_share"):
            ax.annotate(f"share {r['share_final']:.2f}", (r[xkey], r["t_share"]),
                        textcoords="offset points", xytext=(4, 6), fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(ScalarFormatter())
    ax.tick_params(axis="y", which="minor", labelsize=7)
    xs = sorted({r[xkey] for r in rows})
    if xs:
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(xs)
        ax.set_xticklabels([str(x) for x in xs])
    ax.margins(y=0.12)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("step")
    ax.set_title(title, fontsize=9)
    if rows:
        ax.legend(fontsize=7.5, loc="upper left")
    else:
        ax.text(0.5, 0.5, "not run", transform=ax.transAxes, ha="center", va="center")


def plot(summary, axes=None):
    """Phase times against d and against D; returns the axes."""
    b = summary["b"]
    if axes is None:
        _, axes = new_figure(1, 2, figsize=(11, 4.6))
    _panel(axes[0], b["vs_d"], "d", b["fits_d"], "patch dimension d",
           "phase times along the family (L = C = round(ln d)), diagonal fixed")
    _panel(axes[1], b["vs_D"], "D", b["fits_D"], "number of patches D = L C (L = C = 3, 4, ...)",
           f"phase times at fixed d = {b.get('sweep_d')}")
    return axes


def save(summary, folder: str | Path, name: str = "scaling_dynamics") -> list[Path]:
    axes = plot(summary)
    return save_figure(axes[0].figure, folder, name)
