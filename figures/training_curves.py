"""Training curves of a sampled-data run: loss and errors; alpha = <v, w*> and ||v_perp||;
within-set mass (mean and min) against the uniform level C/D. Log-scaled step axis
(step 0 is drawn at 1/2 so the initial point stays visible).

References
----------
SPEC sections 2-3.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .style import COLORS, new_figure, save_figure, step_axis

__all__ = ["plot", "save"]


def plot(result, axes=None):
    """Three panels from a :class:`patchassoc.simulations.train.TrainResult`; returns the figure."""
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
    ax = axes[2]
    ax.plot(x, t.mass_mean, color=COLORS["green"], label="mean over patches")
    ax.plot(x, t.mass_min, color=COLORS["purple"], ls="--", label="min over patches")
    ax.axhline(cfg.C / cfg.D, color="grey", lw=0.8, ls=":", label=f"uniform C/D = {cfg.C / cfg.D:.2f}")
    ax.axhline(1.0, color="grey", lw=0.6)
    ax.set_ylim(0, 1.05)
    ax.set_xscale("log")
    ax.set_xlabel("gradient step")
    ax.set_title("within-set attention mass")
    ax.legend(loc="lower right")
    fig.suptitle(f"Sampled-data gradient descent: d={cfg.d}, L={cfg.L}, C={cfg.C}, "
                 f"N={cfg.n_train}, {cfg.param} parameterization, seed {result.seed}",
                 fontsize=10)
    fig.tight_layout()
    return fig


def save(result, folder: str | Path, name: str = "training_curves") -> list[Path]:
    return save_figure(plot(result), folder, name)
