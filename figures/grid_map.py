"""Claim 1 on the grid: when each (L, C, d) gets to error <= 1.3 x Bayes, and whether it passes.

One column per d; in each panel the x axis is C (set size) and the y axis is L (number of sets),
one square cell per grid point (D = L C grows to the upper right; cells outside the grid are
blank).

- Top row, the verdict: the exact gradient flow read at its horizon (t = 1e15 GD steps). The
  colour is log10 of the flow's time to error <= 1.3 x Bayes + bound (the time after which it
  holds for good, in GD steps; t = 0 is drawn at 1). A point whose error is still above it at
  the horizon is censored: grey, hatched. A point that fails the horizon test (Def. 2.2 in every
  row, error <= 1.3 x Bayes + bound, limit class association) carries a cross.
- Bottom row, beside it: the 10,000-step reading (population GD stopped at the first check where
  Def. 2.2 and the error criterion hold). The colour is the step where it stopped, on the same
  scale; a point that did not stop within the budget is censored (grey, hatched, crossed). A
  point without the reading (beyond the declared grid, read by the flow alone) is blank.

The paper's regime (q <= 0.5 and L >= 3) is outlined in black; the reference point is ringed.
Points beyond the declared grid (D > 32, reported, not counted) lie beyond the dashed line.
Failures are drawn like passes: where the conclusion stops holding at finite size is a result.

References
----------
SPEC section 6, claim 1 (and claims read at a declared horizon).
"""
from __future__ import annotations

import math
from pathlib import Path

from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.collections import LineCollection
from matplotlib.colors import LogNorm
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from patchassoc.figures.style import ATTENTION_CMAP, new_figure, save_figure, styled

__all__ = ["plot", "save", "flow_time", "gd_steps"]

#: The declared grid's largest D (beyond it: reported, not counted).
_DECLARED_D = 32
_REFERENCE = (4, 4, 256)
_CENSORED = "#d9d9d9"


def flow_time(r: dict):
    """The flow's time to the error criterion: a number of GD steps, ``"censored"``, or
    ``None`` (no flow reading)."""
    tm = (r.get("times") or {}).get("error")
    if not tm:
        return None
    return "censored" if tm.get("censored") else tm.get("time")


def gd_steps(r: dict):
    """The 10,000-step reading's stopping step, ``"censored"`` (did not stop), or ``None``."""
    b = r.get("budget")
    if not b:
        return None
    return b.get("steps") if b.get("passed") else "censored"


def _outline(ax, cells: set, against: set | None = None, **kw) -> None:
    """The boundary of a union of unit cells (C, L) centred on integers (only where it meets
    the cells ``against``, when given)."""
    segs = []
    for (C, L) in cells:
        x0, x1, y0, y1 = C - 0.5, C + 0.5, L - 0.5, L + 0.5
        for nb, seg in (((C - 1, L), [(x0, y0), (x0, y1)]), ((C + 1, L), [(x1, y0), (x1, y1)]),
                        ((C, L - 1), [(x0, y0), (x1, y0)]), ((C, L + 1), [(x0, y1), (x1, y1)])):
            if nb not in cells and (against is None or nb in against):
                segs.append(seg)
    if segs:
        ax.add_collection(LineCollection(segs, **kw))


