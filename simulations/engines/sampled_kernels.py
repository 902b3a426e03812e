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
against ``X @ v``). X is read once: each sample's D x d block is still in cache for its
grad_v update, and while that update runs, the next sample's block is prefetched (data past
:data:`PREFETCH_MIN_BYTES`), so the memory keeps streaming during that arithmetic. The
arithmetic is strict IEEE float64 (no fastmath, no fused multiply-add) and yet vectorized: the
two passes over a sample, U = X_n v (two rows side by side) and grad_v += X_n^T (A^T G) (32
entries side by side), are explicit LLVM vector code with their accumulators in SIMD registers
(:func:`_dots_simd`, :func:`_axpy_sample_simd`), in an order stated by their plain-Python twins
(:func:`_dots`, :func:`_axpy_lanes`); the other inner loops are elementwise over contiguous
memory, which LLVM vectorizes without reordering anything. So the compiled kernels give the
same bits as their source run as plain Python (``NUMBA_DISABLE_JIT=1``; tested), on any
machine.

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
from llvmlite import ir
from numba import errors, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from patchassoc.simulations.engines._jit import N_CHUNKS, jit, pjit, prange
from patchassoc.simulations.engines._scalar import logistic as _logistic

__all__ = ["loss_and_grad", "margins", "softmax_rows", "grad_logits", "check_data"]


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


#: Lanes of a dot product (:func:`_dot_lanes`): lane w sums the terms k = w (mod LANES) in
#: order, as four vectors of four doubles held in SIMD registers.
LANES = 16

#: Data of at least this many bytes is streamed from memory with software prefetch: while a
#: sample's block is read from cache for its grad_v update, the next sample's block is requested
#: (:func:`_axpy_sample_simd`), so the memory is busy during that arithmetic too. Smaller data
#: sits in the caches, where the hardware prefetcher suffices and a software prefetch is an
#: extra instruction (measured at D = 16, d = 256, one thread: about 5 % slower up to 8 MiB,
#: faster from 16 MiB on). A prefetch is a hint: it never changes a value.
PREFETCH_MIN_BYTES = 1 << 24

_I32 = ir.IntType(32)
_VEC = ir.VectorType(ir.DoubleType(), 4)


def _load4(context, builder, arr, aty, off):
    """Four consecutive entries of ``arr`` from ``off`` as a <4 x double> (float32 converted
    exactly)."""
    ety = context.get_data_type(aty.dtype)
    ptr = builder.bitcast(builder.gep(arr.data, [off]), ir.VectorType(ety, 4).as_pointer())
    val = builder.load(ptr, align=4 if aty.dtype == types.float32 else 8)
    return val if aty.dtype == types.float64 else builder.fpext(val, _VEC)


def _prefetch(builder, ptr):
    """llvm.prefetch of the cache line holding ``ptr``: read, to all cache levels, data."""
    i8p = ir.IntType(8).as_pointer()
    fnty = ir.FunctionType(ir.VoidType(), [i8p, _I32, _I32, _I32])
    fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
    builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(_I32, 0), ir.Constant(_I32, 3),
                      ir.Constant(_I32, 1)])


def _is_data(arr, ndim, dtypes=(types.float64, types.float32)):
    return (isinstance(arr, types.Array) and arr.ndim == ndim and arr.layout == "C"
            and arr.dtype in dtypes)


def _dot_lanes(x, v, nb):
    """sum_{k < LANES nb} x_k v_k in the fixed order of the compiled kernel (plain Python).

    Lane w (0 <= w < 16) accumulates x_k v_k for k = w, w + 16, ... in order; the lanes are then
    added as t_w = (l_w + l_{w+8}) + (l_{w+4} + l_{w+12}) and (t_0 + t_2) + (t_1 + t_3). This is
    the definition; compiled code computes exactly this with IEEE operations on 4-double vectors
    (:func:`_dots_simd`).
    """
    acc = [0.0] * 16
    for b in range(nb):
        o = 16 * b
        for w in range(16):
            acc[w] += x[o + w] * v[o + w]
    t = [(acc[w] + acc[w + 8]) + (acc[w + 4] + acc[w + 12]) for w in range(4)]
    return (t[0] + t[2]) + (t[1] + t[3])


def _dots(U, X, n, v, nb):
    """U_j = :func:`_dot_lanes` (X[n, j], v, nb) for every row j of sample n (plain Python; the
    compiled kernel calls :func:`_dots_simd`, which computes the same, and runs this only under
    NUMBA_DISABLE_JIT)."""
    for j in range(X.shape[1]):
        U[j] = _dot_lanes(X[n, j], v, nb)


