"""One sampled-data gradient step timed next to the fastest streaming read of its data.

The fused step (:func:`patchassoc.simulations.engines.sampled_kernels.loss_and_grad`: loss, error
and the gradients in v and Q of N samples) must read every entry of X (N x D x d) at least once, so
one streaming read of X is its floor on a given machine. The floor is the fastest of the reads
in :data:`READS`, timed in the same run: each computes X v (every entry of X read once, N D
products), by NumPy on the 2-D view ``X.reshape(N * D, d) @ v`` (one BLAS matrix-vector
product, threaded) and by the kernels' own projection pass alone
(:func:`~patchassoc.simulations.engines.sampled_kernels.projections`, threaded as the step is). NumPy's ``X @ v`` on the 3-D array, the
floor of earlier versions of this benchmark, is a stack of N small products and is slower; it
is still timed and reported (``read_3d_seconds``, ``ratio_3d``) so that older numbers stay
comparable. The ratio step / floor says how close the step is to that memory limit, whatever
the machine's speed and load.

Everything is timed interleaved (step, serial step, each read, ...) in one process, and the
minimum of the repetitions is kept, so a burst of load from other processes hits all of them
alike; the load average is recorded next to them. Each repetition calls every function
:data:`BLOCK` times in a row, the Numba functions first, then NumPy's, and times all calls but
the first. Before each of the two groups the benchmark sleeps :data:`POOL_IDLE_SECONDS`: a
thread pool keeps its idle threads spinning for a while after a call, and a spinning thread
takes a core from whatever runs next. OpenMP's spin is short (the untimed first call absorbs
it), OpenBLAS's is not: by default its threads spin for 2^28 cycles (0.11 s at 2.45 GHz), the
length of a whole block of steps. Training runs a step after a step, never after a threaded
BLAS call, so the step is timed with the cores to itself, as the reads are. Earlier versions
did not pause, and timed every step inside OpenBLAS's spin; that reading is still taken, one
step called right after the reads in each repetition (``seconds_after_blas``,
``ratio_after_blas``), so that older numbers stay comparable.

For comparison, an idiomatic PyTorch-CPU autograd step (softmax, two matrix products, the
logistic loss as ``logaddexp(0, -m)``, ``backward``) runs in a separate process, if torch is
importable, on the same arrays, after a warm-up, with its own interleaved reads of X (2-D view
and 3-D): its time relative to its 2-D read is compared with the step's relative to the 2-D
read of this process, and its gradient in v is checked against the kernel's.

The roofline (``roofline``). A step reads X once but passes over each sample twice: the
projections U = X_n v, then, after the head, grad_v += X_n^T gu, which needs the whole of U
first. So the step is bounded below by the memory (one read, the floor) and by its own
arithmetic on data already in the caches. The second is timed here on the first samples of X
(:data:`IN_CACHE_BYTES` of them, a size that stays in a core's second-level cache), one chunk
of the sample loop (:func:`~patchassoc.simulations.engines.sampled_kernels._accumulate`, one thread) against the kernel's projection
pass alone on the same samples: ``step_per_sample`` and ``read_per_sample`` in seconds, and
``bound`` = max(1, step_per_sample N / threads / read_seconds), the ratio to the floor that a
step with perfect overlap of its arithmetic and the memory stream would still have. A bound
above a target says the target needs less arithmetic per sample, not better overlap. The
spread of the floor (the median of its timings over their minimum, ``floor_spread``) is
recorded too: it says how far a single reading of the ratio can move.

Timings are measurements, never test assertions.
"""
from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from patchassoc.simulations.engines import sampled_kernels as kernels

__all__ = ["sampled_step_vs_read", "roofline", "describe", "MIN_REPEATS", "BLOCK", "READS",
           "IN_CACHE_BYTES", "POOL_IDLE_SECONDS"]

#: Interleaved repetitions at least (the minimum over them is kept): on a loaded machine a
#: single 20 ms timing is often preempted, the minimum of many is not (with 15, the ratio of one
#: step to one read still moved by about 15 % from run to run at a load average of 7 on 2 cores).
MIN_REPEATS = 30

#: Consecutive calls of each function per repetition; all but the first are timed (the module
#: docstring).
BLOCK = 3

#: Seconds slept before each group of calls of one thread pool (the module docstring): longer
#: than OpenBLAS's default spin of its idle threads, 2^28 cycles, at clocks down to 1 GHz.
POOL_IDLE_SECONDS = 0.3

