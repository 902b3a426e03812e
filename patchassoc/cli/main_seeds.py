"""``patchassoc seeds``: claim 2 (Theorem 4.2) over seeds, and its control (paper Fig. 2 data).

Trains the configuration (ref by default) with the diagonal fixed for ``--seeds`` seeds
(default 10; :mod:`patchassoc.simulations.studies.claim2_seeds`): per seed, Def. 2.2 in every row,
share_min >= 0.75 and test error <= 2 x Bayes + 0.001; the pass rate with its Wilson 95 %
interval (the claim needs its lower end >= 0.7); the invariance of Q_T - Q_0 against 200 random
partitions (z-score). Then the control: the same model on the paper's Fig. 2 data (i.i.d.
Gaussian patches, labels from a cubic CNN over the 2x2 windows of the 4x4 grid) and on the
structured data with the same windows (:mod:`patchassoc.simulations.studies.fig2_control`); it must not
associate. ``--quick`` trains 2 seeds at a reduced size: a preview, never a verdict.

Seeds are stored in ``<out>/seeds/`` as they finish and reused by a re-run; ``--jobs N`` trains
N seeds at a time, ``--dask ADDRESS`` on a Dask cluster.

References
----------
SPEC section 6, claim 2.
"""
from __future__ import annotations

from pathlib import Path

from patchassoc.simulations.runtime.results import write_json

NAME = "seeds"
HELP = ("claim 2 over seeds (diagonal fixed): pass rate with a Wilson interval, invariance of "
        "Q_T - Q_0 against random partitions; the paper's Fig. 2 control (--jobs, --dask)")

__all__ = ["NAME", "HELP", "add_arguments", "run", "render", "compute", "reproduce_step",
           "QUICK_OVERRIDES"]

#: The quick preview's reduced training (a smoke run of the machinery, not the claim).
QUICK_OVERRIDES = dict(d=64, n_train=1000, n_test=2000, steps=300)


def add_arguments(parser) -> None:
    parser.add_argument("--seeds", type=int, default=None,
                        help="number of seeds 0..n-1 (default 10; quick 2)")
    parser.add_argument("--quick", action="store_true",
                        help="2 seeds at a reduced size: a preview, never a verdict")
    parser.add_argument("--jobs", type=int, default=1, help="seeds trained at a time")
    parser.add_argument("--dask", default=None, metavar="ADDRESS",
                        help="train the seeds on this Dask scheduler")
    parser.add_argument("--no-control", action="store_true",
                        help="skip the Fig. 2 control (gaussian-cnn data)")
    parser.add_argument("--no-figures", action="store_true", help="skip the control figure")


def compute(config, out: Path, *, n_seeds=None, quick: bool = False, jobs: int = 1, dask=None,
            control: bool = True, figures: bool = True, first_seed: int = 0,
            progress: bool = False) -> dict:
    """Train the seeds (and the control pair) into ``out``; the JSON-ready summary."""
    from patchassoc.simulations.studies import claim2_seeds as cs
    out = Path(out)
    n = n_seeds or (cs.QUICK_SEEDS if quick else cs.N_SEEDS)
    if n < 1:
        raise ValueError("--seeds must be >= 1")
    if quick:
        config = config.replace(**QUICK_OVERRIDES)
    cfg = config.replace(diagonal="fixed", param="logits")
    res = cs.run_seeds(cfg, range(first_seed, first_seed + n), out / "seeds", jobs=jobs,
                       dask=dask, progress=progress)
    summary = cs.seeds_summary(res["records"], quick=quick or n < cs.N_SEEDS)
    summary.update(records=res["records"], wall_seconds=res["seconds"], quick=bool(quick),
                   config=res["config"], out=str(out), figures=[], control=None)
    if control:
        from patchassoc.simulations.studies.fig2_control import run_pair
        pair = run_pair(cfg, seed=first_seed, out=out / "control", progress=progress)
        summary["control"] = pair
        if figures:
            from patchassoc.figures import gaussian_cnn as fig
            summary["figures"] = [str(p) for p in fig.main(out / "control", out)]
    write_json(out / "seeds.json", summary)
    return summary


def run(ctx) -> dict:
    a = ctx.args
    if a.jobs < 1:
        raise ValueError("--jobs must be >= 1")
    return compute(ctx.config, ctx.out, n_seeds=a.seeds, quick=a.quick, jobs=a.jobs,
                   dask=a.dask, control=not a.no_control, figures=not a.no_figures,
                   first_seed=ctx.seed, progress=ctx.progress and not ctx.json)