@intrinsic
def _dots_simd(typingctx, U, X, n, v, nb):
    """LLVM vector code for :func:`_dots`: two rows at a time, each with its four <4 x double>
    accumulators in registers (eight independent chains, so the adds are not bound by their
    latency; every row's sum keeps the order of :func:`_dot_lanes`), one load of v for both.

    Numba's LLVM pipeline has the SLP vectorizer off and strict floating point forbids the loop
    vectorizer to reorder a reduction, so a scalar loop stays one dependency chain; written with
    explicit vectors, the sum is vectorized and its order is still the one stated (plain fmul
    and fadd: no reassociation, no fused multiply-add)."""
    if not (_is_data(U, 1, (types.float64,)) and _is_data(X, 3) and _is_data(v, 1)):
        raise errors.TypingError("_dots_simd needs C-contiguous float arrays")
    sig = types.void(U, X, types.intp, v, types.intp)

    def codegen(context, builder, signature, args):
        Ua = context.make_array(signature.args[0])(context, builder, args[0])
        xty, vty = signature.args[1], signature.args[3]
        xa = context.make_array(xty)(context, builder, args[1])
        va = context.make_array(vty)(context, builder, args[3])
        n, nb = args[2], args[4]
        it = nb.type
        _, D, d = cgutils.unpack_tuple(builder, xa.shape, 3)
        zero = ir.Constant(_VEC, [0.0] * 4)
        base = builder.mul(n, builder.mul(D, d))
        accs = [[cgutils.alloca_once_value(builder, zero) for _ in range(4)] for _ in range(2)]

        def rows(first, count):
            """U[first + r] for r < count, the rows summed side by side."""
            starts = [builder.add(base, builder.mul(builder.add(first, ir.Constant(it, r)), d))
                      for r in range(count)]
            for r in range(count):
                for acc in accs[r]:
                    builder.store(zero, acc)
            with cgutils.for_range(builder, nb) as lb:
                off = builder.mul(lb.index, ir.Constant(it, 16))
                for i in range(4):
                    o = builder.add(off, ir.Constant(it, 4 * i))
                    vv = _load4(context, builder, va, vty, o)
                    for r in range(count):
                        x = _load4(context, builder, xa, xty, builder.add(starts[r], o))
                        acc = accs[r][i]
                        builder.store(builder.fadd(builder.load(acc), builder.fmul(x, vv)), acc)
            for r in range(count):
                l0, l4, l8, l12 = (builder.load(acc) for acc in accs[r])
                t = builder.fadd(builder.fadd(l0, l8), builder.fadd(l4, l12))
                e = [builder.extract_element(t, ir.Constant(_I32, i)) for i in range(4)]
                s = builder.fadd(builder.fadd(e[0], e[2]), builder.fadd(e[1], e[3]))
                builder.store(s, builder.gep(Ua.data, [builder.add(first, ir.Constant(it, r))]))

        two = ir.Constant(it, 2)
        with cgutils.for_range(builder, builder.udiv(D, two)) as lp:
            rows(builder.mul(lp.index, two), 2)
        with builder.if_then(builder.icmp_unsigned("!=", builder.urem(D, two),
                                                   ir.Constant(it, 0))):
            rows(builder.sub(D, ir.Constant(it, 1)), 1)
        return context.get_dummy_value()

    return sig, codegen


@overload(_dots, jit_options={"cache": True})
def _dots_jit(U, X, n, v, nb):
    def impl(U, X, n, v, nb):
        _dots_simd(U, X, n, v, nb)
    return impl


@jit
def _dot_short(x, v):
    """<x, v> of a row shorter than LANES: four interleaved scalar accumulators, then
    (a0 + a1) + (a2 + a3)."""
    d = x.shape[0]
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    k = 0
    while k + 4 <= d:
        a0 += x[k] * v[k]
        a1 += x[k + 1] * v[k + 1]
        a2 += x[k + 2] * v[k + 2]
        a3 += x[k + 3] * v[k + 3]
        k += 4
    while k < d:
        a0 += x[k] * v[k]
        k += 1
    return (a0 + a1) + (a2 + a3)


@jit
def _project(U, X, n, v):
    """U_j = <v, X_nj> for every row j of sample n, each in a fixed order: :func:`_dot_lanes`
    over the first LANES * (d // LANES) terms, then the d mod LANES others in order, added last;
    rows shorter than LANES by :func:`_dot_short`. The order depends on d only, never on the
    thread count or the machine, so the result is the same bit for bit on every run."""
    D, d = X.shape[1], X.shape[2]
    nb = d // LANES
    if nb == 0:
        for j in range(D):
            U[j] = _dot_short(X[n, j], v)
        return
    _dots(U, X, n, v, nb)
    o = nb * LANES
    if o < d:
        for j in range(D):
            t = 0.0
            for k in range(o, d):
                t += X[n, j, k] * v[k]
            U[j] = U[j] + t


