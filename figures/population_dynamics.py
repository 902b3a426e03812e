"""Exact population dynamics: attention maps rebuilt from (a, b, c), the dynamics curves, and
the population error against the Bayes error.

Reads a saved :class:`patchassoc.simulations.population.PopulationResult` (never recomputes): the maps are
A = Pd I + Qs (B - I) + R (J - B) rebuilt from the recorded (a, b, c) at log-spaced steps, drawn
in the natural patch order and with the sets contiguous.

References
----------
SPEC sections 3-5; claim 1 of section 6.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from . import attention_maps
from .style import COLORS, new_figure, save_figure, step_axis

__all__ = ["plot", "plot_maps", "save"]


def plot_maps(result, count: int = 5):
    """Attention maps at ``count`` log-spaced recorded steps; returns the figure."""
    t = result.trajectory
    idx = attention_maps.pick_snapshots(t.steps, count, t.mass_mean)
    A = [t.attention(result.structure, i) for i in idx]
    cfg = result.config
    return attention_maps.plot(A, [t.steps[i] for i in idx], result.structure,
                               title=f"Exact population dynamics: A rebuilt from (a, b, c) "
                                     f"(L={cfg.L}, C={cfg.C}, {t.param})")


def plot(result, axes=None):
    """Four panels: loss; error vs Bayes error; alpha and logit gaps; within-set mass and the
    conserved row sum. Returns the figure."""
    t = result.trajectory
    cfg = result.config
    if axes is None:
        fig, axes = new_figure(1, 4, figsize=(15, 3.3))
    else:
        fig = axes[0].figure
    x = step_axis(t.steps)
    ax = axes[0]
    ax.plot(x, t.loss, color=COLORS["black"], label="population risk")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("gradient step")
    ax.set_title("exact population logistic risk")
    ax.legend()
    ax = axes[1]
    ax.plot(x, t.error, color=COLORS["vermillion"], label="population error")
    ax.axhline(result.bayes_error, color=COLORS["black"], ls="--", lw=1.0,
               label=f"Bayes error {result.bayes_error:.3g}")
    ax.axhline(1.3 * result.bayes_error, color="grey", ls=":", lw=0.8, label="1.3 x Bayes")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("gradient step")
    ax.set_title(f"zero-one error (final {t.error[-1]:.3g} = "
                 f"{t.error[-1] / result.bayes_error:.3f} x Bayes)" if result.bayes_error > 0
                 else "zero-one error")
    ax.legend()
    ax = axes[2]
    ax.plot(x, t.alpha, color=COLORS["blue"], label=r"$\alpha = \langle v, w^*\rangle$")
    ax.plot(x, t.gap_ac, color=COLORS["green"], label="a - c (diagonal - across)")
    ax.plot(x, t.gap_bc, color=COLORS["purple"], label="b - c (within - across)")
    ax.set_xscale("log")
    ax.set_xlabel("gradient step")
    ax.set_title("value and logit gaps")
    ax.legend()
    ax = axes[3]
    drift = np.max(np.abs(t.row_sum - t.row_sum[0])) if t.row_sum.size else float("nan")
    ax.plot(x, t.mass_mean, color=COLORS["green"], label="within-set mass")
    ax.axhline(cfg.C / cfg.D, color="grey", lw=0.8, ls=":",
               label=f"uniform C/D = {cfg.C / cfg.D:.2f}")
    ax.plot([], [], " ", label=f"row sum a+(C-1)b+(D-C)c drift {drift:.1e}")
    ax.axhline(1.0, color="grey", lw=0.6)
    ax.set_ylim(0, 1.05)
    ax.set_xscale("log")
    ax.set_xlabel("gradient step")
    ax.set_title("within-set attention mass")
    ax.legend(loc="lower right")
    fig.suptitle(f"Exact population gradient descent: L={cfg.L}, C={cfg.C}, q={cfg.q:.3g}, "
                 f"p={cfg.p}, nu={cfg.nu:g}, eta_v={cfg.eta_v:g}, eta_Q={cfg.eta_Q:g}, "
                 f"kappa={cfg.kappa:.3g}", fontsize=10, y=1.04)
    return fig


def save(result, folder: str | Path) -> list[Path]:
    """Write population_attention_maps.{png,pdf} and population_dynamics.{png,pdf}."""
    paths = save_figure(plot_maps(result), folder, "population_attention_maps")
    paths += save_figure(plot(result), folder, "population_dynamics")
    return paths
