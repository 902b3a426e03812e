"""One sampled-data gradient step timed next to one streaming read of its data.

The fused step (:func:`patchassoc.simulations.engines.sampled_kernels.loss_and_grad`: loss, error
and the gradients in v and Q of N samples) must read every entry of X (N x D x d) at least once, so
one streaming read of X, NumPy's ``X @ v`` on the same array, is its floor on a given machine. The
ratio step / read says how close the step is to that memory limit, whatever the machine's speed and
load. Both are timed here interleaved (step, serial step, read, step, ...) in one process and the
minimum of the repetitions is kept, so a burst of load from other processes hits all three alike;
the load average is recorded next to them.

For comparison, an idiomatic PyTorch-CPU autograd step (softmax, two matrix products, the
logistic loss as ``logaddexp(0, -m)``, ``backward``) runs in a separate process, if torch is
importable, on the same arrays, after a warm-up, with its own interleaved ``X @ v``: its time
relative to that read is comparable to the ratio above, and its gradient in v is checked
against the kernel's.

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

__all__ = ["sampled_step_vs_read", "describe", "MIN_REPEATS"]

#: Interleaved repetitions at least (the minimum over them is kept): on a loaded machine a
#: single 20 ms timing is often preempted, the minimum of many is not (with 15, the ratio of one
#: step to one read still moved by about 15 % from run to run at a load average of 7 on 2 cores).
MIN_REPEATS = 30

_TORCH_STEP = r"""
import json, sys, time
import numpy as np
import torch
data = np.load(sys.argv[1])
repeats = int(sys.argv[2])
X, y, v0, Q0 = (data[k] for k in ("X", "y", "v", "Q"))
p, nu = int(data["p"]), float(data["nu"])
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


for _ in range(3):
    step(), X @ v0
best = {"torch": float("inf"), "read": float("inf")}
for _ in range(repeats):
    t0 = time.perf_counter(); grad_v = step(); t1 = time.perf_counter()
    X @ v0
    t2 = time.perf_counter()
    best["torch"] = min(best["torch"], t1 - t0)
    best["read"] = min(best["read"], t2 - t1)
