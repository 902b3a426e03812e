"""The robustness table at a glance: the time to 1.3 x Bayes against the variant, and the verdicts.

Two panels, one row per variant (the reference on top, the control marked):

- left, claim 1's flows: each of the variant's points (41 in the full study) at its time to
  error <= 1.3 x Bayes + bound (the time after which it holds for good, GD steps, log axis),
  a filled circle when the point passes claim 1's horizon test and a cross when it fails; a
  point censored at the horizon (the error is above 1.3 x Bayes there) is drawn at the right
  edge; a bar marks the variant's median, the dashed line the reference's;
- right, the table: a column per claim (1; 2 at the empirical-risk flow's horizon and 2 by GD at
  H, side by side; 7), each cell coloured by its verdict (pass, fail,
  a claim-2 reading, the control failing as it must, no verdict) and holding the verdict and its
  key number.

It reads the study's summary (``robustness.json``) only, never recomputes.

References
----------
SPEC section 6 (robustness).
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
from matplotlib.lines import Line2D

from patchassoc.figures.style import COLORS, new_figure, save_figure, styled

__all__ = ["plot", "save", "CELL_COLORS"]

#: Cell colours by verdict (Okabe-Ito, light): pass, fail, reading, control, other.
CELL_COLORS = {"pass": COLORS["green"], "fail": COLORS["vermillion"], "reading": COLORS["sky"],
               "control": "#bbbbbb", "other": "#eeeeee"}


def _kind(verdict: str) -> str:
    v = verdict.lower()
    if v.startswith("control:"):
        return "control"
    if v.startswith("control wrong") or v.startswith("fail"):
        return "fail"
    if v.startswith("pass"):
        return "pass"
    if "/" in v:
        return "reading"
    return "other"


def _times(row: dict, horizon: float):
    """(passing times, failing times, censored marks, median) of a variant's points."""
    pts = (row.get("claim1") or {}).get("points") or []
    ok = [p["time_to_error"] for p in pts if p["passed"] and p.get("time_to_error")]
    bad = [p["time_to_error"] for p in pts if not p["passed"] and p.get("time_to_error")]
    cens = [horizon for p in pts if p.get("time_to_error") is None]
    med = (row.get("claim1") or {}).get("time_to_error_median")
    return ok, bad, cens, med


@styled
def plot(summary: dict, axes=None):
    """Draw the two panels from a robustness summary; returns the axes."""
    rows = summary["variants"]
    tab = summary["table"]["rows"]
    n = len(rows)
    if axes is None:
        fig, axes = new_figure(1, 2, figsize=(15.5, 0.42 * n + 1.9), constrained_layout=True,
                               gridspec_kw={"width_ratios": [1.0, 1.7]})
    ax_t, ax_v = axes
    horizon = float(summary.get("t_max") or 1e15)
    y = np.arange(n)[::-1]
    ref_med = None
    for yi, row in zip(y, rows):
        ok, bad, cens, med = _times(row, horizon)
        jitter = np.linspace(-0.18, 0.18, max(1, len(ok) + len(bad)))
        ax_t.scatter(ok, yi + jitter[:len(ok)], s=14, color=COLORS["green"], alpha=0.8, lw=0)
        ax_t.scatter(bad, yi + jitter[len(ok):len(ok) + len(bad)], s=22, marker="x",
                     color=COLORS["vermillion"])
        if cens:
            ax_t.scatter([horizon], [yi], s=36, marker=">", color=COLORS["vermillion"])
            ax_t.annotate(f"{len(cens)}", (horizon, yi), xytext=(6, -3),
                          textcoords="offset points", fontsize=7, color=COLORS["vermillion"])
        if med is not None:
            ax_t.plot([med, med], [yi - 0.3, yi + 0.3], color="black", lw=2.0)
        if row["tag"] == "ref":
            ref_med = med
    if ref_med is not None:
        ax_t.axvline(ref_med, color="black", lw=0.8, ls="--", alpha=0.6)
    handles = [Line2D([], [], ls="", marker="o", ms=4, color=COLORS["green"],
                      label="point passes claim 1"),
               Line2D([], [], ls="", marker="x", ms=5, color=COLORS["vermillion"],
                      label="point fails"),
               Line2D([], [], ls="", marker=">", ms=6, color=COLORS["vermillion"],
                      label="censored (> horizon): count"),
               Line2D([], [], color="black", lw=2.0, label="median"),
               Line2D([], [], color="black", lw=0.8, ls="--", label="reference's median")]
    if any((row.get("claim1") or {}).get("points") for row in rows):
        ax_t.set_xscale("log")
    else:   # a run without claim 1 (robustness --claims 2): nothing to place on the time axis
        ax_t.text(0.5, 0.5, "claim 1 not run here", transform=ax_t.transAxes, ha="center",
                  va="center", color="0.4")
        ax_t.set_xticks([])
    ax_t.set_yticks(y)
    ax_t.set_yticklabels([r["name"] for r in rows])
    for label, row in zip(ax_t.get_yticklabels(), rows):
        if row["control"]:
            label.set_style("italic")
        if row["tag"] == "ref":
            label.set_weight("bold")
    ax_t.set_ylim(-0.7, n - 0.3)
    ax_t.set_xlabel("time to error <= 1.3 x Bayes + bound along the flow (GD steps)")
    npts = summary.get("n_points")
    points = "point" if npts == 1 else "points"
    ax_t.set_title(f"claim 1: the flow at each of {npts} {points}, read at t = {horizon:.0e}")
    ax_t.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.09 - 0.5 / n),
                fontsize=7, ncol=3)

    cols = summary["table"]["columns"]
    ax_v.set_xlim(0, len(cols))
    ax_v.set_ylim(-0.5, n - 0.5)
    for yi, trow in zip(y, tab):
        for j, cell in enumerate(trow["cells"]):
            kind = _kind(cell["verdict"])
            ax_v.add_patch(_rect(j, yi, CELL_COLORS[kind], 0.45 if kind != "other" else 1.0))
            key = "\n".join(textwrap.wrap(cell["key"], 46)[:2])
            ax_v.text(j + 0.5, yi + 0.18, cell["verdict"], ha="center", va="center", fontsize=7.5,
                      weight="bold")
            ax_v.text(j + 0.5, yi - 0.17, key, ha="center", va="center", fontsize=5.8,
                      linespacing=1.0)
    ax_v.set_xticks(np.arange(len(cols)) + 0.5)
    # four columns since issue 49: the headings wrapped so that they do not run into each other
    ax_v.set_xticklabels(["\n".join(textwrap.wrap(c, 30)) for c in cols], fontsize=7.5)
    ax_v.xaxis.tick_top()
    ax_v.tick_params(axis="x", length=0)     # column headings, not an axis
    ax_v.set_yticks([])
    ax_v.grid(False)
    for side in ("left", "bottom"):
        ax_v.spines[side].set_visible(False)
    title = "verdicts and key numbers (claim 3: unchanged by construction)"
    if summary.get("preview"):
        title = "PREVIEW, no verdict: " + title
    ax_v.set_title(title, pad=30)
    return axes


def _rect(x, y, color, alpha):
    from matplotlib.patches import Rectangle
    return Rectangle((x + 0.02, y - 0.45), 0.96, 0.9, facecolor=color, alpha=alpha, lw=0)


@styled
def save(summary: dict, folder: str | Path, name: str = "robustness_table") -> list[Path]:
    """Draw the robustness summary and save ``name``.png/.pdf into ``folder``."""
    axes = plot(summary)
    return save_figure(axes[0].figure, folder, name)