def _panel(ax, pts: list[dict], value, failed, norm, cmap, n_max: int, ref_key) -> None:
    for r in pts:
        v = value(r)
        C, L = r["C"], r["L"]
        if v is None:
            face, hatch = "white", None
        elif v == "censored":
            face, hatch = _CENSORED, "////"
        else:
            face, hatch = cmap(norm(max(float(v), 1.0))), None
        ax.add_patch(Rectangle((C - 0.5, L - 0.5), 1, 1, facecolor=face, hatch=hatch,
                               edgecolor="white" if hatch is None else "#8c8c8c",
                               linewidth=0.4 if hatch is None else 0.0))
    bad = [r for r in pts if failed(r)]
    if bad:
        ax.scatter([r["C"] for r in bad], [r["L"] for r in bad], marker="X", s=34,
                   facecolors="black", edgecolors="white", linewidths=0.6, zorder=4)
    drawn = [r for r in pts if value(r) is not None]
    _outline(ax, {(r["C"], r["L"]) for r in drawn if r["in_regime"]}, colors="black",
             linewidths=1.6, zorder=5)
    ref = [r for r in pts if (r["L"], r["C"], r["d"]) == ref_key]
    if ref:
        ax.scatter([ref[0]["C"]], [ref[0]["L"]], marker="o", s=150, facecolors="none",
                   edgecolors="#D55E00", linewidths=1.8, zorder=6)
    beyond = {(r["C"], r["L"]) for r in pts if r["L"] * r["C"] > _DECLARED_D}
    if beyond:
        # the staircase D = L C = 32 between the declared grid and the points beyond it
        inside = {(r["C"], r["L"]) for r in pts if r["L"] * r["C"] <= _DECLARED_D}
        for color, width in (("white", 3.2), ("black", 1.4)):
            _outline(ax, inside, beyond, colors=color, linewidths=width,
                     linestyles="solid" if color == "white" else (0, (2.5, 1.5)), zorder=7)
    ticks = [t for t in (2, 4, 6, 8, 10, 12, 14, 16, 20, 24) if t <= n_max]
    ax.set_xticks(ticks)
    ax.set_yticks(ticks)
    ax.set_xlim(1.4, n_max + 0.6)
    ax.set_ylim(1.4, n_max + 0.6)
    ax.set_aspect("equal")
    ax.grid(False)
    ax.tick_params(length=2, labelsize=7.5)


