"""``patchassoc solutions``: the explicit solutions, their certified risk and error, the Bayes
error, which generalize, which have patch association, and what gradient descent selects.

Two configurations: ``main`` (the resolved config, the reference one by default) and the documented
alternative ``alt`` (the same with q = ``--alt-q``, default
:data:`patchassoc.simulations.studies.claim3_solutions.measurement.ALT_Q`), where identity and uniform attention
generalize within the slack of the criterion. The sampled-data GD row is computed for ``main`` only
(it trains the model with :func:`patchassoc.simulations.engines.sampled_descent.train`, or loads
``--from DIR``, a saved ``patchassoc train`` folder).

Writes ``<out>/main`` and ``<out>/alt`` (result folders, each with the population GD run in
``population_gd/``) and the figures ``solutions_lambda_main`` / ``solutions_lambda_alt``.

References
----------
SPEC section 6, claim 3; conventions in :mod:`patchassoc.theory.solutions`.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path

from patchassoc.cli.options import input_path
from patchassoc.simulations.analysis.formatting import num
from patchassoc.theory import solutions as th


NAME = "solutions"
HELP = ("explicit solutions (block-uniform, identity, uniform, wrong partition, shifted blocks) "
        "and the GD solutions: certified population risk and error next to the exact Bayes "
        "error, association, generalization; figure against lambda")
#: What it allocates (:mod:`patchassoc.cli.resources`), checked before it runs.
ALLOCATES = ("start",)

__all__ = ["NAME", "HELP", "add_arguments", "run", "render", "render_table"]


def _lambdas(text: str) -> tuple[float, ...]:
    try:
        vals = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"--lambdas expects comma-separated numbers, got {text!r}")
    if not vals or any(not math.isfinite(v) or v < 0 for v in vals):
        raise ValueError(f"--lambdas expects finite numbers >= 0, got {text!r}")
    return vals


def add_arguments(parser) -> None:
    from patchassoc.cli.options import add_no_figures
    from patchassoc.simulations.studies.claim3_solutions import (
        ALT_Q, DEFAULT_LAMBDAS, GD_STEPS, MC_SAMPLES, QUICK_GD_STEPS)
    parser.add_argument("--lambdas", default=None, metavar="L1,L2,...",
                        help="lambda grid (default " + ",".join(f"{x:g}" for x in DEFAULT_LAMBDAS)
                             + "); the table reports the largest")
    parser.add_argument("--alpha", type=float, default=None,
                        help="fixed alpha of the constructions (default: population GD's alpha)")
    parser.add_argument("--steps", type=int, default=None, metavar="N",
                        help=f"population GD steps (default {GD_STEPS}; quick {QUICK_GD_STEPS})")
    parser.add_argument("--alt-q", type=float, default=ALT_Q,
                        help=f"q of the alternative configuration (default {ALT_Q})")
    parser.add_argument("--no-alt", action="store_true", help="skip the alternative config")
    parser.add_argument("--no-sampled", action="store_true",
                        help="skip the sampled-data GD row (no training)")
    parser.add_argument("--from", dest="from_dir", type=Path, default=None, metavar="DIR",
                        help="use a saved `patchassoc train` result folder for the sampled row")
    parser.add_argument("--mc-samples", type=int, default=MC_SAMPLES,
                        help=f"Monte Carlo draws beyond brute force (default {MC_SAMPLES:,})")
    parser.add_argument("--quick", action="store_true", help="coarser lambda grid, fewer steps")
    add_no_figures(parser)


def run(ctx) -> dict:
    from patchassoc.simulations.studies.claim3_solutions import compute
    from patchassoc.simulations.studies.claim3_solutions.solutions_verdict import _load_train
    a = ctx.args
    if a.steps is not None and a.steps < 1:
        raise ValueError("--steps must be >= 1")
    if a.from_dir is not None:
        input_path(a.from_dir, "--from", "folder", "a `patchassoc train` result folder")
    train_result = _load_train(a.from_dir, ctx.config, ctx.seed)
    outcome = compute(ctx.config, ctx.seed, ctx.out,
                      lambdas=_lambdas(a.lambdas) if a.lambdas else None, alpha=a.alpha,
                      gd_steps=a.steps, alt_q=None if a.no_alt else a.alt_q,
                      sampled=not a.no_sampled, train_result=train_result,
                      mc_samples=a.mc_samples, quick=a.quick,
                      progress=ctx.progress and not ctx.json, label=ctx.preset_name)
    outcome.summary["figures"] = ctx.draw("solutions", outcome)
    return outcome.summary


_fmt = functools.partial(num, missing="-")  # the shared formatting


def render_table(s: dict) -> str:
    """The table of one configuration (a summary of :class:`~patchassoc.simulations.studies.claim3_solutions.table.SolutionsResult`)."""
    pr = s["problem"]
    bf = s.get("bayes_error_bruteforce")
    lines = [f"[{s['label']}] L={pr['L']}, C={pr['C']} (D={pr['D']}), q={pr['q']:.4g}, "
             f"p={pr['p']}, nu={pr['nu']:g}; constructions at lambda = {s['lambda_max']:g}, "
             f"alpha = {s['alpha0']:.4f} ({s['alpha0_source']})",
             f"  Bayes error {s['bayes_error']:.6g} (exact: closed-form enumeration"
             + (f"; brute-force oracle {bf:.6g}" if bf is not None else "") + ")",
             f"  {s['criterion']}; threshold {s['generalization_threshold']:.4g}"]
    head = ("solution", "method", "alpha", "risk", "error", "err/Bayes", "Def. 2.2 rows",
            "share min", "mass min", "association", "generalizes", "nearest",
            "gen. from lambda (share)")
    rows = [head]
    for r in s["rows"]:
        err = _fmt(r["error"], ".4g")
        if r["error_high"] > r["error_low"]:
            err = f"{err} [{r['error_low']:.3g}, {r['error_high']:.3g}]"
        gen_from = ("-" if r["generalizes_from_lambda"] is None else
                    f"{r['generalizes_from_lambda']:g} ({r['share_from_lambda']:.2f})")
        if r["name"].startswith("gd-"):
            gen_from = ""
        rows.append((r["label"], r["method"], f"{r['alpha']:.3f}", _fmt(r["risk"], '.4g'), err,
                     _fmt(r["error_over_bayes"], ".3f"), f"{r['topc_rows']}/{pr['D']}",
                     f"{r['share_min']:.3f}", f"{r['mass_min']:.3f}", r["association"],
                     r["generalizes"], r["nearest"], gen_from))
    widths = [max(len(row[k]) for row in rows) for k in range(len(head))]
    for k, row in enumerate(rows):
        lines.append("  " + "  ".join(cell.ljust(w) if c in (0, 1, 9, 10, 11) else cell.rjust(w)
                                      for c, (cell, w) in enumerate(zip(row, widths))))
        if k == 0:
            lines.append("  " + "-" * (sum(widths) + 2 * (len(widths) - 1)))
    gen = ", ".join(s["generalizing"]) or "none"
    gna = ", ".join(s["generalizing_without_association"]) or "none"
    lines.append(f"  generalizing constructions: {gen}; of which not associated (Def. 2.2 and "
                 f"share): {gna}; top-C disjoint from the own set in every row: "
                 f"{', '.join(s.get('disjoint', [])) or 'none'}")
    for name, g in s["gd"].items():
        lines.append(f"  {th.LABELS[name]}: {g['topc_rows']}/{pr['D']} rows satisfy Def. 2.2, "
                     f"share min {g['share_min']:.3f} -> '{g['association']}' at eps "
                     f"{g['eps']:g}; nearest construction '{g['nearest']}' (mean row TV to "
                     f"block-uniform {g['tv_to_block']:.3f}); generalizes: {g['generalizes']}")
        if g.get("full"):
            f = g["full"]
            lines.append(f"    with v_perp (Monte Carlo, {f['samples']:,} draws): error "
                         f"{f['error']:.4g} [{f['error_low']:.3g}, {f['error_high']:.3g}], risk "
                         f"{f['risk']:.4g} [{f['risk_low']:.4g}, {f['risk_high']:.4g}]")
    for c in s.get("controls", []):
        lines.append(f"  control {c['name']} ({c['label']}): {c['topc_rows']}/{c['D']} rows, "
                     f"share min {c['share_min']:.3f}, mass min {c['mass_min']:.3f} -> "
                     f"{'associated' if c['associated'] else 'not associated'} "
                     f"(expected: {c['expected']}; {'ok' if c['ok'] else 'WRONG'})")
    for r in s["rows"]:
        if r["note"]:
            lines.append(f"  note {r['name']}: {r['note']}")
    lines.append(closed_forms_line(s))
    return "\n".join(lines)


def closed_forms_line(s: dict) -> str:
    """The closed forms of the table: the identity/uniform error and the alpha above which
    block-uniform's hard limit is Bayes-optimal (+inf, "never", is stored as null)."""
    alpha = s.get("block_bayes_alpha")
    bayes_optimal = (f"is Bayes-optimal for alpha > {alpha:.4g}" if alpha is not None else
                     "is Bayes-optimal for no alpha")
    return (f"  closed forms: identity/uniform error = P(sum delta < -C) + P(= -C)/2 = "
            f"{s['sign_of_sum_error']:.6g} for every alpha > 0; block-uniform's hard limit "
            f"{bayes_optimal}")


def render(summary: dict) -> str:
    configs = summary["configs"]
    order = [k for k in ("main", "alt") if k in configs] + sorted(set(configs) - {"main", "alt"})
    blocks = [render_table(configs[k]) for k in order]
    tail = [f"results: {summary['out']}"] + [f"figure: {p}" for p in summary["figures"]]
    return "\n\n".join(blocks) + "\n\n" + "\n".join(tail)
