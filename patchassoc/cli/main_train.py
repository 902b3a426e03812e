"""``patchassoc train``: sampled-data gradient descent on N samples, or (``--flow``) the gradient
flow of the same empirical risk to a horizon, with results and figures."""
from __future__ import annotations

from patchassoc.simulations.analysis.formatting import num
from patchassoc.cli.options import add_no_figures, positive_float


NAME = "train"
#: ``config.json`` records the command and its options: ``train --config FILE`` re-runs it.
RERUN = True
HELP = ("train the positional-attention model by full-batch gradient descent on sampled data "
        "and write results and figures")
#: What it allocates (:mod:`patchassoc.cli.resources`), checked before it runs.
ALLOCATES = ("start", "sample")


def add_arguments(parser) -> None:
    parser.add_argument("--flow", action="store_true",
                        help="follow the gradient flow of the empirical risk (the small-step "
                             "limit of the descent, t in GD steps; --set diagonal=fixed) to "
                             "--t-max instead of running GD: the limit class, the time to "
                             "claim 2's seed rule and each of its criteria, a figure against "
                             "log t")
    parser.add_argument("--t-max", type=positive_float, default=None, metavar="T",
                        help="the flow's horizon in GD steps (default 1e15)")
    add_no_figures(parser)
    parser.add_argument("--animate", action="store_true",
                        help="also write the dynamics as an animation over log-time (GIF; MP4 "
                             "too where ffmpeg exists): the attention matrix in set order, the "
                             "share and the error, frame by frame")


def check_inputs(config, args) -> None:
    """The options, before anything is made or computed: ``--t-max`` only with ``--flow``,
    and an ``--animate`` that could not have two frames (``--set steps=0`` records only step
    0), and a horizon the flow cannot reach in float64. (The flow checks its model itself,
    before it draws anything.)"""
    if args.flow:
        from patchassoc.simulations.engines.population.flow import T_MAX, check_horizon
        check_horizon(T_MAX if args.t_max is None else args.t_max, config.eta_v, config.eta_Q)
        return
    if args.t_max is not None:
        raise ValueError("--t-max needs --flow")
    if args.animate and config.steps < 1:
        raise ValueError("--animate needs at least 2 frames, and steps = 0 records only "
                         "step 0: use --set steps=N with N >= 1 (or leave out --animate)")


def run(ctx) -> dict:
    if ctx.args.flow:
        from patchassoc.simulations.engines.population.flow import T_MAX
        from patchassoc.simulations.studies.sampled_training import run_flow_and_save
        t_max = T_MAX if ctx.args.t_max is None else ctx.args.t_max
        return ctx.finish("train_flow", run_flow_and_save(
            ctx.config, ctx.seed, ctx.out, ctx.progress, t_max,
            run=ctx.run_record(t_max=t_max)), "the flow")
    if ctx.args.t_max is not None:
        raise ValueError("--t-max needs --flow")
    from patchassoc.simulations.studies.sampled_training import run_and_save
    return ctx.finish("train", run_and_save(ctx.config, ctx.seed, ctx.out, ctx.progress,
                                            run=ctx.run_record()), "training")


def _when(times: dict, key: str) -> str:
    r = (times or {}).get(key) or {}
    return ("censored (the flow stopped before the horizon)" if r.get("stopped") else
            "censored (fails at the horizon)" if r.get("censored") else
            f"{r['time']:.3g} steps" if r.get("time") is not None else "n/a")


