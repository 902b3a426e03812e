"""Numba kernels for the sampled-data model, behind validated public functions.

The public functions coerce their inputs (float64, C-contiguous, shapes, finite values), allocate
the outputs and call private ``_kernel`` functions that see only arrays and scalars. They compute
exactly what :func:`patchassoc.theory.model.loss_and_grad` defines (the plain-NumPy path the tests
compare against), in one pass over the samples:

    U_j = <v, X_j>,  z_i = sum_j A_ij U_j,  m = y sum_i act(z_i),
    G_i = y l'(m) act'(z_i) / N,  dA += G U^T,  grad_v += sum_j (A^T G)_j X_j.

The sample loop is split into :data:`~patchassoc.simulations.engines._jit.N_CHUNKS` fixed chunks,
each with its own accumulator, merged in order afterwards: results are deterministic whatever the
thread count, and the serial driver (small inputs) gives the same numbers as the threaded one (large
inputs).

A step is bound by one read of X from memory (N D d entries; ``patchassoc bench`` times it
against the fastest read of X it finds). X is read once: each sample's D x d block (32 KiB at
D = 16, d = 256) is read from memory by the projections U = X_n v and is still in the first-level
cache for its grad_v update. Per sample, in order:

- U = X_n v, four rows side by side (:func:`_dots_simd`);
- z = A U, act(z), act'(z) and the margin (:func:`_matvec_simd`, :func:`_act`), the
  logistic loss, G = y l'(m) act'(z) / N, A^T G and dA += G U^T (:func:`_outer_add_simd`);
- grad_v += X_n^T (A^T G), 64 entries of grad_v side by side (:func:`_axpy_sample_simd`).

The next sample's block is prefetched meanwhile (data past :data:`PREFETCH_MIN_BYTES`), in
address order: its first half while U is computed, its second half during the grad_v update
(:func:`_prefetch_schedule_py` states the order), so the memory keeps streaming, one sequential
stream, during the arithmetic. The threads never touch a reference count in the sample
loop: a chunk sees its arrays through borrowed views (:func:`_borrowed`), for the shared inputs
(X, v, A) would otherwise have their counts updated by every thread at every helper call, an
atomic operation on a cache line the two cores pass back and forth.

The arithmetic is strict IEEE float64 (no fastmath, no fused multiply-add) and yet vectorized:
every loop above but the activation's is explicit LLVM vector code (eight doubles per vector)
with its accumulators in SIMD registers, computing the order of operations stated by its plain-Python twin (``_dots_py``,
``_matvec_py``, ``_outer_add_py``, ``_axpy_lanes_py``): several sums side by side
in vector lanes, never one sum reassociated. That vector code (Numba intrinsics) and its twins
are the private module ``_sampled_simd``; this module holds the kernels that call them. So the compiled kernels give the same bits as their
source run as plain Python (``NUMBA_DISABLE_JIT=1``; tested), on any machine, and the same bits as
the earlier kernels of this module, which summed in the same order with narrower vectors. The
activation (D values per sample, against the 2 D d products of the passes over X) is the scalar
:func:`patchassoc.theory.activation.act_pair`, compiled into the kernels: its one definition.

X may be stored in float32 (:func:`check_data` with ``dtype=np.float32``): half the memory and
the traffic; the products are still float64 (the float32 values convert exactly), so the result
is the float64 kernel's on the rounded data.

References
----------
SPEC section 2; :mod:`patchassoc.theory.model`.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from patchassoc.simulations.engines._jit import N_CHUNKS, inline_jit, jit, pjit, prange
from patchassoc.simulations.engines._jit import borrowed as _borrowed
# the explicit vector code (intrinsics) and the plain-Python twins that state its order
from patchassoc.simulations.engines._sampled_simd import (LANES, _axpy_lanes, _dots, _matvec,
                                                          _outer_add)
from patchassoc.simulations.engines._scalar import logistic as _logistic, zero_one as _zero_one
from patchassoc.theory.activation import act_pair

__all__ = ["loss_and_grad", "margins", "projections", "softmax_rows", "grad_logits",
           "check_data", "PREFETCH_MIN_BYTES"]


@jit
def _softmax_rows(Q):
    D = Q.shape[0]
    A = np.empty_like(Q)
    for i in range(D):
        mx = Q[i, 0]
        for j in range(1, Q.shape[1]):
            if Q[i, j] > mx:
                mx = Q[i, j]
        tot = 0.0
        for j in range(Q.shape[1]):
            A[i, j] = math.exp(Q[i, j] - mx)
            tot += A[i, j]
        for j in range(Q.shape[1]):
            A[i, j] /= tot
    return A


@jit
def _grad_logits(A, gA):
    D = A.shape[0]
    gQ = np.empty_like(A)
    for i in range(D):
        dot = 0.0
        for k in range(A.shape[1]):
            dot += A[i, k] * gA[i, k]
        for j in range(A.shape[1]):
            gQ[i, j] = A[i, j] * (gA[i, j] - dot)
    return gQ


#: Data of at least this many bytes is streamed from memory with software prefetch: while a
#: sample is processed, the next sample's block is requested, the first half of it in address
#: order during the projections and the second half during the grad_v update
#: (:func:`_dots_simd`, :func:`_axpy_sample_simd`, :func:`_prefetch_schedule_py`), so the
#: memory is busy during the arithmetic too. Smaller data sits in the caches, where the
#: hardware prefetcher suffices and a software prefetch is an extra instruction (measured at
#: D = 16, d = 256, one thread, with load on the machine, when the lines were requested in
#: another order: 1 to 18 % slower up to 8 MiB, 17 to 24 % faster from 16 MiB to 125 MiB).
#: A prefetch is a hint: it never changes a value.
PREFETCH_MIN_BYTES = 1 << 24


# -- one sample ---------------------------------------------------------------------------------
@jit
def _dot_short(X, n, j, v):
    """<X[n, j], v> of a row shorter than LANES: four interleaved scalar accumulators, then
    (a0 + a1) + (a2 + a3)."""
    d = X.shape[2]
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    k = 0
    while k + 4 <= d:
        a0 += X[n, j, k] * v[k]
        a1 += X[n, j, k + 1] * v[k + 1]
        a2 += X[n, j, k + 2] * v[k + 2]
        a3 += X[n, j, k + 3] * v[k + 3]
        k += 4
    while k < d:
        a0 += X[n, j, k] * v[k]
        k += 1
    return (a0 + a1) + (a2 + a3)


@inline_jit
def _project(U, X, n, v, prefetch):
    """U_j = <v, X_nj> for every row j of sample n, each in a fixed order: :func:`_dot_lanes`
    over the first LANES * (d // LANES) terms, then the d mod LANES others in order, added last;
    rows shorter than LANES by :func:`_dot_short`. The order depends on d only, never on the
    thread count or the machine, so the result is the same bit for bit on every run."""
    D, d = X.shape[1], X.shape[2]
    nb = d // LANES
    if nb == 0:
        for j in range(D):
            U[j] = _dot_short(X, n, j, v)
        return
    _dots(U, X, n, v, nb, prefetch)
    o = nb * LANES
    if o < d:
        for j in range(D):
            t = 0.0
            for k in range(o, d):
                t += X[n, j, k] * v[k]
            U[j] = U[j] + t


@inline_jit
def _act(z, G, p, nu):
    """G_i = act'(z_i) for every i; return sum_i act(z_i), summed from 0.0 in the order
    i = 0, 1, ... The activation is :func:`patchassoc.theory.activation.act_pair` (the monomial by
    repeated squaring), compiled into this kernel."""
    f = 0.0
    for i in range(z.shape[0]):
        a, da = act_pair(z[i], p, nu)
        f += a
        G[i] = da
    return f


@inline_jit
def _axpy_rows(gv, gu, X, n, prefetch):
    """gv += sum_j gu_j X[n, j]: for each k the D terms summed in order j = 0, 1, ..., then
    added to gv_k (:func:`_axpy_lanes_py` for the first LANES * (d // LANES) entries, the same
    order in a scalar loop for the others). ``prefetch``: see :func:`_axpy_sample_simd`."""
    D, d = X.shape[1], X.shape[2]
    nb = d // LANES
    if nb > 0:
        _axpy_lanes(gv, gu, X, n, nb, prefetch)
    for k in range(nb * LANES, d):
        t = 0.0
        for j in range(D):
            t += gu[j] * X[n, j, k]
        gv[k] += t


@inline_jit
def _head(U, yn, AT, p, nu, z, G):
    """Given U = X_n v of one sample: z = A U (:func:`_matvec_py`, from the rows of AT = A^T),
    G = act'(z); return the margin m = y f(X_n) (:func:`_act`)."""
    _matvec(z, AT, U)
    return yn * _act(z, G, p, nu)


@jit
def _accumulate(X, y, v, A, AT, p, nu, lo, hi, gv, gA, work, prefetch):
    """Add samples lo..hi-1 to the accumulators gv, gA; return their (loss, error) sums.

    ``work`` is a (4, D) scratch array. The arrays are passed on as borrowed views (no
    reference counting in the sample loop, see the module docstring): they are this call's
    arguments, so they outlive it."""
    return _accumulate_rows(_borrowed(X), _borrowed(y), _borrowed(v), _borrowed(A),
                            _borrowed(AT), p, nu, lo, hi, _borrowed(gv), _borrowed(gA),
                            _borrowed(work), prefetch)


@jit
def _accumulate_rows(X, y, v, A, AT, p, nu, lo, hi, gv, gA, work, prefetch):
    """The sample loop of :func:`_accumulate`.

    X is read from memory once: the update grad_v += sum_j gu_j X_nj (:func:`_axpy_rows`) finds
    the sample's D x d block still in cache after the dot products U = X_n v
    (:func:`_project`), and, if ``prefetch``, the next sample's block is requested meanwhile.
    The order of every sum is fixed by (lo, hi, D, d) alone."""
    N, D, d = X.shape
    U = work[0]
    z = work[1]
    G = work[2]
    gu = work[3]
    loss = 0.0
    err = 0.0
    for n in range(lo, hi):
        pf = D * d if prefetch and n + 1 < N else 0
        _project(U, X, n, v, pf)
        m = _head(U, y[n], AT, p, nu, z, G)
        l, dl = _logistic(m)
        loss += l
        err += _zero_one(m)
        g = y[n] * dl / N
        for i in range(D):
            G[i] *= g
        _matvec(gu, A, G)        # gu_j = sum_i G_i A_ij
        _outer_add(gA, G, U)     # gA_ij += G_i U_j
        _axpy_rows(gv, gu, X, n, pf)
    return loss, err


@jit
def _merge(loss_c, err_c, gv_c, gA_c, N):
    """The chunks' sums added in chunk order (element loops: Numba compiles an array's += for
    seconds)."""
    loss = 0.0
    err = 0.0
    d, D = gv_c.shape[1], gA_c.shape[1]
    gv = np.zeros(d)
    gA = np.zeros((D, D))
    for c in range(loss_c.shape[0]):
        loss += loss_c[c]
        err += err_c[c]
        for k in range(d):
            gv[k] += gv_c[c, k]
        for i in range(D):
            for j in range(D):
                gA[i, j] += gA_c[c, i, j]
    return loss / N, err / N, gv, gA


@jit
def _transpose(A):
    """A.T as a new C-contiguous array."""
    D = A.shape[0]
    AT = np.empty((D, D))
    for i in range(D):
        for j in range(D):
            AT[j, i] = A[i, j]
    return AT


@jit
def _loss_grad_serial(X, y, v, A, p, nu):
    N, D, d = X.shape
    AT = _transpose(A)
    loss_c = np.zeros(N_CHUNKS)
    err_c = np.zeros(N_CHUNKS)
    gv_c = np.zeros((N_CHUNKS, d))
    gA_c = np.zeros((N_CHUNKS, D, D))
    work = np.empty((N_CHUNKS, 4, D))
    prefetch = X.size * X.itemsize >= PREFETCH_MIN_BYTES
    for c in range(N_CHUNKS):
        if c * N // N_CHUNKS == (c + 1) * N // N_CHUNKS:
            continue  # an empty chunk (N < N_CHUNKS) adds nothing: its accumulators stay 0
        loss_c[c], err_c[c] = _accumulate(X, y, v, A, AT, p, nu, c * N // N_CHUNKS,
                                          (c + 1) * N // N_CHUNKS, gv_c[c], gA_c[c], work[c],
                                          prefetch)
    return _merge(loss_c, err_c, gv_c, gA_c, N)


@pjit
def _loss_grad_parallel(X, y, v, A, p, nu):
    N, D, d = X.shape
    AT = _transpose(A)
    loss_c = np.zeros(N_CHUNKS)
    err_c = np.zeros(N_CHUNKS)
    gv_c = np.zeros((N_CHUNKS, d))
    gA_c = np.zeros((N_CHUNKS, D, D))
    work = np.empty((N_CHUNKS, 4, D))
    prefetch = X.size * X.itemsize >= PREFETCH_MIN_BYTES
    for c in prange(N_CHUNKS):
        loss_c[c], err_c[c] = _accumulate(X, y, v, A, AT, p, nu, c * N // N_CHUNKS,
                                          (c + 1) * N // N_CHUNKS, gv_c[c], gA_c[c], work[c],
                                          prefetch)
    return _merge(loss_c, err_c, gv_c, gA_c, N)


@jit
def _step_serial(X, y, v, Q, p, nu):
    """One step's quantities in one call, for callers that loop on arrays they validated once
    (:func:`patchassoc.simulations.engines.sampled_descent.gradient_descent`): A = softmax(Q), then
    :func:`_loss_grad_serial` and :func:`_grad_logits`, the same kernels as
    :func:`loss_and_grad`, so the same numbers, without the per-call checks and dispatches."""
    A = _softmax_rows(Q)
    loss, err, gv, gA = _loss_grad_serial(X, y, v, A, p, nu)
    return A, loss, err, gv, gA, _grad_logits(A, gA)


def _step_quantities(X, y, v, Q, p, nu):
    """(A, loss, error, grad_v, grad_A, grad_Q) at logits Q: the numbers of ``softmax_rows``
    then ``loss_and_grad``, without their checks, for a loop that validated its arrays once (X, y
    by :func:`check_data`; v, Q float64, C-contiguous, the right shapes; p an int). Non-finite v
    or Q give non-finite results, never an error."""
    if _threaded(X):
        A = _softmax_rows(Q)
        loss, err, gv, gA = _loss_grad_parallel(X, y, v, A, p, nu)
        return A, loss, err, gv, gA, _grad_logits(A, gA)
    return _step_serial(X, y, v, Q, p, nu)


@jit
def _margins_range(X, y, v, AT, p, nu, lo, hi, out, work):
    """out[n] = the margin of sample n for lo <= n < hi (``work``: a (3, D) scratch array),
    computed by the kernels of the step, on borrowed views."""
    _margins_rows(_borrowed(X), _borrowed(y), _borrowed(v), _borrowed(AT), p, nu, lo, hi,
                  _borrowed(out), _borrowed(work))


@jit
def _margins_rows(X, y, v, AT, p, nu, lo, hi, out, work):
    U = work[0]
    z = work[1]
    G = work[2]
    for n in range(lo, hi):
        _project(U, X, n, v, 0)
        out[n] = _head(U, y[n], AT, p, nu, z, G)


@jit
def _margins_serial(X, y, v, A, p, nu):
    out = np.empty(X.shape[0])
    work = np.empty((3, X.shape[1]))
    _margins_range(X, y, v, _transpose(A), p, nu, 0, X.shape[0], out, work)
    return out


@pjit
def _margins_parallel(X, y, v, A, p, nu):
    N = X.shape[0]
    out = np.empty(N)
    AT = _transpose(A)
    work = np.empty((N_CHUNKS, 3, X.shape[1]))
    for c in prange(N_CHUNKS):
        _margins_range(X, y, v, AT, p, nu, c * N // N_CHUNKS, (c + 1) * N // N_CHUNKS, out,
                       work[c])
    return out


@jit
def _projections_range(X, v, lo, hi, out):
    """out[n] = X_n v for lo <= n < hi, by :func:`_project` (the step's projections, the same
    bits), on borrowed views."""
    _projections_rows(_borrowed(X), _borrowed(v), lo, hi, _borrowed(out))


@jit
def _projections_rows(X, v, lo, hi, out):
    for n in range(lo, hi):
        _project(out[n], X, n, v, 0)


@jit
def _projections_serial(X, v):
    out = np.empty((X.shape[0], X.shape[1]))
    _projections_range(X, v, 0, X.shape[0], out)
    return out


@pjit
def _projections_parallel(X, v):
    N = X.shape[0]
    out = np.empty((N, X.shape[1]))
    for c in prange(N_CHUNKS):
        _projections_range(X, v, c * N // N_CHUNKS, (c + 1) * N // N_CHUNKS, out)
    return out


#: Inputs with at least this many entries (N * D * d) use the threaded drivers; smaller ones
#: the serial drivers, which give identical numbers (same chunks, same merge order) without the
#: thread start-up cost. ``patchassoc bench`` measures both.
PARALLEL_MIN_ENTRIES = 1 << 21


def _threaded(X) -> bool:
    """Whether a call on X uses the threaded driver: X has at least PARALLEL_MIN_ENTRIES entries
    and Numba has more than one thread (with one, the serial driver computes the same numbers
    without the parallel region's start-up)."""
    return X.size >= PARALLEL_MIN_ENTRIES and numba.get_num_threads() > 1


# -- validated public API ---------------------------------------------------------------------
def _as_f64(name, x, ndim):
    arr = np.ascontiguousarray(x, dtype=np.float64)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains non-finite values")
    return arr


#: Storage types of X the kernels accept. float32 halves the memory traffic of a step (the
#: kernels are bound by one read of X); every product and sum is still taken in float64, on the
#: float32 values converted exactly, so the result is the float64 kernel's on the rounded data.
DATA_DTYPES = (np.float64, np.float32)


def check_data(X, y, dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """Validate a sample once: X C-contiguous (N, D, d) of ``dtype``, y float64 (N,), all finite.

    Callers that loop (gradient descent) validate their data with this once and then pass
    ``data_checked=True``, which skips the O(N D d) finiteness scan on every call.

    ``dtype=np.float32`` stores X rounded to float32 (relative error <= 2^-24 per entry, half the
    memory and half the traffic of a step); the kernels still compute in float64.
    """
    dtype = np.dtype(dtype)
    if dtype not in [np.dtype(t) for t in DATA_DTYPES]:
        raise ValueError(f"dtype must be float64 or float32, got {dtype}")
    X = _as_f64("X", X, 3)
    if dtype != np.float64:
        with np.errstate(over="ignore"):
            X = np.ascontiguousarray(X, dtype=dtype)
        if not np.all(np.isfinite(X)):
            raise ValueError(f"X contains values that overflow {dtype}")
    y = _as_f64("y", y, 1)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
    return X, y


def _check_model_args(X, y, v, A, p, nu, data_checked=False):
    if data_checked:
        if not (isinstance(X, np.ndarray) and X.dtype in DATA_DTYPES and X.ndim == 3
                and X.flags.c_contiguous and isinstance(y, np.ndarray)
                and y.dtype == np.float64 and y.shape == (X.shape[0],)):
            raise ValueError("data_checked=True needs X and y as returned by check_data")
    else:
        X, y = check_data(X, y)
    v = _as_f64("v", v, 1)
    A = _as_f64("A", A, 2)
    N, D, d = X.shape
    if v.shape != (d,):
        raise ValueError(f"v must have shape ({d},), got {v.shape}")
    if A.shape != (D, D):
        raise ValueError(f"A must have shape ({D}, {D}), got {A.shape}")
    if int(p) != p or p < 1:
        raise ValueError(f"p must be a positive integer, got {p!r}")
    return X, y, v, A, int(p), float(nu)


def softmax_rows(Q: np.ndarray) -> np.ndarray:
    """Row-wise stable softmax A = softmax(Q) of a square logit matrix."""
    Q = _as_f64("Q", Q, 2)
    return _softmax_rows(Q)


def grad_logits(A: np.ndarray, grad_A: np.ndarray) -> np.ndarray:
    """Backpropagate through the row softmax: grad_Q_ij = A_ij (grad_A_ij - <A_i, grad_A_i>)."""
    A = _as_f64("A", A, 2)
    grad_A = _as_f64("grad_A", grad_A, 2)
    if A.shape != grad_A.shape:
        raise ValueError("A and grad_A must have the same shape")
    return _grad_logits(A, grad_A)


def loss_and_grad(X, y, v, A, p: int, nu: float, *, data_checked: bool = False) -> dict:
    """Mean logistic loss, zero-one error, and gradients in v, A and Q (Numba).

    Same contract as :func:`patchassoc.theory.model.loss_and_grad`. ``data_checked=True`` skips the
    finiteness scan of (X, y), for data already validated by :func:`check_data`.
    """
    X, y, v, A, p, nu = _check_model_args(X, y, v, A, p, nu, data_checked)
    kernel = _loss_grad_parallel if _threaded(X) else _loss_grad_serial
    loss, err, gv, gA = kernel(X, y, v, A, p, nu)
    return {"loss": loss, "error": err, "grad_v": gv, "grad_A": gA,
            "grad_Q": _grad_logits(A, gA)}


def margins(X, y, v, A, p: int, nu: float, *, data_checked: bool = False) -> np.ndarray:
    """Margins m_n = y_n f(X_n) of every sample (Numba); ``data_checked`` as in
    :func:`loss_and_grad`."""
    X, y, v, A, p, nu = _check_model_args(X, y, v, A, p, nu, data_checked)
    kernel = _margins_parallel if _threaded(X) else _margins_serial
    return kernel(X, y, v, A, p, nu)


def projections(X, v, *, data_checked: bool = False) -> np.ndarray:
    """U = X v, the (N, D) projections of every patch on v, as the step computes them (the
    same bits; threaded for large X). One read of X: ``patchassoc bench`` times it as a floor
    of the step. ``data_checked`` as in :func:`loss_and_grad` (y is not needed)."""
    if data_checked:
        if not (isinstance(X, np.ndarray) and X.dtype in DATA_DTYPES and X.ndim == 3
                and X.flags.c_contiguous):
            raise ValueError("data_checked=True needs X as returned by check_data")
    else:
        X = _as_f64("X", X, 3)
    v = _as_f64("v", v, 1)
    if v.shape != (X.shape[2],):
        raise ValueError(f"v must have shape ({X.shape[2]},), got {v.shape}")
    return (_projections_parallel if _threaded(X) else _projections_serial)(X, v)
