"""Transfer study: downstream test error against the number of downstream samples N (log x),
one curve per method (mean over seeds) with its 95 % confidence band (Student t; clipped at
0), the target eps, and each
method's N_eps; the title gives the ratio N_eps(best baseline) / N_eps(pretrained) with its
bootstrap confidence interval.

Reads the summary written by ``patchassoc transfer`` (``transfer.json``); never recomputes.

References
----------
SPEC section 6, claim 5.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from patchassoc.simulations.results import read_json

from .style import COLORS, new_figure, save_figure

__all__ = ["plot", "save", "main", "LABELS", "NAME"]

NAME = "transfer"

LABELS = {
    "pretrained": "pretrained attention (frozen)",
    "identity": "identity attention",
    "uniform": "uniform attention",
    "initial": r"initial $Q_0 = \kappa I$",
    "wrong": "wrong partition",
    "joint": "joint $v$, $Q$ from scratch",
}
_COLORS = {
    "pretrained": COLORS["blue"], "identity": COLORS["orange"], "uniform": COLORS["green"],
    "initial": COLORS["purple"], "wrong": COLORS["sky"], "joint": COLORS["vermillion"],
}
_MARKERS = {"pretrained": "o", "identity": "v", "uniform": "s", "initial": "D", "wrong": "^",
            "joint": "P"}


def _fmt(x) -> str:
    return "inf" if x is None else f"{x:.3g}"


def plot(summary: dict, ax=None):
    """Draw the study's curves from its summary dict; returns the axes."""
    if ax is None:
        _, ax = new_figure(figsize=(6.4, 4.2))
    eps = summary["eps"]
    methods = summary["methods"]
    # a fixed order (saved JSON has sorted keys): pretrained first, then the baselines
    order = [m for m in LABELS if m in methods] + [m for m in methods if m not in LABELS]
    for method in order:
        rec = methods[method]
        N = np.asarray(rec["N"], dtype=float)
        mean = np.asarray(rec["mean"], dtype=float)
        lo = np.asarray([np.nan if v is None else v for v in rec["ci_low"]], dtype=float)
        hi = np.asarray([np.nan if v is None else v for v in rec["ci_high"]], dtype=float)
        color = _COLORS.get(method, COLORS["black"])
        n_eps = rec.get("n_eps")
        label = f"{LABELS.get(method, method)}: $N_\\varepsilon$ " + \
            (f"= {n_eps:.3g}" if n_eps is not None else f"> {int(N[-1])}")
        ax.plot(N, mean, marker=_MARKERS.get(method, "o"), ms=4,
                color=color, label=label, lw=2.2 if method == "pretrained" else 1.4)
        ax.fill_between(N, np.maximum(lo, 0.0), hi, color=color, alpha=0.18, lw=0)
        if n_eps is not None:
            ax.plot([n_eps], [eps], marker="|", ms=14, mew=2, color=color)
    ax.axhline(eps, color="grey", ls="--", lw=0.9)
    ax.annotate(f"$\\varepsilon$ = {eps:g}", xy=(1.0, eps), xycoords=("axes fraction", "data"),
                xytext=(3, 0), textcoords="offset points", color="grey", fontsize=8,
                va="center", ha="left")
    ax.set_xscale("log", base=2)
    ax.set_xticks(summary["N"])
    ax.set_xticklabels([str(n) for n in summary["N"]])
    ax.minorticks_off()
    ax.set_ylim(bottom=0.0)
    ax.set_xlabel("downstream training samples N")
    ax.set_ylabel(f"test error (mean over {summary['n_seeds']} seeds, 95% CI)")
    ratio, ci = summary.get("ratio"), summary.get("ratio_ci", [None, None])
    best = LABELS.get(summary.get("best_baseline"), summary.get("best_baseline"))
    ax.set_title(f"Transfer: $N_\\varepsilon$(best baseline: {best}) / $N_\\varepsilon$(pretrained)"
                 f" = {_fmt(ratio)}  [95% CI {_fmt(ci[0])}, {_fmt(ci[1])}]", fontsize=9)
    ax.legend(loc="best", fontsize=7)
    return ax


def save(summary: dict, folder: str | Path) -> list[Path]:
    """Write transfer.png and transfer.pdf into ``folder``."""
    ax = plot(summary)
    return save_figure(ax.figure, folder, NAME)


def main(argv=None) -> int:
    """``python -m patchassoc.figures.transfer FOLDER``: redraw from FOLDER/transfer.json."""
    argv = sys.argv[1:] if argv is None else argv
    folder = Path(argv[0] if argv else "patchassoc-out/transfer")
    for p in save(read_json(folder / "transfer.json"), folder):
        print(p)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
