"""Risk, error and set-mate share of the explicit solutions against lambda (Q = lambda Q_hat).

One line per construction (block-uniform, identity, uniform, wrong partition, shifted blocks);
solid lines with circles are exact multiset enumerations, dashed lines with squares brute-force
enumerations, error bars Monte Carlo 95 % intervals. The error panel draws the exact Bayes error
and the generalization threshold (2 x Bayes + 0.1 %); the GD solutions appear as stars at their
effective lambda, the gap b - c between within-set and across-set logits of their (projected)
logits, which is lambda for block-uniform attention. The third panel is the paper's association
(SPEC section 3): the minimum set-mate share, filled markers where Def. 2.2 holds in every row.
Reads a saved
:class:`patchassoc.simulations.studies.claim3_solutions.table.SolutionsResult`; never recomputes.

References
----------
SPEC sections 3, 5 and 6 (claim 3).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from patchassoc.theory import solutions as th
from patchassoc.theory.invariant import project_invariant

from patchassoc.figures.style import COLORS, new_figure, save_figure, styled

__all__ = ["plot", "save", "effective_lambda"]

_COLOR = {"block": COLORS["blue"], "identity": COLORS["vermillion"], "uniform": COLORS["green"],
          "wrong": COLORS["purple"], "shifted": COLORS["orange"],
          "gd-population": COLORS["black"], "gd-sampled": COLORS["sky"]}
_FLOOR = 1e-12  # log axes: zero errors are drawn at this floor


def effective_lambda(A: np.ndarray, structure) -> float:
    """b - c of the invariant projection of log A (logits up to a per-row shift)."""
    _, b, c = project_invariant(np.log(np.maximum(A, 1e-300)), structure)
    return float(b - c)


@styled
def plot(result, axes=None):
    """Three panels (risk, error, within-set mass against lambda); returns the figure."""
    if axes is None:
        fig, axes = new_figure(1, 3, figsize=(12.5, 4.4))
    else:
        fig = axes[0].figure
    lam = np.asarray(result.lambdas, dtype=float)
    cfg = result.config
    for name in th.CONSTRUCTIONS:
        cur = result.curves[name]
        meth = list(result.curve_methods[name])
        col = _COLOR[name]
        exact = np.array([m == "exact-multiset" for m in meth])
        brute = np.array([m == "brute-force" for m in meth])
        mc = np.array([m == "monte-carlo" for m in meth])
        ls = "-" if name in th.INVARIANT else "--"
        # identity attention has the error of uniform attention (the same closed form): drawn
        # thick and underneath, so that both show where they coincide
        lw, z = (3.0, 1.5) if name == "identity" else (1.4, 2)
        for ax, key in ((axes[0], "risk"), (axes[1], "error")):
            y = np.maximum(cur[key], _FLOOR)
            ax.plot(lam, y, ls=ls, color=col, lw=lw, zorder=z, label=th.LABELS[name])
            ax.plot(lam[exact], y[exact], "o", color=col, ms=3.5)
            ax.plot(lam[brute], y[brute], "s", color=col, ms=3.5, mfc="none")
            if mc.any():
                lo = np.maximum(cur[f"{key}_low"][mc], _FLOOR)
                hi = np.maximum(cur[f"{key}_high"][mc], _FLOOR)
                ax.errorbar(lam[mc], y[mc], yerr=[y[mc] - lo, hi - y[mc]], fmt="none",
                            ecolor=col, capsize=2)
        axes[2].plot(lam, cur["share_min"], ls=ls, color=col, lw=lw, zorder=z,
                     label=th.LABELS[name])
        top = np.asarray(cur["topc_rows"]) == cfg.D
        axes[2].plot(lam[top], cur["share_min"][top], "o", color=col, ms=4)
        axes[2].plot(lam[~top], cur["share_min"][~top], "o", color=col, ms=4, mfc="none")
    bayes = result.bayes_error
    thr = th.generalization_threshold(bayes)
    axes[1].axhline(max(bayes, _FLOOR), color="grey", lw=1.0, ls=":",
                    label=f"Bayes error {bayes:.3g} (exact)")
    axes[1].axhline(thr, color="grey", lw=0.8, ls="-.", label=f"2 x Bayes + 0.1 % = {thr:.3g}")
    axes[2].axhline(1 - result.eps, color="grey", lw=0.8, ls="-.",
                    label=f"association level 1 - eps = {1 - result.eps:g}")
    axes[2].axhline((cfg.C - 1) / (cfg.D - 1), color="grey", lw=0.8, ls=":",
                    label="uniform share (C-1)/(D-1)")
    for r in result.rows:
        if not r.name.startswith("gd-") or r.name not in result.attention:
            continue
        x = effective_lambda(result.attention[r.name], result.structure)
        col = _COLOR[r.name]
        axes[0].plot([x], [max(r.risk, _FLOOR)], "*", color=col, ms=10, label=th.LABELS[r.name])
        axes[1].plot([x], [max(r.error, _FLOOR)], "*", color=col, ms=10, label=th.LABELS[r.name])
        axes[2].plot([x], [r.share_min], "*", color=col, ms=10, label=th.LABELS[r.name])
    for ax, title in zip(axes, ("population risk", "population zero-one error",
                                "set-mate share (min over patches);\n"
                                "filled: Def. 2.2 in every row")):
        ax.set_xlabel(r"scale $\lambda$ (Q = $\lambda \hat Q$)")
        ax.set_title(title)
    axes[0].set_ylabel("population logistic risk")
    axes[1].set_ylabel("population zero-one error")
    axes[2].set_ylabel("set-mate share, worst row")
    axes[0].set_yscale("log")
    axes[1].set_yscale("log")
    axes[2].set_ylim(-0.02, 1.05)
    handles: dict = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=4, fontsize=7.5)
    fig.suptitle(f"Explicit solutions at {result.label}: L={cfg.L}, C={cfg.C}, q={cfg.q:.3g}, "
                 f"p={cfg.p}, nu={cfg.nu:g}; alpha = {result.alpha0:.3f} "
                 f"({result.alpha0_source}); o exact, \u25a1 brute force", fontsize=10)
    fig.tight_layout(rect=(0, 0.17, 1, 1))
    return fig


@styled
def save(result, folder: str | Path, name: str | None = None) -> list[Path]:
    """Write ``solutions_lambda_<label>.png/.pdf`` into ``folder``."""
    name = name or f"solutions_lambda_{result.label}"
    return save_figure(plot(result), folder, name)
