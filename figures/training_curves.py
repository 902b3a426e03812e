"""Training curves of a sampled-data run: loss and errors; alpha = <v, w*> and ||v_perp||;
the paper's association metrics (SPEC section 3): the set-mate share (mean and min) against
uniform attention's (C-1)/(D-1) and the level 1 - eps, and the fraction of rows passing Def. 2.2
(top-C = own set). The within-set mass, which counts A_ii, is drawn faintly as a description
only. Log-scaled step axis (step 0 is drawn at 1/2 so the initial point stays visible).

References
----------
SPEC sections 2-3.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from patchassoc.simulations.engines.sampled_descent import ASSOCIATION_EPS

from patchassoc.figures.style import (COLORS, new_figure, plot_association, save_figure,
                                      step_axis, styled)

__all__ = ["plot", "save"]


@styled
def plot(result, axes=None):
    """Three panels from a :class:`patchassoc.simulations.engines.sampled_descent.TrainResult`; returns the figure."""
    t = result.trajectory
    cfg = result.config
    if axes is None:
        fig, axes = new_figure(1, 3, figsize=(11.5, 3.2))
    else:
        fig = axes[0].figure
    x = step_axis(t.steps)
    ax = axes[0]
    ax.plot(x, t.train_loss, color=COLORS["black"], label="train loss")
    ax.plot(x, np.maximum(t.train_error, 1e-5), color=COLORS["blue"], label="train error")
    ax.plot(x, np.maximum(t.test_error, 1e-5), color=COLORS["vermillion"], label="test error")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("gradient step")
    ax.set_title("loss and zero-one errors")
    ax.legend()
    ax = axes[1]
    ax.plot(x, t.alpha, color=COLORS["blue"], label=r"$\alpha = \langle v, w^*\rangle$")
    ax.plot(x, t.v_perp_norm, color=COLORS["orange"], label=r"$\|v_\perp\|$")
    ax.set_xscale("log")
    ax.set_xlabel("gradient step")
    ax.set_title("value vector v")
    ax.legend()
    plot_association(axes[2], x, D=cfg.D, C=cfg.C, eps=ASSOCIATION_EPS, share_mean=t.share_mean,
                     share_min=t.share_min, topc_rows=t.topc_rows, mass_mean=t.mass_mean)
    s = result.summary()
    verdict = ("" if s["associated"] is None else
               f": {s['topc_rows']}/{cfg.D} rows pass Def. 2.2, share min {s['share_min']:.2f}, "
               f"{'associated' if s['associated'] else 'NOT associated'} at eps = "
               f"{ASSOCIATION_EPS:g}")
    fig.suptitle(f"Sampled-data gradient descent: d={cfg.d}, L={cfg.L}, C={cfg.C}, "
                 f"N={cfg.n_train}, {cfg.param}, diagonal {cfg.diagonal}, seed {result.seed}"
                 f"{verdict}", fontsize=10)
    fig.tight_layout()
    return fig


@styled
def save(result, folder: str | Path, name: str = "training_curves") -> list[Path]:
    return save_figure(plot(result), folder, name)
