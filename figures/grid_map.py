"""Claim 1 on the grid: pass/fail and the final set-mate share at every (L, C, d).

One panel per d; in each, the x axis is C and the y axis is L (so D = L C grows to the upper
right). A filled square is a point that passed (Def. 2.2 in every row and error <= 1.3 x Bayes
within 10,000 steps), a cross one that failed; the colour is the set-mate share at the stopping
step. Points in the paper's regime (q <= 0.5 and L >= 3) are outlined in black. Failures are
drawn like passes: where the conclusion stops holding at finite size is a result.

References
----------
SPEC section 6, claim 1.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.colors import Normalize

from patchassoc.figures.style import ATTENTION_CMAP, new_figure, save_figure

__all__ = ["plot", "save"]


def plot(records: list[dict], summary: dict | None = None):
    """Draw the grid records (``run_grid(...)['cells'].values()``); returns the figure."""
    ds = sorted({r["d"] for r in records})
    fig, axes = new_figure(1, len(ds), figsize=(3.3 * len(ds) + 1.0, 3.7), squeeze=False,
                           constrained_layout=True)
    axes = axes[0]
    norm = Normalize(0.0, 1.0)
    sc = None
    for ax, d in zip(axes, ds):
        pts = [r for r in records if r["d"] == d]
        for passed, marker in ((True, "s"), (False, "X")):
            sel = [r for r in pts if bool(r["passed"]) == passed]
            if not sel:
                continue
            sc = ax.scatter([r["C"] for r in sel], [r["L"] for r in sel],
                            c=[r.get("share", np.nan) for r in sel], cmap=ATTENTION_CMAP,
                            norm=norm, marker=marker, s=70 if passed else 80,
                            edgecolors=["black" if r["in_regime"] else "none" for r in sel],
                            linewidths=1.0)
        n_reg = [r for r in pts if r["in_regime"]]
        k_reg = sum(bool(r["passed"]) for r in n_reg)
        ax.set_title(f"d = {d}: {sum(bool(r['passed']) for r in pts)}/{len(pts)} pass"
                     f"\nregime (outlined) {k_reg}/{len(n_reg)}", fontsize=9)
        ax.set_xlabel("C (set size)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xticks([2, 4, 8, 16])
        ax.set_xticklabels(["2", "4", "8", "16"])
        ax.set_yticks([2, 4, 8, 16])
        ax.set_yticklabels(["2", "4", "8", "16"])
        ax.set_xlim(1.6, 20)
        ax.set_ylim(1.6, 20)
    axes[0].set_ylabel("L (number of sets)")
    if sc is not None:
        fig.colorbar(sc, ax=list(axes), shrink=0.85, label="set-mate share at the stop")
    title = "Claim 1 grid: population GD, diagonal fixed, q = min(1, ln d / D); square = pass, X = fail"
    if summary:
        frac = summary.get("regime_fraction")
        title += (f"\nregime q <= 0.5, L >= 3: {summary.get('n_regime_passed')}/"
                  f"{summary.get('n_regime')} pass"
                  + (f" ({100 * frac:.0f} %)" if frac is not None else "")
                  + (" - PREVIEW (quick grid)" if summary.get("preview") else ""))
    fig.suptitle(title, fontsize=9.5)
    return fig


def save(records: list[dict], folder: str | Path, summary: dict | None = None,
         name: str = "claim1_grid") -> list[Path]:
    """Write ``claim1_grid.png/.pdf`` into ``folder``."""
    return save_figure(plot(records, summary), folder, name)
