"""Claim 2 read at the empirical-risk flow's horizon: the pass rate, the share, the test error and
the log-odds of the worst row's share, against t to T = 1e15.

Four panels over t + 1 (GD steps, log axis; H = 3,000, where sampled GD's reading within a budget
stops, marked):

- the pass rate against t: the fraction of seeds whose time to the seed rule is <= t (they meet
  the rule at every record from t to T), with its Wilson 95 % band and the rule's 0.7;
- share_min of every seed (passing seeds solid, failing seeds dashed) against the 0.75 level,
  each seed in a style of its own (:func:`~patchassoc.figures.style.seed_style`);
- the test error over the seeds (median and range) against the rule's limit and Bayes;
- min_i u_i of every seed (the log-odds of the worst row's share, the sampled analogue of
  b - c): a straight line in ln t with slope >= 0.05 is the association class.

It reads the flows' summary (``flow.json``) only, never recomputes.

References
----------
SPEC section 6 (the empirical-risk flow and claim 2 at its horizon).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from patchassoc.figures.style import COLORS, new_figure, save_figure, seed_style, styled
from patchassoc.simulations.runtime.results import time_axis

__all__ = ["plot", "save"]


def _h(ax, H=3000) -> None:
    ax.axvline(H + 1, color="black", lw=0.8, alpha=0.5, zorder=0)


@styled
def plot(summary: dict):
    """The four panels from a flows summary; returns the figure."""
    fig, axes = new_figure(2, 2, figsize=(10.5, 6.8), sharex=True)
    (ax_p, ax_s), (ax_e, ax_u) = axes
    pr = summary["pass_rate"]
    t = np.asarray(pr["t"], dtype=float) + 1.0
    ax_p.step(t, pr["rate"], where="post", color=COLORS["blue"], label="pass rate")
    ax_p.fill_between(t, pr["wilson_low"], pr["wilson_high"], step="post",
                      color=COLORS["blue"], alpha=0.2, lw=0, label="Wilson 95 %")
    ax_p.axhline(summary["rate_lower_threshold"], color=COLORS["vermillion"], ls="--", lw=1.0,
                 label=f"rule: lower end >= {summary['rate_lower_threshold']:g}")
    ax_p.set_xscale("log")
    ax_p.set_ylim(-0.02, 1.02)
    ax_p.set_ylabel("fraction of seeds meeting the rule to T")
    ax_p.set_title(f"{summary['n_passed']}/{summary['n_seeds']} seeds pass at "
                   f"T = {summary['horizon']:.0e}")
    ax_p.legend(loc="lower right")      # clear of the H line and of the rise
    _h(ax_p)

    passed = {s["seed"]: s["passed"] for s in summary["seeds"]}
    for c in summary.get("curves") or []:
        x = np.asarray(time_axis(c), dtype=float) + 1.0    # "steps" before schema 1
        ls = "-" if passed.get(c["seed"]) else "--"
        ax_s.semilogx(x, c["share_min"], ls=ls, lw=1.0, label=f"seed {c['seed']}",
                      **seed_style(c["seed"]))
        ax_u.semilogx(x, c["u_min"], ls=ls, lw=1.0, **seed_style(c["seed"]))
    ax_s.axhline(0.75, color=COLORS["purple"], ls="--", lw=1.0)
    ax_s.set_ylabel("share_min")
    ax_s.set_title("Worst row's set-mate share (dashed: failing seeds)")
    ax_s.legend(loc="lower right", ncol=2, fontsize=7)
    _h(ax_s)

    te = summary["test_error_vs_t"]
    xe = np.asarray(te["t"], dtype=float) + 1.0
    ax_e.semilogx(xe, 100 * np.asarray(te["median"]), color=COLORS["blue"], label="median")
    ax_e.fill_between(xe, 100 * np.asarray(te["min"]), 100 * np.asarray(te["max"]),
                      color=COLORS["blue"], alpha=0.2, lw=0, label="range over seeds")
    ax_e.axhline(100 * summary["error_threshold"], color=COLORS["vermillion"], ls="--", lw=1.0,
                 label="2 x Bayes + 0.1 %")
    ax_e.axhline(100 * summary["bayes_error"], color="0.5", ls=":", lw=1.0, label="Bayes")
    ax_e.set_yscale("log")
    ax_e.set_ylabel("test error (%)")
    ax_e.set_xlabel("t + 1 (GD steps)")
    ax_e.set_title("Test error over the seeds")
    ax_e.legend(loc="upper right")
    _h(ax_e)

    ax_u.axhline(0.0, color="0.6", lw=0.6)
    ax_u.set_ylabel("min_i u_i (log-odds of the share)")
    ax_u.set_xlabel("t + 1 (GD steps)")
    classes = ", ".join(f"{v} {k}" for k, v in sorted((summary.get("classes") or {}).items()))
    ax_u.set_title(f"Limit classes: {classes}")
    _h(ax_u)
    fig.suptitle("Claim 2 at the empirical-risk flow's horizon (ref, diagonal fixed; the line: "
                 "H = 3,000 GD steps)", fontsize=11)
    fig.tight_layout()
    return fig


@styled
def save(summary: dict, folder: str | Path) -> list[Path]:
    """Write seeds_flow.png / .pdf into ``folder``."""
    return save_figure(plot(summary), folder, "seeds_flow")
