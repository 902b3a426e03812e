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

from patchassoc.simulations.engines.sampled_descent import ASSOCIATION_EPS

from patchassoc.figures.style import (COLORS, new_figure, plot_association, plot_floored,
                                      save_figure, sci, step_axis, styled)

__all__ = ["plot", "save"]


@styled
def plot(result, axes=None):
    """Three panels from a :class:`patchassoc.simulations.engines.sampled_descent.TrainResult`; returns the figure."""
    t = result.trajectory
    cfg = result.config
    if axes is None:
        fig, axes = new_figure(1, 3, figsize=(11.5, 4.3), layout="constrained")
    else:
        fig = axes[0].figure
    x = step_axis(t.steps)
    ax = axes[0]
    ax.plot(x, t.train_loss, color=COLORS["black"], label="train loss")
    # a zero-one error of 0 (no sample misclassified) has no place on a log axis: drawn as
    # open triangles at the axis bottom, half the smallest non-zero error 1/n, not as a line
    n = max(int(cfg.n_train), int(getattr(cfg, "n_test", 0) or 0), 1)
    floor = 0.5 / n
    for err, color, name in ((t.train_error, COLORS["blue"], "train error"),
                             (t.test_error, COLORS["vermillion"], "test error")):
        plot_floored(ax, x, err, floor=floor, color=color, label=name,
                     floor_label=f"{name} = 0 (drawn at {sci(floor)})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("gradient step")
    ax.set_ylabel("logistic loss; zero-one error")
    ax.set_title("loss and zero-one errors")
    ax = axes[1]
    ax.plot(x, t.alpha, color=COLORS["blue"], label=r"$\alpha = \langle v, w^*\rangle$")
    ax.plot(x, t.v_perp_norm, color=COLORS["orange"], label=r"$\|v_\perp\|$")
    ax.set_xscale("log")
    ax.set_xlabel("gradient step")
    ax.set_ylabel(r"$\alpha$; $\|v_\perp\|$")
    ax.set_title("value vector v")
    plot_association(axes[2], x, D=cfg.D, C=cfg.C, eps=ASSOCIATION_EPS, share_mean=t.share_mean,
                     share_min=t.share_min, topc_rows=t.topc_rows, mass_mean=t.mass_mean,
                     legend=False)
    axes[2].set_ylabel("share; fraction of rows")
    for ax in axes:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=7)
    s = result.summary()
    verdict = ("" if s["associated"] is None else
               f": {s['topc_rows']}/{cfg.D} rows pass Def. 2.2, share min {s['share_min']:.2f}, "
               f"{'associated' if s['associated'] else 'NOT associated'} at eps = "
               f"{ASSOCIATION_EPS:g}")
    fig.suptitle(f"Sampled-data gradient descent: d={cfg.d}, L={cfg.L}, C={cfg.C}, "
                 f"N={cfg.n_train}, {cfg.param}, diagonal {cfg.diagonal}, seed {result.seed}"
                 f"{verdict}", fontsize=10)
    return fig


@styled
def save(result, folder: str | Path, name: str = "training_curves") -> list[Path]:
    return save_figure(plot(result), folder, name)
