"""Exact population dynamics: attention maps rebuilt from (a, b, c), the dynamics curves, and
the population error against the Bayes error.

Reads a saved :class:`patchassoc.simulations.engines.population.trajectory.PopulationResult` (never
recomputes): the maps are A = Pd I + Qs (B - I) + R (J - B) rebuilt from the recorded (a, b, c) at
log-spaced steps, drawn in the natural patch order and with the sets contiguous.

The curves carry the paper's association metrics (SPEC section 3: Def. 2.2 in every row or none,
the set-mate share) and shade the phases of the proof: up to t_alpha (alpha reaches half its
final value) and from t_alpha to t_share (the share is half way to its final value). The
paper's order is alpha first, with the attention nearly still, then the share. alpha, the
logit gaps and the association are drawn at every step (``per_step``); the risk and the error,
recorded at log-spaced steps only, are drawn as points there.

References
----------
SPEC sections 3-5; claim 1 of section 6.
"""
from __future__ import annotations

from pathlib import Path

from patchassoc.figures import attention_maps
from patchassoc.figures.style import (COLORS, new_figure, plot_association, save_figure,
                                      step_axis, styled)

__all__ = ["plot", "plot_maps", "save", "shade_phases", "per_step_curves"]


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
    log step axis (step 0 at 1/2), with dashed lines at t_alpha and t_share. The second band is
    drawn stronger and hatched: it is often a fraction of a decade wide."""
    ta, ts = ph.get("t_alpha"), ph.get("t_share")
    if ta is not None:
        ax.axvspan(0.5, max(ta, 0.5), color=COLORS["sky"], alpha=0.12, lw=0,
                   label="phase I: until t_alpha" if label else None)
        ax.axvline(max(ta, 0.5), color=COLORS["blue"], ls="--", lw=1.0,
                   label=f"t_alpha = {ta} (alpha half way)" if label else None)
    if ts is not None:
        if ta is not None and ts > ta:
            ax.axvspan(max(ta, 0.5), ts, facecolor=COLORS["orange"], alpha=0.35, lw=0,
                       hatch="///", edgecolor=COLORS["vermillion"],
                       label="t_alpha to t_share" if label else None)
        ax.axvline(max(ts, 0.5), color=COLORS["vermillion"], ls="--", lw=1.0,
                   label=f"t_share = {ts} (share half way)" if label else None)


def per_step_curves(result) -> dict | None:
    """The curves that exist at every step (``trajectory.per_step``, one row per step 0 ..
    steps_done): ``t`` (the step: the time axis's one name), alpha, the share, the within-set
    mass Pd + (C-1) Qs, the logit gaps
    a - c = ln(Pd / R) and b - c = ln(Qs / R) (softmax ratios, so exactly the recorded gaps at
    the recorded steps), and the rows passing Def. 2.2 (D or 0, by
    :func:`~patchassoc.theory.association.invariant_association` on those logits). ``None`` when
    the result has no per-step rows (then the figure draws the records)."""
    import numpy as np

    from patchassoc.theory.association import invariant_association
    t, cfg = result.trajectory, result.config
    ps = t.per_step
    if ps is None or len(ps) < 2:
        return None
    ps = np.asarray(ps, dtype=np.float64)
    alpha, share, Pd, Qs, R = ps.T
    L, C = cfg.L, cfg.C
    with np.errstate(divide="ignore", invalid="ignore"):
        gap_ac = np.log(Pd / R) if L > 1 else np.full(len(ps), np.nan)
        gap_bc = np.log(Qs / R) if L > 1 and C > 1 else np.full(len(ps), np.nan)
    lnP, lnQ, lnR = (np.log(np.where(v > 0, v, np.nan)) for v in (Pd, Qs, R))
    rows = np.array([invariant_association(a, b if np.isfinite(b) else a,
                                           c if np.isfinite(c) else a - 1.0, L, C).topc_rows
                     if np.isfinite(a) else 0 for a, b, c in zip(lnP, lnQ, lnR)],
                    dtype=np.int64)                  # a count, an integer (issue 40)
    return dict(t=np.arange(len(ps)), alpha=alpha, share=share, mass=Pd + (C - 1) * Qs,
                gap_ac=gap_ac, gap_bc=gap_bc, topc_rows=rows)


@styled
def plot(result, axes=None):
    """Four panels: loss; error vs Bayes error; alpha and logit gaps; the association metrics
    (share, Def. 2.2) with the within-set mass drawn faintly. alpha, the gaps and the
    association are drawn at every step (:func:`per_step_curves`); the risk and the error exist
    at the recorded steps only and are drawn there, as points. The phases are shaded on every
    panel. Returns the figure."""
    from patchassoc.simulations.engines.population.trajectory import ASSOCIATION_EPS
    t = result.trajectory
    cfg = result.config
    s = result.summary()
    ph = s["phases"]
    if axes is None:
        fig, axes = new_figure(1, 4, figsize=(15, 4.6), layout="constrained")
    else:
        fig = axes[0].figure
    x = step_axis(t.steps)
    every = per_step_curves(result)
    xs = step_axis(every["t"]) if every is not None else x
    n_rec = len(t.steps)
    ax = axes[0]
    ax.plot(x, t.loss, color=COLORS["black"], lw=0.8, ls=":", marker="o", ms=3.5,
            label=f"population risk ({n_rec} recorded steps)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("gradient step")
    ax.set_ylabel("population logistic risk")
    ax.set_title("exact population logistic risk")
    ax = axes[1]
    ax.plot(x, t.error, color=COLORS["vermillion"], lw=0.8, ls=":", marker="o", ms=3.5,
            label=f"population error ({n_rec} recorded steps)")
    ax.axhline(result.bayes_error, color=COLORS["black"], ls="--", lw=1.0,
               label=f"Bayes error {result.bayes_error:.3g}")
    ax.axhline(1.3 * result.bayes_error, color="grey", ls=":", lw=0.8, label="1.3 x Bayes")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("gradient step")
    ax.set_ylabel("population zero-one error")
    ax.set_title(f"zero-one error (final {t.error[-1]:.3g} = "
                 f"{t.error[-1] / result.bayes_error:.3f} x Bayes)" if result.bayes_error > 0
                 else "zero-one error")
    ax = axes[2]
    src = every if every is not None else dict(alpha=t.alpha, gap_ac=t.gap_ac, gap_bc=t.gap_bc)
    ax.plot(xs, src["alpha"], color=COLORS["blue"], label=r"$\alpha = \langle v, w^*\rangle$")
    ax.plot(xs, src["gap_ac"], color=COLORS["green"], label="a - c (diagonal - across)")
    ax.plot(xs, src["gap_bc"], color=COLORS["purple"], label="b - c (within - across)")
    ax.set_xscale("log")
    ax.set_xlabel("gradient step")
    ax.set_ylabel(r"$\alpha$; logit gap")
    ax.set_title("value and logit gaps" + (" (every step)" if every is not None else ""))
    ax = axes[3]
    D, C = cfg.D, cfg.C
    if every is not None:
        plot_association(ax, xs, D=D, C=C, eps=ASSOCIATION_EPS, share_mean=every["share"],
                         topc_rows=every["topc_rows"], mass_mean=every["mass"], legend=False)
    else:
        plot_association(ax, x, D=D, C=C, eps=ASSOCIATION_EPS, share_mean=t.share,
                         topc_rows=t.topc_rows, mass_mean=t.mass_mean, legend=False)
    ax.set_ylabel("share; fraction of rows")
    for k, ax in enumerate(axes):
        shade_phases(ax, ph, label=(k == 2))
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=7, ncol=1)
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
                 fontsize=10)
    return fig


@styled
def save(result, folder: str | Path) -> list[Path]:
    """Write population_attention_maps.{png,pdf} and population_dynamics.{png,pdf}."""
    paths = save_figure(plot_maps(result), folder, "population_attention_maps")
    paths += save_figure(plot(result), folder, "population_dynamics")
    return paths
