"""``patchassoc bench``: timings of the engines.

Reports (best of a few repeats, wall clock, after warm-up):

- the exact population evaluation (risk, error, gradient, Bayes error) against D for
  (L, C) = (4, 4), (4, 6), (4, 8), (6, 8), (8, 8): complete enumeration up to D = 48, certified
  truncation with tolerance 1e-10 at D = 64; q = ln(d)/D (reference scaling, d from the config);
  at the point ``POINT`` (a trained-like attention, within-set mass ~0.95 at D = 16);
- the speedup of the exact engine over the brute-force oracle at D = 12 (L = 3, C = 4), both
  computing risk, error and Bayes error of the same invariant Q (the engine also its gradient);
- one sampled-data gradient step (loss and gradients in v and Q, Numba) at the reference size
  of the config (N = n_train, D, d).

Timings depend on the machine and its load; they are measurements, never test assertions.
"""
from __future__ import annotations

import math
import time

import numpy as np

from patchassoc.theory.config import preset
from patchassoc.theory.invariant import invariant_logits
from patchassoc.theory.structure import build_structure, random_partition

from .. import kernels
from ..population.bruteforce import bruteforce_risk
from ..population.exact import evaluate, warm_up
from ..sampler import check_sample_size, sample, streams, unit_vector
from ..train import initial_parameters

NAME = "bench"
HELP = "time the exact population engine (against D and against brute force) and a sampled step"

#: Evaluation point (alpha, a, b, c).
POINT = (1.25, 3.3, 3.2, -0.9)
SIZES = ((4, 4, None), (4, 6, None), (4, 8, None), (6, 8, None), (8, 8, 1e-10))
BRUTE_LC = (3, 4)


def add_arguments(parser) -> None:
    parser.add_argument("--repeats", type=int, default=3, help="repeats per timing (best kept)")


def _best(fn, repeats: int) -> tuple[float, object]:
    best, out = math.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def run(ctx) -> dict:
    cfg = ctx.config
    repeats = max(1, ctx.args.repeats)
    warm_up()
    rows = []
    for L, C, tol in SIZES:
        D = L * C
        q = min(1.0, math.log(cfg.d) / D)
        reps = repeats if D < 64 else 1
        ctx.log(f"[bench] exact evaluation at D={D} ...")
        sec, ev = _best(lambda: evaluate(L, C, q, cfg.p, cfg.nu, *POINT, tol=tol), reps)
        rows.append({"D": D, "L": L, "C": C, "q": q, "tol": tol, "seconds": sec,
                     "configurations": ev.configurations, "bound": ev.bound,
                     "complete": ev.complete, "risk": ev.risk, "error": ev.error})
    # speedup over brute force at D = 12
    L, C = BRUTE_LC
    D = L * C
    q = min(1.0, math.log(cfg.d) / D)
    S = random_partition(L, C, np.random.default_rng(0))
    Q = invariant_logits(*POINT[1:], S)
    tiny = random_partition(2, 2, np.random.default_rng(0))
    bruteforce_risk(invariant_logits(0.0, 0.0, 0.0, tiny), tiny, q, cfg.p, cfg.nu, 1.0)  # compile
    ctx.log("[bench] brute force at D=12 ...")
    t_brute, bf = _best(lambda: bruteforce_risk(Q, S, q, cfg.p, cfg.nu, POINT[0]), repeats)
    t_exact, ev = _best(lambda: evaluate(L, C, q, cfg.p, cfg.nu, *POINT), max(repeats, 20))
    brute = {"D": D, "L": L, "C": C, "q": q, "bruteforce_seconds": t_brute,
             "exact_seconds": t_exact, "speedup": t_brute / t_exact,
             "patterns": bf.patterns, "configurations": ev.configurations,
             "risk_rel_diff": abs(ev.risk - bf.risk) / bf.risk}
    # one sampled-data gradient step at the reference size (the config's, if it fits in memory)
    step_cfg, note = cfg, "config"
    try:
        check_sample_size(cfg.n_train, cfg.D, cfg.d)
    except ValueError as exc:
        step_cfg, note = preset("ref", p=cfg.p, nu=cfg.nu), f"ref preset ({exc})"
    ctx.log(f"[bench] sampled step at N={step_cfg.n_train}, D={step_cfg.D}, d={step_cfg.d} ...")
    rng = streams(ctx.seed)
    structure = build_structure(step_cfg, rng["structure"])
    w_star = unit_vector(step_cfg.d, rng["feature"])
    v0, theta0 = initial_parameters(step_cfg, rng["init"])
    data = sample(step_cfg.n_train, w_star, structure, step_cfg.q, step_cfg.sigma, rng["train"],
                  step_cfg.noise == "orthogonal")
    A = kernels.softmax_rows(theta0 if step_cfg.param == "logits" else theta0 @ theta0.T)
    X, y = kernels.check_data(data.X, data.y)  # once, as gradient descent does
    # the step next to one read of X (X @ v) in this run, and the PyTorch peer step
    from ..step_bench import sampled_step_vs_read
    sampled = {"N": step_cfg.n_train, "D": step_cfg.D, "d": step_cfg.d, "size": note,
               **sampled_step_vs_read(X, y, v0, A, step_cfg.p, step_cfg.nu, repeats)}
    import numba
    return {"exact_vs_D": rows, "bruteforce": brute,
            "sampled_step": sampled,
            "point": dict(zip(("alpha", "a", "b", "c"), POINT)), "repeats": repeats,
            "threads": numba.get_num_threads()}


def render(s: dict) -> str:
    lines = ["exact population evaluation (risk, error, gradient, Bayes error):"]
    for r in s["exact_vs_D"]:
        how = "complete" if r["complete"] else f"tol {r['tol']:g}, bound {r['bound']:.2g}"
        lines.append(f"  D={r['D']:>3} (L={r['L']}, C={r['C']}): {1e3 * r['seconds']:10.3f} ms, "
                     f"{r['configurations']:>12,} configurations ({how})")
    b = s["bruteforce"]
    lines.append(f"brute force at D={b['D']} (L={b['L']}, C={b['C']}): "
                 f"{1e3 * b['bruteforce_seconds']:.2f} ms for {b['patterns']:,} patterns vs exact "
                 f"{1e3 * b['exact_seconds']:.3f} ms: speedup {b['speedup']:.0f}x")
    t = s["sampled_step"]
    from ..step_bench import describe
    lines.append(describe(t))
    lines.append(f"(best of {s['repeats']}, {s['threads']} Numba threads)")
    return "\n".join(lines)
