"""``patchassoc sample-size``: how the gradient flow of the empirical risk depends on the sample
size N (SPEC section 6, the sample-size law; reported, not a threshold).

For N in ``--ns`` (default 1000, 2000, 4000, 8000, 16000) and ``--seeds`` seeds (default 5),
each (N, seed) runs the flow of ``ref`` with the diagonal fixed to ``--t-max`` (default 1e15)
(:mod:`patchassoc.simulations.studies.claim2_flow`). Against N: the time to claim 2's seed rule
(censored where not reached), share_min, the test error and the non-invariant part of Q at T,
the limit classes; the population flow's time to the same rule as the N -> infinity line; a fit
of ln(time) on ln N with its 95 % interval. The flows are stored in ``<out>/flows/`` as they
finish (resumable), the summary in ``<out>/sample_size.json``, the figure beside it.
"""
from __future__ import annotations

from patchassoc.simulations.analysis.formatting import num
from patchassoc.cli.options import (add_dask_options, add_no_figures, positive_float,
                                    positive_int)

NAME = "sample-size"
HELP = ("the sample-size law of the empirical-risk flow: time to claim 2's rule, share, test "
        "error and the non-invariant part of Q against N (--ns, --seeds, --jobs)")
#: What it allocates (:mod:`patchassoc.cli.resources`), checked before it runs.
ALLOCATES = ("start", "sample")

__all__ = ["NAME", "HELP", "add_arguments", "run", "render"]


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"--ns must be integers separated by commas, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise ValueError(f"--ns must be integers >= 1, got {text!r}")
    return sizes


def add_arguments(parser) -> None:
    parser.add_argument("--ns", dest="sizes", type=_sizes, default=None, metavar="N1,N2,...",
                        help="training sample sizes (default 1000,2000,4000,8000,16000; others "
                             "are a preview)")
    parser.add_argument("--seeds", type=positive_int, default=None,
                        help="seeds 0..K-1 per size (default 5)")
    parser.add_argument("--t-max", type=positive_float, default=None, metavar="T",
                        help="the flows' horizon in GD steps (default 1e15)")
    parser.add_argument("--jobs", type=positive_int, default=1, help="flows run at a time")
    add_dask_options(parser, "run the flows on this Dask scheduler")
    add_no_figures(parser, "the figure")


def run(ctx) -> dict:
    from patchassoc.simulations.engines.population.flow import T_MAX
    from patchassoc.simulations.studies import claim2_flow as cf
    from patchassoc.simulations.studies.study import Outcome
    a = ctx.args
    if ctx.overrides:
        raise ValueError("the sample-size law runs ref with the diagonal fixed; --set does not "
                         "apply (--ns sets N)")
    summary = cf.compute_sample_size(
        ctx.out, sizes=a.sizes or cf.SAMPLE_SIZES, seeds=a.seeds or cf.SAMPLE_SIZE_SEEDS,
        first_seed=ctx.seed, t_max=a.t_max or T_MAX, jobs=a.jobs, dask=a.dask,
        progress=ctx.progress and not ctx.json)
    summary.pop("curves", None) if ctx.json else None
    summary["figures"] = ctx.draw("sample_size",
                                  Outcome(summary, saved=ctx.out / "sample_size.json"))
    return summary


def render(s: dict) -> str:
    lines = [f"sample-size law of the empirical-risk flow to T = {s['t_max']:.0e} (seeds "
             f"{', '.join(map(str, s['seeds']))}; flows in {s['out']}/flows, "
             f"{s['flows_computed']} computed, {s['flows_reused']} reused)"
             + (" - a preview (not the declared sizes, seeds or horizon)" if s["preview"]
                else "")]
    for r in s["rows"]:
        st = r["time_stats"]
        lines.append(f"  N = {r['N']:>6}: {r['n_passed']}/{r['n_seeds']} pass; time to the "
                     f"rule " + (f"median {st['median']:.3g} ({st['min']:.3g} - "
                                 f"{st['max']:.3g})" if st else "censored")
                     + (f", {r['censored']} censored" if r["censored"] else "")
                     + "; share_min at T "
                     + ", ".join(num(x, ".3f") for x in r["share_min"])
                     + "; non-invariant part of Q "
                     + ", ".join(num(x, ".3g") for x in r["q_residual"])
                     + "; classes " + ", ".join(f"{k} {v}" for k, v in r["classes"].items()))
    ref = s.get("reference") or {}
    lines.append(f"  population flow (N -> infinity): time to the rule "
                 f"{num(ref.get('time_to_rule'), '.3g')}")
    fit = s.get("fit_time_vs_N")
    if fit:
        lines.append(f"  fit ln(time) = a + gamma ln N: gamma = {fit['slope']:.3f}"
                     + (f", 95 % [{fit['ci_low']:.3f}, {fit['ci_high']:.3f}]"
                        if fit.get("ci_low") is not None else "")
                     + f" ({s['fit_points']} uncensored seeds)")
    lines += [f"figure: {p}" for p in s.get("figures", [])]
    return "\n".join(lines)
