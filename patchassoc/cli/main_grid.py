"""``patchassoc grid``: claim 1 (Theorem 4.1) on the grid of (L, C, d), read at the horizon,
with its map.

Every (L, C) with L, C >= 2 and L C <= ``--max-patches`` (default 32), times d in ``--ds``
(default 64,256,1024,4096), at each point's reference scalings with the diagonal fixed
(:mod:`patchassoc.simulations.studies.claim1_grid`):

- the verdict: the exact gradient flow to the horizon t = ``--t-max`` (default 1e15 GD steps); a
  point passes when Def. 2.2 holds in every row and the error is <= 1.3 x Bayes + the certified
  bound at the horizon, and the flow's limit class is association;
- beside it, the 10,000-step reading: population GD stopped once Def. 2.2 holds in every row and
  the error is <= 1.3 x Bayes + bound, or after ``--steps`` (default 10,000) steps.

Prints the horizon verdict on the paper's regime (q <= 0.5, L >= 3: >= 90 % pass and the
reference point passes), the limit classes, the censored counts, the cause of a FAIL and the
10,000-step reading beside it, and draws ``claim1_grid.png``. ``--max-patches`` up to 48 adds
points beyond the declared grid, read by the flow alone (``--budget-max-patches 48`` adds their
GD reading, which costs many times the flow there): reported, never counted in the verdict.

Points are stored in ``<out>/cells/`` as they finish; a re-run computes only the missing ones.
``--jobs N`` runs N local processes, ``--dask ADDRESS`` a Dask cluster. ``--quick`` runs a
reduced grid (d = 256, D <= 16) whose result is a preview, never a verdict; so is any other
``--ds``, a smaller ``--max-patches``, another ``--steps`` or another ``--t-max``.

References
----------
SPEC section 6, claim 1 (and claims read at a declared horizon).
"""
from __future__ import annotations

from pathlib import Path

from patchassoc.cli.options import add_dask_options, add_no_figures, positive_int


NAME = "grid"
HELP = ("claim 1 on the grid of (L, C, d): the gradient flow to its horizon (the verdict) and "
        "10,000 GD steps (beside it) with the diagonal fixed at every point; pass fraction in "
        "the paper's regime; map figure (--jobs, --dask, resumable)")
#: What it allocates (:mod:`patchassoc.cli.resources`), checked before it runs.
ALLOCATES = ("start",)

__all__ = ["NAME", "HELP", "add_arguments", "run", "render"]


def _ints(text: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"--ds expects comma-separated integers, got {text!r}") from None
    if not vals:
        raise ValueError(f"--ds expects comma-separated integers, got {text!r}")
    return vals


def add_arguments(parser) -> None:
    parser.add_argument("--ds", default=None, metavar="D1,D2,...",
                        help="patch dimensions d (default 64,256,1024,4096)")
    parser.add_argument("--max-patches", type=int, default=None, metavar="D",
                        help="largest number of patches D = L C (default 32; up to 48: the "
                             "points with D > 32 are reported, not counted in the verdict)")
    parser.add_argument("--quick", action="store_true",
                        help="reduced grid (d = 256, D <= 16): a preview, never a verdict")
    parser.add_argument("--steps", type=int, default=None, metavar="N",
                        help="step budget of the GD reading per point (default 10000; another "
                             "value: a preview)")
    parser.add_argument("--t-max", type=float, default=None, metavar="T",
                        help="the flow's horizon in GD steps (default 1e15; another value: a "
                             "preview)")
    parser.add_argument("--budget-max-patches", type=int, default=32, metavar="D",
                        help="largest D that also gets the 10,000-step GD reading (default 32: "
                             "beyond the declared grid the flow alone is run; the GD reading "
                             "costs many times the flow there)")
    parser.add_argument("--jobs", type=positive_int, default=1, help="local worker processes")
    add_dask_options(parser, "run the points on this Dask scheduler")
    add_no_figures(parser, "the map")


def run(ctx) -> dict:
    from patchassoc.simulations.studies.claim1_grid import compute
    from patchassoc.simulations.studies.study import Outcome
    a = ctx.args
    if a.max_patches is not None and not 4 <= a.max_patches <= 48:
        raise ValueError("--max-patches must lie in 4..48")
    summary = compute(ctx.out, ds=_ints(a.ds) if a.ds else None, max_D=a.max_patches,
                      quick=a.quick, seed=ctx.seed, base=ctx.preset_name, jobs=a.jobs,
                      dask=a.dask, progress=ctx.progress and not ctx.json,
                      max_steps=a.steps, t_max=a.t_max, budget_max_D=a.budget_max_patches)
    summary["figures"] = ctx.draw("grid", Outcome(summary, {"points": summary["points"]},
                                                  saved=Path(ctx.out) / "grid.json"))
    return summary


