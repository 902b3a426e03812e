"""``patchassoc paper-figures``: the analogues of the paper's Figures 3 and 4.

The study is :mod:`patchassoc.simulations.studies.paper_settings`. Writes ``paper_fig4.{png,pdf}``
(learned A next to the set mask; test error and cos(v, w*) against log step), the usual training
figures, the run's result folder and ``paper_fig3.{png,pdf}`` (one data point on a 6 x 6 patch
grid of 2 x 2 sets).

``--set`` overrides apply to the Figure 4 run (default preset ``paper-fig4``).
"""
from __future__ import annotations

import functools

from patchassoc.simulations.analysis.formatting import num

NAME = "paper-figures"
HELP = ("the analogues of the paper's Figures 3 (a data point on its patch grid) and 4 (the "
        "paper's model trained: learned A vs the set mask, test error and cos(v, w*))")
#: What it allocates (:mod:`patchassoc.cli.resources`), checked before it runs.
ALLOCATES = ("start",)
DEFAULT_PRESET = "paper-fig4"

def add_arguments(parser) -> None:
    from patchassoc.cli.options import add_no_figures
    parser.add_argument("--quick", action="store_true",
                        help="a shorter Figure 4 run (350 steps, N = 2000, 2000 test images)")
    add_no_figures(parser)


def run(ctx) -> dict:
    from patchassoc.simulations.studies.paper_settings import quick_config, run_fig3, run_fig4
    cfg = quick_config(ctx.config) if ctx.args.quick else ctx.config
    outcome = run_fig4(cfg, ctx.seed, ctx.out, ctx.progress)
    outcome.summary["fig3"] = outcome.products["point"] = run_fig3(ctx.seed, ctx.out)
    outcome.summary["figures"] = ctx.draw("paper_figures", outcome)
    return outcome.summary


def render(s: dict) -> str:
    from patchassoc.simulations.studies.paper_settings import PLATEAU_BAND
    from patchassoc.cli.main_train import association_line
    p = s["picture"]
    cfg = s["config"]
    lines = [f"paper's Fig. 4 analogue: d={cfg['d']}, L={cfg['L']}, C={cfg['C']}, q={cfg['q']:g}, "
             f"N={cfg['n_train']}, {s['steps']} steps ({s['seconds']:.1f} s); results in "
             f"{s['out']}",
             association_line(s),
             f"  cos(v, w*) >= 0.99 from step {_step(p['t_cos'])} (final "
             f"{_f(p['cos_final'])}); test error {_f(p['plateau_error'])} at that step, within "
             f"x{PLATEAU_BAND} of it until step {_step(p['plateau_until'])}; Def. 2.2 in every "
             f"row from step {_step(p['t_topc'])}, associated at eps = 0.25 from step "
             f"{_step(p['t_assoc'])}; final test error "
             f"{_f(p['final_error'])}",
             f"  the paper's picture (cos first, plateau, drop once Def. 2.2 holds): "
             f"{'shown' if p['shows_picture'] else 'NOT shown'}",
             f"  paper's Fig. 3 analogue: one data point (y = {s['fig3']['y']:+d}, signal set "
             f"{s['fig3']['lstar']}) on the 6 x 6 grid"]
    return "\n".join(lines)


def _step(x) -> str:
    return "never" if x is None else str(x)


_f = functools.partial(num, spec=".4f")  # the shared formatting
