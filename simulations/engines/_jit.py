"""The package's single jit policy.

Every Numba kernel is compiled with :data:`jit` (``nopython``, ``cache=True``, no fastmath, so
results are bit-for-bit reproducible), and :data:`pjit` adds ``parallel=True`` for the few kernels
whose benchmark shows it pays; those merge fixed per-chunk accumulators in a fixed order, so their
results do not depend on the number of threads. :data:`inline_jit` is :data:`jit` inlined into
its callers by Numba (``inline="always"``), for the small helpers a kernel calls once per
sample: no call and no passing of arrays at that rate; inlining changes no operation.
``NUMBA_DISABLE_JIT=1`` turns all three into plain Python, which the tests use to exercise the
kernels' source directly.
"""
from __future__ import annotations

import numba

__all__ = ["jit", "pjit", "inline_jit", "prange", "N_CHUNKS"]

jit = numba.njit(cache=True, fastmath=False)
pjit = numba.njit(cache=True, fastmath=False, parallel=True)
inline_jit = numba.njit(cache=True, fastmath=False, inline="always")
prange = numba.prange

#: Number of accumulator chunks used by parallel reductions: fixed, so sums are taken in the same
#: order whatever the thread count.
N_CHUNKS = 16
