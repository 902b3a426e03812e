"""``patchassoc grid``: claim 1 (Theorem 4.1) on the grid of (L, C, d), with its map.

Every (L, C) with L, C >= 2 and L C <= ``--max-D`` (default 32), times d in ``--ds`` (default
64,256,1024,4096): exact population GD with the diagonal fixed at each point's reference scalings,
stopped once Def. 2.2 holds in every row and the error is <= 1.3 x Bayes + the certified bound, or
after 10,000 steps (:mod:`patchassoc.simulations.studies.claim1_grid`). Prints the verdict on the
paper's regime (q <= 0.5, L >= 3: >= 90 % pass and the reference point passes) and draws
``claim1_grid.png``.

Points are stored in ``<out>/cells/`` as they finish; a re-run computes only the missing ones.
``--jobs N`` runs N local processes, ``--dask ADDRESS`` a Dask cluster. ``--quick`` runs a
reduced grid (d = 256, D <= 16) whose result is a preview, never a verdict.

References
----------
SPEC section 6, claim 1.
"""
from __future__ import annotations

from pathlib import Path


NAME = "grid"
HELP = ("claim 1 on the grid of (L, C, d): population GD with the diagonal fixed at every "
        "point; pass fraction in the paper's regime; map figure (--jobs, --dask, resumable)")

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
    parser.add_argument("--max-D", type=int, default=None,
                        help="largest number of patches D = L C (default 32)")
    parser.add_argument("--quick", action="store_true",
                        help="reduced grid (d = 256, D <= 16): a preview, never a verdict")
    parser.add_argument("--max-steps", type=int, default=None,
                        help="step budget per point (default 10000; another value: a preview)")
    parser.add_argument("--jobs", type=int, default=1, help="local worker processes")
    parser.add_argument("--dask", default=None, metavar="ADDRESS",
                        help="run the points on this Dask scheduler")
    parser.add_argument("--no-figures", action="store_true", help="skip the map")


def run(ctx) -> dict:
    from patchassoc.figures.catalog import draw
    from patchassoc.simulations.studies.claim1_grid import compute
    from patchassoc.simulations.studies.study import Outcome
    a = ctx.args
    if a.jobs < 1:
        raise ValueError("--jobs must be >= 1")
    if a.max_D is not None and a.max_D < 4:
        raise ValueError("--max-D must be >= 4")
    summary = compute(ctx.out, ds=_ints(a.ds) if a.ds else None, max_D=a.max_D,
                      quick=a.quick, seed=ctx.seed, base=ctx.preset_name, jobs=a.jobs,
                      dask=a.dask, progress=ctx.progress and not ctx.json,
                      max_steps=a.max_steps)
    if not a.no_figures:
        summary["figures"] = draw("grid", Outcome(summary, {"points": summary["points"]},
                                                  saved=Path(ctx.out) / "grid.json"), ctx.out)
    return summary


def render(s: dict) -> str:
    ref = s.get("reference") or {}
    frac = s.get("regime_fraction")
    lines = [f"claim 1 grid: {s['n_points']} points (d in {s['ds']}, D <= {s['max_D']}), "
             f"{s['n_passed']} pass; computed {s['computed']}, reused {s['reused']}, "
             f"{s['wall_seconds']:.1f} s wall, {s['cell_seconds']:.1f} s in cells "
             f"({s.get('cell_cpu_seconds', float('nan')):.1f} s CPU)",
             f"regime q <= 0.5, L >= 3: {s['n_regime_passed']}/{s['n_regime']} pass"
             + (f" ({100 * frac:.1f} %, needs >= 90 %)" if frac is not None else ""),
             f"reference (L, C, d) = {tuple(s['reference_key'])}: "
             + ("not in the grid" if not ref else
                f"{'pass' if ref['passed'] else 'FAIL'} at step {ref['steps']}, share "
                f"{ref.get('share', float('nan')):.3f}, error/Bayes "
                f"{ref.get('error_over_bayes') or float('nan'):.3f}"),
             f"share >= 0.9 at the stop: {100 * (s['fraction_share_ge_0_9'] or 0):.1f} % of the "
             f"points",
             "verdict: " + ("PREVIEW (reduced grid, no verdict)" if s["preview"] else
                            ("PASS" if s["passed"] else "FAIL"))]
    if s["regime_failures"]:
        lines.append("failing regime points (L, C, d): "
                     + ", ".join(str(tuple(x)) for x in s["regime_failures"]))
    if s["outside_failures"]:
        lines.append("failing points outside the regime: "
                     + ", ".join(str(tuple(x)) for x in s["outside_failures"]))
    lines += [f"figure: {p}" for p in s.get("figures", [])]
    return "\n".join(lines)
