"""``patchassoc population``: exact population gradient descent on (alpha, a, b, c).

Runs the idealized dynamics (no projection noise, invariant attention) from the seed's initial
point, with the sampled engine's conventions, and writes the result folder and the figures:
attention maps rebuilt from (a, b, c), the dynamics curves and the error against the Bayes
error. ``--convergence`` also runs sampled-data GD for growing N in the paper's setting (noise
orthogonal to w*, d and sigma of the config, diagonal fixed; a sigma = 0 control beside it) and
draws their distance to the population trajectory.

Steps: ``DEFAULT_STEPS`` (:mod:`patchassoc.simulations.studies.population_run`) unless
``--steps`` or ``--set steps=...`` says otherwise.
"""
from __future__ import annotations

from patchassoc.simulations.analysis.formatting import num


NAME = "population"
#: ``config.json`` records the command and its options: ``population --config FILE`` re-runs it.
RERUN = True
HELP = ("exact population gradient descent on (alpha, a, b, c) (invariant attention, no "
        "projection noise); writes results and figures")
#: What it allocates (:mod:`patchassoc.cli.resources`), checked before it runs.
ALLOCATES = ("start",)

def add_arguments(parser) -> None:
    from patchassoc.cli.options import add_no_figures, positive_float
    from patchassoc.simulations.studies.population_run import DEFAULT_STEPS
    from patchassoc.simulations.studies.sampled_convergence import DEFAULT_NS, REPRODUCE_NS
    parser.add_argument("--steps", type=int, default=None,
                        help=f"gradient steps (default {DEFAULT_STEPS}, or --set steps=...)")
    parser.add_argument("--tol", type=float, default=None,
                        help="certified truncation tolerance per evaluation (default: exact)")
    parser.add_argument("--flow", action="store_true",
                        help="follow the exact gradient flow (the small-step limit of the "
                             "descent, t in GD steps) to --t-max instead of running GD: limit "
                             "class and the time to each criterion")
    parser.add_argument("--t-max", type=positive_float, default=None, metavar="T",
                        help="with --flow: the horizon in GD steps (default 1e15)")
    parser.add_argument("--convergence", action="store_true",
                        help="also compare with sampled-data runs for growing N (noise "
                             "orthogonal to w*, diagonal fixed)")
    parser.add_argument("--quick", action="store_true",
                        help="with --convergence: fewer N, seeds and steps")
    parser.add_argument("--ns", type=_sample_sizes, default=None, metavar="N1,N2,...",
                        help=f"with --convergence: the sample sizes (default "
                             f"{','.join(map(str, DEFAULT_NS))}; reproduce uses "
                             f"{','.join(map(str, REPRODUCE_NS))})")
    add_no_figures(parser)
    parser.add_argument("--animate", action="store_true",
                        help="also write the dynamics as an animation over log-time (GIF; MP4 "
                             "too where ffmpeg exists): the attention matrix in set order, the "
                             "share and the error, frame by frame")


def check_inputs(config, args) -> None:
    """The options, before anything is made or computed: those that do not go together, and
    an ``--animate`` that could not have two frames (``--steps 0`` records only step 0)."""
    from patchassoc.simulations.studies.population_run import DEFAULT_STEPS
    if args.flow:
        from patchassoc.simulations.engines.population.flow import T_MAX, check_horizon
        for opt in ("convergence", "steps", "tol"):
            if getattr(args, opt) not in (None, False):
                raise ValueError(f"--{opt} does not apply to --flow")
        check_horizon(T_MAX if args.t_max is None else args.t_max, config.eta_v, config.eta_Q)
        return
    if args.t_max is not None:
        raise ValueError("--t-max needs --flow")
    if args.steps is not None and args.steps < 0:
        raise ValueError("--steps must be >= 0")
    steps = args.steps if args.steps is not None else (
        config.steps if any(o.partition("=")[0].strip() == "steps" for o in args.overrides)
        else DEFAULT_STEPS)
    if args.animate and steps < 1:
        raise ValueError(f"--animate needs at least 2 frames, and {steps} steps record only "
                         f"step 0: use --steps >= 1 (or leave out --animate)")


