"""The sample-size law of the empirical-risk flow: how its time to claim 2's rule, and where it
goes, depend on the sample size N.

Four panels against N (log axis): the time to the seed rule of each seed (censored seeds drawn at
the top, as triangles), with the fit of ln(time) on ln N and the population flow's time (the
N -> infinity line); share_min at T; the test error at T against the rule's limit; the
non-invariant part of Q at T.

It reads the law's summary (``sample_size.json``) only.

References
----------
SPEC section 6 (the sample-size law).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from patchassoc.figures.style import COLORS, new_figure, save_figure, styled

__all__ = ["plot", "save"]


def _scatter(ax, rows, key, scale=1.0):
    for r in rows:
        ys = [y for y in r[key] if y is not None]
        ax.plot([r["N"]] * len(ys), scale * np.asarray(ys, dtype=float), "o",
                color=COLORS["blue"], ms=4, alpha=0.8)


@styled
def plot(summary: dict):
    rows = summary["rows"]
    fig, axes = new_figure(2, 2, figsize=(10.0, 6.6), sharex=True)
    (ax_t, ax_s), (ax_e, ax_q) = axes
    T = summary.get("t_max", 1e15)
    for r in rows:
        done = [t for t in r["time_to_rule"] if t is not None]
        ax_t.plot([r["N"]] * len(done), done, "o", color=COLORS["blue"], ms=4)
        if r["censored"]:
            ax_t.plot([r["N"]] * r["censored"], [T] * r["censored"], "^",
                      color=COLORS["vermillion"], ms=6)
    ax_t.plot([], [], "^", color=COLORS["vermillion"], label="censored (> T)")
    fit = summary.get("fit_time_vs_N")
    Ns = np.array([r["N"] for r in rows], dtype=float)
    if fit:
        ax_t.plot(Ns, np.exp(fit["intercept"]) * Ns ** fit["slope"], color=COLORS["orange"],
                  lw=1.0, label=f"fit: time ~ N^{fit['slope']:.2f}")
    ref = (summary.get("reference") or {}).get("time_to_rule")
    if ref is not None:
        ax_t.axhline(ref, color="0.3", ls="--", lw=1.0, label=f"population flow: {ref:.3g}")
    ax_t.set_xscale("log")
    ax_t.set_yscale("log")
    ax_t.set_ylabel("time to claim 2's rule (GD steps)")
    ax_t.set_title("Time to the seed rule against N")
    ax_t.legend(loc="upper right")

    _scatter(ax_s, rows, "share_min")
    ax_s.axhline(0.75, color=COLORS["purple"], ls="--", lw=1.0, label="claim 2's level")
    ax_s.set_ylabel(f"share_min at T = {T:.0e}")
    ax_s.set_title("Worst row's share at the horizon")
    ax_s.legend(loc="lower right")

    _scatter(ax_e, rows, "test_error", 100.0)
    ax_e.set_ylabel("test error at T (%)")
    ax_e.set_xlabel("training sample size N")
    ax_e.set_title("Test error at the horizon")

    _scatter(ax_q, rows, "q_residual")
    ax_q.set_ylabel("||Q' - Pi Q'|| at T")
    ax_q.set_xlabel("training sample size N")
    ax_q.set_title("Non-invariant part of Q at the horizon")
    fig.suptitle("The empirical-risk flow against the sample size (ref, diagonal fixed)",
                 fontsize=11)
    fig.tight_layout()
    return fig


@styled
def save(summary: dict, folder: str | Path) -> list[Path]:
    """Write sample_size.png / .pdf into ``folder``."""
    return save_figure(plot(summary), folder, "sample_size")
