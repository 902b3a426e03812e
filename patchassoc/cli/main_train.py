"""``patchassoc train``: sampled-data gradient descent on N samples, with results and figures."""
from __future__ import annotations

from pathlib import Path

from patchassoc.theory.config import Config

from patchassoc.simulations.engines.sampled_descent import TrainResult, train

NAME = "train"
HELP = ("train the positional-attention model by full-batch gradient descent on sampled data "
        "and write results and figures")


def add_arguments(parser) -> None:
    parser.add_argument("--no-figures", action="store_true", help="skip writing the figures")


def write_figures(result: TrainResult, folder: Path) -> list[str]:
    """The attention-map evolution and the training curves, PNG + PDF."""
    from patchassoc.figures import attention_maps, training_curves

    t = result.trajectory
    cfg = result.config
    paths = attention_maps.save(t.A, t.steps, result.structure, folder,
                                mass=t.share_mean if t.share_mean is not None else t.mass_mean,
                                title=f"Attention maps during sampled-data training "
                                      f"({cfg.param}, diagonal {cfg.diagonal}, N={cfg.n_train})")
    paths += training_curves.save(result, folder)
    return [str(p) for p in paths]


def run_and_save(config: Config, seed: int, out: Path, progress: bool,
                 figures: bool = True) -> dict:
    result = train(config, seed, progress=progress)
    result.save(out)
    summary = result.summary()
    summary["out"] = str(out)
    summary["figures"] = write_figures(result, out) if figures else []
    if result.trajectory.status not in ("ok", "converged"):
        summary["exit_status"] = 1
    return summary


def run(ctx) -> dict:
    summary = run_and_save(ctx.config, ctx.seed, ctx.out, ctx.progress,
                           figures=not ctx.args.no_figures)
    if summary.get("exit_status"):
        print(f"patchassoc: training stopped: {summary['status']}; "
              f"the recorded steps were saved to {ctx.out}", file=__import__("sys").stderr)
    return summary


def association_line(s: dict) -> str:
    """One line with the paper's association metrics of a summary (SPEC section 3)."""
    if s.get("topc_rows") is None:
        return "  association metrics: not recorded"
    verdict = "associated" if s["associated"] else "NOT associated"
    return (f"  Def. 2.2 (top-C = own set): {s['topc_rows']}/{s['D']} rows; set-mate share "
            f"{s['share_initial']:.3f} -> mean {s['share_mean']:.3f}, min {s['share_min']:.3f}; "
            f"{verdict} at eps = {s['eps']:g}")


def render(summary: dict) -> str:
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


def _reproduce(param: str, out: Path, config: Config, seed: int, quick: bool,
               progress: bool) -> dict:
    cfg = config.replace(param=param)
    if quick:
        # a preview: smaller test sample; the Gram run (no claim depends on it) is shorter
        cfg = cfg.replace(n_test=min(cfg.n_test, 2000),
                          steps=min(cfg.steps, 300) if param == "gram" else cfg.steps)
    return run_and_save(cfg, seed, out, progress)


def reproduce_train(out: Path, config: Config, seed: int, quick: bool, progress: bool) -> dict:
    """Reproduction step: the reference run with free logits Q."""
    return _reproduce("logits", out, config, seed, quick, progress)


def reproduce_train_gram(out: Path, config: Config, seed: int, quick: bool,
                         progress: bool) -> dict:
    """Reproduction step: the reference run with positional encodings, Q = P P^T."""
    return _reproduce("gram", out, config, seed, quick, progress)
