"""``patchassoc population``: exact population gradient descent on (alpha, a, b, c).

Runs the idealized dynamics (no projection noise, invariant attention) from the seed's initial
point, with the sampled engine's conventions, and writes the result folder and the figures:
attention maps rebuilt from (a, b, c), the dynamics curves and the error against the Bayes
error. ``--convergence`` also runs sampled-data GD for growing N in the paper's setting (noise
orthogonal to w*, d and sigma of the config, diagonal fixed; a sigma = 0 control beside it) and
draws their distance to the population trajectory.

Convergence cost (measured on the shared 2-core machine at load 10-20, so wall times are
inflated; CPU times are the better guide): the full study (7 N from 250 to 16000, 8 seeds,
300 steps, d = 256, with the sigma = 0 control) took 4231 s wall, 895 s CPU for the whole
command; ``--quick`` (then 3 N up to 1000, 4 seeds, 150 steps) took 283 s wall, 44 s CPU for the
whole command, Numba compilation included; it is now 2 N and 3 seeds (about a third of the
sampled work) to fit ``reproduce --quick`` in its 2-minute budget. The sampled runs at d = 256
are ~92 % of the cost. In a full ``reproduce`` the whole study ran in 538 s wall (524 s of
it the convergence study), so the reproduction's own step (``convergence``, separate from
``population``) stops at N = 2000 (``REPRODUCE_NS``); the cost is linear in N.

Steps. The population dynamics associate patches more slowly than the sampled ones at the
reference step sizes: at the ``ref`` preset the within-set mass crosses 0.95 at about step 2250
(measured), past ``config.steps``. So this command runs ``DEFAULT_STEPS`` steps unless
``--steps`` or ``--set steps=...`` says otherwise.
"""
from __future__ import annotations

import sys
from pathlib import Path

from patchassoc.theory.config import Config

from patchassoc.simulations.studies.sampled_convergence import (DEFAULT_NS, DEFAULT_SEEDS, QUICK_NS, QUICK_SEEDS,
                                      QUICK_STEPS, REPRODUCE_NS, STUDY_STEPS, run_convergence)
from patchassoc.simulations.engines.population.trajectory import PopulationResult, run_population

NAME = "population"
HELP = ("exact population gradient descent on (alpha, a, b, c) (invariant attention, no "
        "projection noise); writes results and figures")

#: Default number of population steps (see the module notes).
DEFAULT_STEPS = 3000


def add_arguments(parser) -> None:
    parser.add_argument("--steps", type=int, default=None,
                        help=f"gradient steps (default {DEFAULT_STEPS}, or --set steps=...)")
    parser.add_argument("--tol", type=float, default=None,
                        help="certified truncation tolerance per evaluation (default: exact)")
    parser.add_argument("--convergence", action="store_true",
                        help="also compare with sampled-data runs for growing N (noise "
                             "orthogonal to w*, diagonal fixed)")
    parser.add_argument("--quick", action="store_true",
                        help="with --convergence: fewer N, seeds and steps")
    parser.add_argument("--ns", type=_sample_sizes, default=None, metavar="N1,N2,...",
                        help=f"with --convergence: the sample sizes (default "
                             f"{','.join(map(str, DEFAULT_NS))}; reproduce uses "
                             f"{','.join(map(str, REPRODUCE_NS))})")
    parser.add_argument("--no-figures", action="store_true", help="skip writing the figures")


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
    if ctx.args.steps is not None:
        if ctx.args.steps < 0:
            raise ValueError("--steps must be >= 0")
        return ctx.args.steps
    return ctx.config.steps if "steps" in ctx.overrides else DEFAULT_STEPS


def write_figures(result: PopulationResult, folder: Path) -> list[str]:
    from patchassoc.figures import population_dynamics
    return [str(p) for p in population_dynamics.save(result, folder)]


def run_dynamics(config: Config, seed: int, out: Path, progress: bool, steps: int,
                 tol: float | None = None, figures: bool = True) -> dict:
    result = run_population(config, seed, steps=steps, tol=tol, progress=progress)
    result.save(out)
    summary = result.summary()
    summary["out"] = str(out)
    summary["figures"] = write_figures(result, out) if figures else []
    if result.trajectory.status != "ok":
        summary["exit_status"] = 1
    return summary


def run_convergence_step(config: Config, seed: int, out: Path, progress: bool, quick: bool,
                         figures: bool = True, Ns=None) -> dict:
    """The convergence study in the paper's setting (noise orthogonal to w*, the config's d and
    sigma, diagonal fixed): :mod:`..population.convergence`. ``Ns`` defaults to ``QUICK_NS``
    (quick) or ``DEFAULT_NS``."""
    if quick:
        res = run_convergence(config, seed, Ns=Ns or QUICK_NS, n_seeds=QUICK_SEEDS,
                              steps=QUICK_STEPS, progress=progress)
    else:
        res = run_convergence(config, seed, Ns=Ns or DEFAULT_NS, n_seeds=DEFAULT_SEEDS,
                              steps=STUDY_STEPS, progress=progress)
    res.save(out)
    summary = res.summary()
    summary["out"] = str(out)
    if figures:
        from patchassoc.figures import convergence
        summary["figures"] = [str(p) for p in convergence.save(res, out)]
    else:
        summary["figures"] = []
    return summary


def run(ctx) -> dict:
    steps = _steps(ctx)
    figures = not ctx.args.no_figures
    summary = run_dynamics(ctx.config, ctx.seed, ctx.out, ctx.progress, steps, ctx.args.tol,
                           figures)
    if summary.get("exit_status"):
        print(f"patchassoc: population dynamics stopped: {summary['status']}; the recorded "
              f"steps were saved to {ctx.out}", file=sys.stderr)
    if ctx.args.convergence:
        ctx.log("[population] sampled runs for growing N ...")
        conv = run_convergence_step(ctx.config, ctx.seed, ctx.out / "convergence", ctx.progress,
                                    ctx.args.quick, figures, ctx.args.ns)
        summary["convergence"] = conv
        summary["figures"] = summary["figures"] + conv["figures"]
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


def render(s: dict) -> str:
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


def reproduce_population(out_dir: Path, config: Config, seed: int, quick: bool,
                         progress: bool) -> dict:
    """Reproduction step ``population``: the population dynamics (``DEFAULT_STEPS`` steps, into
    ``out_dir``). Raises ValueError (with the cost) when the config is too large for complete
    enumeration at every step (e.g. D = 64)."""
    return run_dynamics(config, seed, Path(out_dir), progress, DEFAULT_STEPS)


def reproduce_convergence(out_dir: Path, config: Config, seed: int, quick: bool,
                          progress: bool) -> dict:
    """Reproduction step ``convergence``: the sampled-vs-population distance against N
    (``quick``: ``QUICK_NS``, ``QUICK_SEEDS`` seeds, ``QUICK_STEPS`` steps; otherwise
    ``REPRODUCE_NS`` (250 to 2000), ``DEFAULT_SEEDS`` seeds, ``STUDY_STEPS`` steps)."""
    return run_convergence_step(config, seed, Path(out_dir), progress, quick,
                                Ns=None if quick else REPRODUCE_NS)
