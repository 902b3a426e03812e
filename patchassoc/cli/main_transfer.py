"""``patchassoc transfer``: the pre-registered transfer study (SPEC section 6, claim 5).

The study is :mod:`patchassoc.simulations.studies.claim5_transfer.pipeline`: calibration,
pretraining, the sweep of cells, the statistics and the claim. This command adds its options,
draws ``transfer.png`` and prints the table. Cells run on ``--jobs`` local processes or on
``--dask ADDRESS``, are stored as they finish, and an interrupted study resumes without
recomputing them.
"""
from __future__ import annotations

from pathlib import Path

from patchassoc.cli.options import add_dask_options, add_no_figures, input_path, positive_int


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
    parser.add_argument("--family", action="store_true",
                        help=f"the law in d: the protocol at the limit at each d of claim 7's "
                             f"family (k = {', '.join(map(str, P.FAMILY_KS))}: d = round(e^k)), "
                             f"{P.FAMILY_UPSTREAM_SEEDS} upstream x "
                             f"{P.FAMILY_DOWNSTREAM_SEEDS} downstream seeds, the population "
                             f"flow's attention (and the empirical-risk flow's up to d = "
                             f"{P.EMPIRICAL_MAX_D}); reported, not a threshold")
    parser.add_argument("--ks", type=str, default=None, metavar="K,K,...",
                        help="with --family: the exponents k of d = round(e^k)")
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


def _ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(k) for k in text.split(","))
    except ValueError:
        raise ValueError(f"--ks must be integers separated by commas, got {text!r}") from None
    if not ks or min(ks) < 2 or max(ks) > 9 or len(set(ks)) != len(ks):
        raise ValueError(f"--ks must be distinct integers in 2..9 (d = round(e^k) up to 8103), "
                         f"got {text!r}")
    return tuple(sorted(ks))


def run_family(ctx) -> dict:
    from patchassoc.simulations.studies.claim5_transfer import protocol as P
    from patchassoc.simulations.studies.claim5_transfer.family import run_family as compute
    from patchassoc.simulations.studies.study import Outcome
    a = ctx.args
    if a.protocol != "limit" or a.upstream_from is not None or a.dask is not None:
        raise ValueError("--family runs the protocol at the limit on local processes: it takes "
                         "neither --protocol budget, --upstream-from nor --dask")
    q = P.FAMILY_QUICK if a.quick else {}
    ks = _ks(a.ks) if a.ks is not None else q.get("ks", P.FAMILY_KS)
    n_up = a.upstream_seeds or q.get("upstream_seeds", P.FAMILY_UPSTREAM_SEEDS)
    n_down = a.seeds or q.get("downstream_seeds", P.FAMILY_DOWNSTREAM_SEEDS)
    if n_up < 1 or n_down < 2:
        raise ValueError("--family needs --upstream-seeds >= 1 and --seeds >= 2")
    summary = compute(ctx.out, seed=ctx.seed, ks=ks, n_up=n_up, n_down=n_down,
                      Ns=q.get("Ns", P.LIMIT_N_GRID),
                      empirical_max_d=q.get("empirical_max_d", P.EMPIRICAL_MAX_D),
                      n_boot=q.get("n_boot", P.N_BOOT), jobs=a.jobs or 1,
                      progress=ctx.progress, log=ctx.log)
    summary["figures"] = ctx.draw("transfer_family",
                                  Outcome(summary, saved=ctx.out / "family.json"))
    return summary


def run(ctx) -> dict:
    from patchassoc.simulations.studies.claim5_transfer.pipeline import run_study
    from patchassoc.simulations.studies.study import Outcome
    a = ctx.args
    if a.family:
        return run_family(ctx)
    if a.ks is not None:
        raise ValueError("--ks needs --family")
    if a.upstream_from is not None:
        input_path(a.upstream_from, "--upstream-from", "folder",
                   "a reproduction, its seeds folder or a flows folder")
    if a.upstream_from is not None and a.protocol != "limit":
        raise ValueError("--upstream-from reads empirical-risk flows: it needs --protocol limit")
    summary = run_study(ctx.config, ctx.seed, ctx.out, protocol=a.protocol, quick=a.quick,
                        jobs=a.jobs, dask=a.dask, upstream_seeds=a.upstream_seeds,
                        seeds=a.seeds, test_mode=a.test_mode, progress=ctx.progress,
                        log=ctx.log, upstream_from=a.upstream_from)
    summary["figures"] = ctx.draw("transfer", Outcome(summary, saved=ctx.out / "transfer.json"))
    return summary


def render_family(summary: dict) -> str:
    from patchassoc.simulations.studies.claim5_transfer.verdict import _num
    lines = [f"transfer as a law in d ({'preview' if summary['preview'] else 'declared'}): "
             f"d = {', '.join(map(str, summary['ds']))}; {summary['n_upstream']} upstream x "
             f"{summary['n_downstream']} downstream seeds; cells "
             f"{summary['cpu_seconds_cells']:.0f} CPU-s"]
    for eps in summary["eps_grid"]:
        key = f"{eps:g}"
        r = summary["ratio_law"][key]
        law = summary["law"]
        cells = []
        for j, d in enumerate(summary["ds"]):
            pre = law["pretrained"][key]["n_eps"][j]
            ideal = law["ideal"][key]["n_eps"][j]
            ci = r["ratio_ci"][j]
            cells.append(f"d={d}: N_eps {_num(pre)} (ideal {_num(ideal)}), ratio "
                         f"{'>=' if r['lower_bound'][j] else ''}{_num(r['ratio'][j])} "
                         f"[{_num(ci[0])}, {_num(ci[1])}] vs {r['best_baseline'][j]}")
        lines.append(f"  eps {100 * eps:g} %: " + "; ".join(cells))
    lines.append("  fits of ln N_eps on ln d (slope [95 %]) at eps 3 %, 5 %, 10 %:")
    for m, per in summary["law"].items():
        parts = []
        for key in ("0.03", "0.05", "0.1"):
            f = (per.get(key) or {}).get("fit")
            parts.append("n/a" if not f or f.get("ci_low") is None else
                         f"{f['slope']:.2f} [{f['ci_low']:.2f}, {f['ci_high']:.2f}]")
        lines.append(f"    {m:>16}: " + ", ".join(parts))
    lines.append(f"  figures: {', '.join(summary.get('figures') or []) or 'none'}")
    return "\n".join(lines)


def render(summary: dict) -> str:
    if "ratio_law" in summary:
        return render_family(summary)
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
