"""``patchassoc seeds``: claim 2 (Theorem 4.2) over seeds, and its control (paper Fig. 2 data).

Trains the configuration (ref by default) with the diagonal fixed for ``--seeds`` seeds (default 10;
:mod:`patchassoc.simulations.studies.claim2_seeds`): per seed, Def. 2.2 in every row, share_min >=
0.75 and test error <= 2 x Bayes + 0.001; the pass rate with its Wilson 95 % interval (the claim
needs its lower end >= 0.7); the invariance of Q_T - Q_0 against 200 random partitions (z-score).
Then the control: the same model on the paper's Fig. 2 data (i.i.d. Gaussian patches, labels from a
cubic CNN over the 2x2 windows of the 4x4 grid) and on the structured data with the same windows
(:mod:`patchassoc.simulations.studies.fig2_control`); it must not associate. ``--quick`` trains 2
seeds at a reduced size: a preview, never a verdict.

Seeds are stored in ``<out>/seeds/`` as they finish and reused by a re-run; ``--jobs N`` trains
N seeds at a time, ``--dask ADDRESS`` on a Dask cluster.

References
----------
SPEC section 6, claim 2.
"""
from __future__ import annotations


NAME = "seeds"
HELP = ("claim 2 over seeds (diagonal fixed): pass rate with a Wilson interval, invariance of "
        "Q_T - Q_0 against random partitions; the paper's Fig. 2 control (--jobs, --dask)")

__all__ = ["NAME", "HELP", "add_arguments", "run", "render"]

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


def run(ctx) -> dict:
    from patchassoc.figures.catalog import draw
    from patchassoc.simulations.studies.claim2_seeds import compute
    from patchassoc.simulations.studies.study import Outcome
    a = ctx.args
    if a.jobs < 1:
        raise ValueError("--jobs must be >= 1")
    summary = compute(ctx.config, ctx.out, n_seeds=a.seeds, quick=a.quick, jobs=a.jobs,
                      dask=a.dask, control=not a.no_control, first_seed=ctx.seed,
                      progress=ctx.progress and not ctx.json)
    if summary.get("control") and not a.no_figures:
        summary["figures"] = draw("seeds", Outcome(summary, {"control": ctx.out / "control"},
                                                   saved=ctx.out / "seeds.json"), ctx.out)
    return summary


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
