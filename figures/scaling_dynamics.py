"""Claim 7, study (b): how long GD takes along the family, read off the exact flows.

Top: the flows of study (a) against t (GD steps, log scale), one colour per d: the error over
the Bayes error (left; the criterion 1.3 x Bayes dashed, the budget T(d) = ceil(1000 ln d) of
the fixed-budget reading marked on each curve) and the set-mate share (right; the criterion
share >= 0.9 dashed). Bottom left: the time to each criterion against d, log-log, with the
least-squares line of ln t against ln d (exponent gamma, its 95 % interval in the legend, and
the exponent beta of the fit against ln ln d);
censored times are drawn at the horizon as open triangles and left out of the fits; the budget
T(d) dotted. Bottom right: beside it, the budget GD's phase times at fixed d against the number
of patches D = L C (L = C).

References
----------
SPEC section 3 (phases), section 6, item 7 and "Claims read at a declared horizon".
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.ticker import NullLocator, ScalarFormatter

from patchassoc.figures.style import COLORS, new_figure, save_figure, sci, styled

__all__ = ["plot", "save"]

#: criterion -> (label, colour, marker)
_CRITERIA = (("def22", "Def. 2.2 in every row", COLORS["green"], "o"),
             ("error", "error <= 1.3 x Bayes", COLORS["blue"], "s"),
             ("share", "share >= 0.9", COLORS["vermillion"], "D"),
             ("all", "all three", COLORS["black"], "x"))


def _fixed(v, digits: int = 2) -> str:
    """``v`` with ``digits`` decimals; a value that rounds to zero is given in short scientific
    notation instead (never "-0.00", which reads as a sign without a value)."""
    v = float(v)
    text = f"{v:.{digits}f}"
    if v != 0 and float(text) == 0:
        return sci(v)
    return text.replace("-0." + "0" * digits, "0." + "0" * digits)


def _fit_text(fit) -> str:
    if not fit:
        return "no fit"
    if fit.get("ci_low") is None:
        return f"{_fixed(fit['slope'])} ({fit['n']} points)"
    return f"{_fixed(fit['slope'])} [{_fixed(fit['ci_low'])}, {_fixed(fit['ci_high'])}]"


def _colors(n):
    cmap = colormaps["viridis"]
    return [cmap(0.1 + 0.75 * i / max(1, n - 1)) for i in range(n)]


def _trajectories(ax_err, ax_share, fb):
    rows = [r for r in fb.get("rows") or [] if r.get("series")]
    if not rows:
        for ax in (ax_err, ax_share):
            ax.text(0.5, 0.5, "no flow", transform=ax.transAxes, ha="center", va="center")
            ax.set_axis_off()
        return
    for r, color in zip(rows, _colors(len(rows))):
        s = r["series"]
        t = np.asarray(s["t"])
        e = np.asarray(s["error_over_bayes"])
        sh = np.asarray(s["share"])
        lab = f"d = {r['d']} (L = C = {r['L']})"
        ax_err.plot(t, e, color=color, lw=1.5, label=lab)
        ax_share.plot(t, sh, color=color, lw=1.5, label=lab)
        T = r.get("budget")
        if T and t[0] <= T <= t[-1]:
            ax_err.plot([T], [np.interp(np.log(T), np.log(t), e)], marker="|", ms=12, mew=2,
                        color=color)
            ax_share.plot([T], [np.interp(np.log(T), np.log(t), sh)], marker="|", ms=12,
                          mew=2, color=color)
    ax_err.axhline(1.3, color=COLORS["black"], lw=0.8, ls="--")
    ax_err.text(0.99, 1.3, "1.3 x Bayes ", transform=ax_err.get_yaxis_transform(), ha="right",
                va="bottom", fontsize=7)
    ax_share.axhline(0.9, color=COLORS["black"], lw=0.8, ls="--")
    ax_share.text(0.01, 0.9, " share 0.9", transform=ax_share.get_yaxis_transform(),
                  va="bottom", fontsize=7)
    for ax in (ax_err, ax_share):
        ax.set_xscale("log")
        ax.set_xlabel("t (GD steps) along the exact flow")
    ax_err.set_yscale("log")
    ax_err.set_ylabel("error / Bayes error")
    ax_share.set_ylabel("set-mate share (worst row)")
    ax_share.set_ylim(0, 1.02)
    ax_err.set_title("the exact flows' error over Bayes\n(| = the budget ceil(1000 ln d), where "
                     "the fixed-budget reading stops)", fontsize=9)
    ax_share.set_title("the exact flows' set-mate share\n(| = the budget ceil(1000 ln d))",
                       fontsize=9)
    ax_err.legend(fontsize=7.5, loc="upper right")


def _times(ax, fb):
    rows = fb.get("rows") or []
    if not rows:
        ax.text(0.5, 0.5, "no flow", transform=ax.transAxes, ha="center", va="center")
        ax.set_axis_off()
        return
    ds = np.array([r["d"] for r in rows], dtype=float)
    for crit, label, color, marker in _CRITERIA:
        fit = (fb.get("fits") or {}).get(crit) or {}
        pts = [(r["d"], r["times"][crit]["time"]) for r in rows
               if not r["times"][crit]["censored"] and r["times"][crit]["time"]]
        cens = [(r["d"], r.get("t_reached")) for r in rows if r["times"][crit]["censored"]]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], ls="none", marker=marker,
                    ms=6, color=color, mfc="none" if crit == "all" else color,
                    label=label + (f": gamma {_fit_text(fit['gamma'])}" if fit.get("gamma")
                                   else "")
                    + (f", beta {_fixed(fit['beta']['slope'], 1)}" if fit.get("beta") else ""))
        if cens:
            ax.plot([c[0] for c in cens], [c[1] for c in cens], ls="none", marker="^", ms=7,
                    mfc="none", color=color)
        g = fit.get("gamma")
        if g and len(fit.get("d") or []) >= 2:
            x = np.geomspace(min(fit["d"]), max(fit["d"]), 50)
            ax.plot(x, np.exp(g["intercept"]) * x ** g["slope"], color=color, lw=0.9,
                    alpha=0.7)
    budget = [(r["d"], r["budget"]) for r in rows if r.get("budget")]
    if budget:
        ax.plot([b[0] for b in budget], [b[1] for b in budget], color=COLORS["orange"],
                ls=":", lw=1.6, label="budget T(d) = ceil(1000 ln d)")
    if any(r["times"][c]["censored"] for r in rows for c in ("def22", "share", "error", "all")):
        ax.plot([], [], ls="none", marker="^", mfc="none", color="gray",
                label="censored (> horizon; not fitted)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticks(ds)
    ax.set_xticklabels([str(int(d)) for d in ds])
    ax.set_xlabel("patch dimension d (L = C = round(ln d))")
    ax.set_ylabel("time to the criterion (GD steps)")
    res = fb.get("resolution")
    ax.set_title("time to each criterion along the flows\nlines: least squares of ln t on ln d"
                 + (f"; records x{res:.2f} apart" if res else ""), fontsize=9)
    ax.legend(fontsize=7, loc="upper left")


def _sweep(ax, b):
    rows = b.get("vs_D") or []
    for t, color, marker in (("t_alpha", COLORS["blue"], "o"),
                             ("t_share", COLORS["vermillion"], "s")):
        pts = [(r["D"], r[t]) for r in rows if r.get(t)]
        if not pts:
            continue
        fit = (b.get("fits_D") or {}).get(t)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, marker=marker,
                label=f"{t}: exponent {_fit_text(fit)}")
    for r in rows:
        if r.get("t_share"):
            ax.annotate(f"share {r['share_final']:.2f}", (r["D"], r["t_share"]),
                        textcoords="offset points", xytext=(4, 6), fontsize=7)
    if not rows:
        ax.text(0.5, 0.5, "budget GD against D: not run", transform=ax.transAxes,
                ha="center", va="center")
        ax.set_axis_off()
        return
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(ScalarFormatter())
    ax.tick_params(axis="y", which="minor", labelsize=7)
    xs = sorted({r["D"] for r in rows})
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticks(xs)
    ax.set_xticklabels([str(x) for x in xs])
    ax.margins(y=0.12)
    ax.set_xlabel("number of patches D = L C (L = C)")
    ax.set_ylabel("step")
    ax.set_title(f"beside it: budget GD's phase times at fixed d = {b.get('sweep_d')}\n"
                 "against the number of patches", fontsize=9)
    ax.legend(fontsize=7.5, loc="upper left")


@styled
def plot(summary, axes=None):
    """The flows against t, the times to each criterion against d and the budget GD's phase
    times against D; returns the axes (2 x 2)."""
    b = summary["b"]
    fb = b.get("flow") or {}
    if axes is None:
        _, axes = new_figure(2, 2, figsize=(12.5, 9.5), layout="constrained")
    _trajectories(axes[0][0], axes[0][1], fb)
    _times(axes[1][0], fb)
    _sweep(axes[1][1], b)
    return axes


@styled
def save(summary, folder: str | Path, name: str = "scaling_dynamics") -> list[Path]:
    axes = plot(summary)
    return save_figure(axes[0][0].figure, folder, name)
