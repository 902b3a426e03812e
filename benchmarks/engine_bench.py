"""Timings of the engines, as ``patchassoc bench`` reports them (the command,
:mod:`patchassoc.cli.main_bench`, only parses its options, calls
:func:`~patchassoc.benchmarks.engine_bench.engine_timings` and prints the result).

Reports (best of a few repeats, wall clock, after warm-up):

- the exact population evaluation (risk, error, gradient, Bayes error) against D for
  (L, C) = (4, 4), (4, 6), (4, 8), (6, 8), (8, 8): complete enumeration up to D = 48, certified
  truncation with tolerance 1e-10 at D = 64; q = ln(d)/D (reference scaling, d from the config);
  at the point ``POINT`` (a trained-like attention, within-set mass ~0.95 at D = 16);
- the exact engine at the paper's size (L = C = 8, q = ln(4096)/64) with certified tolerances
  1e-6, 1e-8 and 1e-10, pruned by probability (what population gradient descent uses) and
  truncated by count only, in the same run; the first call at each tolerance also builds the
  key histogram of the pruning plan (reported apart, as ``plan_seconds``: it is cached per
  (L, C, q, k) and shared by every step of a trajectory); and one step of a trajectory there
  (``trajectory_*``: the evaluator population descent uses, at a point of the paper-preset
  run with alpha ~ 3, once its margin threshold has adapted; all threads and one thread);
- the speedup of the exact engine over the brute-force oracle at D = 12 (L = 3, C = 4), both
  computing risk, error and Bayes error of the same invariant Q (the engine also its gradient),
  timed in alternation (at least :data:`BRUTE_ROUNDS` brute-force calls and four times as many
  evaluations, the best of each kept), by the wall clock (``speedup``) and by the CPU time of
  the thread that computes both (``speedup_cpu``: the reading a loaded machine does not move,
  :func:`_side_by_side`);
- one sampled-data gradient step (loss and gradients in v and Q, Numba) at the reference size
  of the config (N = n_train, D, d), next to one read of X (``X @ v``) timed in the same run,
  and their ratio (:mod:`patchassoc.benchmarks.step_bench`; the one-thread step also against a
  read with one BLAS thread);
- the ratios the guard watches (``ratios``: :data:`~patchassoc.benchmarks.guard.RATIOS`, read
  from the above).

Timings depend on the machine and its load; they are measurements, never test assertions.
"""
from __future__ import annotations

import math
import os
import time

import numpy as np

from patchassoc.theory.config import preset
from patchassoc.theory.invariant import invariant_logits
from patchassoc.theory.structure import build_structure, random_partition

from patchassoc.simulations.engines import sampled_kernels as kernels
from patchassoc.simulations.engines.population.bruteforce import bruteforce_risk
from patchassoc.simulations.engines.population.exact import Evaluator, evaluate, plan, warm_up
from patchassoc.simulations.engines.sampler import check_sample_size, sample, streams, unit_vector
from patchassoc.simulations.engines.start import initial_parameters

from patchassoc.benchmarks.step_bench import sampled_step_vs_read

__all__ = ["engine_timings", "POINT", "SIZES", "BRUTE_LC", "BRUTE_ROUNDS", "FAST_PER_ROUND",
           "PAPER_LCD", "PAPER_TOLS", "TRAJECTORY_POINT"]

#: Evaluation point (alpha, a, b, c).
POINT = (1.25, 3.3, 3.2, -0.9)
SIZES = ((4, 4, None), (4, 6, None), (4, 8, None), (6, 8, None), (8, 8, 1e-10))
BRUTE_LC = (3, 4)
#: The paper's size (preset ``paper``) and the tolerances timed there.
PAPER_LCD = (8, 8, 4096)
PAPER_TOLS = (1e-6, 1e-8, 1e-10)
#: A point (alpha, a, b, c) of the paper-preset population trajectory with the diagonal fixed
#: (seed 0, near step 2000, alpha ~ 3): where most of a 3000-step run is spent.
TRAJECTORY_POINT = (2.975, 2.1184, 1.1365, -0.2686)
#: Rounds of the brute-force comparison at D = 12 (at least): one brute-force call and
#: FAST_PER_ROUND exact evaluations each, in alternation (:func:`_side_by_side`). A brute-force
#: call takes a few milliseconds, about a scheduler's time slice, so on a loaded machine its
#: best of 3 (what earlier versions kept) was often a preempted call.
BRUTE_ROUNDS = 10
#: Exact evaluations per round of the comparison at D = 12.
FAST_PER_ROUND = 4
#: Calls that let a trajectory evaluator adapt its margin threshold before it is timed.
_ADAPT_CALLS = 4