def _pct(frac) -> str:
    return f" ({100 * frac:.1f} %, needs >= 90 %)" if frac is not None else ""


def _counts(counts: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in (counts or {}).items()) or "none"


def render(s: dict) -> str:
    from patchassoc.simulations.studies.claim1_grid import grid_cause
    from patchassoc.simulations.studies.verdicts import CAUSES
    ref = s.get("reference") or {}
    b = s.get("budget") or {}
    cens = s.get("censored") or {}
    t_max = s.get("t_max") or 1e15
    nan = float("nan")
    h = ref.get("horizon") or {}
    t_err = ((ref.get("times") or {}).get("error") or {})
    lines = [f"claim 1 grid: {s['n_points']} points (d in {s['ds']}, D <= "
             f"{s.get('verdict_max_D', s['max_D'])}), {s['n_passed']} pass at the horizon "
             f"t = {t_max:.0e}; computed {s['computed']}, reused {s['reused']}, "
             f"{s['wall_seconds']:.1f} s wall, {s['cell_seconds']:.1f} s in cells "
             f"({s.get('cell_cpu_seconds', nan):.1f} s CPU: GD reading "
             f"{s.get('gd_cpu_seconds', nan):.1f}, flow {s.get('flow_cpu_seconds', nan):.1f})",
             f"regime q <= 0.5, L >= 3, at the horizon: {s['n_regime_passed']}/{s['n_regime']} "
             f"pass" + _pct(s.get("regime_fraction")),
             f"reference (L, C, d) = {tuple(s['reference_key'])}: "
             + ("not in the grid" if not ref else
                f"{'pass' if ref['passed'] else 'FAIL'} ({ref.get('limit_class')}), "
                f"error/Bayes {h.get('error_over_bayes') or nan:.4f}, share "
                f"{h.get('share') or nan:.3f} at the horizon; time to 1.3 x Bayes "
                + ("censored" if t_err.get("censored") else f"{t_err.get('time') or nan:.3g}")
                + " steps"),
             f"limit classes: {_counts(s.get('classes'))}; regime: "
             f"{_counts(s.get('regime_classes'))}",
             "censored at the horizon (all points): "
             + ", ".join(f"{k} {v}" for k, v in cens.items() if v is not None),
             "verdict at the horizon: " + ("PREVIEW (reduced grid, no verdict)" if s["preview"]
                                           else ("PASS" if s["passed"] else "FAIL"))]
    cause = None if s.get("passed") else grid_cause(s)
    if cause is not None:
        lines.append(f"cause ({cause[0]}) {CAUSES[cause[0]]}: {cause[1]}")
    if b.get("n_points"):
        lines.append(f"beside it, within {b['max_steps']:,} GD steps (a budget reading, not the "
                     f"verdict): {b['n_passed']}/{b['n_points']} pass, regime "
                     f"{b['n_regime_passed']}/{b['n_regime']}"
                     + (f" ({100 * b['regime_fraction']:.1f} %)"
                        if b.get("regime_fraction") is not None else "")
                     + (f", reference at step {b['reference_steps']}"
                        if b.get("reference_passed") else ", reference fails"
                        if b.get("reference_passed") is False else "")
                     + f"; the budget's rule would {'pass' if b.get('passed') else 'fail'}")
    if s["regime_failures"]:
        lines.append("failing regime points (L, C, d): "
                     + ", ".join(str(tuple(x)) for x in s["regime_failures"]))
    if s["outside_failures"]:
        lines.append("failing points outside the regime: "
                     + ", ".join(str(tuple(x)) for x in s["outside_failures"]))
    ext = s.get("extended")
    if ext:
        lines.append(f"beyond the declared grid (32 < D <= {ext['max_D']}, not counted): "
                     f"{ext['n_passed']}/{ext['n_points']} pass, regime "
                     f"{ext['n_regime_passed']}/{ext['n_regime']}; classes "
                     f"{_counts(ext['classes'])}")
    if s.get("flow_not_reached"):
        lines.append("flows that stopped before the horizon: "
                     + ", ".join(str(tuple(x)) for x in s["flow_not_reached"]))
    lines += [f"figure: {p}" for p in s.get("figures", [])]
    return "\n".join(lines)
