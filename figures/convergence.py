"""Sampled-data trajectories against the exact population trajectory, as N grows.

Reads a saved :class:`patchassoc.simulations.population.convergence.ConvergenceResult`: the largest
distance in (alpha, a - c, b - c) over the recorded steps, per seed (points) and averaged over
seeds (line), against N on log-log axes, with the fitted slope and an N^(-1/2) reference line.

References
----------
SPEC section 6, claim 2.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .style import COLORS, new_figure, save_figure

__all__ = ["plot", "save"]


def plot(result, ax=None):
    """Distance vs N (log-log); returns the axes."""
    if ax is None:
        _, ax = new_figure(figsize=(5.2, 3.8))
    Ns = np.asarray(result.Ns, dtype=float)
    dist = np.asarray(result.distance)
    for k in range(dist.shape[1]):
        ax.scatter(Ns, dist[:, k], s=12, color=COLORS["sky"], alpha=0.8,
                   label="per seed" if k == 0 else None)
    mean = dist.mean(axis=1)
    ax.plot(Ns, mean, "o-", color=COLORS["blue"], label="mean over seeds")
    fit = np.exp(result.intercept) * Ns ** result.slope
    ax.plot(Ns, fit, color=COLORS["vermillion"], lw=1.0,
            label=f"fit: slope {result.slope:.2f}")
    ref = mean[0] * (Ns / Ns[0]) ** -0.5
    ax.plot(Ns, ref, color=COLORS["black"], ls="--", lw=1.0, label=r"reference $N^{-1/2}$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training sample size N")
    ax.set_ylabel(r"max distance in $(\alpha, a-c, b-c)$")
    cfg = result.config
    ax.set_title(f"Sampled GD vs exact population GD\n(sigma = 0, L={cfg.L}, C={cfg.C}, "
                 f"{int(result.steps[-1])} steps, {dist.shape[1]} seeds)", fontsize=9)
    ax.legend()
    return ax


def save(result, folder: str | Path, name: str = "population_convergence") -> list[Path]:
    ax = plot(result)
    return save_figure(ax.figure, folder, name)
