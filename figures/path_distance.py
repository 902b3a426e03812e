"""Why the sampled path leaves the population's: the distance between the empirical-risk flow and
the population flow against N, at fixed times and per component.

Five panels:

- at each declared time (t = 30, 300, 3000), the mean distance over the seeds of each component
  (alpha, v_perp, the invariant and the non-invariant parts of Q, the whole parameter) against N
  on log-log axes, with the N^(-1/2) slope drawn through the largest N;
- the fitted slope of each component against t with its bootstrap 95 % band, the CLT's -1/2
  dashed, the population flow's t_alpha and t_share (median over the seeds) dotted;
- the convergence study's GD protocol: each component's slope from the largest distance over the
  steps (the declared reading) beside its slope at steps 30, 100 and 300, with their intervals.

It reads the study's summary (``flow_distance.json``) only.

References
----------
SPEC section 6 ("Why the sampled path leaves the population's").
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from patchassoc.figures.style import COLORS, new_figure, save_figure, styled

__all__ = ["plot", "save", "SHOWN"]

#: The components drawn, and their colours.
SHOWN = {"alpha": COLORS["blue"], "v_perp": COLORS["green"], "Q_invariant": COLORS["purple"],
         "Q_residual": COLORS["vermillion"], "total": "black"}


def _vs_N(ax, s: dict, t: str) -> None:
    d = s["declared"][t]
    Ns = np.asarray(s["sizes"], dtype=float)
    for c, col in SHOWN.items():
        y = np.asarray(d["mean"][c], dtype=float)
        f = d["slopes"][c]
        lab = (f"{c.replace('_', ' ')}: {f['slope']:.2f}" if f.get("slope") is not None
               else c.replace('_', ' '))
        ax.plot(Ns, y, "o-", color=col, ms=3.5, lw=1.0, label=lab)
    top = max(np.asarray(d["mean"]["total"], dtype=float))
    ax.plot(Ns, top * (Ns / Ns[0]) ** -0.5, color="0.5", ls="--", lw=0.9, label="N^(-1/2)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training sample size N")
    ax.set_ylabel("mean distance to the population flow")
    ax.set_title(f"t = {t} GD steps")
    ax.legend(loc="lower left", fontsize=6.5)


@styled
def plot(summary: dict):
    fig, axes = new_figure(2, 3, figsize=(14.0, 8.0))
    for ax, t in zip(axes[0], list(summary["declared"])[:3]):
        _vs_N(ax, summary, t)
    ax_s, ax_g, ax_n = axes[1]
    t = np.asarray(summary["times"], dtype=float)
    keep = t > 0
    for c, col in SHOWN.items():
        cur = summary["slope_curves"][c]
        y = np.array([np.nan if v is None else v for v in cur["slope"]], dtype=float)
        lo = np.array([np.nan if v is None else v for v in cur["ci_low"]], dtype=float)
        hi = np.array([np.nan if v is None else v for v in cur["ci_high"]], dtype=float)
        ax_s.plot(t[keep], y[keep], color=col, lw=1.1, label=c.replace("_", " "))
        ax_s.fill_between(t[keep], lo[keep], hi[keep], color=col, alpha=0.15, lw=0)
    ax_s.axhline(-0.5, color="0.4", ls="--", lw=0.9, label="-1/2 (CLT)")
    for key, ls in (("t_alpha", ":"), ("t_share", "-.")):
        vals = [v for v in summary["phases"][key] if v is not None]
        if vals:
            ax_s.axvline(float(np.median(vals)), color="0.3", ls=ls, lw=0.9,
                         label=f"population {key}")
    ax_s.set_xscale("log")
    ax_s.set_xlabel("t (GD steps)")
    ax_s.set_ylabel("slope of ln(mean distance) on ln N")
    ax_s.set_title("The rate against N, at each time")
    ax_s.legend(loc="lower left", fontsize=6.5, ncol=2)
    gd = summary.get("gd")
    if gd:
        readings = [("max over steps", gd["declared"])] + [
            (f"step {k}", v) for k, v in gd["per_step"].items()]
        width = 0.8 / len(readings)
        for i, (name, fits) in enumerate(readings):
            for j, c in enumerate(SHOWN):
                f = fits[c]
                if f.get("slope") is None:
                    continue
                x = j + (i - (len(readings) - 1) / 2) * width
                ax_g.errorbar([x], [f["slope"]], yerr=[[f["slope"] - f["ci_low"]],
                                                       [f["ci_high"] - f["slope"]]],
                              fmt="os^v"[i % 4], color=SHOWN[c], ms=4, capsize=2,
                              label=name if j == 0 else None,
                              mfc="white" if i else SHOWN[c])
        ax_g.axhline(-0.5, color="0.4", ls="--", lw=0.9)
        ax_g.set_xticks(range(len(SHOWN)))
        ax_g.set_xticklabels([c.replace("_", "\n") for c in SHOWN], fontsize=7)
        ax_g.set_ylabel("slope against N (95 % bootstrap)")
        ax_g.set_title(f"GD protocol (N = {gd['Ns'][0]}..{gd['Ns'][-1]}, {gd['steps']} steps)")
        ax_g.legend(loc="lower left", fontsize=6.5)
    else:
        ax_g.set_axis_off()
    # the share of the whole parameter's squared distance, at the largest declared time
    last = list(summary["declared"])[-1]
    sh = summary["declared"][last]["share_of_total2"]
    Ns = np.asarray(summary["sizes"], dtype=float)
    bottom = np.zeros(Ns.size)
    for c in ("alpha", "v_perp", "Q_invariant", "Q_residual"):
        y = np.asarray(sh[c], dtype=float)
        ax_n.bar(np.arange(Ns.size), y, bottom=bottom, color=SHOWN[c], alpha=0.8,
                 label=c.replace("_", " "))
        bottom += y
    ax_n.set_xticks(np.arange(Ns.size))
    ax_n.set_xticklabels([f"{int(n)}" for n in Ns])
    ax_n.set_xlabel("training sample size N")
    ax_n.set_ylabel("share of the squared distance")
    ax_n.set_title(f"Which part holds the distance, t = {last}")
    ax_n.legend(loc="lower right", fontsize=6.5)
    tag = " - PREVIEW" if summary.get("preview") else ""
    fig.suptitle("The empirical-risk flow against the population flow (ref, noise orthogonal "
                 f"to w*, diagonal fixed){tag}", fontsize=11)
    fig.tight_layout()
    return fig


@styled
def save(summary: dict, folder: str | Path) -> list[Path]:
    """Write flow_distance.png / .pdf into ``folder``."""
    return save_figure(plot(summary), folder, "flow_distance")
