"""``patchassoc locality``: train on square-window structures and draw attention over the grid.

The sets are the w x w windows of the sqrt(D) x sqrt(D) patch grid (``structure=windows``), so
patch association is spatial locality. The default grid is the reference one (4 x 4 patches,
2 x 2 windows); ``--set L=9 --set C=4`` gives a 6 x 6 grid of 2 x 2 windows.
"""
from __future__ import annotations

from pathlib import Path

from patchassoc.theory.config import Config

from patchassoc.simulations.engines.sampled_descent import train

NAME = "locality"
HELP = ("train with square-window structures on the patch grid and draw the learned attention "
        "of chosen patches over the image (spatial locality)")


def add_arguments(parser) -> None:
    parser.add_argument("--queries", type=int, nargs="+", default=None, metavar="I",
                        help="query patches to draw (row-major indices; default: corner, edge, "
                             "interior)")


def run_locality(config: Config, seed: int, out: Path, progress: bool, queries=None) -> dict:
    from patchassoc.figures import attention_maps, locality

    cfg = config.replace(structure="windows")
    if queries is not None:
        bad = [i for i in queries if not 0 <= i < cfg.D]
        if bad:
            raise ValueError(f"query patches must lie in 0..{cfg.D - 1}, got {bad}")
    result = train(cfg, seed, progress=progress)
    result.save(out)
    t = result.trajectory
    paths = locality.save(t.A, t.steps, result.structure, out, mass=t.mass_mean, queries=queries)
    paths += attention_maps.save(t.A, t.steps, result.structure, out, mass=t.mass_mean,
                                 title="Attention maps with square-window sets")
    summary = result.summary()
    summary.update(out=str(out), figures=[str(p) for p in paths])
    if t.status not in ("ok", "converged"):
        summary["exit_status"] = 1
    return summary


def run(ctx) -> dict:
    return run_locality(ctx.config, ctx.seed, ctx.out, ctx.progress, ctx.args.queries)


def reproduce_step(out: Path, config: Config, seed: int, quick: bool, progress: bool) -> dict:
    """Reproduction step: the windows run and the locality figure."""
    if quick:  # a preview: no claim depends on this run
        config = config.replace(n_test=min(config.n_test, 2000), steps=min(config.steps, 300))
    return run_locality(config, seed, out, progress)


def render(summary: dict) -> str:
    from patchassoc.cli.main_train import render as render_train
    return render_train(summary)
