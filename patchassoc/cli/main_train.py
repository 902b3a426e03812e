"""``patchassoc train``: sampled-data gradient descent on N samples, with results and figures."""
from __future__ import annotations


NAME = "train"
HELP = ("train the positional-attention model by full-batch gradient descent on sampled data "
        "and write results and figures")


def add_arguments(parser) -> None:
    parser.add_argument("--no-figures", action="store_true", help="skip writing the figures")
    parser.add_argument("--animate", action="store_true",
                        help="also write the dynamics as an animation over log-time (GIF; MP4 "
                             "too where ffmpeg exists): the attention matrix in set order, the "
                             "share and the error, frame by frame")


def run(ctx) -> dict:
    from patchassoc.simulations.studies.sampled_training import run_and_save
    return ctx.finish("train", run_and_save(ctx.config, ctx.seed, ctx.out, ctx.progress),
                      "training")


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
