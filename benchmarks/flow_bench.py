"""The cost of the gradient flow of the empirical risk at ``ref``, on one core.

:func:`flow_timing` runs a child process with one Numba thread and one BLAS thread (the
environment variables ``NUMBA_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``,
``MKL_NUM_THREADS`` set to 1 before anything loads), which measures:

- one right-hand side (a gradient of R_N, one pass over the sample; best of
  :data:`GRADIENT_CALLS` at least) and one exact Jacobian
  (:func:`~patchassoc.simulations.engines.sampled_hessian.hessian`, best of ``repeats``), in
  wall and in CPU seconds (``*_cpu_seconds``: the flow's own cost is read in CPU seconds, which
  other work on the machine moves less); a Jacobian by finite differences costs one gradient
  per coordinate (496 at ``ref``), given as that product;
- the flow of seed ``seed`` to t = 1e15 with the exact Jacobian (the default): wall and CPU
  seconds, evaluations, Jacobians and their seconds, and the seconds per decade of t (from the
  records' time stamps);
- with ``compare`` (``patchassoc bench --compare-jacobians``), the two ways of getting the
  Jacobian side by side to t = 1e6, past the decades where LSODA turns to its stiff method: the
  exact Hessian against LSODA's own finite differences (minutes: off by default).

Timings depend on the machine and its load (the load average is reported); they are
measurements, never test assertions.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time

__all__ = ["flow_timing", "FLOW_T_MAX", "COMPARE_T_MAX", "GRADIENT_CALLS"]

FLOW_T_MAX = 1e15
#: Calls of one gradient timed (at least): a gradient takes a few milliseconds, about a
#: scheduler's time slice, so on a loaded machine the best of 3 was often a preempted one.
GRADIENT_CALLS = 20
COMPARE_T_MAX = 1e6
_ONE_CORE = {"NUMBA_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
             "MKL_NUM_THREADS": "1"}


def _measure(seed: int, repeats: int, compare: bool) -> dict:
    import numpy as np

    from patchassoc.simulations.engines import sampled_kernels as K
    from patchassoc.simulations.engines.sampled_descent import draw_run
    from patchassoc.simulations.engines.sampled_flow import run_sampled_flow
    from patchassoc.simulations.engines.sampled_hessian import hessian
    from patchassoc.theory.config import preset

    cfg = preset("ref", diagonal="fixed")
    run = draw_run(cfg, seed)
    X, y = K.check_data(run.train_data.X, run.train_data.y)
    off = ~np.eye(cfg.D, dtype=bool)
    P = cfg.d + int(off.sum())

    def best(fn, times):
        """Best wall and best CPU seconds of ``fn`` over ``times`` calls."""
        wall, cpu = [], []
        for _ in range(max(1, times)):
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        return min(wall), min(cpu)

    K._step_quantities(X, y, run.v0, run.theta0, cfg.p, cfg.nu)          # compile, warm
    # a gradient takes a few milliseconds: more calls than repeats, so that one ran alone
    grad, grad_cpu = best(lambda: K._step_quantities(X, y, run.v0, run.theta0, cfg.p, cfg.nu),
                          max(repeats, GRADIENT_CALLS))
    jac, jac_cpu = best(lambda: hessian(X, y, run.v0, run.theta0, cfg.p, cfg.nu, free=off),
                        repeats)
    rule = dict(error_factor=2.0, error_slack=0.001, share_level=0.75)

    def flow(t_max, jacobian):
        c0, t0 = time.process_time(), time.perf_counter()
        res = run_sampled_flow(cfg, seed, t_max=t_max, jacobian=jacobian, **rule)
        tr = res.trajectory
        return tr, time.perf_counter() - t0, time.process_time() - c0

    tr, wall, cpu = flow(FLOW_T_MAX, "analytic")
    t = np.asarray(tr.t)
    stamps = np.asarray(tr.record_seconds)
    per_decade = []
    for k in range(int(math.log10(FLOW_T_MAX))):
        sel = np.flatnonzero((t >= 10.0 ** k) & (t <= 10.0 ** (k + 1)))
        if sel.size >= 2:
            per_decade.append({"decade": f"1e{k}-1e{k + 1}",
                               "seconds": float(stamps[sel[-1]] - stamps[sel[0]])})
    sides = {}
    for jacobian in (("analytic", "finite") if compare else ()):
        trj, w, c = flow(COMPARE_T_MAX, jacobian)
        sides[jacobian] = {"seconds": w, "cpu_seconds": c, "evaluations": trj.evaluations,
                           "jacobians": trj.jacobians, "solver_steps": trj.solver_steps}
    return {"config": "ref, diagonal fixed", "seed": seed, "P": P, "N": cfg.n_train,
            "gradient_seconds": grad, "jacobian_seconds": jac,
            "gradient_cpu_seconds": grad_cpu, "jacobian_cpu_seconds": jac_cpu,
            "finite_jacobian_seconds_estimate": P * grad,
            "to_1e15": {"t_max": FLOW_T_MAX, "seconds": wall, "cpu_seconds": cpu,
                        "status": tr.status, "evaluations": tr.evaluations,
                        "jacobians": tr.jacobians, "jacobian_seconds": tr.jacobian_seconds,
                        "solver_steps": tr.solver_steps, "per_decade": per_decade,
                        "share_min_at_T": float(tr.share_min[-1])},
            "compare": sides or None}


def flow_timing(seed: int = 0, repeats: int = 3, compare: bool = False) -> dict:
    """The measurements of the module notes, from a child process on one core."""
    env = dict(os.environ, **_ONE_CORE)
    # from the temporary folder: ``-m`` puts the working folder first on sys.path, and a
    # checkout's patchassoc/ there would be imported in place of this interpreter's tree
    proc = subprocess.run([sys.executable, "-m", "patchassoc.benchmarks.flow_bench", str(seed),
                           str(repeats), str(int(compare))], env=env, capture_output=True,
                          text=True, cwd=tempfile.gettempdir())
    if proc.returncode != 0:
        raise RuntimeError(f"the flow benchmark failed: {proc.stderr.strip()[-500:]}")
    out = json.loads(proc.stdout)
    out["load_average"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    return out


def describe(f: dict) -> str:
    """The text ``patchassoc bench`` prints."""
    t = f["to_1e15"]
    dec = [x["seconds"] for x in t["per_decade"]]
    c = f.get("compare")
    lines = [
        f"empirical-risk flow at {f['config']} (N = {f['N']}, {f['P']} coordinates), one core:",
        f"  one gradient {1e3 * f['gradient_seconds']:.1f} ms; one exact Jacobian "
        f"{1e3 * f['jacobian_seconds']:.0f} ms (by finite differences: {f['P']} gradients, "
        f"about {f['finite_jacobian_seconds_estimate']:.1f} s)",
        f"  to t = 1e15: {t['seconds']:.1f} s wall, {t['cpu_seconds']:.1f} CPU-s "
        f"({t['evaluations']} evaluations, {t['jacobians']} Jacobians in "
        f"{t['jacobian_seconds']:.1f} s, {t['solver_steps']} steps); seconds per decade "
        f"median {sorted(dec)[len(dec) // 2]:.2f}, max {max(dec):.2f}"
        if dec else f"  to t = 1e15: {t['seconds']:.1f} s"]
    if c:
        lines.append(f"  to t = {COMPARE_T_MAX:.0e}: exact Jacobian {c['analytic']['seconds']:.1f} s "
                     f"({c['analytic']['evaluations']} evaluations, "
                     f"{c['analytic']['jacobians']} Jacobians) against LSODA's finite "
                     f"differences {c['finite']['seconds']:.1f} s "
                     f"({c['finite']['evaluations']} evaluations)")
    return "\n".join(lines)


if __name__ == "__main__":
    print(json.dumps(_measure(int(sys.argv[1]), int(sys.argv[2]), bool(int(sys.argv[3])))))
