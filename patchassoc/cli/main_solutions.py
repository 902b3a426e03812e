"""``patchassoc solutions``: the explicit solutions, their certified risk and error, the Bayes
error, which generalize, which have patch association, and what gradient descent selects.

Two configurations: ``main`` (the resolved config, the reference one by default) and the
documented alternative ``alt`` (the same with q = ``--alt-q``, default
:data:`patchassoc.simulations.studies.claim3_solutions.ALT_Q`), where identity and uniform attention generalize within
the slack of the criterion. The sampled-data GD row is computed for ``main`` only (it trains the
model with :func:`patchassoc.simulations.engines.sampled_descent.train`, or loads ``--train-from DIR``).

Writes ``<out>/main`` and ``<out>/alt`` (result folders, each with the population GD run in
``population_gd/``) and the figures ``solutions_lambda_main`` / ``solutions_lambda_alt``.

References
----------
SPEC section 6, claim 3; conventions in :mod:`patchassoc.theory.solutions`.
"""
from __future__ import annotations

import math
from pathlib import Path

from patchassoc.theory import solutions as th
from patchassoc.theory.config import Config

from patchassoc.simulations.studies.claim3_solutions import (ALT_Q, DEFAULT_LAMBDAS, GD_STEPS, MC_SAMPLES, QUICK_GD_STEPS,
                         QUICK_LAMBDAS, alt_config, solutions_table)

NAME = "solutions"
HELP = ("explicit solutions (block-uniform, identity, uniform, wrong partition, shifted blocks) "
        "and the GD solutions: certified population risk and error next to the exact Bayes "
        "error, association, generalization; figure against lambda")

__all__ = ["NAME", "HELP", "add_arguments", "run", "render", "compute", "reproduce_step",
           "render_table"]


def _lambdas(text: str) -> tuple[float, ...]:
    try:
        vals = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"--lambdas expects comma-separated numbers, got {text!r}")
    if not vals or any(not math.isfinite(v) or v < 0 for v in vals):
        raise ValueError(f"--lambdas expects finite numbers >= 0, got {text!r}")
    return vals


def add_arguments(parser) -> None:
    parser.add_argument("--lambdas", default=None, metavar="L1,L2,...",
                        help="lambda grid (default " + ",".join(f"{x:g}" for x in DEFAULT_LAMBDAS)
                             + "); the table reports the largest")
    parser.add_argument("--alpha", type=float, default=None,
                        help="fixed alpha of the constructions (default: population GD's alpha)")
    parser.add_argument("--gd-steps", type=int, default=None,
                        help=f"population GD steps (default {GD_STEPS}; quick {QUICK_GD_STEPS})")
    parser.add_argument("--alt-q", type=float, default=ALT_Q,
                        help=f"q of the alternative configuration (default {ALT_Q})")
    parser.add_argument("--no-alt", action="store_true", help="skip the alternative config")
    parser.add_argument("--no-sampled", action="store_true",
                        help="skip the sampled-data GD row (no training)")
    parser.add_argument("--train-from", type=Path, default=None, metavar="DIR",
                        help="use a saved `patchassoc train` result folder for the sampled row")
    parser.add_argument("--mc-samples", type=int, default=MC_SAMPLES,
                        help=f"Monte Carlo draws beyond brute force (default {MC_SAMPLES:,})")
    parser.add_argument("--quick", action="store_true", help="coarser lambda grid, fewer steps")
    parser.add_argument("--no-figures", action="store_true", help="skip writing the figures")


def _load_train(folder: Path | None, config: Config, seed: int):
    """A saved TrainResult usable for the sampled row (same sizes, logits, seed), else None."""
    if folder is None:
        return None
    from patchassoc.simulations.engines.sampled_descent import TrainResult
    folder = Path(folder)
    if not (folder / "metrics.json").exists():
        raise FileNotFoundError(f"{folder} is not a `patchassoc train` result folder")
    tr = TrainResult.load(folder)
    c = tr.config
    if (c.L, c.C, c.q, c.param, tr.seed) != (config.L, config.C, config.q, "logits", seed):
        raise ValueError(f"{folder} was trained with L={c.L}, C={c.C}, q={c.q:.4g}, "
                         f"param={c.param}, seed {tr.seed}; need L={config.L}, C={config.C}, "
                         f"q={config.q:.4g}, logits, seed {seed}")
    return tr


