"""``patchassoc robustness``: which conclusions survive the choices the paper leaves open.

One change at a time from the reference choices (SPEC section 6, "Robustness to the choices the
paper leaves open"; :mod:`patchassoc.simulations.studies.robustness`): the activation (p, nu),
the step-size ratio eta_Q / eta_v, the start (kappa, the sign of alpha0, and kappa = 0, the
uniform-attention control), the feature-noise rate q and the diagonal. Each variant is read by the
claims' own rules: claim 1 on 41 regime points (D <= 24, d = 256 and 1024) at the flow's horizon,
claim 7 on the family at k = 4..7, claim 2 on 5 seeds by the empirical-risk flow to T = 1e15
and, beside it, by GD to H = 3,000 (a reading: 5 seeds cannot meet the Wilson rule). Prints the
table (rows = variants, columns = claims; each cell the verdict and its key number) and its
reading, and draws ``robustness_table.png``. ``--claims 2`` runs the claim-2 part alone (``1``,
``7`` and lists such as ``1,2`` pick others); the table says the rest was not run.

Cells are stored in ``<out>/cells/`` as they finish (sampled runs in ``<out>/runs/``, claim 2's
flows in ``<out>/flows/``); a re-run
computes only the missing ones. ``--jobs N`` runs N local processes, ``--dask ADDRESS`` a Dask
cluster. ``--quick`` runs claim 1's reference point (4, 4, 256) for every row: a preview, never a
verdict. ``--json`` holds every variant with its readings (``variants[*].claim1``: pass fraction,
limit classes, median time to 1.3 x Bayes, the limit against the reference's; ``claim7``:
exponents and rise; ``claim2_flow``: pass count at T, times, limit classes; ``claim2``: pass
count at H and times), the table and the reading. A run whose
``--preset``, ``--set`` or ``--seed`` is not the reference's is a preview. ``check --from DIR``
prints the table of ``DIR/robustness/robustness.json``: ``--out DIR/robustness`` puts the full
study there, in place of a reproduction's preview.

References
----------
SPEC section 6 (robustness).
"""
from __future__ import annotations

from pathlib import Path
from patchassoc.cli.options import add_dask_options, add_no_figures, positive_int

NAME = "robustness"
HELP = ("claims 1, 2 and 7 under one change at a time from the reference choices (activation, "
        "step-size ratio, start, noise rate, diagonal): the table of verdicts (--quick, --jobs, "
        "--dask, resumable)")
#: What it allocates (:mod:`patchassoc.cli.resources`), checked before it runs.
ALLOCATES = ("start",)

__all__ = ["NAME", "HELP", "add_arguments", "run", "render"]


def _claims(text: str) -> tuple[str, ...]:
    """Some of the claims 1, 2, 7, separated by commas."""
    import argparse
    claims = tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    if not claims or any(c not in ("1", "2", "7") for c in claims):
        raise argparse.ArgumentTypeError(f"expected some of 1, 2, 7 separated by commas, got "
                                         f"{text!r}")
    return claims


def add_arguments(parser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="claim 1's reference point (4, 4, 256) for every row: a preview")
    parser.add_argument("--claims", type=_claims, default=None, metavar="1,2,7",
                        help="run only these claims' cells (default all; 2 = the claim-2 part: "
                             "the flows to T and GD to H)")
    parser.add_argument("--jobs", type=positive_int, default=1, help="local worker processes")
    add_dask_options(parser, "run the cells on this Dask scheduler")
    add_no_figures(parser, "the figure")


def run(ctx) -> dict:
    from patchassoc.simulations.studies.robustness.run import SUMMARY, compute
    from patchassoc.simulations.studies.study import Outcome
    a = ctx.args
    from patchassoc.simulations.studies.robustness.runs import CLAIMS
    if a.quick and a.claims is not None:
        raise ValueError("--quick runs claim 1's reference point only; --claims applies to the "
                         "full study")
    summary = compute(ctx.out, mode="quick" if a.quick else "full", base=ctx.preset_name,
                      seed=ctx.seed, sample_config=ctx.config, jobs=a.jobs, dask=a.dask,
                      progress=ctx.progress and not ctx.json, claims=a.claims or tuple(CLAIMS))
    return ctx.finish(NAME, Outcome(summary, saved=Path(ctx.out) / SUMMARY), "robustness")


def render(s: dict) -> str:
    from patchassoc.cli.main_check import render_table
    lines = render_table(dict(s["table"], reading=s["reading"], preview=s["preview"],
                              preview_reasons=s["preview_reasons"]))
    c = s["cells"]
    cost = s["cell_cpu_seconds"]
    lines.append(f"cells: {c['total']} ({c['computed']} computed, {c['reused']} reused); "
                 f"{s['wall_seconds']:.1f} s wall; CPU-seconds in cells: claim 1 flows "
                 f"{cost['point']:.1f}, claim 7 flows {cost['family']:.1f}, claim 2 flows to T "
                 f"{cost.get('flow', 0.0):.1f}, claim 2 GD to H {cost['seed']:.1f}")
    lines += [f"figure: {p}" for p in s.get("figures", [])]
    lines.append(f"written: {Path(s['out']) / 'robustness.json'}")
    return "\n".join(lines)