def _best(fn, repeats: int) -> tuple[float, object]:
    best, out = math.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _side_by_side(slow, fast, rounds: int) -> dict:
    """``slow`` and ``fast`` timed in alternation: each of ``rounds`` rounds calls ``slow``
    once, then ``fast`` :data:`FAST_PER_ROUND` times, so that a phase of load hits both alike.
    Each call is timed by the wall clock and by the CPU time of this thread
    (``time.thread_time``; both functions compute in the calling thread): a call preempted by
    other work keeps its CPU time, so the CPU times' ratio does not depend on whether one of a
    slow function's calls ran unpreempted. Returns the best of each (``slow``, ``fast``,
    ``slow_cpu``, ``fast_cpu``) and the last results (``slow_out``, ``fast_out``)."""
    best = {"slow": math.inf, "fast": math.inf, "slow_cpu": math.inf, "fast_cpu": math.inf}
    out = {}

    def timed(key, fn):
        c0, t0 = time.thread_time(), time.perf_counter()
        out[f"{key}_out"] = fn()
        t1, c1 = time.perf_counter(), time.thread_time()
        best[key] = min(best[key], t1 - t0)
        best[f"{key}_cpu"] = min(best[f"{key}_cpu"], c1 - c0)

    for _ in range(rounds):
        timed("slow", slow)
        for _ in range(FAST_PER_ROUND):
            timed("fast", fast)
    return {**best, **out}


def _trajectory_step(L, C, q, p, nu, tol, repeats) -> dict:
    """One step of population descent at the paper's size: an :class:`Evaluator` (what
    ``population_descent`` uses) at ``TRAJECTORY_POINT``, timed once its margin threshold has
    adapted (after ``_ADAPT_CALLS`` calls), with all Numba threads and with one: a search
    (the step that records the leaves) and a replay of its leaves (most steps of a
    trajectory)."""
    import numba
    ev_t = Evaluator(L, C, q, p, nu, tol=tol, prune=True)
    for _ in range(_ADAPT_CALLS):
        ev_t.search_next()
        ev_t(*TRAJECTORY_POINT)

    def search():
        ev_t.search_next()
        return ev_t(*TRAJECTORY_POINT)

    def replay():
        return ev_t(*TRAJECTORY_POINT)

    before = numba.get_num_threads()
    out = {"trajectory_point": list(TRAJECTORY_POINT), "trajectory_threads": before}
    for name, fn in (("trajectory", search), ("replay", replay)):
        sec, ev = _best(fn, repeats)
        numba.set_num_threads(1)
        try:
            sec1, _ = _best(fn, repeats)
        finally:
            numba.set_num_threads(before)
        out.update({f"{name}_seconds": sec, f"{name}_seconds_1thread": sec1,
                    f"{name}_configurations": ev.configurations, f"{name}_bound": ev.bound})
    return out


