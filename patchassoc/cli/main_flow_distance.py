"""``patchassoc flow-distance``: why the sampled path leaves the population's (SPEC section 6;
a reading, not a threshold).

For N in ``--ns`` (default 1000, 2000, 4000, 8000, 16000) and ``--seeds`` seeds (default 5), in
the convergence study's setting (``ref``, noise orthogonal to w*, diagonal fixed), the
empirical-risk flow and the population flow from the same start to t = 1e4: the distance of each
component (alpha, v_perp, the invariant and the non-invariant parts of Q, the whole parameter,
the attention) at every record and at t = 30, 300, 3000, and its slope against N with a
bootstrap 95 % interval; beside it, the convergence study's GD protocol (N = 250..2000, 8 seeds,
300 steps) read as declared (the largest distance over the steps) and at steps 30, 100, 300
(``--no-gd`` skips it). Cells are stored in ``<out>/cells/`` as they finish (resumable), the
summary in ``<out>/flow_distance.json``, the figure beside it.
"""
from __future__ import annotations

from patchassoc.cli.options import (add_dask_options, add_no_figures, positive_int)

NAME = "flow-distance"
HELP = ("the distance between the empirical-risk flow and the population flow against N, per "
        "component and at fixed times; the convergence protocol re-read (--ns, --seeds, --jobs)")
#: What it allocates (:mod:`patchassoc.cli.resources`), checked before it runs.
ALLOCATES = ("start", "sample")

__all__ = ["NAME", "HELP", "add_arguments", "run", "render"]


def add_arguments(parser) -> None:
    from patchassoc.cli.main_sample_size import _sizes
    parser.add_argument("--ns", dest="sizes", type=_sizes, default=None, metavar="N1,N2,...",
                        help="training sample sizes (default 1000,2000,4000,8000,16000; others "
                             "are a preview)")
    parser.add_argument("--seeds", type=positive_int, default=None,
                        help="seeds 0..K-1 per size (default 5)")
    parser.add_argument("--no-gd", action="store_true",
                        help="skip the convergence study's GD protocol")
    parser.add_argument("--jobs", type=positive_int, default=1, help="cells run at a time")
    add_dask_options(parser, "run the cells on this Dask scheduler")
    add_no_figures(parser, "the figure")


def run(ctx) -> dict:
    from patchassoc.simulations.studies import flow_distance as fd
    from patchassoc.simulations.studies.study import Outcome
    a = ctx.args
    if ctx.overrides or ctx.preset_name != "ref":
        raise ValueError("the distance study runs ref in the convergence study's setting; "
                         "--preset and --set do not apply (--ns sets N)")
    summary = fd.compute(ctx.out, sizes=a.sizes or fd.SIZES, seeds=a.seeds or fd.SEEDS,
                         first_seed=ctx.seed, jobs=a.jobs, dask=a.dask, gd=not a.no_gd,
                         progress=ctx.progress and not ctx.json)
    summary["figures"] = ctx.draw("flow_distance",
                                  Outcome(summary, saved=ctx.out / "flow_distance.json"))
    return summary


def _fit(f: dict) -> str:
    if f.get("slope") is None:
        return "n/a"
    return f"{f['slope']:+.2f} [{f['ci_low']:+.2f}, {f['ci_high']:+.2f}]"


def render(s: dict) -> str:
    lines = [f"distance between the empirical-risk and population flows (N = "
             f"{', '.join(map(str, s['sizes']))}; seeds {s['seeds'][0]}..{s['seeds'][-1]}; "
             f"{s['cells_computed']} cells computed, {s['cells_reused']} reused; "
             f"{s['cpu_seconds']:.0f} CPU-s in the cells)"
             + (" - a preview (not the declared sizes or seeds)" if s["preview"] else "")]
    comps = ("alpha", "v_perp", "Q_invariant", "Q_residual", "total", "attention")
    for t, d in s["declared"].items():
        lines.append(f"  t = {t}: slope against N " + "; ".join(
            f"{c} {_fit(d['slopes'][c])}" for c in comps))
    gd = s.get("gd")
    if gd:
        lines.append(f"  GD protocol (N = {gd['Ns'][0]}..{gd['Ns'][-1]}, {len(gd['seeds'])} "
                     f"seeds, {gd['steps']} steps), the declared reading (max over the steps): "
                     + "; ".join(f"{c} {_fit(gd['declared'][c])}" for c in comps[:5]))
        for k, v in gd["per_step"].items():
            lines.append(f"    at step {k}: " + "; ".join(f"{c} {_fit(v[c])}" for c in comps[:5]))
    lines += [f"figure: {p}" for p in s.get("figures", [])]
    return "\n".join(lines)
