"""``patchassoc flow-limit``: where the empirical-risk flow goes past the verdict's horizon
(SPEC section 6, "The limit of the empirical-risk flow"; a reading, never a verdict).

Claim 2's 10 seeds (``ref``, N = 4,000, diagonal fixed) run the empirical-risk flow to
``--t-max`` (default 1e298, the largest power of ten the flow accepts at eta_Q = 50), read on
their sound records (smallest training margin <= 690) from t = 1e15: the law of min_i u_i (the
exponent of its slope per decade against ln ln t, and a comparison of ln t, ln ln t and a
plateau), the loss rate, ||v|| and ||Q offdiag||, the turning of the direction, the invariant part
of Q's direction, and the max-margin direction of v at the flow's attention; what each seed
tends to. The flows are stored in ``<out>/flows/`` as they finish (resumable; ``--jobs``), the
summary in ``<out>/flow_limit.json``, the figure beside it. Other seeds or horizon: a preview.
These flows are never read as the verdict's horizon.
"""
from __future__ import annotations

from patchassoc.cli.options import (add_dask_options, add_no_figures, positive_float,
                                    positive_int)

NAME = "flow-limit"
HELP = ("the empirical-risk flow past the verdict's horizon, to t = 1e298: what min u, the loss, "
        "the norms and the direction tend to for claim 2's seeds (--seeds, --t-max, --jobs)")
#: What it allocates (:mod:`patchassoc.cli.resources`), checked before it runs.
ALLOCATES = ("start", "sample")

__all__ = ["NAME", "HELP", "add_arguments", "run", "render"]


def add_arguments(parser) -> None:
    parser.add_argument("--seeds", type=positive_int, default=None,
                        help="seeds 0..K-1 (default 10, claim 2's; others are a preview)")
    parser.add_argument("--t-max", type=positive_float, default=None, metavar="T",
                        help="the flows' horizon in GD steps, > 1e15 (default 1e298)")
    parser.add_argument("--jobs", type=positive_int, default=1, help="flows run at a time")
    add_dask_options(parser, "run the flows on this Dask scheduler")
    add_no_figures(parser, "the figure")


def run(ctx) -> dict:
    from patchassoc.simulations.studies import flow_limit as fl
    from patchassoc.simulations.studies.study import Outcome
    a = ctx.args
    if ctx.overrides or ctx.preset_name != "ref":
        raise ValueError("the limit study runs claim 2's flows (ref, diagonal fixed); --preset "
                         "and --set do not apply")
    summary = fl.compute(ctx.out, seeds=a.seeds or fl.SEEDS, first_seed=ctx.seed,
                         t_max=a.t_max or fl.T_LIMIT, jobs=a.jobs, dask=a.dask,
                         progress=ctx.progress and not ctx.json)
    summary["figures"] = ctx.draw("flow_limit",
                                  Outcome(summary, saved=ctx.out / "flow_limit.json"))
    if ctx.json:
        for r in summary["seeds"]:
            r.pop("curves", None)
    return summary


def render(s: dict) -> str:
    from patchassoc.simulations.studies.flow_limit import seed_line
    lines = [f"the empirical-risk flow to t = {s['t_max']:.0e}, past the verdict's horizon "
             f"(1e15, never read as it); flows in {s['out']}/flows, {s['flows_computed']} "
             f"computed, {s['flows_reused']} reused; {s['cpu_seconds']:.0f} CPU-s in the cells"
             + (" - a preview (not the declared seeds or horizon)" if s["preview"] else "")]
    lines.append("  min u tends to: " + "; ".join(f"{v} {k}" for k, v in
                                                 sorted(s["names"].items())))
    lines.append("  the direction: " + "; ".join(f"{v} {k}" for k, v in
                                                sorted(s["directions"].items())))
    lines += ["  " + seed_line(r) for r in s["seeds"]]
    lines += [f"figure: {p}" for p in s.get("figures", [])]
    return "\n".join(lines)
