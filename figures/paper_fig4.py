"""The analogue of the paper's Figure 4: a sampled-data run of the paper's model (D = 10, C = 2,
fixed diagonal, noise orthogonal to w*), drawn as the paper draws it.

Panels: the learned attention A = softmax(Q) at the last step, next to the set mask B
(B_ij = 1 when i and j are in the same set), both with the sets contiguous; the train and test
zero-one errors against the step (log axis); cos(v, w*) = alpha / sqrt(alpha^2 + ||v_perp||^2)
against the step, with the 0.99 level the paper's figure passes early. Vertical lines mark the
first recorded step where cos(v, w*) >= 0.99, the first where Def. 2.2 holds in every row (the
paper's association) and the first where the attention is associated at eps = 0.25 (Def. 2.2
and share_min >= 0.75, SPEC's level for sampled runs).

Reads a saved :class:`patchassoc.simulations.engines.sampled_descent.TrainResult`; never recomputes.

References
----------
SPEC sections 2-3; PAPER.md (Fig. 4).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from patchassoc.simulations.analysis.formatting import percent
from patchassoc.figures.style import (ATTENTION_CMAP, COLORS, new_figure, save_figure, step_axis,
                                      styled)
from patchassoc.simulations.studies.paper_settings import COS_LEVEL, cosine, first_step

__all__ = ["plot", "save"]

def _associated_mask(t, D: int, eps: float) -> np.ndarray:
    if t.topc_rows is None:
        return np.zeros(t.steps.shape, dtype=bool)
    return (np.asarray(t.topc_rows) == D) & (np.asarray(t.share_min) >= 1.0 - eps)


@styled
def plot(result):
    """Four panels from a :class:`~patchassoc.simulations.engines.sampled_descent.TrainResult`; returns the figure."""
    from patchassoc.simulations.engines.sampled_descent import ASSOCIATION_EPS
    t, S, cfg = result.trajectory, result.structure, result.config
    s = result.summary()
    fig, all_axes = new_figure(1, 6, figsize=(16, 3.6),
                               gridspec_kw={"width_ratios": [1, 1, 0.05, 0.3, 1.5, 1.5],
                                            "wspace": 0.3})
    cax = all_axes[2]
    all_axes[3].axis("off")                       # spacer between the colour bar and the curves
    axes = np.array([all_axes[0], all_axes[1], all_axes[4], all_axes[5]])
    order = S.order()
    A = np.asarray(t.A[-1])[np.ix_(order, order)]
    B = S.same_set()[np.ix_(order, order)]
    for ax, mat, title in ((axes[0], A, f"learned A (step {int(t.steps[-1])})"),
                           (axes[1], B, "set mask (same set)")):
        im = ax.imshow(mat, cmap=ATTENTION_CMAP, vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.set_title(title)
        ax.set_xticks(range(S.D))
        ax.set_yticks(range(S.D))
        ax.set_xticklabels(order, fontsize=6)
        ax.set_yticklabels(order, fontsize=6)
        ax.grid(False)
        for e in range(S.C, S.D, S.C):
            ax.axhline(e - 0.5, color="white", lw=0.5, alpha=0.6)
            ax.axvline(e - 0.5, color="white", lw=0.5, alpha=0.6)
    fig.colorbar(im, cax=cax, label="A_ij")
    x = step_axis(t.steps)
    cos = cosine(t)
    t_cos = first_step(t.steps, cos >= COS_LEVEL)
    t_assoc = first_step(t.steps, _associated_mask(t, S.D, ASSOCIATION_EPS))
    t_topc = first_step(t.steps, np.asarray(t.topc_rows) == S.D) if t.topc_rows is not None \
        else None
    ax = axes[2]
    ax.plot(x, t.test_error, color=COLORS["vermillion"], label="test error")
    ax.plot(x, t.train_error, color=COLORS["blue"], lw=1.0, alpha=0.7, label="train error")
    ax.set_xscale("log")
    ax.set_ylim(0, max(0.12, float(np.nanmax(t.test_error[1:])) * 1.1 if t.steps.size > 1
                       else 0.12))
    top = ax.get_ylim()[1]
    off = [(name, float(e[0])) for name, e in (("test", t.test_error), ("train", t.train_error))
           if t.steps.size and float(e[0]) > top]
    if off:   # the start is above the zoomed axis: say so rather than let the line run off
        text = ", ".join(f"{name} {percent(v)}" for name, v in off)
        ax.text(0.03, 0.97, f"step {int(t.steps[0])} off scale: {text}", transform=ax.transAxes,
                ha="left", va="top", fontsize=7,
                bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=1.5))
    ax.set_xlabel("gradient step")
    ax.set_ylabel("zero-one error")
    ax.set_title(f"zero-one error (test: final {percent(s['test_error'])})")
    ax = axes[3]
    ax.plot(x, cos, color=COLORS["green"], label=r"cos$(v, w^*)$")
    ax.axhline(COS_LEVEL, color="grey", ls=":", lw=0.8, label=f"level {COS_LEVEL}")
    ax.set_xscale("log")
    ax.set_ylim(min(0.0, float(np.min(cos))), 1.02)
    ax.set_xlabel("gradient step")
    ax.set_ylabel(r"cos$(v, w^*)$")
    ax.set_title(r"alignment of the value vector, cos$(v, w^*)$")
    for ax in axes[2:]:
        if t_cos is not None:
            ax.axvline(max(t_cos, 0.5), color=COLORS["green"], ls="--", lw=0.8,
                       label=f"cos >= {COS_LEVEL} (step {t_cos})")
        if t_topc is not None:
            ax.axvline(max(t_topc, 0.5), color=COLORS["blue"], ls=":", lw=1.0,
                       label=f"Def. 2.2 in every row (step {t_topc})")
        if t_assoc is not None:
            ax.axvline(max(t_assoc, 0.5), color=COLORS["purple"], ls="--", lw=0.8,
                       label=f"associated at eps = {ASSOCIATION_EPS:g} (step {t_assoc})")
    # one legend per panel, below it: the error panel's lists the curves and the vertical lines
    # (drawn in both panels), the cosine panel's its own curve and level
    n_vlines = sum(v is not None for v in (t_cos, t_topc, t_assoc))
    handles, labels = axes[3].get_legend_handles_labels()
    k = len(handles) - n_vlines
    axes[3].legend(handles[:k], labels[:k], fontsize=7, loc="upper center",
                   bbox_to_anchor=(0.5, -0.2))
    axes[2].legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2),
                   title="vertical lines: both panels", title_fontsize=7)
    verdict = ("" if s["associated"] is None else
               f"; final: Def. 2.2 in {s['topc_rows']}/{S.D} rows, share min "
               f"{s['share_min']:.2f}, {'associated' if s['associated'] else 'NOT associated'} "
               f"at eps = {ASSOCIATION_EPS:g}")
    second = "\n" + verdict[2:] if verdict else ""   # the verdict on its own line
    fig.suptitle(f"Analogue of the paper's Fig. 4: d={cfg.d}, L={cfg.L}, C={cfg.C}, q={cfg.q:g}, "
                 f"N={cfg.n_train}, noise {cfg.noise}, diagonal {cfg.diagonal}, eta_v="
                 f"{cfg.eta_v:g}, eta_Q={cfg.eta_Q:g}, seed {result.seed}{second}",
                 fontsize=9, y=1.06)
    return fig


@styled
def save(result, folder: str | Path, name: str = "paper_fig4") -> list[Path]:
    """Write ``name``.png/.pdf into ``folder``."""
    return save_figure(plot(result), folder, name)
