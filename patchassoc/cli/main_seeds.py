"""``patchassoc seeds``: claim 2 (Theorem 4.2) over seeds at the declared horizon, and its control.

Trains the configuration (ref by default) with the diagonal fixed for ``--seeds`` seeds (default 10;
:mod:`patchassoc.simulations.studies.claim2_seeds`) to the declared horizon, H = 3,000 GD steps
(``--steps N`` trains N steps instead: a preview): per seed, the time to each criterion of the
seed rule (Def. 2.2 in every row, share_min >= 0.75, test error <= 2 x Bayes + 0.001) up to H,
censored when it does not hold at H; a seed passes when its time to the rule is not censored. The verdict is the pass rate at H with
its Wilson 95 % interval (the claim needs its lower end >= 0.7); beside it, the old rule at the
config's ``steps`` (the budget step), read from the same run; a FAIL names its cause. Also the
invariance of Q_H - Q_0 against random partitions (z-score). Then the control: the same model on
the paper's Fig. 2 data (i.i.d. Gaussian patches, labels from a cubic CNN over the 2x2 windows of
the 4x4 grid) and on the structured data with the same windows
(:mod:`patchassoc.simulations.studies.fig2_control`); it must not associate. ``--quick`` trains 2
seeds at a reduced size to a short horizon: a preview, never a verdict (so is another horizon
than the declared one, or fewer seeds).

Seeds are stored in ``<out>/seeds/`` as they finish and reused by a re-run; ``--jobs N`` trains
N seeds at a time, ``--dask ADDRESS`` on a Dask cluster.

``--flow`` reads claim 2 where SPEC section 6 decides it: each seed's gradient flow of its
empirical risk (:mod:`patchassoc.simulations.studies.claim2_flow`) to ``--t-max`` (default
T = 1e15): the seed rule at T, each seed's limit class and time to the rule, the pass rate
against t; the flows are stored in ``<out>/flows/`` (resumable), the summary in
``<out>/flow.json``, and a GD reading of the same folder (``seeds.json``) is shown beside it.

References
----------
SPEC section 6, claim 2, and "Claims read at a declared horizon".
"""
from __future__ import annotations

from patchassoc.simulations.analysis.formatting import num
from patchassoc.cli.options import (add_dask_options, add_no_figures, positive_float,
                                    positive_int)


NAME = "seeds"
HELP = ("claim 2 over seeds (diagonal fixed) at the horizon H: times to each criterion, pass "
        "rate with a Wilson interval, the budget reading beside it, invariance of Q_H - Q_0; "
        "the paper's Fig. 2 control (--steps, --jobs, --dask)")
#: What it allocates (:mod:`patchassoc.cli.resources`), checked before it runs.
ALLOCATES = ("start", "sample")

__all__ = ["NAME", "HELP", "add_arguments", "run", "render"]

def add_arguments(parser) -> None:
    parser.add_argument("--flow", action="store_true",
                        help="claim 2 at the empirical-risk flow's horizon (the verdict, SPEC "
                             "section 6): each seed's gradient flow to --t-max")
    parser.add_argument("--t-max", type=positive_float, default=None, metavar="T",
                        help="with --flow: the flows' horizon in GD steps (default 1e15; another "
                             "value is a preview)")
    parser.add_argument("--seeds", type=int, default=None,
                        help="number of seeds 0..n-1 (default 10; quick 2)")
    parser.add_argument("--quick", action="store_true",
                        help="2 seeds at a reduced size and a short horizon: a preview, never "
                             "a verdict")
    parser.add_argument("--steps", type=int, default=None, metavar="N",
                        help="train each seed N GD steps, the horizon H (default: the declared "
                             "H = 3,000; another value is a preview); --set steps=S is the "
                             "budget step read beside it (S <= N)")
    parser.add_argument("--jobs", type=positive_int, default=1, help="seeds trained at a time")
    add_dask_options(parser, "train the seeds on this Dask scheduler")
    parser.add_argument("--no-control", action="store_true",
                        help="skip the Fig. 2 control (gaussian-cnn data)")
    add_no_figures(parser)


def _run_flows(ctx) -> dict:
    from patchassoc.simulations.runtime.verified import read_verified
    from patchassoc.simulations.studies.claim2_flow import compute
    from patchassoc.simulations.studies.study import Outcome
    a = ctx.args
    if a.steps is not None:
        raise ValueError("--steps does not apply to --flow (the flows' horizon is --t-max)")
    summary = compute(ctx.config, ctx.out, n_seeds=a.seeds, quick=a.quick, jobs=a.jobs,
                      dask=a.dask, first_seed=ctx.seed, progress=ctx.progress and not ctx.json,
                      t_max=a.t_max, control=not a.no_control)
    gd = ctx.out / "seeds.json"
    if gd.exists():           # a GD reading of the same folder, shown beside the verdict
        summary["budget_readings"] = read_verified(gd)
        summary["budget_readings"].pop("records", None)
    summary.pop("records", None)
    summary["figures"] = ctx.draw("seeds", Outcome(summary, {"control": ctx.out / "control"},
                                                    saved=ctx.out / "flow.json"))
    return summary


def run(ctx) -> dict:
    from patchassoc.simulations.studies.claim2_seeds import compute
    from patchassoc.simulations.studies.study import Outcome
    a = ctx.args
    if a.flow:
        return _run_flows(ctx)
    if a.t_max is not None:
        raise ValueError("--t-max needs --flow")
    if a.steps is not None and a.steps < 1:
        raise ValueError("--steps must be >= 1")
    summary = compute(ctx.config, ctx.out, n_seeds=a.seeds, quick=a.quick, jobs=a.jobs,
                      dask=a.dask, control=not a.no_control, first_seed=ctx.seed,
                      progress=ctx.progress and not ctx.json, horizon=a.steps)
    summary["figures"] = ctx.draw("seeds", Outcome(summary, {"control": ctx.out / "control"},
                                                    saved=ctx.out / "seeds.json"))
    return summary


