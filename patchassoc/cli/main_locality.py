"""``patchassoc locality``: train on square-window structures and draw attention over the grid.

The sets are the w x w windows of the sqrt(D) x sqrt(D) patch grid (``structure=windows``), so
patch association is spatial locality. The default grid is the reference one (4 x 4 patches,
2 x 2 windows); ``--set L=9 --set C=4`` gives a 6 x 6 grid of 2 x 2 windows.
"""
from __future__ import annotations


NAME = "locality"
HELP = ("train with square-window structures on the patch grid and draw the learned attention "
        "of chosen patches over the image (spatial locality)")
#: What it allocates (:mod:`patchassoc.cli.resources`), checked before it runs.
ALLOCATES = ("start", "sample")


def add_arguments(parser) -> None:
    from patchassoc.cli.options import add_no_figures
    add_no_figures(parser, "the attention figure")
    parser.add_argument("--queries", type=int, nargs="+", default=None, metavar="I",
                        help="query patches to draw (row-major indices; default: corner, edge, "
                             "interior)")


def run(ctx) -> dict:
    from patchassoc.simulations.studies.spatial_locality import run_locality
    outcome = run_locality(ctx.config, ctx.seed, ctx.out, ctx.progress, ctx.args.queries)
    outcome.summary["figures"] = ctx.draw("locality", outcome)
    return outcome.summary


def render(summary: dict) -> str:
    from patchassoc.cli.main_train import render as render_train
    return render_train(summary)
