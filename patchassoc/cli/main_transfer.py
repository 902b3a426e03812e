"""``patchassoc transfer``: the pre-registered transfer study (SPEC section 6, claim 5).

The study is :mod:`patchassoc.simulations.studies.claim5_transfer.pipeline`: calibration,
pretraining, the sweep of cells, the statistics and the claim. This command adds its options,
draws ``transfer.png`` and prints the table. Cells run on ``--jobs`` local processes or on
``--dask ADDRESS``, are stored as they finish, and an interrupted study resumes without
recomputing them.
"""
from __future__ import annotations

from pathlib import Path

from patchassoc.cli.options import add_dask_options, add_no_figures, positive_int


NAME = "transfer"
HELP = ("transfer study (claim 5, pre-registered): downstream test error against N for the "
        "frozen pretrained attention and baselines (identity, uniform, initial Q0, wrong "
        "partition, joint training from scratch) over several upstream seeds; N_eps and the "
        "ratio N_eps(best baseline) / N_eps(pretrained) with a hierarchical bootstrap CI at every "
        "eps of the declared grid")
#: What it allocates (:mod:`patchassoc.cli.resources`), checked before it runs.
ALLOCATES = ("start",)
DEFAULT_PRESET = "ref"

__all__ = ["NAME", "HELP", "describe", "add_arguments", "run", "render"]


def describe() -> str:
    """The command's description: its help and the declared setting (SPEC section 6, item 5)."""
    from patchassoc.simulations.studies.claim5_transfer.pipeline import HELP as FULL
    return FULL


def add_arguments(parser) -> None:
    from patchassoc.simulations.studies.claim5_transfer import protocol as P
    from patchassoc.simulations.studies.claim5_transfer.tasks import TEST_MODES
    parser.add_argument("--protocol", choices=tuple(P.PROTOCOLS), default="limit",
                        help="limit: the protocol that decides claim 5 (the empirical-risk "
                             "flow's attention at T = 1e15, every method trained to the same "
                             "fit); budget: the first declaration (claim 2's 600-step GD "
                             "upstream, at most 300 steps), a reading within a budget")
    parser.add_argument("--upstream-from", type=Path, default=None, metavar="DIR",
                        help="where claim 2's empirical-risk flows are (a reproduction, its "
                             "seeds folder or a flows folder); those missing are run first")
    parser.add_argument("--quick", action="store_true",
                        help=f"a preview on {P.LIMIT_QUICK['upstream_seeds']} x "
                             f"{P.LIMIT_QUICK['downstream_seeds']} seeds and N up to "
                             f"{P.LIMIT_QUICK['Ns'][-1]} (not a verdict)")
    parser.add_argument("--jobs", type=positive_int, default=None, metavar="K",
                        help="local worker processes (default: all cores)")
    add_dask_options(parser, "run the upstream x downstream cells on the Dask scheduler at "
                             "ADDRESS instead of local processes (--jobs is then ignored; needs "
                             "the optional extra dask and this package importable on the "
                             "workers)")
    parser.add_argument("--upstream-seeds", type=int, default=None, metavar="U",
                        help=f"number of upstream seeds (declared {P.UPSTREAM_SEEDS}; fewer is "
                             f"a preview)")
    parser.add_argument("--seeds", type=int, default=None, metavar="K",
                        help=f"downstream seeds per upstream seed (declared "
                             f"{P.DOWNSTREAM_SEEDS}; fewer is a preview)")
    parser.add_argument("--test-mode", choices=TEST_MODES, default="projected",
                        help="draw test images in projected form (exact law, default) or "
                             "explicitly")
    add_no_figures(parser, "transfer.png")


def run(ctx) -> dict:
    from patchassoc.simulations.studies.claim5_transfer.pipeline import run_study
    from patchassoc.simulations.studies.study import Outcome
    a = ctx.args
    if a.upstream_from is not None and not a.upstream_from.is_dir():
        raise ValueError(f"--upstream-from {a.upstream_from}: no such folder")
    if a.upstream_from is not None and a.protocol != "limit":
        raise ValueError("--upstream-from reads empirical-risk flows: it needs --protocol limit")
    summary = run_study(ctx.config, ctx.seed, ctx.out, protocol=a.protocol, quick=a.quick,
                        jobs=a.jobs, dask=a.dask, upstream_seeds=a.upstream_seeds,
                        seeds=a.seeds, test_mode=a.test_mode, progress=ctx.progress,
                        log=ctx.log, upstream_from=a.upstream_from)
    summary["figures"] = ctx.draw("transfer", Outcome(summary, saved=ctx.out / "transfer.json"))
    return summary


