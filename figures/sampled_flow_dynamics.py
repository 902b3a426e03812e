"""The gradient flow of the empirical risk against time, on a log axis out to the horizon.

Reads a :class:`patchassoc.simulations.engines.sampled_flow.SampledFlowResult` (never
recomputes). Four panels against t + 1 (GD steps): the set-mate share (min and mean over rows)
with claim 2's level and the rows passing Def. 2.2; the test and training errors with claim 2's
error limit; the log-odds of the rows' shares, min_i u_i and max_i u_i (the sampled analogue of
b - c: a straight line in ln t is the association limit), with the limit class and its slope; the
norms ||v|| and ||Q offdiag||, the non-invariant part of Q and the training loss (falling like
1/t once the sample is fitted). The time to each criterion of the seed rule is a dotted vertical
line.

References
----------
SPEC section 6 (the empirical-risk flow, claim 2 at its horizon).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from patchassoc.figures.flow_dynamics import CRITERIA
from patchassoc.figures.style import COLORS, new_figure, save_figure, styled

__all__ = ["plot", "save"]


def _times(ax, times: dict) -> None:
    for key, label, color in CRITERIA:
        rec = (times or {}).get(key) or {}
        if rec.get("time") is not None and not rec.get("censored"):
            ax.axvline(rec["time"] + 1.0, ls=":", lw=1.0, color=color)


@styled
def plot(result):
    """The four panels; returns the figure."""
    tr = result.trajectory
    s = result.summary()
    x = tr.t + 1.0
    fig, axes = new_figure(2, 2, figsize=(10.5, 6.8), sharex=True)
    (ax_s, ax_e), (ax_u, ax_n) = axes

    ax_s.semilogx(x, tr.share_min, color=COLORS["blue"], label="share, min over rows")
    ax_s.semilogx(x, tr.share_mean, color=COLORS["sky"],
                  ls="--", label="share, mean")
    ax_s.axhline(s["share_level"], color=COLORS["purple"], ls="--", lw=1.0,
                 label=f"claim 2's level {s['share_level']:g}")
    ax_r = ax_s.twinx()
    ax_r.step(x, tr.topc_rows, where="post", color=COLORS["green"], lw=1.0)
    ax_r.set_ylim(-0.5, tr.D + 0.5)
    ax_r.set_ylabel("rows passing Def. 2.2", color=COLORS["green"])
    ax_r.grid(False)
    ax_s.set_ylabel("set-mate share")
    ax_s.set_title("Set-mate share and Def. 2.2")
    _times(ax_s, s["times"])
    ax_s.legend(loc="lower right")

    ax_e.semilogx(x, 100 * tr.test_error, color=COLORS["blue"], label="test error")
    ax_e.semilogx(x, 100 * tr.train_error, color=COLORS["orange"], lw=1.0,
                  label="training error")
    ax_e.axhline(100 * s["error_limit"], color=COLORS["vermillion"], ls="--", lw=1.0,
                 label="2 x Bayes + 0.1 %")
    ax_e.axhline(100 * s["bayes_error"], color="0.5", ls=":", lw=1.0, label="Bayes")
    ax_e.set_ylabel("error (%)")
    ax_e.set_yscale("symlog", linthresh=0.01)      # linear below 0.01 %, where 0 is drawn
    ax_e.set_ylim(bottom=0.0)
    ax_e.set_title("Errors against claim 2's limit")
    _times(ax_e, s["times"])
    ax_e.legend(loc="upper right")

    lim = s["limit"]
    ax_u.semilogx(x, tr.u_min, color=COLORS["blue"], label="min_i u_i")
    ax_u.semilogx(x, tr.u_max, color=COLORS["orange"], lw=1.0, label="max_i u_i")
    ax_u.axhline(0.0, color="0.6", lw=0.6)
    ax_u.set_ylabel("log-odds of the share, u_i")
    ax_u.set_xlabel("t + 1 (GD steps)")
    slope = lim.get("slope_u_min")
    ax_u.set_title(f"Limit class: {lim['class']}"
                   + (f" (slope of min u per ln t = {slope:.3g})" if slope is not None else ""))
    ax_u.legend(loc="upper left")

    ax_n.semilogx(x, tr.v_norm, color=COLORS["blue"], label="||v||")
    ax_n.semilogx(x, tr.q_norm, color=COLORS["orange"], label="||Q offdiag||")
    ax_n.semilogx(x, tr.q_residual, color=COLORS["purple"], ls="--",
                  label="non-invariant part of Q")
    ax_n.set_ylabel("norm")
    ax_l = ax_n.twinx()
    ax_l.loglog(x, np.where(tr.train_loss > 0, tr.train_loss, np.nan), color="0.4", lw=1.0)
    ax_l.set_ylabel("training loss", color="0.4")
    ax_l.grid(False)
    ax_n.plot([], [], color="0.4", lw=1.0, label="training loss (right)")
    ax_n.set_xlabel("t + 1 (GD steps)")
    ax_n.set_title("Norms, and the loss (interpolation)")
    ax_n.legend(loc="upper left")
    cfg = result.config
    fig.suptitle(f"Gradient flow of the empirical risk to t = {tr.t_reached:.3g} steps "
                 f"(L={cfg.L}, C={cfg.C}, d={cfg.d}, N={cfg.n_train}, diagonal fixed, seed "
                 f"{result.seed})", fontsize=11)
    fig.tight_layout()
    return fig


@styled
def save(result, folder: str | Path) -> list[Path]:
    """Write sampled_flow_dynamics.png / .pdf into ``folder``."""
    return save_figure(plot(result), folder, "sampled_flow_dynamics")