def _sample_sizes(text: str) -> tuple[int, ...]:
    import argparse
    try:
        ns = tuple(sorted({int(t) for t in text.split(",") if t.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    if len(ns) < 2 or ns[0] < 1:
        raise argparse.ArgumentTypeError(f"need at least two sample sizes >= 1, got {text!r}")
    return ns


def _steps(ctx) -> int:
    from patchassoc.simulations.studies.population_run import DEFAULT_STEPS
    if ctx.args.steps is not None:
        if ctx.args.steps < 0:
            raise ValueError("--steps must be >= 0")
        return ctx.args.steps
    return ctx.config.steps if "steps" in ctx.overrides else DEFAULT_STEPS


def _run_flow(ctx) -> dict:
    from patchassoc.simulations.engines.population.flow import T_MAX
    from patchassoc.simulations.studies.population_run import run_flow_study
    for opt in ("convergence", "steps", "tol"):
        if getattr(ctx.args, opt) not in (None, False):
            raise ValueError(f"--{opt} does not apply to --flow")
    t_max = T_MAX if ctx.args.t_max is None else ctx.args.t_max
    return ctx.finish("flow", run_flow_study(ctx.config, ctx.seed, ctx.out, ctx.progress, t_max,
                                             run=ctx.run_record(t_max=t_max)), "the flow")


def run(ctx) -> dict:
    if ctx.args.flow:
        return _run_flow(ctx)
    if ctx.args.t_max is not None:
        raise ValueError("--t-max needs --flow")
    from patchassoc.simulations.studies.population_run import run_dynamics
    from patchassoc.simulations.studies.sampled_convergence import run_convergence_step
    steps = _steps(ctx)
    summary = ctx.finish("population", run_dynamics(ctx.config, ctx.seed, ctx.out, ctx.progress,
                                                    steps, ctx.args.tol,
                                                    run=ctx.run_record(steps=steps)),
                         "population dynamics")
    if ctx.args.convergence:
        ctx.log("[population] sampled runs for growing N ...")
        conv = run_convergence_step(ctx.config, ctx.seed, ctx.out / "convergence", ctx.progress,
                                    ctx.args.quick, ctx.args.ns)
        conv.summary["figures"] = ctx.draw("convergence", conv, ctx.out / "convergence")
        summary["convergence"] = conv.summary
        summary["figures"] = summary["figures"] + conv.summary["figures"]
    return summary


def phases_line(s: dict) -> str:
    """The phases of the proof in one line (SPEC section 3)."""
    ph = s.get("phases") or {}
    if ph.get("t_alpha") is None:
        return "  phases: not available"
    ts = ph.get("t_share")
    order = {True: "alpha first, as in the paper", False: "NOT the paper's order (share first)",
             None: "order undefined"}[ph.get("alpha_first")]
    return (f"  phases: t_alpha = {ph['t_alpha']} (alpha at half its final "
            f"{ph['alpha_final']:.3g}), t_share = {ts if ts is not None else 'n/a'} (share half "
            f"way {ph['share_start']:.3f} -> {ph['share_final']:.3f}); {order}; max |change of "
            f"A| before t_alpha {ph['attention_change_before_t_alpha']:.2g} (by the end "
            f"{ph['attention_change_total']:.2g})")


def _when(times: dict, key: str) -> str:
    r = (times or {}).get(key) or {}
    return ("censored (the flow stopped before the horizon)" if r.get("stopped") else
            "censored (fails at the horizon)" if r.get("censored") else
            f"{r['time']:.3g} steps" if r.get("time") is not None else "n/a")


def _limit_line(lim: dict) -> str:
    if lim.get("class") == "undetermined" or lim.get("gap_bc") is None:
        return f"  limit: {lim.get('class')} ({lim.get('reason') or 'no record to read'})"
    return (f"  limit: {lim['class']} (b - c = {lim['gap_bc']:.4g}, slope per ln t "
            f"{lim['slope_bc']:.3g} over the last decade; alpha -> {lim['alpha']:.5g})")


def render_flow(s: dict) -> str:
    """The flow's reading: the horizon (or, for a flow that stopped early, its last record,
    never read as the horizon), the limit class, the time to each criterion."""
    h, lim, t = s["horizon"], s["limit"], s.get("times") or {}
    where = ("at the horizon" if s.get("reached", True) else
             f"at its last record t = {num(h.get('t'), '.3g')} (it stopped before the horizon "
             f"{s['t_max']:.3g}: censored, not read as the horizon)")
    return "\n".join([
        f"gradient flow {s['status']} to t = {s['t_reached']:.3g} steps ({s['seconds']:.1f} s, "
        f"{s['evaluations']} evaluations, {s['solver']['method']} rtol {s['solver']['rtol']:g}"
        f", diagonal {s['diagonal']}); results in {s['out']}",
        _limit_line(lim),
        f"  {where}: Def. 2.2 in {h['topc_rows']}/{s['D']} rows, share "
        f"{num(h['share'], '.6f')}, error {num(h['error'], '.4g')} = "
        f"{num(h['error_over_bayes'], '.6f')} x Bayes ({s['bayes_error']:.4g}), bound "
        f"{num(h['bound'], '.2g')}",
        f"  time for good: Def. 2.2 {_when(t, 'def22')}; share >= {1 - s['eps']:g} "
        f"{_when(t, 'share')}; error <= 1.3 x Bayes + bound {_when(t, 'error')}",
        f"  largest certified bound on M grad R over its norm: {s['max_rel_bound']:.2g} "
        f"(rule <= {s['rel_bound_rule']:g})"])


def render(s: dict) -> str:
    if "limit" in s and "horizon" in s:
        return render_flow(s)
    from patchassoc.cli.main_train import association_line
    lines = [f"population dynamics {s['status']} after {s['steps']} steps "
             f"({s['seconds']:.1f} s, diagonal {s.get('diagonal', 'trained')}); results in "
             f"{s['out']}",
             association_line(s),
             phases_line(s),
             f"  within-set mass (descriptive; counts A_ii): {s['within_mass_initial']:.3f} -> "
             f"{s['within_mass_mean']:.4f}",
             f"  population loss {s['loss']:.4g}, error {s['error']:.4g} "
             f"(Bayes error {s['bayes_error']:.4g}, ratio {s['error_over_bayes']:.4f})"
             if s.get("error_over_bayes") is not None else
             f"  population loss {s['loss']:.4g}, error {s['error']:.4g}",
             f"  alpha {s['alpha']:.4f}, gaps a-c {s['gap_ac']:.4f}, b-c {s['gap_bc']:.4f}, "
             f"row sum {s['row_sum']:.6g} (drift {s['row_sum_drift']:.1e}"
             + ("; not conserved with a fixed diagonal)" if s.get("diagonal") == "fixed"
                else ")")]
    conv = s.get("convergence")
    if conv:
        dists = ", ".join(f"N={n}: {d:.3g}" for n, d in zip(conv["Ns"], conv["mean_distance"]))
        slope = "n/a" if conv.get("slope") is None else f"{conv['slope']:.3f}"
        lines.append(f"  sampled vs population (max distance, mean over seeds): {dists}; "
                     f"fitted slope {slope}")
        for name, fit in conv.get("slopes", {}).items():
            if fit.get("slope") is not None:
                lines.append(f"    slope of {name}: {fit['slope']:.3f} "
                             f"(95% CI {fit['ci_low']:.3f} to {fit['ci_high']:.3f})")
    return "\n".join(lines)
