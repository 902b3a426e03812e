"""Sampled-data trajectories against the exact population trajectory, as N grows.

Reads a saved :class:`patchassoc.simulations.studies.sampled_convergence.ConvergenceResult`. Left
panel, the paper's setting (noise orthogonal to w*, the config's d and sigma, diagonal fixed):
the largest distance over the recorded steps, mean over seeds, against N on log-log axes, for
the whole parameter (points: each seed) and its parts (alpha, ||v_perp||, the invariant part of
Q and its non-invariant residual), each labelled with its fitted slope and bootstrap 95 %
interval, beside an N^(-1/2) reference. Right panel (when the result has it): the sigma = 0
control, where only the sampling of the feature coefficients separates the two trajectories.

References
----------
SPEC section 6, claim 2.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from patchassoc.figures.style import COLORS, new_figure, save_figure, styled

__all__ = ["plot", "save"]

#: (component, label, colour, marker) of the drawn series.
_SERIES = (("total", "whole parameter", COLORS["black"], "o"),
           ("alpha", r"$\alpha$", COLORS["blue"], "s"),
           ("v_perp", r"$\|v_\perp\|$", COLORS["green"], "^"),
           ("Q_invariant", r"$Q$, invariant part", COLORS["orange"], "D"),
           ("Q_residual", r"$Q$, non-invariant residual", COLORS["vermillion"], "v"))


def _fit_label(name: str, fit: dict | None) -> str:
    if not fit or fit.get("slope") is None:
        return f"{name}: no fit"
    return f"{name}: {fit['slope']:.2f} [{fit['ci_low']:.2f}, {fit['ci_high']:.2f}]"


def _panel(ax, Ns, dist, slopes, names, title, components):
    for comp, label, color, marker in _SERIES:
        if comp not in names:
            continue
        D = dist[..., components.index(comp)]
        mean = D.mean(axis=1)
        if not np.all(mean > 0):
            continue
        if comp == "total":
            for k in range(D.shape[1]):
                ax.scatter(Ns, D[:, k], s=9, color=COLORS["sky"], alpha=0.7, zorder=1,
                           label="whole parameter, each seed" if k == 0 else None)
        ax.plot(Ns, mean, marker=marker, ms=4, color=color, zorder=2,
                label=_fit_label(label, slopes.get(comp)))
    total = dist[..., components.index("total")].mean(axis=1)
    ax.plot(Ns, total[0] * (Ns / Ns[0]) ** -0.5, color=COLORS["black"], ls="--", lw=0.9,
            label=r"reference $N^{-1/2}$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training sample size N")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1,
              title="fitted slope [bootstrap 95% CI over seeds]", title_fontsize=7)


@styled
def plot(result, axes=None):
    """Distances vs N (log-log), paper setting and (if present) the sigma = 0 control;
    returns the axes."""
    from patchassoc.simulations.studies.sampled_convergence import (COMPONENTS, CONTROL_COMPONENTS,
                                                               CONTROL_D)
    has_control = result.control is not None
    if axes is None:
        _, axes = new_figure(1, 2 if has_control else 1, figsize=(10.5 if has_control else 5.6,
                                                                  5.2), squeeze=False,
                             sharey=True)
        axes = axes[0]
    Ns = np.asarray(result.Ns, dtype=float)
    cfg = result.config
    n_seeds = result.distance.shape[1]
    steps = int(result.steps[-1])
    _panel(axes[0], Ns, np.asarray(result.distance), result.slopes, COMPONENTS,
           f"paper setting: noise orthogonal to $w^*$, d={cfg.d}, sigma={cfg.sigma:.3g}, "
           f"diagonal {cfg.diagonal}\n(L={cfg.L}, C={cfg.C}, {steps} steps, {n_seeds} seeds)",
           COMPONENTS)
    axes[0].set_ylabel("largest distance to the population trajectory\n(mean over seeds)")
    if has_control:
        _panel(axes[1], Ns, np.asarray(result.control), result.control_slopes or {},
               CONTROL_COMPONENTS,
               f"control: no patch noise (sigma = 0, d={CONTROL_D})\n"
               f"same seeds, N and steps", COMPONENTS)
    return axes


@styled
def save(result, folder: str | Path, name: str = "population_convergence") -> list[Path]:
    axes = plot(result)
    return save_figure(axes[0].figure, folder, name)