def render_flow(s: dict) -> str:
    """The empirical-risk flow's reading: the horizon (or its last record, for a flow that
    stopped early), the limit class, the time to each criterion of claim 2's seed rule."""
    h, lim, t = s["horizon"], s["limit"], s.get("times") or {}
    where = ("at the horizon" if s.get("reached") else
             f"at its last record t = {num(h.get('t'), '.3g')} (it stopped before the horizon "
             f"{s['t_max']:.3g}: censored, not read as the horizon)")
    if lim.get("class") == "undetermined":
        limit = f"  limit: undetermined ({lim.get('reason')})"
    else:
        limit = (f"  limit: {lim['class']} (min_i u_i = {lim['u_min']:.4g}, slope per ln t "
                 f"{lim['slope_u_min']:.3g} over the last decade; loss falling as t^"
                 f"{num(lim.get('loss_rate'), '.3g')}; ||v|| +{num(lim.get('v_growth'), '.3g')}"
                 f" and ||Q offdiag|| +{num(lim.get('q_growth'), '.3g')} per ln t; direction "
                 f"turned {num(lim.get('turn'), '.2g')} rad)")
    return "\n".join([
        f"gradient flow of the empirical risk {s['status']} to t = {s['t_reached']:.3g} steps "
        f"({s['seconds']:.1f} s, {s['evaluations']} evaluations, {s['jacobians']} Jacobians, "
        f"{s['solver']['method']} rtol {s['solver']['rtol']:g}, N = {s['n_train']}); results "
        f"in {s['out']}",
        limit,
        f"  {where}: Def. 2.2 in {h['topc_rows']}/{s['D']} rows, share min "
        f"{num(h.get('share_min'), '.4f')} (mean {num(h.get('share_mean'), '.4f')}), test "
        f"error {num(h.get('test_error'), '.4%', nonfinite='not computed')} (limit "
        f"{s['error_limit']:.4%}), training "
        f"loss {num(h.get('train_loss'), '.3g')}, alpha {num(h.get('alpha'), '.4f')}, "
        f"non-invariant part of Q {num(h.get('q_residual'), '.4g')}",
        f"  time for good: Def. 2.2 {_when(t, 'def22')}; share >= {s['share_level']:g} "
        f"{_when(t, 'share')}; test error <= limit {_when(t, 'error')}; the seed rule "
        f"{_when(t, 'all')}"])


def association_line(s: dict) -> str:
    """One line with the paper's association metrics of a summary (SPEC section 3)."""
    if s.get("topc_rows") is None:
        return "  association metrics: not recorded"
    verdict = "associated" if s["associated"] else "NOT associated"
    return (f"  Def. 2.2 (top-C = own set): {s['topc_rows']}/{s['D']} rows; set-mate share "
            f"{s['share_initial']:.3f} -> mean {s['share_mean']:.3f}, min {s['share_min']:.3f}; "
            f"{verdict} at eps = {s['eps']:g}")


def render(summary: dict) -> str:
    if "limit" in summary and "horizon" in summary:
        return render_flow(summary)
    lines = [f"training {summary['status']} after {summary['steps']} steps "
             f"({summary['seconds']:.1f} s, diagonal {summary.get('diagonal', 'trained')}); "
             f"results in {summary['out']}",
             association_line(summary),
             f"  within-set mass (descriptive; counts A_ii): {summary['within_mass_initial']:.3f}"
             f" -> mean {summary['within_mass_mean']:.3f}, min {summary['within_mass_min']:.3f}",
             f"  train loss {summary['train_loss']:.3g}, train error {summary['train_error']:.4f}, "
             f"test error {summary['test_error']:.4f}",
             f"  alpha = <v, w*> = {summary['alpha']:.3f}, ||v_perp|| = {summary['v_perp_norm']:.3f}",
             f"  row sums of Q drift (relative): {summary['row_sum_drift']:.2e}"
             + (" (not conserved with a fixed diagonal: each step adds eta_Q g_ii to row i)"
                if summary.get("diagonal") == "fixed" else " (conserved)")]
    rec = summary.get("structure_recovery")
    if rec:
        lines.append(f"  structure recovery from A: ARI {rec['ari_top_c']:.3f} (top-C), "
                     f"{rec['ari_spectral']:.3f} (spectral)")
    return "\n".join(lines)