@styled
def plot(records: list[dict], summary: dict | None = None):
    """Draw the grid records (``run_grid(...)['cells'].values()``); returns the figure.

    One row per reading (the flow; the GD budget when the records carry it), one column per d;
    a single d puts the two readings side by side."""
    records = list(records)
    ds = sorted({r["d"] for r in records})
    n_max = max(max(r["L"], r["C"]) for r in records)
    readings = [("flow", flow_time, lambda r: not r["passed"])]
    if any(r.get("budget") for r in records):
        readings.append(("gd", gd_steps,
                         lambda r: bool(r.get("budget")) and not r["budget"].get("passed")))
    side = len(ds) == 1 and len(readings) == 2
    n_rows, n_cols = (1, 2) if side else (len(readings), len(ds))
    size = (9.5, 5.0) if side else (2.75 * n_cols + 1.3, 2.95 * n_rows + 1.2)
    fig, axes = new_figure(n_rows, n_cols, figsize=size, squeeze=False, constrained_layout=True)

    def ax_of(i, j):
        return axes[0][i] if side else axes[i][j]

    cmap = colormaps[ATTENTION_CMAP]
    times = [v for r in records for v in (flow_time(r), gd_steps(r))
             if v is not None and v != "censored"]
    # the colour spans the decades the times reach (at least 10^3), not the whole horizon
    t_hi = 10.0 ** max(3, math.ceil(math.log10(max([1.0, *[float(t) for t in times]]))))
    norm = LogNorm(1.0, t_hi)
    ref_key = tuple((summary or {}).get("reference_key") or _REFERENCE)
    steps = ((summary or {}).get("budget") or {}).get("max_steps") or 10_000
    names = {"flow": "flow at the horizon (verdict)",
             "gd": f"GD within {steps:,} steps (budget)"}
    for j, d in enumerate(ds):
        pts = [r for r in records if r["d"] == d]
        declared = [r for r in pts if r["L"] * r["C"] <= _DECLARED_D]
        reg = [r for r in declared if r["in_regime"]]
        for i, (name, value, failed) in enumerate(readings):
            ax = ax_of(i, j)
            _panel(ax, pts, value, failed, norm, cmap, n_max, ref_key)
            k_all = sum(value(r) is not None and not failed(r) for r in declared)
            k_reg = sum(value(r) is not None and not failed(r) for r in reg)
            what = "pass" if name == "flow" else "within the budget"
            ext = [r for r in pts if r["L"] * r["C"] > _DECLARED_D and value(r) is not None]
            ax.set_title((f"{names[name]}\n" if side else "")
                         + f"d = {d}: {k_all}/{len(declared)} {what}\nregime {k_reg}/{len(reg)}"
                         + (f"; beyond D = 32: {sum(not failed(r) for r in ext)}/{len(ext)}"
                            if ext else ""), fontsize=9)
            ax.set_xlabel("C (set size)", fontsize=8)
            if side or j == 0:
                ax.set_ylabel(("" if side else f"{names[name]}\n") + "L (number of sets)",
                              fontsize=8.5)
    cb = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=[a for row in axes for a in row],
                      shrink=0.8, aspect=30, pad=0.02)
    n_dec = int(round(math.log10(t_hi)))
    decades = range(0, n_dec + 1, 3 if n_dec > 8 else 1 if n_dec <= 4 else 2)
    decades = sorted({*decades, n_dec})
    cb.set_ticks([10.0 ** k for k in decades])
    cb.set_ticklabels(["1" if k == 0 else f"$10^{{{k}}}$" for k in decades])
    t_max = (summary or {}).get("t_max") or 1e15
    where = ("left", "right") if side else ("top", "bottom")
    cb.set_label(f"GD steps to error <= 1.3 x Bayes + bound (horizon {t_max:.0e})\n"
                 f"{where[0]}: the flow, for good; {where[1]}: GD's stopping step", fontsize=8)
    handles = [Patch(facecolor=_CENSORED, hatch="////", edgecolor="#8c8c8c",
                     label="censored (not reached)"),
               Line2D([], [], marker="X", linestyle="none", markerfacecolor="black",
                      markeredgecolor="white", markersize=7, label="fails"),
               Patch(facecolor="none", edgecolor="black", linewidth=1.6,
                     label="regime q <= 0.5, L >= 3"),
               Line2D([], [], marker="o", linestyle="none", markerfacecolor="none",
                      markeredgecolor="#D55E00", markeredgewidth=1.8, markersize=9,
                      label=f"reference {ref_key}")]
    if any(r["L"] * r["C"] > _DECLARED_D for r in records):
        handles.append(Line2D([], [], color="black", linestyle=(0, (2.5, 1.5)),
                              label="D = 32 (beyond: reported, not counted)"))
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=8)
    fig.suptitle(_title(summary), fontsize=9.5)
    return fig


def _title(summary: dict | None) -> str:
    title = "Claim 1 grid, diagonal fixed, q = min(1, ln d / D): association with error near Bayes"
    if not summary:
        return title
    frac = summary.get("regime_fraction")
    t_max = summary.get("t_max") or 1e15
    verdict = ("PREVIEW (reduced grid)" if summary.get("preview") else
               "PASS" if summary.get("passed") else "FAIL")
    title += (f"\nat the horizon t = {t_max:.0e}: regime {summary.get('n_regime_passed')}/"
              f"{summary.get('n_regime')} pass"
              + (f" ({100 * frac:.0f} %, needs 90 %)" if frac is not None else "")
              + f" - {verdict}")
    b = summary.get("budget") or {}
    if b.get("n_regime"):
        bfrac = b.get("regime_fraction")
        title += (f"\nbeside it, within {b.get('max_steps') or 10_000:,} GD steps (a budget "
                  f"reading, not the verdict): "
                  f"{b['n_regime_passed']}/{b['n_regime']}"
                  + (f" ({100 * bfrac:.0f} %)" if bfrac is not None else ""))
    return title


@styled
def save(records: list[dict], folder: str | Path, summary: dict | None = None,
         name: str = "claim1_grid") -> list[Path]:
    """Write ``claim1_grid.png/.pdf`` into ``folder``."""
    return save_figure(plot(records, summary), folder, name)
