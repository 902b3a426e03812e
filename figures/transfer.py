"""Transfer study (claim 5), two panels.

Left: the ratio N_eps(best baseline) / N_eps(pretrained) against the target eps (log y), with its
hierarchical-bootstrap 95 % band; a filled marker is a measured ratio, an upward triangle a lower
bound (every baseline censored at N_max, or the pretrained curve at the grid start), a cross a
ratio of 0 (the pretrained curve never reaches eps; drawn at the bottom of the axis); grey dots
are the ratios of the single upstream seeds (their spread is the upstream variance); dashed
lines are the declared thresholds (ratio >= 4, CI lower end > 2). Right: mean downstream test
error against N (log x) for every method, with its bootstrap band, and the declared eps range
shaded.

Reads the summary written by ``patchassoc transfer`` (``transfer.json``); never recomputes.

References
----------
SPEC section 6, claim 5.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from patchassoc.simulations.runtime.results import read_json

from patchassoc.figures.style import COLORS, new_figure, save_figure, styled

__all__ = ["plot", "plot_ratio", "plot_curves", "save", "main", "LABELS", "NAME"]

NAME = "transfer"

LABELS = {
    "pretrained": "pretrained attention (frozen)",
    "identity": "identity attention",
    "uniform": "uniform attention",
    "initial": r"initial $Q_0 = \kappa I$",
    "wrong": "wrong partition",
    "joint": "joint $v$, $Q$ from scratch",
    "ideal": "ideal attention $B/C$ (the bound)",
    "pretrained_rule": "pretrained, at its time to the rule",
}
_COLORS = {
    "pretrained": COLORS["blue"], "identity": COLORS["orange"], "uniform": COLORS["green"],
    "initial": COLORS["purple"], "wrong": COLORS["sky"], "joint": COLORS["vermillion"],
    "ideal": COLORS["black"], "pretrained_rule": COLORS["blue"],
}
_MARKERS = {"pretrained": "o", "identity": "v", "uniform": "s", "initial": "D", "wrong": "^",
            "joint": "P", "ideal": None, "pretrained_rule": None}
_STYLES = {"ideal": "--", "pretrained_rule": ":"}


@styled
def plot_ratio(summary: dict, ax):
    """Ratio against eps with its band, lower bounds marked, per-upstream ratios, thresholds."""
    rows = summary["by_eps"]
    eps = np.array([100 * r["eps"] for r in rows])
    ratio = np.array([r["ratio"] for r in rows], dtype=float)
    lo = np.array([r["ratio_ci"][0] for r in rows], dtype=float)
    hi = np.array([r["ratio_ci"][1] for r in rows], dtype=float)
    bound = np.array([bool(r["ratio_is_lower_bound"]) for r in rows])
    # A ratio of 0 (the pretrained curve never reaches eps) has no place on the log axis: it is
    # drawn as a cross on the axis bottom (outside the data range), the line is broken there,
    # and a CI whose lower end is 0 runs off the bottom of the axis.
    bound_values = [np.asarray([(r.get("references") or {}).get("ideal", {}).get(k, np.nan)
                                if k == "ratio" else
                                ((r.get("references") or {}).get("ideal", {}).get(
                                    "ratio_ci") or [np.nan, np.nan])[k == "high"]
                                for r in rows], dtype=float) for k in ("ratio", "low", "high")]
    positive = np.concatenate([v[v > 0] for v in (ratio, lo, hi, *bound_values)]
                              + [np.asarray(r.get("per_upstream_ratio", []), dtype=float)
                                 for r in rows])
    positive = positive[np.isfinite(positive) & (positive > 0)]
    thr = summary.get("claim5", {}).get("threshold", {})
    levels = [thr.get("ratio", 4.0), thr.get("ratio_ci_low", 2.0)]
    bottom = 0.7 * min([*positive.tolist(), *levels, 1.0])
    top = 1.25 * max([*positive.tolist(), *levels, 1.0])
    off = bottom * 0.5                    # below the axis: where a ratio or CI end of 0 goes
    show = lambda x: np.where(x > 0, x, off)  # noqa: E731
    blue = _COLORS["pretrained"]
    ax.fill_between(eps, show(lo), show(hi), color=blue, alpha=0.2, lw=0,
                    label="hierarchical bootstrap 95% CI (to the bottom edge: CI down to 0)")
    zero = ratio == 0.0
    ax.plot(eps, np.where(zero, np.nan, ratio), color=blue, lw=1.6)
    measured = ~bound & ~zero
    ax.plot(eps[measured], ratio[measured], "o", color=blue, ms=5, label="ratio")
    if zero.any():
        ax.plot(eps[zero], np.zeros(int(zero.sum())), "X", color=COLORS["vermillion"], ms=8,
                transform=ax.get_xaxis_transform(), clip_on=False, zorder=5,
                label=r"ratio 0 (on the axis): the pretrained curve never reaches $\varepsilon$")
    bound &= ~zero
    if bound.any():
        ax.plot(eps[bound], ratio[bound], "^", color=blue, ms=7, mfc="white",
                label=r"lower bound (baselines censored at $N_{max}$)")
    # the bound: the ideal attention's ratio against the same best baseline, with its CI
    ideal = [(r.get("references") or {}).get("ideal") for r in rows]
    if all(b is not None for b in ideal):
        b_ratio = np.array([b["ratio"] for b in ideal], dtype=float)
        b_lo = np.array([b["ratio_ci"][0] for b in ideal], dtype=float)
        b_hi = np.array([b["ratio_ci"][1] for b in ideal], dtype=float)
        ax.fill_between(eps, show(b_lo), show(b_hi), color=COLORS["black"], alpha=0.08, lw=0)
        ax.plot(eps, np.where(b_ratio > 0, b_ratio, np.nan), color=COLORS["black"], ls="-.",
                marker="x", ms=5, lw=1.1,
                label="the bound: ideal attention $B/C$ in place of the pretrained one")
    for k, r in enumerate(rows):
        per = np.asarray(r.get("per_upstream_ratio", []), dtype=float)
        if per.size:
            xk = np.full(per.size, eps[k]) + np.linspace(-0.12, 0.12, per.size)
            ax.plot(xk[per > 0], per[per > 0], ".", color="grey", ms=3,
                    label="single upstream seeds" if k == 0 else None)
            if (per == 0).any():            # a seed's ratio of 0: on the axis, like the cross
                ax.plot(xk[per == 0], np.zeros(int((per == 0).sum())), ".", color="grey",
                        ms=3, transform=ax.get_xaxis_transform(), clip_on=False)
    ax.axhline(levels[0], color=COLORS["black"], ls="--", lw=0.9,
               label=f"ratio threshold {levels[0]:g}")
    ax.axhline(levels[1], color=COLORS["vermillion"], ls=":", lw=1.0,
               label=f"CI lower-end threshold {levels[1]:g}")
    ax.set_yscale("log")
    ax.set_ylim(bottom, top)
    # labelled ticks at 1, 2, 5 x 10^k (the thresholds 2 and 4 included), so levels can be read
    ax.yaxis.set_major_locator(FixedLocator(sorted(
        {v for v in [m * 10.0 ** k for k in range(-3, 4) for m in (1, 2, 5)] + levels
         if bottom <= v <= top})))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(r"target test error $\varepsilon$ (%)")
    ax.set_ylabel(r"$N_\varepsilon$(best baseline) / $N_\varepsilon$(pretrained)")
    ax.set_xticks(eps)
    ax.set_xticklabels([f"{e:g}" for e in eps])
    status = summary.get("claim5", {}).get("status", "")
    verdict = {"pass": "claim 5 passes", "fail": "claim 5 fails",
               "preview": "preview, not a verdict"}.get(status, "")
    ax.set_title(f"Sample-efficiency ratio ({summary['n_upstream']} upstream x "
                 f"{summary['n_downstream']} downstream seeds): {verdict}", fontsize=9)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), fontsize=7, ncol=2)
    return ax


@styled
def plot_curves(summary: dict, ax):
    """Mean test error against N for every method, bands, and the eps range."""
    methods = summary["methods"]
    order = [m for m in LABELS if m in methods] + [m for m in methods if m not in LABELS]
    for method in order:
        rec = methods[method]
        N = np.asarray(rec["N"], dtype=float)
        mean = np.asarray(rec["mean"], dtype=float)
        lo = np.asarray(rec["ci_low"], dtype=float)
        hi = np.asarray(rec["ci_high"], dtype=float)
        color = _COLORS.get(method, COLORS["black"])
        ax.plot(N, mean, marker=_MARKERS.get(method, "o"), ms=3.0, color=color,
                ls=_STYLES.get(method, "-"), label=LABELS.get(method, method),
                lw=2.2 if method == "pretrained" else 1.3)
        if method not in _STYLES:
            ax.fill_between(N, lo, hi, color=color, alpha=0.18, lw=0)
        # cells stopped by the horizon while their loss still fell: open markers
        diag = (summary.get("diagnostics") or {}).get(method) or {}
        cut = np.array([bool((diag.get(str(int(n))) or {}).get("moving")) for n in N])
        if cut.any():
            ax.plot(N[cut], mean[cut], "o", ms=7, mfc="none", color=color, mew=1.2,
                    label=f"{LABELS.get(method, method)}: cells cut while moving")
    grid = summary.get("eps_grid") or [r["eps"] for r in summary["by_eps"]]
    ax.axhspan(min(grid), max(grid), color="grey", alpha=0.12, lw=0,
               label=r"declared $\varepsilon$ range")
    floor = summary.get("floors", {}).get("block_uniform")
    if floor is not None:
        ax.axhline(floor, color="grey", ls=":", lw=0.9, label="block-uniform floor")
    ax.set_xscale("log", base=2)
    ticks = [n for n in summary["N"] if n & (n - 1) == 0]   # the powers of 2 of the grid
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(n) for n in ticks])
    ax.minorticks_off()
    ax.set_ylim(bottom=0.0)
    ax.set_xlabel("downstream training samples N")
    ax.set_ylabel("test error (mean over all seeds, 95% CI)")
    ax.set_title("Downstream test error against N", fontsize=9)
    ax.legend(loc="best", fontsize=7)
    return ax


@styled
def plot(summary: dict, axes=None):
    """Draw both panels from the summary dict; returns the two axes."""
    if axes is None:
        _, axes = new_figure(1, 2, figsize=(12.0, 4.4))
    plot_ratio(summary, axes[0])
    plot_curves(summary, axes[1])
    return axes


@styled
def save(summary: dict, folder: str | Path) -> list[Path]:
    """Write transfer.png and transfer.pdf into ``folder``."""
    axes = plot(summary)
    return save_figure(axes[0].figure, folder, NAME)


@styled
def main(argv=None) -> int:
    """``python -m patchassoc.figures.transfer FOLDER``: redraw from FOLDER/transfer.json."""
    argv = sys.argv[1:] if argv is None else argv
    folder = Path(argv[0] if argv else "patchassoc-out/transfer")
    for p in save(read_json(folder / "transfer.json"), folder):
        print(p)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