def render(s: dict) -> str:
    lo, hi = s["wilson"]
    lines = [f"claim 2 over {s['n_seeds']} seeds (diagonal fixed): {s['n_passed']} pass, "
             f"rate {s['rate']:.2f}, Wilson 95 % [{lo:.3f}, {hi:.3f}] (needs lower end >= "
             f"{s['rate_lower_threshold']:g}) -> "
             + ("PREVIEW (no verdict)" if s["preview"] else ("PASS" if s["passed"] else "FAIL"))]
    for r in s["records"]:
        z = r["invariance"].get("z")
        lines.append(f"  seed {r['seed']}: Def. 2.2 {r['topc_rows']}/{s['config']['D']} rows, "
                     f"share min {r['share_min']:.3f}, "
                     f"test error {r['test_error']:.4f} (<= {r['error_threshold']:.4f}?) -> "
                     f"{'pass' if r['passed'] else 'FAIL'}; invariance of Q_T - Q_0 "
                     f"{r['invariance']['fraction']:.3f}, z = "
                     + ("n/a" if z is None else f"{z:.1f}"))
    c = s.get("control")
    if c:
        for key in ("control", "structured"):
            r = c[key]
            lines.append(f"  {key} ({r['data']}): test error {r['test_error']:.4f}, Def. 2.2 "
                         f"{r['assoc_topc_rows']}/{r['assoc_D']} rows, share min "
                         f"{r['assoc_share_min']:.3f}, ARI {r['ari_top_c']:.2f} -> "
                         f"{'associated' if r['assoc_associated'] else 'not associated'}")
        lines.append(f"  control {'fails association (ok)' if c['control_ok'] else 'ASSOCIATES: the claim fails'}")
    lines += [f"figure: {p}" for p in s.get("figures", [])]
    return "\n".join(lines)


def reproduce_step(out_dir: Path, config, seed: int, quick: bool, progress: bool) -> dict:
    """Reproduction step: the seeds (2 at a time) and the control."""
    from patchassoc.simulations.studies.claim5_transfer.sweep import default_jobs
    summary = compute(config, out_dir, quick=quick, jobs=min(2, default_jobs()),
                      first_seed=seed, progress=progress)
    summary.pop("records", None)
    return summary


def figure_readings(s: dict) -> dict[str, str]:
    """The report's reading of the control figure and the seeds, decided by the numbers."""
    c = s.get("control")
    if not c:
        return {}
    ctl, st = c["control"], c["structured"]
    lo, hi = s.get("wilson") or (None, None)
    seeds_text = (f"Over {s.get('n_seeds')} seeds of the reference model with the diagonal fixed, "
                  f"{s.get('n_passed')} pass (Def. 2.2 in every row, share_min >= 0.75, test "
                  f"error <= 2 x Bayes + 0.001), Wilson 95 % interval "
                  f"[{lo:.3f}, {hi:.3f}]: " if lo is not None else "")
    if s.get("preview"):
        seeds_text += "a reduced run, so a preview that decides nothing. "
    elif lo is not None:
        seeds_text += ("the lower end reaches 0.7, claim 2's rule is met. " if lo >= 0.7 else
                       "the lower end is below 0.7, claim 2's rule is NOT met. ")
    verdict = ("it does not associate, as the control must" if c.get("control_ok") else
               "it ASSOCIATES, so the control fails claim 2")
    return {"gaussian_cnn": (
        seeds_text + f"Control (the paper's Fig. 2 data: i.i.d. Gaussian patches on a 4 x 4 grid, "
        f"labels from a cubic CNN over the 2 x 2 windows): the same model reaches test error "
        f"{100 * ctl['test_error']:.1f} %, Def. 2.2 holds in {ctl['assoc_topc_rows']} of "
        f"{ctl['assoc_D']} rows against the windows, the share min is "
        f"{ctl['assoc_share_min']:.3f} and the sets recovered from its attention have ARI "
        f"{ctl['ari_top_c']:.2f}: {verdict}. On structured data with the same windows it reaches "
        f"{100 * st['test_error']:.2f} %, Def. 2.2 in {st['assoc_topc_rows']} of "
        f"{st['assoc_D']} rows, share min {st['assoc_share_min']:.3f}, ARI "
        f"{st['ari_top_c']:.2f}.")}