def render(summary: dict) -> str:
    from patchassoc.simulations.studies.claim5_transfer import protocol as P
    from patchassoc.simulations.studies.claim5_transfer.verdict import _num
    st = summary["setting"]
    ups = summary["upstream"]["runs"]
    proto = summary.get("protocol", "budget")
    lines = [f"transfer study, protocol {proto} "
             f"({'quick preview' if summary['quick'] else 'full'}): downstream "
             f"sigma~ sqrt(d) = {st['sigma_sqrt_d']:.3f} (block-uniform floor "
             f"{100 * summary['floors']['block_uniform']:.2f} %), q~ = {st['q']:.3f}; "
             f"{summary['n_upstream']} upstream x {summary['n_downstream']} downstream seeds; "
             f"pretrained within-set mass "
             + ", ".join(f"{r['within_mass_mean']:.3f}" for r in ups),
             "  error floors (v along w~*, mean over upstream seeds): "
             + ", ".join(f"{m} {100 * v['mean']:.2f} %" for m, v in summary["floors"].items()
                         if isinstance(v, dict)),
             "  N_eps by eps ('>' censored at N_max; '~' interpolated in the geometric part); "
             "ideal = B / C, the bound:"]
    refs = summary.get("references", [])
    methods = [summary["pretrained"]] + summary["baselines"] + list(refs)
    names = {"pretrained_rule": "at rule"}
    lines.append("  " + f"{'eps':<6}" + "".join(f"{names.get(m, m):>11}" for m in methods)
                 + f"{'ratio':>9}{'95% CI':>16}{'bound':>9}")
    Nmax = summary["N"][-1]
    for r in summary["by_eps"]:
        cells = []
        for m in methods:
            v = r["n_eps"][m]
            lo, hi = r["n_eps_bracket"][m]
            text = f">{Nmax}" if v is None else (f"{v:.0f}" if hi is not None and
                                                   hi - lo <= 1 else f"~{v:.1f}")
            cells.append(f"{text:>11}")
        ci = r["ratio_ci"]
        ratio = f"{'>=' if r['ratio_is_lower_bound'] else ''}{_num(r['ratio'])}"
        b = (r.get("references") or {}).get("ideal")
        bound = "" if b is None else f"{'>=' if b['ratio_is_lower_bound'] else ''}{_num(b['ratio'])}"
        lines.append(f"  {100 * r['eps']:>4g} %" + "".join(cells) + f"{ratio:>9}"
                     + f"{'[' + _num(ci[0]) + ', ' + _num(ci[1]) + ']':>16}{bound:>9}")
    stops = {}
    for m, rows in summary.get("diagnostics", {}).items():
        for row in rows.values():
            for k, n in (row.get("stops") or {}).items():
                stops.setdefault(m, {}).setdefault(k, 0)
                stops[m][k] += n
    if stops:
        lines.append("  what stopped the cells: " + "; ".join(
            f"{m} " + ", ".join(f"{k} {n}" for k, n in v.items()) for m, v in stops.items()))
    moving = {m: sum(row.get("moving", 0) for row in rows.values())
              for m, rows in summary.get("diagnostics", {}).items()}
    if any(moving.values()):
        lines.append("  cut while moving (flagged): " + ", ".join(
            f"{m} {n}" for m, n in moving.items() if n))
    c = summary["claim5"]
    verdict = {"pass": "PASSED", "fail": "NOT MET", "preview": "PREVIEW, NOT A VERDICT"}[
        c["status"]]
    lines.append(f"  claim 5 (ratio >= {P.RATIO_MIN:g} and CI low > {P.CI_LOW_MIN:g} at every "
                 f"eps): {verdict}; {c['detail']}")
    t = summary["timing"]
    lines.append(f"  {t['cells']} cells ({t['cells_computed']} computed, {t['cells_reused']} "
                 f"reused), {t['cell_cpu_seconds_total']:.0f} cell CPU-seconds, wall "
                 f"{t['wall_seconds']:.0f} s; figures: {', '.join(summary['figures']) or 'none'}")
    return "\n".join(lines)