def _t(x) -> str:
    return "censored" if x is None else f"{x:.3g}"


def render_flows(s: dict) -> str:
    from patchassoc.simulations.studies.claim2_flow import claim2_at_flow
    from patchassoc.simulations.studies.verdicts import cause_line
    lo, hi = s["wilson"]
    rec = claim2_at_flow(s, s.get("budget_readings"))
    lines = [f"claim 2 at the empirical-risk flow's horizon T = {s['horizon']:.0e} over "
             f"{s['n_seeds']} seeds (diagonal fixed): {s['n_passed']} pass, Wilson 95 % "
             f"[{lo:.3f}, {hi:.3f}] (needs lower end >= {s['rate_lower_threshold']:g}) -> "
             + ("PREVIEW (no verdict)" if s["preview"] else ("PASS" if s["passed"] else "FAIL"))
             + f"; flows in {s['out']}/flows ({s['flows_computed']} computed, "
               f"{s['flows_reused']} reused)"]
    cause = rec.get("cause") or (rec.get("values") or {}).get("preview_cause")
    if cause and not rec["passed"]:
        lines.append("  " + cause_line({"cause": cause}))
    for x in s["seeds"]:
        lines.append(f"  seed {x['seed']}: {x['status']}; class {x['limit_class']} (slope of "
                     f"min u {num(x['slope_u_min'], '.3f')} per ln t); at T share min "
                     f"{num(x['share_min'], '.4f')}, test error "
                     f"{num(x['test_error'], '.4%', nonfinite='not computed')}, "
                     f"Def. 2.2 {x['topc_rows']} rows -> {'pass' if x['passed'] else 'FAIL'}; "
                     f"time to the rule {_t(x['time_to_rule'])}")
    gd = s.get("budget_readings")
    if gd and gd.get("n_seeds"):
        glo, ghi = gd["wilson"]
        lines.append(f"  beside it, sampled GD to H = {gd.get('horizon')} (a reading within a "
                     f"budget): {gd['n_passed']}/{gd['n_seeds']} pass, Wilson 95 % "
                     f"[{glo:.3f}, {ghi:.3f}]")
    lines += [f"figure: {p}" for p in s.get("figures", [])]
    return "\n".join(lines)


def render(s: dict) -> str:
    from patchassoc.simulations.studies.claim2_seeds import claim2
    from patchassoc.simulations.studies.verdicts import cause_line
    if "curves" in s and "classes" in s:
        return render_flows(s)
    lo, hi = s["wilson"]
    H = s.get("horizon")
    rec = claim2(s)
    lines = [f"claim 2 over {s['n_seeds']} seeds (diagonal fixed) at the horizon H = {H} steps: "
             f"{s['n_passed']} pass, rate {s['rate']:.2f}, Wilson 95 % [{lo:.3f}, {hi:.3f}] "
             f"(needs lower end >= {s['rate_lower_threshold']:g}) -> "
             + ("PREVIEW (no verdict)" if s["preview"] else ("PASS" if s["passed"] else "FAIL"))]
    b = s.get("budget")
    if b:
        lines.append(f"  beside it, {b['label']}: {b['n_passed']}/{b['n_seeds']} pass, Wilson "
                     f"95 % [{b['wilson'][0]:.3f}, {b['wilson'][1]:.3f}]")
    cause = rec.get("cause") or (rec.get("values") or {}).get("preview_cause")
    if cause and not rec["passed"]:
        lines.append("  " + cause_line({"cause": cause}))
    times = {x["seed"]: x for x in s.get("times") or []}
    for r in s.get("records", []):
        z = r["invariance"].get("z")
        tt = times.get(r["seed"], {})
        br = r.get("budget_reading") or {}
        lines.append(f"  seed {r['seed']}: at H Def. 2.2 {r['topc_rows']}/{s['config']['D']} "
                     f"rows, share min {r['share_min']:.3f}, test error {r['test_error']:.4f} "
                     f"(<= {r['error_threshold']:.4f}?) -> {'pass' if r['passed'] else 'FAIL'}; "
                     f"time to Def. 2.2 {_t(tt.get('def22'))}, share {_t(tt.get('share'))}, "
                     f"error {_t(tt.get('error'))}, the rule {_t(tt.get('all'))}"
                     + (f"; at step {br['step']} share min {br['share_min']:.3f} -> "
                        f"{'pass' if br['passed'] else 'fail'}" if br else "")
                     + f"; invariance of Q_H - Q_0 {r['invariance']['fraction']:.3f}, z = "
                     + ("n/a" if z is None else f"{z:.1f}"))
    c = s.get("control")
    if c:
        for key in ("control", "structured"):
            r = c[key]
            lines.append(f"  {key} ({r['data']}): test error {r['test_error']:.4f}, Def. 2.2 "
                         f"{r['assoc_topc_rows']}/{r['assoc_D']} rows, share min "
                         f"{r['assoc_share_min']:.3f}, ARI {r['ari_top_c']:.2f} -> "
                         f"{'associated' if r['assoc_associated'] else 'not associated'}")
        lines.append(f"  control {'fails association (ok)' if c['control_ok'] else 'ASSOCIATES: the claim fails'}")
    lines += [f"figure: {p}" for p in s.get("figures", [])]
    return "\n".join(lines)
