"""The exact gradient flow against time, on a log axis out to the horizon.

Reads a :class:`patchassoc.simulations.engines.population.flow.FlowResult` (never recomputes).
Four panels against t + 1 (GD steps): the excess error over Bayes with the claim's 1.3 x Bayes
line; the logit gaps b - c and a - c and alpha (b - c growing like ln t is a straight line here:
the association limit; a - c is dashed over b - c, so that both show where they coincide); the
set-mate share's distance to 1 with the level 1 - eps and the rows passing Def. 2.2 (right
axis); the flow's speed |M grad R| with the certified relative bound. Where error / Bayes - 1 or
1 - share falls below :data:`FLOOR` (the error equals the Bayes error, or the share 1, to
float64 rounding) it is drawn as open triangles "below 1e-16", not as a line. The time to
each criterion (SPEC section 6) is a dotted vertical line; a censored criterion is named in the
legend.

References
----------
SPEC section 6 (the flow, the limit class, the time to a criterion).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from patchassoc.figures.style import COLORS, new_figure, plot_floored, save_figure, styled

__all__ = ["plot", "save", "CRITERIA", "FLOOR"]

#: The criteria of SPEC section 6 (key of the times, label, colour).
CRITERIA = (("def22", "Def. 2.2", COLORS["green"]), ("share", "share", COLORS["purple"]),
             ("error", "1.3 x Bayes", COLORS["vermillion"]))


def _times(ax, times: dict, legend: bool = False) -> None:
    for key, label, color in CRITERIA:
        rec = (times or {}).get(key) or {}
        if rec.get("censored"):
            if legend:
                ax.plot([], [], ls=":", color=color, label=f"{label}: censored")
            continue
        if rec.get("time") is not None:
            ax.axvline(rec["time"] + 1.0, ls=":", lw=1.0, color=color,
                       label=f"{label} for good: t = {rec['time']:.3g}" if legend else None)


#: Below this, error / Bayes - 1 and 1 - share are differences float64 cannot resolve (the
#: error equals the Bayes error, the share 1, to rounding): drawn as marks "below", not a line.
FLOOR = 1e-16


@styled
def plot(result):
    """The four panels; returns the figure."""
    tr = result.trajectory
    s = result.summary()
    bayes = result.bayes_error
    x = tr.t + 1.0
    fig, axes = new_figure(2, 2, figsize=(10.5, 7.0), sharex=True)
    (ax_e, ax_g), (ax_s, ax_v) = axes

    if bayes > 0:
        plot_floored(ax_e, x, tr.error / bayes - 1.0, floor=FLOOR, color=COLORS["blue"],
                     label="error / Bayes - 1")
        ax_e.axhline(0.3, color=COLORS["vermillion"], ls="--", lw=1.0, label="1.3 x Bayes")
        ax_e.set_ylabel("error / Bayes error - 1")
    else:
        ax_e.plot(x, tr.error, color=COLORS["blue"], label="population error")
        ax_e.set_ylabel("population error")
    ax_e.set_xscale("log")
    ax_e.set_yscale("log")
    ax_e.set_title("Population error against the exact Bayes error")
    _times(ax_e, s["times"], legend=True)
    ax_e.legend(loc="center left", bbox_to_anchor=(0.3, 0.4))   # the error falls from the upper left

    # b - c below, a - c dashed over it: once the two gaps coincide both stay visible
    ax_g.semilogx(x, tr.b - tr.c, color=COLORS["blue"], lw=2.4, label="b - c (within - across)")
    ax_g.semilogx(x, tr.a - tr.c, color=COLORS["orange"], lw=1.3, ls="--",
                  label="a - c (diagonal - across)")
    ax_g.semilogx(x, tr.alpha, color=COLORS["black"], lw=1.0, label="alpha = <v, w*>")
    ax_g.axhline(0.0, color="0.6", lw=0.6)
    ax_g.set_ylabel("logit gap; alpha")
    lim = s["limit"]
    ax_g.set_title(f"Limit class: {lim['class']} (slope of b - c per ln t = "
                   f"{lim['slope_bc']:.3g})" if lim.get("slope_bc") is not None else
                   f"Limit class: {lim['class']}")
    ax_g.legend(loc="upper left")

    plot_floored(ax_s, x, 1.0 - tr.share, floor=FLOOR, color=COLORS["purple"],
                 label="1 - share (min over rows)", what="1 - share")
    ax_s.set_xscale("log")
    ax_s.set_yscale("log")
    ax_s.axhline(s["eps"], color=COLORS["purple"], ls="--", lw=1.0, label=f"eps = {s['eps']:g}")
    ax_r = ax_s.twinx()
    ax_r.semilogx(x, tr.topc_rows, color=COLORS["green"], lw=1.0, drawstyle="steps-post")
    ax_r.set_ylim(-0.5, tr.D + 0.5)
    ax_r.set_ylabel("rows passing Def. 2.2", color=COLORS["green"])
    ax_r.grid(False)
    ax_s.plot([], [], color=COLORS["green"], lw=1.0,
              label=f"rows passing Def. 2.2 (right axis, of {tr.D})")
    ax_s.set_ylabel("1 - set-mate share")
    ax_s.set_xlabel("t + 1 (GD steps)")
    ax_s.set_title("Set-mate share and Def. 2.2")
    _times(ax_s, s["times"])
    ax_s.legend(loc="lower left", bbox_to_anchor=(0.1, 0.0))   # under 1 - share, above 0 rows

    ax_v.loglog(x, np.maximum(tr.speed, 1e-300), color=COLORS["blue"], label="|M grad R|")
    if np.any(tr.rel_bound > 0):
        ax_v.loglog(x, np.maximum(tr.rel_bound * tr.speed, 1e-300), color=COLORS["orange"],
                    lw=1.0, label="certified bound on M grad R")
    ax_v.set_ylabel("speed |d theta / dt| (per GD step)")
    ax_v.set_xlabel("t + 1 (GD steps)")
    ax_v.set_title(f"Speed of the flow ({s['evaluations']} evaluations, "
                   f"{tr.method} rtol {tr.rtol:g})")
    ax_v.legend(loc="lower left")
    cfg = result.config
    fig.suptitle(f"Exact gradient flow to t = {tr.t_reached:.3g} steps (L={cfg.L}, C={cfg.C}, "
                 f"d={cfg.d}, diagonal {cfg.diagonal}, seed {result.seed})", fontsize=11)
    fig.tight_layout()
    return fig


@styled
def save(result, folder: str | Path) -> list[Path]:
    """Write flow_dynamics.png / .pdf into ``folder``."""
    return save_figure(plot(result), folder, "flow_dynamics")
