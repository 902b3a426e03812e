"""``patchassoc bench``: timings of the engines.

The measuring is in :mod:`patchassoc.benchmarks.engine_bench` (what is timed, and how, is
described there) and :mod:`patchassoc.benchmarks.step_bench`; this command parses its options,
calls :func:`~patchassoc.benchmarks.engine_bench.engine_timings` with the config and seed of the
run, and prints the result, with the ratios the guard watches
(:mod:`patchassoc.benchmarks.guard`; ``python -m benchmarks.compare_bench`` compares them with a
stored baseline of the same machine or with another tree's, and flags those that moved beyond
their noise band). Timings depend on the machine and its load; they are measurements, never
test assertions: the exit status does not depend on them.
"""
from __future__ import annotations

NAME = "bench"
HELP = ("time the exact population engine (against D and against brute force), a sampled step "
        "and the empirical-risk flow at ref")
#: Nothing is written to disk: no --out folder is created or checked.
WRITES_OUT = False


def add_arguments(parser) -> None:
    parser.add_argument("--repeats", type=int, default=3, help="repeats per timing (best kept)")
    parser.add_argument("--compare-jacobians", action="store_true",
                        help="also run the empirical-risk flow to 1e6 with LSODA's "
                             "finite-difference Jacobian beside the exact one (minutes)")


def run(ctx) -> dict:
    from patchassoc.benchmarks.engine_bench import engine_timings
    return engine_timings(ctx.config, ctx.seed, ctx.args.repeats, ctx.log,
                          ctx.args.compare_jacobians)


def render(s: dict) -> str:
    lines = ["exact population evaluation (risk, error, gradient, Bayes error):"]
    for r in s["exact_vs_D"]:
        how = "complete" if r["complete"] else f"tol {r['tol']:g}, bound {r['bound']:.2g}"
        lines.append(f"  D={r['D']:>3} (L={r['L']}, C={r['C']}): {1e3 * r['seconds']:10.3f} ms, "
                     f"{r['configurations']:>12,} configurations ({how})")
    for r in s.get("exact_paper", []):
        lines.append(f"  paper size D={r['D']}, tol {r['tol']:g}: pruned {1e3 * r['seconds']:.1f} ms "
                     f"({r['configurations']:,} configurations, k={r['k']}, bound "
                     f"{r['bound']:.2g}; plan {1e3 * r['plan_seconds']:.0f} ms once) vs by count "
                     f"{1e3 * r['count_seconds']:.1f} ms ({r['count_configurations']:,}): "
                     f"{r['speedup_over_count']:.2f}x")
        for name, what in (("trajectory", "search"), ("replay", "replay")):
            if f"{name}_seconds" in r:
                lines.append(f"    trajectory step at alpha={r['trajectory_point'][0]:g}, {what}: "
                             f"{1e3 * r[f'{name}_seconds']:.1f} ms ({r['trajectory_threads']} "
                             f"threads), {1e3 * r[f'{name}_seconds_1thread']:.1f} ms (1 thread), "
                             f"{r[f'{name}_configurations']:,} configurations, bound "
                             f"{r[f'{name}_bound']:.2g}")
    b = s["bruteforce"]
    lines.append(f"brute force at D={b['D']} (L={b['L']}, C={b['C']}): "
                 f"{1e3 * b['bruteforce_seconds']:.2f} ms for {b['patterns']:,} patterns vs exact "
                 f"{1e3 * b['exact_seconds']:.3f} ms: speedup {b['speedup']:.0f}x")
    t = s["sampled_step"]
    from patchassoc.benchmarks.step_bench import describe
    lines.append(describe(t))
    if s.get("sampled_flow"):
        from patchassoc.benchmarks.flow_bench import describe as describe_flow
        lines.append(describe_flow(s["sampled_flow"]))
    lines.append(f"(best of {s['repeats']}, {s['threads']} Numba threads; load average "
                 f"{s.get('load_average', float('nan')):.2f} when it started)")
    from patchassoc.benchmarks.guard import RATIOS
    if s.get("ratios"):
        lines.append("the watched ratios (python -m benchmarks.compare_bench compares them):")
        lines += [f"  {name:<28} {value:12.4g}  ({RATIOS[name].what})"
                  for name, value in s["ratios"].items()]
    return "\n".join(lines)