@jit
def _powers(t, p):
    """(t^(p-1), t^p) for an integer p >= 1, by repeated squaring (no libm call)."""
    r = 1.0
    b = t
    e = p - 1
    while e > 0:
        if e & 1:
            r *= b
        b *= b
        e >>= 1
    return r, r * t


def _axpy_lanes(gv, gu, X, n, nb, prefetch):
    """gv_k += sum_j gu_j X[n, j, k] for k < LANES nb, in the fixed order of the compiled
    kernel (plain Python): for each k, t = sum over j = 0, 1, ... in order, then gv_k += t.
    ``prefetch`` (an offset in entries to the data to request, or 0) only moves data into the
    caches. Compiled code calls :func:`_axpy_sample_simd`; this runs only under
    NUMBA_DISABLE_JIT."""
    Xn = X[n]
    for k in range(LANES * nb):
        t = 0.0
        for j in range(Xn.shape[0]):
            t += gu[j] * Xn[j, k]
        gv[k] += t


@intrinsic
def _axpy_sample_simd(typingctx, gv, gu, X, n, nb, prefetch):
    """LLVM vector code for :func:`_axpy_lanes`: 32 consecutive k in eight <4 x double>
    registers (16 for the last block if nb is odd), summed over the D rows, then added to gv
    once (one store per entry and sample). Several k side by side change no sum's order.

    If ``prefetch`` is not 0, each row's lines at that offset (the next sample's block) are
    requested with llvm.prefetch as the row is read: the memory streams in the next sample while
    this one's arithmetic runs from cache."""
    if not (_is_data(gv, 1, (types.float64,)) and _is_data(gu, 1, (types.float64,))
            and _is_data(X, 3)):
        raise errors.TypingError("_axpy_sample_simd needs C-contiguous float arrays")
    sig = types.void(gv, gu, X, types.intp, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        gva = context.make_array(signature.args[0])(context, builder, args[0])
        gua = context.make_array(signature.args[1])(context, builder, args[1])
        xty = signature.args[2]
        xa = context.make_array(xty)(context, builder, args[2])
        n, nb, pf = args[3], args[4], args[5]
        it = nb.type
        _, D, d = cgutils.unpack_tuple(builder, xa.shape, 3)
        base_n = builder.mul(n, builder.mul(D, d))
        zero = ir.Constant(_VEC, [0.0] * 4)
        accs = [cgutils.alloca_once_value(builder, zero) for _ in range(8)]
        bytes_per = 4 if xty.dtype == types.float32 else 8
        do_pf = builder.icmp_signed("!=", pf, ir.Constant(it, 0))

        def block(col, k):
            """gv[col : col + 4 k] += sum_j gu_j X[n, j, col : col + 4 k]."""
            for acc in accs[:k]:
                builder.store(zero, acc)
            with cgutils.for_range(builder, D) as lj:
                g = builder.load(builder.gep(gua.data, [lj.index]))
                gvec = ir.Constant(_VEC, ir.Undefined)
                for i in range(4):
                    gvec = builder.insert_element(gvec, g, ir.Constant(_I32, i))
                row = builder.add(builder.add(base_n, builder.mul(lj.index, d)), col)
                with builder.if_then(do_pf, likely=True):
                    ahead = builder.add(row, pf)
                    for h in range(0, 4 * k, 64 // bytes_per):
                        _prefetch(builder, builder.gep(xa.data,
                                                       [builder.add(ahead, ir.Constant(it, h))]))
                for i, acc in enumerate(accs[:k]):
                    x = _load4(context, builder, xa, xty, builder.add(row, ir.Constant(it, 4 * i)))
                    builder.store(builder.fadd(builder.load(acc), builder.fmul(gvec, x)), acc)
            for i, acc in enumerate(accs[:k]):
                off = builder.add(col, ir.Constant(it, 4 * i))
                ptr = builder.bitcast(builder.gep(gva.data, [off]), _VEC.as_pointer())
                builder.store(builder.fadd(builder.load(ptr, align=8), builder.load(acc)), ptr,
                              align=8)

        two = ir.Constant(it, 2)
        with cgutils.for_range(builder, builder.udiv(nb, two)) as lw:
            block(builder.mul(lw.index, ir.Constant(it, 32)), 8)
        with builder.if_then(builder.icmp_unsigned("!=", builder.urem(nb, two),
                                                   ir.Constant(it, 0))):
            block(builder.mul(builder.sub(nb, ir.Constant(it, 1)), ir.Constant(it, 16)), 4)
        return context.get_dummy_value()

    return sig, codegen


@overload(_axpy_lanes, jit_options={"cache": True})
def _axpy_lanes_jit(gv, gu, X, n, nb, prefetch):
    def impl(gv, gu, X, n, nb, prefetch):
        _axpy_sample_simd(gv, gu, X, n, nb, prefetch)
    return impl


@jit
def _axpy_rows(gv, gu, X, n, prefetch):
    """gv += sum_j gu_j X[n, j]: for each k the D terms summed in order j = 0, 1, ..., then
    added to gv_k (:func:`_axpy_lanes` for the first LANES * (d // LANES) entries, the same
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


@jit
def _head(U, yn, A, AT, p, nu, z, G):
    """Given U = X_n v of one sample: z = A U, G = act'(z); return the margin m = y f(X_n).

    z is summed as z += A[:, j] U_j (the columns of A are the rows of AT): an elementwise loop
    over i that vectorizes, in the fixed order j = 0, 1, ..."""
    D = U.shape[0]
    for i in range(D):
        z[i] = 0.0
    for j in range(D):
        uj = U[j]
        col = AT[j]
        for i in range(D):
            z[i] += col[i] * uj
    f = 0.0
    for i in range(D):
        zp1, zp = _powers(z[i], p)
        f += zp + nu * z[i]
        G[i] = p * zp1 + nu
    return yn * f


@jit
def _accumulate(X, y, v, A, AT, p, nu, lo, hi, gv, gA, prefetch):
    """Add samples lo..hi-1 to the accumulators gv, gA; return their (loss, error) sums.

    X is read from memory once: the update grad_v += sum_j gu_j X_nj (:func:`_axpy_rows`) finds
    the sample's D x d block (32 KiB at D = 16, d = 256) still in cache after the dot products
    U = X_n v (:func:`_project`), and, if ``prefetch``, requests the next sample's block
    meanwhile. Every inner loop runs over contiguous memory and is elementwise, so it
    vectorizes; the order of every sum is fixed by (lo, hi, D, d) alone."""
    N, D, d = X.shape
    U = np.empty(D)
    z = np.empty(D)
    G = np.empty(D)
    gu = np.empty(D)
    loss = 0.0
    err = 0.0
    for n in range(lo, hi):
        _project(U, X, n, v)
        m = _head(U, y[n], A, AT, p, nu, z, G)
        l, dl = _logistic(m)
        loss += l
        if m < 0:
            err += 1.0
        elif m == 0:
            err += 0.5
        g = y[n] * dl / N
        for i in range(D):
            G[i] *= g
        for j in range(D):
            gu[j] = 0.0
        for i in range(D):
            gi = G[i]
            row = A[i]
            gArow = gA[i]
            for j in range(D):
                gArow[j] += gi * U[j]
                gu[j] += gi * row[j]
        _axpy_rows(gv, gu, X, n, D * d if prefetch and n + 1 < N else 0)
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
    prefetch = X.size * X.itemsize >= PREFETCH_MIN_BYTES
    for c in range(N_CHUNKS):
        if c * N // N_CHUNKS == (c + 1) * N // N_CHUNKS:
            continue  # an empty chunk (N < N_CHUNKS) adds nothing: its accumulators stay 0
        loss_c[c], err_c[c] = _accumulate(X, y, v, A, AT, p, nu, c * N // N_CHUNKS,
                                          (c + 1) * N // N_CHUNKS, gv_c[c], gA_c[c], prefetch)
    return _merge(loss_c, err_c, gv_c, gA_c, N)


@pjit
def _loss_grad_parallel(X, y, v, A, p, nu):
    N, D, d = X.shape
    AT = _transpose(A)
    loss_c = np.zeros(N_CHUNKS)
    err_c = np.zeros(N_CHUNKS)
    gv_c = np.zeros((N_CHUNKS, d))
    gA_c = np.zeros((N_CHUNKS, D, D))
    prefetch = X.size * X.itemsize >= PREFETCH_MIN_BYTES
    for c in prange(N_CHUNKS):
        loss_c[c], err_c[c] = _accumulate(X, y, v, A, AT, p, nu, c * N // N_CHUNKS,
                                          (c + 1) * N // N_CHUNKS, gv_c[c], gA_c[c], prefetch)
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
def _margins_range(X, y, v, A, p, nu, lo, hi, out):
    D = X.shape[1]
    AT = _transpose(A)
    U = np.empty(D)
    z = np.empty(D)
    G = np.empty(D)
    for n in range(lo, hi):
        _project(U, X, n, v)
        out[n] = _head(U, y[n], A, AT, p, nu, z, G)


@jit
def _margins_serial(X, y, v, A, p, nu):
    out = np.empty(X.shape[0])
    _margins_range(X, y, v, A, p, nu, 0, X.shape[0], out)
    return out


@pjit
def _margins_parallel(X, y, v, A, p, nu):
    N = X.shape[0]
    out = np.empty(N)
    for c in prange(N_CHUNKS):
        _margins_range(X, y, v, A, p, nu, c * N // N_CHUNKS, (c + 1) * N // N_CHUNKS, out)
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
