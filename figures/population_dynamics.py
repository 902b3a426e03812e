"""Exact population dynamics: attention maps rebuilt from (a, b, c), the dynamics curves, and
the population error against the Bayes error.

Reads a saved :class:`patchassoc.simulations.engines.population.trajectory.PopulationResult` (never
recomputes): the maps are A = Pd I + Qs (B - I) + R (J - B) rebuilt from the recorded (a, b, c) at
log-spaced steps, drawn in the natural patch order and with the sets contiguous.

The curves carry the paper's association metrics (SPEC section 3: Def. 2.2 in every row or none,
the set-mate share) and shade the phases of the proof: up to t_alpha (alpha reaches half its
final value) and from t_alpha to t_share (the share is half way to its final value). The
paper's order is alpha first, with the attention nearly still, then the share.

References
----------
SPEC sections 3-5; claim 1 of section 6.
"""
from __future__ import annotations

from pathlib import Path

from patchassoc.figures import attention_maps
from patchassoc.figures.style import (COLORS, new_figure, plot_association, save_figure,
                                      step_axis, styled)

__all__ = ["plot", "plot_maps", "save", "shade_phases"]


@styled
def plot_maps(result, count: int = 5):
    """Attention maps at ``count`` log-spaced recorded steps; returns the figure."""
    t = result.trajectory
    idx = attention_maps.pick_snapshots(t.steps, count,
                                        t.share if t.share is not None else t.mass_mean)
    A = [t.attention(result.structure, i) for i in idx]
    cfg = result.config
    return attention_maps.plot(A, [t.steps[i] for i in idx], result.structure,
                               title=f"Exact population dynamics: A rebuilt from (a, b, c) "
                                     f"(L={cfg.L}, C={cfg.C}, {t.param}, diagonal "
                                     f"{cfg.diagonal})")


def shade_phases(ax, ph: dict, label: bool = False) -> None:
    """Shade [0, t_alpha] (phase I: alpha grows) and [t_alpha, t_share] (the share moves) on a
    log step axis (step 0 at 1/2); dashed lines at t_alpha and t_share."""
    ta, ts = ph.get("t_alpha"), ph.get("t_share")
    if ta is not None:
        ax.axvspan(0.5, max(ta, 0.5), color=COLORS["sky"], alpha=0.15, lw=0,
                   label="until t_alpha" if label else None)
        ax.axvline(max(ta, 0.5), color=COLORS["blue"], ls="--", lw=0.8)
    if ts is not None:
        if ta is not None and ts > ta:
            ax.axvspan(max(ta, 0.5), ts, color=COLORS["orange"], alpha=0.15, lw=0,
                       label="t_alpha to t_share" if label else None)
        ax.axvline(max(ts, 0.5), color=COLORS["orange"], ls="--", lw=0.8)


@styled
def plot(result, axes=None):
    """Four panels: loss; error vs Bayes error; alpha and logit gaps; the association metrics
    (share, Def. 2.2) with the within-set mass drawn faintly. The phases are shaded on every
    panel. Returns the figure."""
    from patchassoc.simulations.engines.population.trajectory import ASSOCIATION_EPS
    t = result.trajectory
    cfg = result.config
    s = result.summary()
    ph = s["phases"]
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
    D, C = cfg.D, cfg.C
    plot_association(ax, x, D=D, C=C, eps=ASSOCIATION_EPS, share_mean=t.share,
                     topc_rows=t.topc_rows, mass_mean=t.mass_mean)
    for k, ax in enumerate(axes):
        shade_phases(ax, ph, label=(k == 2))
    axes[2].legend(fontsize=7)
    if ph.get("t_alpha") is not None:
        order = {True: "alpha first, as in the paper", False: "share first (not the paper's "
                 "order)", None: "share did not move"}[ph.get("alpha_first")]
        phase_text = (f"phases: t_alpha = {ph['t_alpha']}, t_share = {ph['t_share']} ({order}); "
                      f"max |change of A| before t_alpha {ph['attention_change_before_t_alpha']:.2g}"
                      f" (total {ph['attention_change_total']:.2g})")
    else:
        phase_text = "phases: not available"
    verdict = ("" if s["associated"] is None else
               f"; Def. 2.2 in {s['topc_rows']}/{D} rows, share {s['share_min']:.3f}: "
               f"{'associated' if s['associated'] else 'NOT associated'} at eps = "
               f"{ASSOCIATION_EPS:g}")
    fig.suptitle(f"Exact population gradient descent: L={cfg.L}, C={C}, q={cfg.q:.3g}, "
                 f"p={cfg.p}, nu={cfg.nu:g}, eta_v={cfg.eta_v:g}, eta_Q={cfg.eta_Q:g}, "
                 f"kappa={cfg.kappa:.3g}, diagonal {cfg.diagonal}{verdict}\n{phase_text}",
                 fontsize=10, y=1.08)
    return fig


@styled
def save(result, folder: str | Path) -> list[Path]:
    """Write population_attention_maps.{png,pdf} and population_dynamics.{png,pdf}."""
    paths = save_figure(plot_maps(result), folder, "population_attention_maps")
    paths += save_figure(plot(result), folder, "population_dynamics")
    return paths
