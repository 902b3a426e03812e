"""Claim 2 read at the declared horizon: the pass rate, the test error and the share against t.

Three panels over the gradient step t (log axis, the budget step and the horizon H marked):

- the pass rate against t: the fraction of seeds whose time to the seed rule is <= t (they meet
  Def. 2.2 in every row, share_min >= 0.75 and test error <= 2 x Bayes + 0.001 at every record
  from t to H), with its Wilson 95 % band and the rule's level for the band's lower end; the old
  rule's reading at the budget step is drawn beside it, with its own Wilson interval;
- the test error over the seeds (median, and the range between the best and the worst seed),
  against Bayes and the seed rule's limit, so that any overfitting shows;
- share_min of every seed over the last decades of t (passing seeds solid, failing seeds
  dashed, each labelled at H) against the 0.75 level.

It reads the seeds summary only (``seeds.json``), never recomputes.

References
----------
SPEC section 6 (claim 2; claims read at a declared horizon).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.ticker import NullFormatter, NullLocator

from patchassoc.figures.style import COLORS, new_figure, save_figure, step_axis, styled

__all__ = ["plot", "save", "SHARE_DECADES_SPAN"]

#: The share panel shows t from H / SHARE_DECADES_SPAN to H (the last, slow phase).
SHARE_DECADES_SPAN = 10


def _marks(ax, budget, H) -> None:
    if budget is not None and budget != H:
        ax.axvline(budget, color="grey", lw=0.9, ls="--", zorder=0)
    if H is not None:
        ax.axvline(H, color="black", lw=0.9, ls="-", alpha=0.6, zorder=0)


def _label_marks(ax, budget, H) -> None:
    """Name the two vertical lines on a secondary axis at the top of the panel."""
    ticks, labels = [], []
    if budget is not None and budget != H:
        ticks.append(budget)
        labels.append(f"budget {budget}")
    if H is not None:
        ticks.append(H)
        labels.append(f"H = {H}")
    top = ax.secondary_xaxis("top")
    top.set_xticks(ticks)
    top.set_xticklabels(labels, fontsize=7)
    # the budget's name ends at its line and H's starts at its own: they never overlap
    for label, text in zip(top.get_xticklabels(), labels):
        label.set_horizontalalignment("right" if text.startswith("budget") else "left")
    top.xaxis.set_minor_locator(NullLocator())
    top.tick_params(length=2, pad=1)


@styled
def plot(summary: dict, axes=None):
    """Draw the three panels from a seeds summary; returns the axes."""
    if axes is None:
        fig, axes = new_figure(1, 3, figsize=(13.2, 4.3), constrained_layout=True)
    ax_rate, ax_err, ax_share = axes
    H = summary.get("horizon")
    b = summary.get("budget") or {}
    budget = b.get("step", summary.get("budget_step"))
    n = summary.get("n_seeds")

    # pass rate against t with its Wilson band
    pr = summary["pass_rate"]
    x = step_axis(pr["t"])
    ax_rate.fill_between(x, pr["wilson_low"], pr["wilson_high"], step="post",
                         color=COLORS["blue"], alpha=0.2, lw=0, label="Wilson 95 % band")
    ax_rate.step(x, pr["rate"], where="post", color=COLORS["blue"],
                 label="pass rate (time to the seed rule <= t)")
    ax_rate.axhline(summary.get("rate_lower_threshold", 0.7), color=COLORS["vermillion"],
                    lw=0.9, ls=":", label="rule: band's lower end at H >= "
                                          f"{summary.get('rate_lower_threshold', 0.7):g}")
    lo, hi = summary["wilson"]
    if H is not None and lo is not None:
        ax_rate.errorbar([H], [summary["rate"]], yerr=[[summary["rate"] - lo],
                                                        [hi - summary["rate"]]],
                         fmt="o", color=COLORS["blue"], ms=5, capsize=3,
                         label=f"verdict at H: {summary['n_passed']}/{n} pass")
    if b and budget is not None:
        blo, bhi = b["wilson"]
        ax_rate.errorbar([budget], [b["rate"]], yerr=[[b["rate"] - blo], [bhi - b["rate"]]],
                         fmt="s", mfc="white", color=COLORS["orange"], ms=5, capsize=3,
                         label=f"old rule at step {budget}: {b['n_passed']}/{n} "
                               f"(a reading, not the verdict)")
    _marks(ax_rate, budget, H)
    ax_rate.set_ylim(-0.03, 1.05)
    ax_rate.set_ylabel(f"fraction of the {n} seeds")
    ax_rate.set_title("claim 2: pass rate against t", pad=12)
    ax_rate.legend(loc="upper left", fontsize=7)

    # test error over the seeds
    te = summary["test_error_vs_t"]
    x = step_axis(te["t"])
    ax_err.fill_between(x, 100 * np.asarray(te["min"]), 100 * np.asarray(te["max"]),
                        color=COLORS["green"], alpha=0.2, lw=0, label="range over the seeds")
    ax_err.plot(x, 100 * np.asarray(te["median"]), color=COLORS["green"], label="median")
    if summary.get("error_threshold") is not None:
        ax_err.axhline(100 * summary["error_threshold"], color=COLORS["vermillion"], lw=0.9,
                       ls=":", label=f"limit 2 x Bayes + 0.1 % = "
                                     f"{100 * summary['error_threshold']:.2f} %")
    if summary.get("bayes_error") is not None:
        ax_err.axhline(100 * summary["bayes_error"], color="grey", lw=0.9, ls="-.",
                       label=f"Bayes error {100 * summary['bayes_error']:.2f} %")
    _marks(ax_err, budget, H)
    ax_err.set_yscale("log")
    ax_err.set_ylabel("test error (%)")
    ax_err.set_title("test error over the seeds (same test set at every t)", pad=12)
    ax_err.legend(loc="upper right", fontsize=7)

    # share_min of every seed over the last decades of t, labelled at the horizon
    passed = {x["seed"] for x in summary.get("times") or [] if x.get("all") is not None}
    t_from = H / SHARE_DECADES_SPAN if H else 1.0
    ends, lows, highs = [], [], []
    for c in summary.get("share_min_curves") or []:
        if not c.get("t"):
            continue
        t, y = np.asarray(c["t"], dtype=float), np.asarray(c["share_min"], dtype=float)
        keep = t >= t_from
        ok = c["seed"] in passed
        ax_share.plot(t[keep], y[keep], color=COLORS["blue"] if ok else COLORS["vermillion"],
                      lw=1.1, ls="-" if ok else "--", alpha=0.85)
        ends.append((float(y[keep][-1]), c["seed"], ok))
        lows.append(float(y[keep].min()))
        highs.append(float(y[keep].max()))
    ax_share.plot([], [], color=COLORS["blue"], label="passes at H")
    ax_share.plot([], [], color=COLORS["vermillion"], ls="--", label="fails at H")
    ax_share.axhline(0.75, color="black", lw=0.9, ls=":", label="share_min = 0.75")
    if ends:
        lo_y, hi_y = min(lows + [0.75]), max(highs + [0.75])
        span = hi_y - lo_y
        ax_share.set_ylim(lo_y - 0.3 * span, hi_y + 0.06 * span)  # room for the legend below
        # seed numbers at the right end, spread so that they never overlap: pushed up from the
        # lowest, then down from the top of the panel
        gap = 0.05 * 1.36 * span
        ys = sorted(ends)
        pos = []
        for y, _, _ in ys:
            pos.append(max(y, pos[-1] + gap) if pos else y)
        top = hi_y + 0.03 * span
        for i in range(len(pos) - 1, -1, -1):
            pos[i] = min(pos[i], top if i == len(pos) - 1 else pos[i + 1] - gap)
        for (y, seed, ok), y_text in zip(ys, pos):
            ax_share.annotate(str(seed), (H, y), xytext=(1.07 * H, y_text), fontsize=6.5,
                              va="center", color=COLORS["blue"] if ok else COLORS["vermillion"],
                              annotation_clip=False,
                              arrowprops=dict(arrowstyle="-", lw=0.4, color="grey",
                                              shrinkA=0, shrinkB=0))
    _marks(ax_share, budget, H)
    ax_share.set_ylabel("set-mate share, min over rows")
    ax_share.set_title("share_min of each seed (numbers: the seeds)", pad=12)
    ax_share.legend(loc="lower right", fontsize=7)

    for a in axes:
        a.set_xscale("log")
        if H is not None:
            a.set_xlim(t_from * 0.8 if a is ax_share else 0.4, 1.25 * H)
        a.set_xlabel("gradient step t" if a is ax_share else
                     "gradient step t (step 0 drawn at 1/2)")
        _label_marks(a, budget, H)
    if H is not None:
        # plain labels at a few round steps: the log axis' minor labels crowd a short range
        ticks = [t for t in (t_from, 1000, H) if t_from <= t <= H]
        ticks = sorted(set(ticks + ([budget] if budget and t_from <= budget <= H else [])))
        ax_share.set_xticks(ticks)
        ax_share.set_xticklabels([f"{t:.0f}" for t in ticks])
        ax_share.xaxis.set_minor_formatter(NullFormatter())
    fig = axes[0].figure
    verdict = ("preview, no verdict" if summary.get("preview") else
               ("PASS" if summary.get("passed") else "FAIL"))
    fig.suptitle(f"Claim 2 read at the horizon H = {H} steps: {summary['n_passed']}/{n} seeds "
                 f"pass, Wilson 95 % [{lo:.2f}, {hi:.2f}] -> {verdict}", fontsize=10)
    return axes


@styled
def save(summary: dict, folder: str | Path, name: str = "seeds_horizon") -> list[Path]:
    """Draw the seeds summary and save ``name``.png/.pdf into ``folder``."""
    axes = plot(summary)
    return save_figure(axes[0].figure, folder, name)