def compute(config: Config, seed: int, out: Path, *, lambdas=None, alpha=None, gd_steps=None,
            alt_q: float | None = ALT_Q, sampled: bool = True, train_result=None,
            mc_samples: int = MC_SAMPLES, quick: bool = False, figures: bool = True,
            progress: bool = False, label: str = "ref") -> dict:
    """Compute, save and draw the tables of ``main`` (and ``alt`` unless ``alt_q`` is None)."""
    out = Path(out)
    lambdas = lambdas or (QUICK_LAMBDAS if quick else DEFAULT_LAMBDAS)
    gd_steps = gd_steps or (QUICK_GD_STEPS if quick else GD_STEPS)
    if mc_samples < 2:
        raise ValueError("--mc-samples must be >= 2")
    summary: dict = {"out": str(out), "configs": {}, "figures": []}
    plan = [("main", config, sampled, label)]
    if alt_q is not None:
        if not 0.0 <= alt_q <= 1.0:
            raise ValueError(f"--alt-q must lie in [0, 1], got {alt_q}")
        plan.append(("alt", alt_config(config, alt_q), False, f"alt (q={alt_q:g})"))
    for key, cfg, with_sampled, lab in plan:
        res, pop = solutions_table(cfg, seed, label=lab, lambdas=lambdas, alpha=alpha,
                                   gd_steps=gd_steps, sampled=with_sampled,
                                   train_result=train_result if key == "main" else None,
                                   mc_samples=mc_samples, progress=progress)
        res.save(out / key)
        pop.save(out / key / "population_gd")
        s = res.summary()
        s["out"] = str(out / key)
        summary["configs"][key] = s
        if figures:
            from patchassoc.figures import solutions_lambda as fig
            summary["figures"] += [str(p) for p in fig.save(res, out, f"solutions_lambda_{key}")]
    return summary


def run(ctx) -> dict:
    a = ctx.args
    if a.gd_steps is not None and a.gd_steps < 1:
        raise ValueError("--gd-steps must be >= 1")
    train_result = _load_train(a.train_from, ctx.config, ctx.seed)
    return compute(ctx.config, ctx.seed, ctx.out,
                   lambdas=_lambdas(a.lambdas) if a.lambdas else None, alpha=a.alpha,
                   gd_steps=a.gd_steps, alt_q=None if a.no_alt else a.alt_q,
                   sampled=not a.no_sampled, train_result=train_result,
                   mc_samples=a.mc_samples, quick=a.quick, figures=not a.no_figures,
                   progress=ctx.progress and not ctx.json, label=ctx.preset_name)


def _fmt(x, spec=".4g"):
    if x is None:
        return "-"
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return format(x, spec)


def render_table(s: dict) -> str:
    """The table of one configuration (a summary of :class:`SolutionsResult`)."""
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
        rows.append((r["label"], r["method"], f"{r['alpha']:.3f}", _fmt(r["risk"]), err,
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
    lines.append(f"  closed forms: identity/uniform error = P(sum delta < -C) + P(= -C)/2 = "
                 f"{s['sign_of_sum_error']:.6g} for every alpha > 0; block-uniform's hard limit "
                 f"is Bayes-optimal for alpha > {s['block_bayes_alpha']:.4g}")
    return "\n".join(lines)


def render(summary: dict) -> str:
    configs = summary["configs"]
    order = [k for k in ("main", "alt") if k in configs] + sorted(set(configs) - {"main", "alt"})
    blocks = [render_table(configs[k]) for k in order]
    tail = [f"results: {summary['out']}"] + [f"figure: {p}" for p in summary["figures"]]
    return "\n\n".join(blocks) + "\n\n" + "\n".join(tail)


def reproduce_step(out_dir: Path, config: Config, seed: int, quick: bool,
                   progress: bool) -> dict:
    """Reproduction step: the reference table and figure (``main/``; claim 3 reads it). The
    alternative configuration ``alt/`` (41 CPU-s, a population GD run of 10,000 steps) is left
    to ``patchassoc solutions``, to keep the reproduction within its time budget.

    The sampled-data row reuses the sibling ``train/`` result of the reproduction when it was
    trained with the same sizes, q, logits and seed; otherwise it trains.
    """
    out_dir = Path(out_dir)
    train_result = None
    sibling = out_dir.parent / "train"
    if (sibling / "metrics.json").exists():
        try:
            train_result = _load_train(sibling, config, seed)
        except ValueError:
            train_result = None
    return compute(config, seed, out_dir, quick=quick, train_result=train_result, alt_q=None,
                   progress=progress)