#: Bytes of X timed in the caches for the roofline (:func:`roofline`): half of the 512 KiB
#: second-level cache of a core of this project's machines (AMD EPYC), so that the samples, v,
#: the accumulators and the scratch fit in it together.
IN_CACHE_BYTES = 1 << 18

#: Calls of each in-cache function per timing (the minimum over repetitions of their mean is
#: kept): a call on IN_CACHE_BYTES takes some ten microseconds, below a timer's resolution to
#: trust alone.
IN_CACHE_CALLS = 20

#: The reads of X the floor is the fastest of: name -> what is timed. Each reads every entry of
#: X once and computes X v.
READS = {
    "2d": "X.reshape(N * D, d) @ v (NumPy, 2-D view)",
    "kernel": "kernels.projections(X, v) (the step's projection pass alone)",
}

_TORCH_STEP = r"""
import json, sys, time
import numpy as np
import torch
data = np.load(sys.argv[1])
repeats, block, pause = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
X, y, v0, Q0 = (data[k] for k in ("X", "y", "v", "Q"))
p, nu = int(data["p"]), float(data["nu"])
X2 = X.reshape(-1, X.shape[2])
Xt, yt, vt, Qt = (torch.from_numpy(a) for a in (X, y, v0, Q0))
zero = torch.zeros((), dtype=torch.float64)


def step():
    v = vt.clone().requires_grad_(True)
    Q = Qt.clone().requires_grad_(True)
    A = torch.softmax(Q, dim=1)
    z = (Xt @ v) @ A.T
    f = (z.pow(p) + nu * z).sum(dim=1)
    loss = torch.logaddexp(zero, -yt * f).mean()  # softplus is linear past 20: not exact
    loss.backward()
    return v.grad


reads = {"read": lambda: X2 @ v0, "read_3d": lambda: X @ v0}
pools = [{"torch": step}, reads]  # torch's OpenMP threads, then NumPy's BLAS
for _ in range(3):
    for pool in pools:
        for fn in pool.values():
            fn()
best = {k: float("inf") for pool in pools for k in pool}
for _ in range(repeats):
    for pool in pools:
        time.sleep(pause)  # the other pool's idle threads stop spinning
        for key, fn in pool.items():
            fn()
            for _ in range(block - 1):
                t0 = time.perf_counter(); out = fn(); t1 = time.perf_counter()
                best[key] = min(best[key], t1 - t0)
                if key == "torch":
                    grad_v = out
print(json.dumps({"seconds": best["torch"], "read_seconds": best["read"],
                  "read_3d_seconds": best["read_3d"],
                  "threads": torch.get_num_threads(), "version": torch.__version__,
                  "grad_v": grad_v.numpy().tolist()}))
"""


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - platform without getloadavg
        return None


