"""The limit of the empirical-risk flow: claim 2's seeds past the verdict's horizon.

Six panels, one line per seed, each read on the seed's sound records (SPEC section 6, "The
limit of the empirical-risk flow"):

- min_i u_i against log10 t, the verdict's horizon (1e15) marked;
- its slope per decade against ln t on log axes, with the laws lambda = 0 (u ~ ln t),
  -1 (u ~ ln ln t) and -2 (a plateau) drawn through the median last point;
- the loss rate per decade (slope of ln loss against ln t) against log10 t;
- ||v|| and ||Q offdiag|| against log10 t (log axis);
- the angle theta / ||theta|| turned per decade against ln t on log axes, with the laws
  lambda = -1 (the boundary between a converging and a turning direction) and -2;
- the invariant fraction of Q's direction and its cosine with the association direction.

It reads the study's summary (``flow_limit.json``) only.

References
----------
SPEC section 6 (the limit of the empirical-risk flow).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from patchassoc.figures.style import PALETTE, new_figure, save_figure, styled

__all__ = ["plot", "save"]


def _guides(ax, x_end: float, y_end: float, x_from: float, lams) -> None:
    xs = np.array([x_from, x_end])
    for lam, ls in lams:
        ax.plot(xs, y_end * (xs / x_end) ** lam, color="0.4", ls=ls, lw=0.9,
                label=f"lambda = {lam:g}")


@styled
def plot(summary: dict):
    fig, axes = new_figure(2, 3, figsize=(14.0, 7.6))
    (ax_u, ax_s, ax_l), (ax_n, ax_a, ax_f) = axes
    ln10 = math.log(10.0)
    ends_s, ends_a = [], []
    for i, r in enumerate(summary["seeds"]):
        col = PALETTE[i % len(PALETTE)]
        c = r["curves"]
        lg = np.log10(np.asarray(c["t"], dtype=float))
        ax_u.plot(lg, c["u_min"], color=col, lw=1.0, label=f"seed {r['seed']}")
        ks = np.asarray(r["decades"], dtype=float)
        s = np.asarray(r["u_min_slope_per_decade"], dtype=float)
        lt = (ks + 0.5) * ln10
        pos = s > 0
        if pos.any():
            ax_s.plot(lt[pos], s[pos], color=col, lw=1.0)
            ends_s.append((lt[pos][-1], s[pos][-1]))
        rates = np.asarray(r["loss_rate_per_decade"], dtype=float)
        ax_l.plot(ks + 0.5, rates, color=col, lw=1.0)
        ax_n.plot(lg, c["v_norm"], color=col, lw=1.0, ls="-")
        ax_n.plot(lg, c["q_norm"], color=col, lw=1.0, ls="--")
        tk = np.asarray(r["turning"]["theta"]["k"], dtype=float)
        ang = np.asarray(r["turning"]["theta"]["angle"], dtype=float)
        okay = ang > 0
        if okay.any():
            ax_a.plot((tk[okay] + 0.5) * ln10, ang[okay], color=col, lw=1.0)
            ends_a.append(((tk[okay][-1] + 0.5) * ln10, ang[okay][-1]))
        ax_f.plot(lg, c["inv_frac"], color=col, lw=1.0, ls="-")
        ax_f.plot(lg, c["assoc_cos"], color=col, lw=1.0, ls=":")
    for ax in (ax_u, ax_l, ax_n, ax_f):
        ax.axvline(15.0, color="black", lw=0.8, ls="--")
        ax.set_xlabel("log10 t (GD steps)")
    x0 = 15.5 * ln10
    if ends_s:
        xe, ye = np.median([e[0] for e in ends_s]), np.median([e[1] for e in ends_s])
        _guides(ax_s, xe, ye, x0, ((0, "-"), (-1, "--"), (-2, ":")))
        ax_s.legend(loc="lower left", fontsize=7)
    if ends_a:
        xe, ye = np.median([e[0] for e in ends_a]), np.median([e[1] for e in ends_a])
        _guides(ax_a, xe, ye, x0, ((-1, "--"), (-2, ":")))
        ax_a.legend(loc="lower left", fontsize=7)
    from matplotlib.ticker import NullFormatter
    for ax in (ax_s, ax_a):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("ln t (the decade's middle)")
        # ln t spans about 1.3 decades: label 50, 100, 200, 500 only (the minor labels collided)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks([50, 100, 200, 500], ["50", "100", "200", "500"])
    ax_u.set_ylabel("min_i u_i (log-odds of the worst row's share)")
    ax_u.set_title("The worst row's share, past the horizon (dashed: 1e15)")
    ax_u.legend(loc="lower right", fontsize=6, ncol=2)
    ax_s.set_ylabel("slope of min u per unit of ln t, per decade")
    ax_s.set_title("Does min u keep rising? (bounded iff lambda < -1)")
    ax_l.set_ylabel("slope of ln loss against ln t, per decade")
    ax_l.set_title("The interpolation rate")
    ax_n.set_yscale("log")
    ax_n.set_ylabel("||v|| (solid), ||Q offdiag|| (dashed)")
    ax_n.set_title("How the parameters grow")
    ax_a.set_ylabel("angle theta / ||theta|| turned per decade (rad)")
    ax_a.set_title("Does the direction converge? (iff lambda < -1)")
    ax_f.set_ylabel("invariant fraction (solid), cos with (B - I) (dotted)")
    ax_f.set_title("Q's direction, Delta = Q_t - Q_0")
    T = summary.get("t_max", 1e298)
    tag = " - PREVIEW" if summary.get("preview") else ""
    fig.suptitle(f"The empirical-risk flow past the verdict's horizon, to t = {T:.0e} "
                 f"(ref, N = 4,000, diagonal fixed; sound records only){tag}", fontsize=11)
    fig.tight_layout()
    return fig


@styled
def save(summary: dict, folder: str | Path) -> list[Path]:
    """Write flow_limit.png / .pdf into ``folder``."""
    return save_figure(plot(summary), folder, "flow_limit")