print(json.dumps({"seconds": best["torch"], "read_seconds": best["read"],
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


def _torch_step(X, y, v, A, p, nu, repeats, grad_v) -> tuple[dict | None, np.ndarray | None]:
    """The PyTorch peer step in a separate process: (summary, its grad_v), or (None, None) if
    torch is not importable."""
    if importlib.util.find_spec("torch") is None:
        return None, None
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "step.npz")
        np.savez(path, X=X, y=y, v=v, Q=np.log(A), p=p, nu=nu)
        proc = subprocess.run([sys.executable, "-c", _TORCH_STEP, path, str(repeats)],
                              capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else
                f"exit {proc.returncode}"}, None
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    gt = np.asarray(out.pop("grad_v"))
    out["ratio_to_read"] = out["seconds"] / out["read_seconds"]
    out["grad_v_rel_diff"] = float(np.linalg.norm(gt - grad_v) / np.linalg.norm(grad_v))
    return out, gt


def sampled_step_vs_read(X, y, v, A, p: int, nu: float, repeats: int = MIN_REPEATS, *,
                         torch: bool = True, float32: bool = True) -> dict:
    """Time one step of :func:`kernels.loss_and_grad` against one read of X (``X @ v``).

    Parameters
    ----------
    X, y : ndarray
        A sample as returned by :func:`kernels.check_data` (float64, C-contiguous).
    v, A, p, nu :
        The point and the activation (SPEC section 2).
    repeats : int
        Interleaved repetitions (at least :data:`MIN_REPEATS`); the minimum of each is kept.
    torch : bool
        Also time the PyTorch-CPU autograd peer step in a separate process, if importable.
    float32 : bool
        Also time the step on X stored in float32 (``check_data(..., dtype=np.float32)``),
        interleaved with the others, and a read of that X.

    Returns
    -------
    dict
        ``seconds`` (the step as ``loss_and_grad`` runs it: threaded driver at this size if it
        is large enough), ``serial_seconds`` (one thread, same numbers), ``read_seconds``
        (``X @ v``), ``ratio`` = seconds / read_seconds, ``serial_ratio``, ``threads``,
        ``read_one_thread_seconds`` (``X @ v`` with NumPy's BLAS held to one thread, if
        threadpoolctl is importable; else None) and ``serial_ratio_one_thread`` = serial_seconds
        / read_one_thread_seconds (one thread against one thread), ``driver``, ``prefetch``
        (whether X is large enough for the kernels' software
        prefetch, :data:`kernels.PREFETCH_MIN_BYTES`), ``load_average`` (before, after) and
        ``torch`` (None if not importable):
        its ``seconds``, ``read_seconds``, ``ratio_to_read``, the ``speedup`` of this step over
        it, normalised by each process's own read, and ``grad_v_rel_diff`` against the kernel;
        ``float32`` (None unless asked): ``seconds``, ``read_seconds`` (of the float32 X),
        ``ratio`` to the float64 read and ``ratio_to_own_read``.
    """
    import numba

    X, y = kernels.check_data(X, y)
    repeats = max(int(repeats), MIN_REPEATS)
    parallel = kernels._threaded(X)
    fns = {
        "step": lambda: kernels.loss_and_grad(X, y, v, A, p, nu, data_checked=True),
        "serial": lambda: kernels._loss_grad_serial(X, y, v, A, p, nu),
        "read": lambda: X @ v,
    }
    limits = _one_blas_thread()
    if limits is not None:
        def read1():
            with limits():
                return X @ v
        fns["read1"] = read1
    if float32:
        X32, _ = kernels.check_data(X, y, dtype=np.float32)
        v32 = v.astype(np.float32)
        fns["step32"] = lambda: kernels.loss_and_grad(X32, y, v, A, p, nu, data_checked=True)
        fns["read32"] = lambda: X32 @ v32
    out = fns["step"]()  # compile / warm up
    for fn in fns.values():
        fn()
    load_before = _load()
    best = {k: math.inf for k in fns}
    for _ in range(repeats):
        for key, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[key] = min(best[key], time.perf_counter() - t0)
    res = {"seconds": best["step"], "serial_seconds": best["serial"],
           "read_seconds": best["read"], "ratio": best["step"] / best["read"],
           "serial_ratio": best["serial"] / best["read"], "repeats": repeats,
           "driver": "parallel" if parallel else "serial", "threads": numba.get_num_threads(),
           "prefetch": bool(X.nbytes >= kernels.PREFETCH_MIN_BYTES),
           "load_average": [load_before, _load()], "torch": None, "float32": None,
           "read_one_thread_seconds": None, "serial_ratio_one_thread": None}
    if "read1" in best:
        res["read_one_thread_seconds"] = best["read1"]
        res["serial_ratio_one_thread"] = best["serial"] / best["read1"]
    if float32:
        res["float32"] = {"seconds": best["step32"], "read_seconds": best["read32"],
                          "ratio": best["step32"] / best["read"],
                          "ratio_to_own_read": best["step32"] / best["read32"]}
    if torch:
        t, _ = _torch_step(X, y, v, A, p, nu, repeats, out["grad_v"])
        if t is not None and "seconds" in t:
            t["speedup"] = t["ratio_to_read"] / res["ratio"]
        res["torch"] = t
    return res


def describe(t: dict) -> str:
    """Text lines for a result of :func:`sampled_step_vs_read` (with N, D, d added)."""
    lines = [f"sampled-data gradient step at N={t['N']}, D={t['D']}, d={t['d']}: "
             f"{1e3 * t['seconds']:.1f} ms ({t['driver']} driver, {t['threads']} threads"
             f"{', prefetching' if t.get('prefetch') else ''}); "
             f"one read of X (X @ v) {1e3 * t['read_seconds']:.1f} ms: ratio {t['ratio']:.2f} "
             f"(one thread: {1e3 * t['serial_seconds']:.1f} ms, ratio {t['serial_ratio']:.2f}); "
             f"load average {t['load_average'][0]}"]
    if t.get("read_one_thread_seconds"):
        lines.append(f"  one thread against one thread: read of X with one BLAS thread "
                     f"{1e3 * t['read_one_thread_seconds']:.1f} ms, one-thread step ratio "
                     f"{t['serial_ratio_one_thread']:.2f}")
    f32 = t.get("float32")
    if f32:
        lines.append(f"  with X stored in float32: {1e3 * f32['seconds']:.1f} ms, ratio "
                     f"{f32['ratio']:.2f} to the float64 read ({f32['ratio_to_own_read']:.2f} to a "
                     f"read of the float32 X)")
    tt = t.get("torch")
    if tt is None:
        lines.append("  PyTorch peer step: torch not importable")
    elif "error" in tt:
        lines.append(f"  PyTorch peer step failed: {tt['error']}")
    else:
        lines.append(f"  PyTorch {tt['version']} autograd step (separate process, "
                     f"{tt['threads']} threads): {1e3 * tt['seconds']:.1f} ms, "
                     f"{tt['ratio_to_read']:.2f} reads of X: this step is {tt['speedup']:.2f}x "
                     f"faster (grad_v agrees to {tt['grad_v_rel_diff']:.1e})")
    return "\n".join(lines)
