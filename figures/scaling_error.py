"""Claim 7, study (a): error against d along the declared family, and its local exponents.

Left: the exact Bayes error and identity / uniform error (the same closed form, sign of the sum)
at every d of the grid, the certified error of block-uniform (= shifted blocks, Lemma L11) and of
the population GD solution (upper end value + bound), log-log. Right: the local exponents
s_k = -ln(e_{k+1} / e_k) / ln(d_{k+1} / d_k), drawn at the geometric midpoints; d^(-omega(1))
reads as an exponent that keeps rising.

References
----------
SPEC section 6, item 7.
"""
from __future__ import annotations

import math
from pathlib import Path

from patchassoc.figures.style import COLORS, new_figure, save_figure

__all__ = ["plot", "save"]

#: (key, label, colour, marker, line style)
_SERIES = (("bayes", "Bayes error (exact)", COLORS["black"], None, "-"),
           ("identity", "identity = uniform attention (exact)", COLORS["vermillion"], None, "--"),
           ("block", "block-uniform = shifted blocks (certified)", COLORS["green"], "s", "none"),
           ("gd", "population GD, diagonal fixed (certified)", COLORS["blue"], "o", "none"))


def _series(rows, key):
    xs, ys = [], []
    for r in rows:
        v = r.get(key)
        if isinstance(v, dict):
            v = v.get("error_high") if v.get("reached") else None
        if v is not None and v > 0:
            xs.append(r["d"])
            ys.append(v)
    return xs, ys


def _exponents(xs, ys):
    mids, s = [], []
    for i in range(len(xs) - 1):
        mids.append(math.sqrt(xs[i] * xs[i + 1]))
        s.append(-math.log(ys[i + 1] / ys[i]) / math.log(xs[i + 1] / xs[i]))
    return mids, s


def plot(summary, axes=None):
    """Errors and local exponents against d; returns the axes."""
    if axes is None:
        _, axes = new_figure(1, 2, figsize=(11.5, 4.8))
    rows = summary["a"]["rows"]
    ax, ax2 = axes
    for key, label, color, marker, ls in _SERIES:
        xs, ys = _series(rows, key)
        if not xs:
            continue
        ax.plot(xs, ys, color=color, marker=marker, ms=7 if key == "block" else 5, ls=ls,
                label=label, mfc="none" if key == "block" else color)
        mx, s = _exponents(xs, ys)
        if mx:
            ax2.plot(mx, s, color=color, marker=marker or ".", ls="-" if key != "block" else ":",
                     label=label.split(" (")[0])
    fam = summary["family"]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("patch dimension d")
    ax.set_ylabel("population zero-one error")
    def rule(r):
        return {"log": "round(ln d)", "log2": "round(log2 d)"}.get(r, r)
    q = "ln d / D" if fam["q_rule"] == "log" else fam["q_rule"]
    ax.set_title(f"error against d: L = {rule(fam['L_rule'])}, C = {rule(fam['C_rule'])}, "
                 f"q = {q}", fontsize=9)
    ax.legend(fontsize=7.5, loc="lower left")
    ax2.set_xscale("log")
    ax2.set_xlabel("patch dimension d (geometric midpoints)")
    ax2.set_ylabel(r"local exponent $-\Delta \ln e / \Delta \ln d$")
    c7 = summary.get("claim7") or {}
    ax2.set_title(f"local exponents (rising = faster than any power); claim 7: "
                  f"{c7.get('status', 'n/a')}", fontsize=9)
    ax2.legend(fontsize=7.5, loc="center right")
    return axes


def save(summary, folder: str | Path, name: str = "scaling_error") -> list[Path]:
    axes = plot(summary)
    return save_figure(axes[0].figure, folder, name)
