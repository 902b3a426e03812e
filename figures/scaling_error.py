"""Claim 7, study (a): error against d along the declared family, and its local exponents.

Left: the exact Bayes error and identity / uniform error (the same closed form, sign of the sum)
at every d of the grid, the certified error of block-uniform (= shifted blocks, Lemma L11), of
GD's solution at the declared horizon (the exact flow to t_max, the verdict) and, beside it, of
population GD within its step budget (upper ends value + bound), log-log. Middle: the two GD
readings over the Bayes error, where the panel on the left cannot separate them from it. Right:
the local exponents s_k = -ln(e_{k+1} / e_k) / ln(d_{k+1} / d_k), drawn at the geometric
midpoints; d^(-omega(1)) reads as an exponent that keeps rising; the declared range is shaded.

References
----------
SPEC section 6, item 7 and "Claims read at a declared horizon".
"""
from __future__ import annotations

import math
from pathlib import Path

from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from patchassoc.figures.style import COLORS, new_figure, save_figure, styled
from patchassoc.simulations.studies.verdicts import CAUSES

__all__ = ["plot", "save"]

#: (key, label, colour, marker, line style, marker face)
_SERIES = (("bayes", "Bayes error (exact)", COLORS["black"], None, "-", None),
           ("identity", "identity = uniform attention (exact)", COLORS["vermillion"], None, "--",
            None),
           ("block", "block-uniform = shifted blocks (certified)", COLORS["green"], "s", "none",
            "none"),
           ("flow", "GD at the horizon: exact flow (certified)", COLORS["blue"], "o", "-",
            COLORS["blue"]),
           ("gd", "GD within the budget ceil(1000 ln d) steps", COLORS["orange"], "D", ":",
            "none"))


def _value(v):
    if isinstance(v, dict):
        return v.get("error_high") if v.get("reached") else None
    return v


def _series(rows, key):
    xs, ys = [], []
    for r in rows:
        v = _value(r.get(key))
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


def _rule(r):
    return {"log": "round(ln d)", "log2": "round(log2 d)"}.get(r, r)


@styled
def plot(summary, axes=None):
    """Errors, GD over Bayes and local exponents against d; returns the axes."""
    if axes is None:
        _, axes = new_figure(1, 3, figsize=(16, 5.2), layout="constrained",
                             gridspec_kw={"width_ratios": [1.2, 0.9, 1.0]})
    a = summary["a"]
    rows = a["rows"]
    ax, axr, ax2 = axes
    decl = a.get("gd_ds") or []
    for key, label, color, marker, ls, face in _SERIES:
        xs, ys = _series(rows, key)
        if not xs:
            continue
        lw = 1.0 if key in ("flow", "gd") else 1.6
        ax.plot(xs, ys, color=color, marker=marker, ms=7 if key == "block" else 5, ls=ls,
                lw=lw, label=label, mfc=face if face else color, zorder=3 if key == "flow" else 2)
        mx, s = _exponents(xs, ys)
        if mx:
            ax2.plot(mx, s, color=color, marker=marker or ".", lw=lw,
                     ls="-" if key not in ("block", "gd") else ":", mfc=face if face else color,
                     label=label.split(" (")[0].split(":")[0])
    fam = summary["family"]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("patch dimension d")
    ax.set_ylabel("population zero-one error")
    q = "ln d / D" if fam["q_rule"] == "log" else fam["q_rule"]
    ax.set_title(f"error against d\nL = {_rule(fam['L_rule'])}, C = {_rule(fam['C_rule'])}, "
                 f"q = {q}, diagonal fixed", fontsize=9)
    ax.legend(fontsize=7.5, loc="lower left")

    # GD over Bayes: the flow sits on 1, the budget climbs away from it
    t_max = summary.get("t_max")
    for key, label, color, marker, face in (
            ("flow", f"flow to t = {t_max:.0e}" if t_max else "flow", COLORS["blue"], "o",
             COLORS["blue"]),
            ("gd", "GD, ceil(1000 ln d) steps", COLORS["orange"], "D", "none")):
        pts = [(r["d"], _value(r.get(key)) / r["bayes"]) for r in rows
               if _value(r.get(key)) and r["bayes"] > 0]
        if not pts:
            continue
        axr.plot([p[0] for p in pts], [p[1] for p in pts], color=color, marker=marker, ms=6,
                 mfc=face, lw=1.0, label=label)
        if key == "flow":
            for d, v in pts:
                axr.annotate(f"{v:.5f}", (d, v), textcoords="offset points", xytext=(7, -10),
                             ha="left", fontsize=7, color=color)
        else:
            for d, v in pts:
                axr.annotate(f"{v:.3g}", (d, v), textcoords="offset points", xytext=(7, 3),
                             ha="left", fontsize=7, color=color)
    axr.axhline(1.3, color=COLORS["black"], lw=0.8, ls="--")
    axr.text(0.98, 1.3, "1.3 x Bayes ", transform=axr.get_yaxis_transform(), fontsize=7,
             va="bottom", ha="right")
    axr.set_xscale("log")
    axr.set_yscale("log")
    lo, hi = axr.get_ylim()
    axr.set_ylim(min(lo, 0.8), max(hi, 2.0))
    # y: labelled ticks at 1, 2, 5 x 10^k (and 0.8, 1.3 when in range), so the dashed
    # 1.3 x Bayes and the points can be read off the axis
    lo, hi = axr.get_ylim()
    axr.yaxis.set_major_locator(FixedLocator(sorted(
        v for v in [0.8, 1.3] + [m * 10.0 ** k for k in range(-1, 6) for m in (1, 2, 5)]
        if lo <= v <= hi)))
    axr.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    axr.yaxis.set_minor_locator(NullLocator())
    # x: the same log d axis as the panels beside it (the GD readings exist at a few d only)
    axr.set_xlim(ax.get_xlim())
    axr.set_xlabel("patch dimension d")
    axr.set_ylabel("certified error / Bayes error")
    axr.set_title("GD's certified error over Bayes\nat the flow's horizon and within the "
                  "step budget", fontsize=9)
    axr.legend(fontsize=7.5, loc="upper left")
    axr.margins(x=0.12, y=0.15)

    if len(decl) >= 2:
        ax2.axvspan(decl[0], decl[-1], color=COLORS["sky"], alpha=0.12, lw=0)
        ax2.text(math.sqrt(decl[0] * decl[-1]), 0.98, "declared range",
                 transform=ax2.get_xaxis_transform(), ha="center", va="top", fontsize=7.5)
    ax2.set_xscale("log")
    ax2.set_xlabel("patch dimension d (geometric midpoints)")
    ax2.set_ylabel(r"local exponent $-\Delta \ln e / \Delta \ln d$")
    c7 = summary.get("claim7") or {}
    status = c7.get("status", "n/a")
    cause = c7.get("cause")
    title = f"local exponents (rising = faster than any power)\nclaim 7: {status.upper()}"
    if cause and status == "fail":
        title += f", cause ({cause['code']}) {CAUSES[cause['code']]}"
    ax2.set_title(title, fontsize=9)
    ax2.legend(fontsize=7.5, loc="best")
    return axes


@styled
def save(summary, folder: str | Path, name: str = "scaling_error") -> list[Path]:
    axes = plot(summary)
    return save_figure(axes[0].figure, folder, name)