def _one_blas_thread():
    """A context-manager factory limiting NumPy's BLAS to one thread (threadpoolctl), or None
    if threadpoolctl is not importable."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        return None
    return lambda: threadpool_limits(limits=1, user_api="blas")


def _torch_step(X, y, v, A, p, nu, repeats, grad_v, pause=POOL_IDLE_SECONDS
                ) -> tuple[dict | None, np.ndarray | None]:
    """The PyTorch peer step in a separate process, timed as this process times its step
    (``pause`` seconds before each thread pool's calls): (summary, its grad_v), or (None, None)
    if torch is not importable."""
    if importlib.util.find_spec("torch") is None:
        return None, None
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "step.npz")
        np.savez(path, X=X, y=y, v=v, Q=np.log(A), p=p, nu=nu)
        proc = subprocess.run([sys.executable, "-c", _TORCH_STEP, path, str(repeats),
                               str(BLOCK), str(pause)], capture_output=True, text=True,
                              timeout=1800)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else
                f"exit {proc.returncode}"}, None
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    gt = np.asarray(out.pop("grad_v"))
    out["ratio_to_read"] = out["seconds"] / out["read_seconds"]
    out["ratio_to_3d_read"] = out["seconds"] / out["read_3d_seconds"]
    out["grad_v_rel_diff"] = float(np.linalg.norm(gt - grad_v) / np.linalg.norm(grad_v))
    return out, gt


def roofline(X, y, v, A, p: int, nu: float, repeats: int = MIN_REPEATS) -> dict:
    """Per-sample seconds of the step's arithmetic and of its projection pass on samples held
    in the caches (module docstring): ``samples`` (M, the first M samples of X, at most
    :data:`IN_CACHE_BYTES`), ``step_per_sample`` (one chunk of the sample loop, one thread, no
    prefetch: :func:`~patchassoc.simulations.engines.sampled_kernels._accumulate` on samples 0..M-1), ``read_per_sample`` (the kernel's
    projections alone on them) and ``ratio`` = step / read. X, y as returned by
    :func:`~patchassoc.simulations.engines.sampled_kernels.check_data`."""
    N, D, d = X.shape
    M = int(max(1, min(N, IN_CACHE_BYTES // (D * d * X.itemsize))))
    Xc, yc = X[:M], y[:M]
    AT = np.ascontiguousarray(A.T)
    gv, gA = np.zeros(d), np.zeros((D, D))
    work, out = np.empty((4, D)), np.empty((M, D))

    def step():
        for _ in range(IN_CACHE_CALLS):
            kernels._accumulate(Xc, yc, v, A, AT, p, nu, 0, M, gv, gA, work, False)

    def read():
        for _ in range(IN_CACHE_CALLS):
            kernels._projections_range(Xc, v, 0, M, out)

    fns = {"step": step, "read": read}
    for fn in fns.values():
        fn()
    best = {k: math.inf for k in fns}
    for _ in range(max(int(repeats), 1)):
        for key, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[key] = min(best[key], (time.perf_counter() - t0) / (IN_CACHE_CALLS * M))
    return {"samples": M, "step_per_sample": best["step"], "read_per_sample": best["read"],
            "ratio": best["step"] / best["read"]}


def _floor(best: dict, keys: dict) -> tuple[str, float]:
    """(name, seconds) of the fastest of the reads ``keys`` (name -> key of ``best``)."""
    name = min(keys, key=lambda k: best[keys[k]])
    return name, best[keys[name]]


def sampled_step_vs_read(X, y, v, A, p: int, nu: float, repeats: int = MIN_REPEATS, *,
                         torch: bool = True, float32: bool = True,
                         pause: float = POOL_IDLE_SECONDS) -> dict:
    """Time one step of :func:`~patchassoc.simulations.engines.sampled_kernels.loss_and_grad` against the fastest read of X.

    Parameters
    ----------
    X, y : ndarray
        A sample as returned by :func:`~patchassoc.simulations.engines.sampled_kernels.check_data` (float64, C-contiguous).
    v, A, p, nu :
        The point and the activation (SPEC section 2).
    repeats : int
        Interleaved repetitions (at least :data:`MIN_REPEATS`); the minimum of each is kept.
    torch : bool
        Also time the PyTorch-CPU autograd peer step in a separate process, if importable.
    float32 : bool
        Also time the step on X stored in float32 (``check_data(..., dtype=np.float32)``),
        interleaved with the others, and the reads of that X.
    pause : float
        Seconds slept before each thread pool's group of calls (:data:`POOL_IDLE_SECONDS`; the
        module docstring).

    Returns
    -------
    dict
        ``seconds`` (the step as ``loss_and_grad`` runs it: threaded driver at this size if it
        is large enough), ``serial_seconds`` (one thread, same numbers), ``read_seconds`` (the
        floor: the fastest read of X, ``floor`` names it, a key of :data:`READS`), ``reads``
        (seconds of every read of :data:`READS`), ``ratio`` = seconds / read_seconds,
        ``serial_ratio`` = serial_seconds / read_seconds, ``read_3d_seconds`` (NumPy's
        ``X @ v`` on the 3-D array, the floor of earlier versions) and ``ratio_3d`` = seconds /
        read_3d_seconds, ``threads``, ``read_one_thread_seconds`` (the fastest one-thread read:
        the 2-D read with NumPy's BLAS held to one thread, if threadpoolctl is importable, or
        the serial projection pass, ``floor_one_thread`` names it) and ``serial_ratio_one_thread``
        = serial_seconds / read_one_thread_seconds (one thread against one thread), ``driver``,
        ``prefetch`` (whether X is large enough for the kernels' software prefetch,
        :data:`~patchassoc.simulations.engines.sampled_kernels.PREFETCH_MIN_BYTES`), ``repeats``, ``block`` (:data:`BLOCK`),
        ``load_average`` (before, after) and ``torch`` (None if not importable): its
        ``seconds``, ``read_seconds`` (its 2-D read), ``read_3d_seconds``, ``ratio_to_read``,
        ``ratio_to_3d_read``, the ``speedup`` of this step over it, each normalised by its own
        process's 2-D read, and ``grad_v_rel_diff`` against the kernel; ``float32`` (None
        unless asked): ``seconds``, ``read_seconds`` (the fastest read of the float32 X),
        ``floor``, ``read_3d_seconds``, ``ratio`` to the float64 floor and
        ``ratio_to_own_read``; ``floor_spread`` (median / minimum of the floor's timings) and
        ``roofline`` (:func:`roofline`, with ``bound``, the ratio to the floor that perfect
        overlap of the step's in-cache arithmetic with the memory stream would still give);
        ``pause`` (seconds), ``seconds_after_blas`` (the step called right after NumPy's
        threaded reads, inside OpenBLAS's spin: the protocol of earlier versions) and
        ``ratio_after_blas`` = seconds_after_blas / read_seconds.
    """
    import numba

    X, y = kernels.check_data(X, y)
    repeats = max(int(repeats), MIN_REPEATS)
    parallel = kernels._threaded(X)
    N, D, d = X.shape
    X2 = X.reshape(N * D, d)
    numba_fns = {  # OpenMP threads
        "step": lambda: kernels.loss_and_grad(X, y, v, A, p, nu, data_checked=True),
        "serial": lambda: kernels._loss_grad_serial(X, y, v, A, p, nu),
        "read_kernel": lambda: kernels.projections(X, v, data_checked=True),
        "read_kernel1": lambda: kernels._projections_serial(X, v),
    }
    blas_fns = {  # OpenBLAS threads
        "read_2d": lambda: X2 @ v,
        "read_3d": lambda: X @ v,
    }
    limits = _one_blas_thread()
    if limits is not None:
        def read1():
            with limits():
                return X2 @ v
        blas_fns["read_2d1"] = read1
    if float32:
        X32, _ = kernels.check_data(X, y, dtype=np.float32)
        X32_2, v32 = X32.reshape(N * D, d), v.astype(np.float32)
        numba_fns["step32"] = lambda: kernels.loss_and_grad(X32, y, v, A, p, nu,
                                                            data_checked=True)
        numba_fns["read32_kernel"] = lambda: kernels.projections(X32, v, data_checked=True)
        blas_fns["read32_2d"] = lambda: X32_2 @ v32
        blas_fns["read32_3d"] = lambda: X32 @ v32
    fns = {**numba_fns, **blas_fns}
    out = fns["step"]()  # compile / warm up
    for fn in fns.values():
        fn()
    load_before = _load()
    best = {k: math.inf for k in fns}
    seen = {k: [] for k in fns}
    after_blas = math.inf
    for _ in range(repeats):
        for pool in (numba_fns, blas_fns):
            time.sleep(pause)  # the other pool's idle threads stop spinning
            for key, fn in pool.items():
                fn()
                for _ in range(BLOCK - 1):
                    t0 = time.perf_counter()
                    fn()
                    seen[key].append(time.perf_counter() - t0)
                    best[key] = min(best[key], seen[key][-1])
        t0 = time.perf_counter()
        fns["step"]()  # inside OpenBLAS's spin, as earlier versions timed it
        after_blas = min(after_blas, time.perf_counter() - t0)
    floor, read = _floor(best, {"2d": "read_2d", "kernel": "read_kernel"})
    roof = roofline(X, y, v, A, p, nu, repeats)
    threads = numba.get_num_threads() if parallel else 1
    roof["bound"] = max(1.0, roof["step_per_sample"] * N / threads / read)
    ones = {"kernel": "read_kernel1"}
    if "read_2d1" in best:
        ones["2d"] = "read_2d1"
    floor1, read1 = _floor(best, ones)
    res = {"seconds": best["step"], "serial_seconds": best["serial"], "read_seconds": read,
           "floor": floor, "reads": {"2d": best["read_2d"], "kernel": best["read_kernel"]},
           "ratio": best["step"] / read, "serial_ratio": best["serial"] / read,
           "read_3d_seconds": best["read_3d"], "ratio_3d": best["step"] / best["read_3d"],
           "read_one_thread_seconds": read1, "floor_one_thread": floor1,
           "serial_ratio_one_thread": best["serial"] / read1,
           "repeats": repeats, "block": BLOCK,
           "driver": "parallel" if parallel else "serial", "threads": numba.get_num_threads(),
           "prefetch": bool(X.nbytes >= kernels.PREFETCH_MIN_BYTES),
           "load_average": [load_before, _load()], "torch": None, "float32": None,
           "floor_spread": float(np.median(seen["read_2d" if floor == "2d" else "read_kernel"])
                                 / read),
           "roofline": roof, "pause": float(pause), "seconds_after_blas": after_blas,
           "ratio_after_blas": after_blas / read}
    if float32:
        floor32, read32 = _floor(best, {"2d": "read32_2d", "kernel": "read32_kernel"})
        res["float32"] = {"seconds": best["step32"], "read_seconds": read32, "floor": floor32,
                          "read_3d_seconds": best["read32_3d"],
                          "ratio": best["step32"] / read,
                          "ratio_to_own_read": best["step32"] / read32}
    if torch:
        t, _ = _torch_step(X, y, v, A, p, nu, repeats, out["grad_v"], pause)
        if t is not None and "seconds" in t:
            t["speedup"] = t["ratio_to_read"] / (best["step"] / best["read_2d"])
        res["torch"] = t
    return res


def describe(t: dict) -> str:
    """Text lines for a result of :func:`sampled_step_vs_read` (with N, D, d added)."""
    reads = ", ".join(f"{name} {1e3 * s:.1f} ms" for name, s in t["reads"].items())
    lines = [f"sampled-data gradient step at N={t['N']}, D={t['D']}, d={t['d']}: "
             f"{1e3 * t['seconds']:.1f} ms ({t['driver']} driver, {t['threads']} threads"
             f"{', prefetching' if t.get('prefetch') else ''}); "
             f"floor (the fastest read of X: {READS[t['floor']]}) "
             f"{1e3 * t['read_seconds']:.1f} ms: ratio {t['ratio']:.2f} "
             f"(one thread: {1e3 * t['serial_seconds']:.1f} ms, ratio {t['serial_ratio']:.2f}); "
             f"load average {t['load_average'][0]}",
             f"  reads of X: {reads}; NumPy's X @ v on the 3-D array (the former floor) "
             f"{1e3 * t['read_3d_seconds']:.1f} ms: ratio {t['ratio_3d']:.2f}",
             f"  one thread against one thread: fastest one-thread read ({t['floor_one_thread']}) "
             f"{1e3 * t['read_one_thread_seconds']:.1f} ms, one-thread step ratio "
             f"{t['serial_ratio_one_thread']:.2f}"]
    if "seconds_after_blas" in t:
        lines.append(f"  each thread pool timed after a {t['pause']:g} s pause; the step called "
                     f"right after NumPy's threaded reads, while OpenBLAS's idle threads still "
                     f"spin (the protocol of earlier versions): "
                     f"{1e3 * t['seconds_after_blas']:.1f} ms, ratio "
                     f"{t['ratio_after_blas']:.2f}")
    roof = t.get("roofline")
    if roof:
        lines.append(f"  roofline: in the caches ({roof['samples']} samples, one thread) the step "
                     f"takes {1e6 * roof['step_per_sample']:.2f} us a sample, its projection "
                     f"pass {1e6 * roof['read_per_sample']:.2f} us (ratio {roof['ratio']:.2f}): "
                     f"with perfect overlap the step would still be {roof['bound']:.2f} x the "
                     f"floor; the floor's median is {t['floor_spread']:.2f} x its minimum")
    f32 = t.get("float32")
    if f32:
        lines.append(f"  with X stored in float32: {1e3 * f32['seconds']:.1f} ms, ratio "
                     f"{f32['ratio']:.2f} to the float64 floor ({f32['ratio_to_own_read']:.2f} to "
                     f"the fastest read of the float32 X, {f32['floor']})")
    tt = t.get("torch")
    if tt is None:
        lines.append("  PyTorch peer step: torch not importable")
    elif "error" in tt:
        lines.append(f"  PyTorch peer step failed: {tt['error']}")
    else:
        lines.append(f"  PyTorch {tt['version']} autograd step (separate process, "
                     f"{tt['threads']} threads): {1e3 * tt['seconds']:.1f} ms, "
                     f"{tt['ratio_to_read']:.2f} of its 2-D read of X "
                     f"({tt['ratio_to_3d_read']:.2f} of its 3-D read): this step is "
                     f"{tt['speedup']:.2f}x faster, each against its own 2-D read (grad_v agrees "
                     f"to {tt['grad_v_rel_diff']:.1e})")
    return "\n".join(lines)