def engine_timings(cfg, seed: int = 0, repeats: int = 3, log=lambda message: None,
                   compare_jacobians: bool = False) -> dict:
    """The timings ``patchassoc bench`` reports (keys as in its JSON), for the config ``cfg``
    (p, nu, d and the sampled step's size), the seed of the sampled step's data and
    ``repeats`` repeats per timing (best kept); ``log`` receives a line before each part;
    ``compare_jacobians`` adds the empirical-risk flow with LSODA's finite-difference Jacobian
    beside the exact one (:mod:`.flow_bench`)."""
    repeats = max(1, repeats)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    warm_up()
    rows = []
    for L, C, tol in SIZES:
        D = L * C
        q = min(1.0, math.log(cfg.d) / D)
        reps = repeats if D < 64 else 1
        log(f"[bench] exact evaluation at D={D} ...")
        sec, ev = _best(lambda: evaluate(L, C, q, cfg.p, cfg.nu, *POINT, tol=tol), reps)
        rows.append({"D": D, "L": L, "C": C, "q": q, "tol": tol, "seconds": sec,
                     "configurations": ev.configurations, "bound": ev.bound,
                     "complete": ev.complete, "risk": ev.risk, "error": ev.error})
    # the paper's size: pruned (the default of population descent) and by count, same run
    L, C, d = PAPER_LCD
    q = math.log(d) / (L * C)
    paper = []
    for tol in PAPER_TOLS:
        log(f"[bench] exact evaluation at the paper's size, tol {tol:g} ...")
        t0 = time.perf_counter()
        plan(L, C, q, cfg.p, cfg.nu, *POINT, tol=tol, prune=True)
        plan_sec = time.perf_counter() - t0
        sec_p, ev_p = _best(lambda: evaluate(L, C, q, cfg.p, cfg.nu, *POINT, tol=tol,
                                             prune=True), repeats)
        sec_c, ev_c = _best(lambda: evaluate(L, C, q, cfg.p, cfg.nu, *POINT, tol=tol), repeats)
        row = {"L": L, "C": C, "D": L * C, "q": q, "tol": tol,
               "seconds": sec_p, "configurations": ev_p.configurations, "k": ev_p.k,
               "bound": ev_p.bound, "plan_seconds": plan_sec,
               "count_seconds": sec_c, "count_configurations": ev_c.configurations,
               "count_k": ev_c.k, "count_bound": ev_c.bound,
               "speedup_over_count": sec_c / sec_p}
        row.update(_trajectory_step(L, C, q, cfg.p, cfg.nu, tol, repeats))
        paper.append(row)
    # speedup over brute force at D = 12
    L, C = BRUTE_LC
    D = L * C
    q = min(1.0, math.log(cfg.d) / D)
    S = random_partition(L, C, np.random.default_rng(0))
    Q = invariant_logits(*POINT[1:], S)
    tiny = random_partition(2, 2, np.random.default_rng(0))
    bruteforce_risk(invariant_logits(0.0, 0.0, 0.0, tiny), tiny, q, cfg.p, cfg.nu, 1.0)  # compile
    log("[bench] brute force at D=12 ...")
    t = _side_by_side(lambda: bruteforce_risk(Q, S, q, cfg.p, cfg.nu, POINT[0]),
                      lambda: evaluate(L, C, q, cfg.p, cfg.nu, *POINT),
                      max(repeats, BRUTE_ROUNDS))
    t_brute, bf, t_exact, ev = t["slow"], t["slow_out"], t["fast"], t["fast_out"]
    brute = {"D": D, "L": L, "C": C, "q": q, "bruteforce_seconds": t_brute,
             "exact_seconds": t_exact, "speedup": t_brute / t_exact,
             "bruteforce_cpu_seconds": t["slow_cpu"], "exact_cpu_seconds": t["fast_cpu"],
             "speedup_cpu": t["slow_cpu"] / t["fast_cpu"],
             "patterns": bf.patterns, "configurations": ev.configurations,
             "risk_rel_diff": abs(ev.risk - bf.risk) / bf.risk}
    # one sampled-data gradient step at the reference size (the config's, if it fits in memory)
    step_cfg, note = cfg, "config"
    try:
        check_sample_size(cfg.n_train, cfg.D, cfg.d)
    except ValueError as exc:
        step_cfg, note = preset("ref", p=cfg.p, nu=cfg.nu), f"ref preset ({exc})"
    log(f"[bench] sampled step at N={step_cfg.n_train}, D={step_cfg.D}, d={step_cfg.d} ...")
    rng = streams(seed)
    structure = build_structure(step_cfg, rng["structure"])
    w_star = unit_vector(step_cfg.d, rng["feature"])
    v0, theta0 = initial_parameters(step_cfg, rng["init"])
    data = sample(step_cfg.n_train, w_star, structure, step_cfg.q, step_cfg.sigma, rng["train"],
                  step_cfg.noise == "orthogonal")
    A = kernels.softmax_rows(theta0 if step_cfg.param == "logits" else theta0 @ theta0.T)
    X, y = kernels.check_data(data.X, data.y)  # once, as gradient descent does
    # the step next to one read of X (X @ v) in this run, and the PyTorch peer step
    sampled = {"N": step_cfg.n_train, "D": step_cfg.D, "d": step_cfg.d, "size": note,
               **sampled_step_vs_read(X, y, v0, A, step_cfg.p, step_cfg.nu, repeats)}
    log("[bench] the empirical-risk flow at ref to 1e15, on one core ...")
    from patchassoc.benchmarks.flow_bench import flow_timing
    flow = flow_timing(seed, repeats, compare_jacobians)
    import numba
    from patchassoc.benchmarks.guard import ratios
    out = {"exact_vs_D": rows, "exact_paper": paper, "bruteforce": brute,
           "sampled_step": sampled, "sampled_flow": flow,
           "point": dict(zip(("alpha", "a", "b", "c"), POINT)), "repeats": repeats,
           "threads": numba.get_num_threads(), "load_average": load}
    out["ratios"] = ratios(out)
    return out
