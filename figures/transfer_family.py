"""Transfer as a law in d (claim 5 along claim 7's family), two figures.

``transfer_family_curves``: the transfer sample-complexity curves, one panel per d: mean
downstream test error against N for every method (the pretrained attention of the population
flow, the empirical-risk flow's where it ran, the ideal attention B / C dashed, the baselines),
with the declared eps range shaded. ``transfer_family_law``: N_eps against d (log-log) per method
at a few eps, censored values drawn as open triangles at N_max, with the fitted power laws
(slope and 95 % interval in the legend); and the ratio N_eps(best baseline) / N_eps(pretrained)
against d with its bootstrap CI.

Reads ``family.json`` (``patchassoc transfer --family``); never recomputes.

References
----------
SPEC section 6, item 5 (the law in d).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from patchassoc.simulations.runtime.results import read_json

from patchassoc.figures.style import COLORS, new_figure, save_figure, styled
from patchassoc.figures.transfer import LABELS, _COLORS, _MARKERS, _STYLES

__all__ = ["plot_curves", "plot_law", "save", "main", "NAMES", "LAW_EPS"]

NAMES = ("transfer_family_curves", "transfer_family_law")
#: The eps drawn in the law's panels.
LAW_EPS = (0.03, 0.05, 0.1)

_EXTRA_LABELS = {"empirical": "empirical-risk flow's attention"}
_EXTRA_COLORS = {"empirical": COLORS["yellow"]}


def _label(m: str) -> str:
    return _EXTRA_LABELS.get(m, LABELS.get(m, m))


def _color(m: str) -> str:
    return _EXTRA_COLORS.get(m, _COLORS.get(m, COLORS["black"]))


def _order(methods) -> list:
    first = ["pretrained", "empirical", "ideal"]
    return [m for m in first if m in methods] + [m for m in methods if m not in first]


@styled
def plot_curves(family: dict, axes=None):
    """One panel per d: mean test error against N per method, the eps range shaded."""
    per_d = family["per_d"]
    if axes is None:
        _, axes = new_figure(1, len(per_d), figsize=(4.0 * len(per_d), 3.8), sharey=True)
    axes = np.atleast_1d(axes)
    eps = family["eps_grid"]
    for ax, rec in zip(axes, per_d):
        for m in _order(rec["methods"]):
            r = rec["methods"][m]
            N = np.asarray(r["N"], dtype=float)
            ax.plot(N, r["mean"], color=_color(m), ls=_STYLES.get(m, "-"),
                    marker=_MARKERS.get(m, "o"), ms=2.5, lw=2.0 if m == "pretrained" else 1.1,
                    label=_label(m))
        ax.axhspan(min(eps), max(eps), color="grey", alpha=0.12, lw=0)
        ax.set_xscale("log", base=2)
        ax.set_title(f"d = {rec['d']} (L = C = {rec['L']}, q = {rec['q']:.2f})", fontsize=9)
        ax.set_xlabel("downstream training samples N")
        ax.set_ylim(bottom=0.0)
    axes[0].set_ylabel("test error (mean over seeds)")
    axes[-1].legend(loc="upper right", fontsize=6.5)
    axes[0].figure.suptitle("Transfer sample complexity along the scaling family (grey: the "
                            "declared eps range)", fontsize=10)
    return axes


@styled
def plot_law(family: dict, axes=None):
    """N_eps against d per method at :data:`LAW_EPS` (log-log, fits), and the ratio."""
    if axes is None:
        _, axes = new_figure(1, len(LAW_EPS) + 1, figsize=(4.0 * (len(LAW_EPS) + 1), 3.8))
    ds = np.asarray(family["ds"], dtype=float)
    n_max = family["N"][-1]
    for ax, eps in zip(axes, LAW_EPS):
        key = f"{eps:g}"
        for m in _order(family["law"]):
            rec = family["law"][m].get(key)
            if rec is None:
                continue
            vals = np.array([np.nan if v is None else v for v in rec["n_eps"]], dtype=float)
            fit = rec["fit"]
            label = _label(m)
            if fit is not None and fit.get("ci_low") is not None:
                label += f": slope {fit['slope']:.2f} [{fit['ci_low']:.2f}, {fit['ci_high']:.2f}]"
            ax.plot(ds, vals, color=_color(m), ls=_STYLES.get(m, "-"),
                    marker=_MARKERS.get(m, "o"), ms=4, lw=1.2, label=label)
            cens = np.isnan(vals)
            if cens.any():
                ax.plot(ds[cens], np.full(int(cens.sum()), n_max), "^", mfc="none",
                        color=_color(m), ms=6)
        ax.axhline(n_max, color="grey", ls=":", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("patch dimension d")
        ax.set_ylabel(rf"$N_\varepsilon$ ($\varepsilon$ = {100 * eps:g} %)")
        ax.set_title(rf"$N_\varepsilon$ against d at $\varepsilon$ = {100 * eps:g} % "
                     r"(open $\triangle$: censored at $N_{max}$)", fontsize=8.5)
        ax.legend(fontsize=5.5, loc="lower right", frameon=True, framealpha=0.9, edgecolor="none")
    ax = axes[-1]
    for j, eps in enumerate(LAW_EPS):
        rec = family["ratio_law"][f"{eps:g}"]
        ratio = np.asarray(rec["ratio"], dtype=float)
        ci = np.asarray(rec["ratio_ci"], dtype=float)
        color = [COLORS["blue"], COLORS["vermillion"], COLORS["green"]][j % 3]
        shown = np.where(ratio > 0, ratio, np.nan)
        ax.plot(ds, shown, color=color, marker="o", ms=4, label=rf"$\varepsilon$ = {100 * eps:g} %")
        lo = np.where(ci[:, 0] > 0, ci[:, 0], np.nan)
        ax.fill_between(ds, lo, ci[:, 1], color=color, alpha=0.15, lw=0)
        lb = np.asarray(rec["lower_bound"], dtype=bool)
        if lb.any():
            ax.plot(ds[lb], shown[lb], "^", color=color, mfc="white", ms=7)
    ax.axhline(4.0, color=COLORS["black"], ls="--", lw=0.9, label="ratio threshold 4")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("patch dimension d")
    ax.set_ylabel(r"$N_\varepsilon$(best baseline) / $N_\varepsilon$(pretrained)")
    ax.set_title(r"The ratio against d (band: 95 % CI; $\triangle$: lower bound)", fontsize=8.5)
    ax.legend(fontsize=7)
    return axes


@styled
def save(family: dict, folder: str | Path) -> list[Path]:
    """Write both figures (PNG and PDF) into ``folder``."""
    paths = []
    axes = plot_curves(family)
    paths += save_figure(axes[0].figure, folder, NAMES[0])
    axes = plot_law(family)
    paths += save_figure(axes[0].figure, folder, NAMES[1])
    return paths


@styled
def main(argv=None) -> int:
    """``python -m patchassoc.figures.transfer_family FOLDER``: redraw from FOLDER/family.json."""
    argv = sys.argv[1:] if argv is None else argv
    folder = Path(argv[0] if argv else "patchassoc-out/transfer")
    for p in save(read_json(folder / "family.json"), folder):
        print(p)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
