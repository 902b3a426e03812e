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
in vector lanes, never one sum reassociated. So the compiled kernels give the same bits as their
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
from llvmlite import ir
from numba import errors, types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array

from patchassoc.simulations.engines._jit import N_CHUNKS, inline_jit, jit, pjit, prange
from patchassoc.simulations.engines._scalar import logistic as _logistic
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


#: Lanes of a dot product (:func:`_dot_lanes`): lane w sums the terms k = w (mod LANES) in
#: order, as two vectors of eight doubles held in SIMD registers.
LANES = 16

#: Rows of a sample whose projections are summed side by side (:func:`_dots_simd`).
ROWS = 4

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

#: Doubles per vector of the generated code (a 512-bit register; LLVM splits the vectors on
#: machines with narrower ones, which changes no result).
_W = 8

#: Vectors of grad_v summed side by side in :func:`_axpy_sample_simd` (64 entries).
_AXPY_VECS = 8

_I32 = ir.IntType(32)
_VEC = ir.VectorType(ir.DoubleType(), _W)


def _load(context, builder, arr, aty, off):
    """_W consecutive entries of ``arr`` from ``off`` as a vector of doubles (float32 converted
    exactly)."""
    ety = context.get_data_type(aty.dtype)
    ptr = builder.bitcast(builder.gep(arr.data, [off]), ir.VectorType(ety, _W).as_pointer())
    val = builder.load(ptr, align=4 if aty.dtype == types.float32 else 8)
    return val if aty.dtype == types.float64 else builder.fpext(val, _VEC)


def _load_f64(builder, arr, off):
    """_W consecutive doubles of ``arr`` from ``off``."""
    return builder.load(builder.bitcast(builder.gep(arr.data, [off]), _VEC.as_pointer()), align=8)


def _store_f64(builder, value, arr, off):
    builder.store(value, builder.bitcast(builder.gep(arr.data, [off]), _VEC.as_pointer()),
                  align=8)


def _splat(builder, x):
    """A vector of _W copies of the scalar ``x``."""
    vec = ir.Constant(ir.VectorType(x.type, _W), ir.Undefined)
    for i in range(_W):
        vec = builder.insert_element(vec, x, ir.Constant(_I32, i))
    return vec


def _prefetch(builder, xa, index):
    """llvm.prefetch of the cache line holding entry ``index`` of X: read, to all cache levels,
    data."""
    i8p = ir.IntType(8).as_pointer()
    fnty = ir.FunctionType(ir.VoidType(), [i8p, _I32, _I32, _I32])
    fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
    builder.call(fn, [builder.bitcast(builder.gep(xa.data, [index]), i8p), ir.Constant(_I32, 0),
                      ir.Constant(_I32, 3), ir.Constant(_I32, 1)])


def _prefetch_schedule_py(D, d):
    """The offsets (in entries, from the start of the next sample's block) that one sample's
    passes prefetch for float64 X, in the order they are issued (plain Python). The compiled
    :func:`_dots_simd` and :func:`_axpy_sample_simd` build the same expressions; a prefetch has
    no visible effect, so only ``patchassoc bench`` sees them, and the tests check this
    statement of the order.

    Projections: ROWS rows side by side (``count`` for the last group, D mod ROWS rows), at
    block lb of LANES entries, row r of the group whose first row is ``first`` requests
    first d / 2 + 8 (lb count + r): the group's share (count d / 2 entries) of the first half
    of the next block, in order. grad_v update: at the k-vector block starting at column
    ``col`` and row j, D d / 2 + D col / 2 + 4 k j + 8 i for i < k / 2: the block's share of
    the second half, in order. Each 64-byte line of the next block is then requested once, in
    increasing address order, when d is a multiple of 16; for other d the offsets still lie
    inside the block, only not on line boundaries.
    """
    nb = d // LANES
    out = []
    for first in range(0, D, ROWS):
        count = min(ROWS, D - first)
        for lb in range(nb):
            out.extend(first * (d // 2) + _W * (lb * count + r) for r in range(count))
    per = _AXPY_VECS * _W // LANES
    blocks = [(b * per * LANES, _AXPY_VECS) for b in range(nb // per)]
    if nb % per:
        blocks.append((nb // per * per * LANES, (nb % per) * LANES // _W))
    for col, k in blocks:
        for j in range(D):
            ahead = (D * d) // 2 + (D * col) // 2 + 4 * k * j
            out.extend(ahead + h for h in range(0, _W * k // 2, _W))
    return out


def _is_data(arr, ndim, dtypes=(types.float64, types.float32)):
    return (isinstance(arr, types.Array) and arr.ndim == ndim and arr.layout == "C"
            and arr.dtype in dtypes)


def _is_f64(*arrs):
    return all(isinstance(a, types.Array) and a.layout == "C" and a.dtype == types.float64
               for a in arrs)


def _vector_groups(builder, count, body):
    """Cover entries 0 .. count-1 by body(first, k): groups of k = 4 vectors of _W entries, then
    one group of the 1 to 3 vectors left, then body(first, 0) for each of the count mod _W
    entries left (k = 0: one scalar)."""
    it = count.type
    w = ir.Constant(it, _W)
    vectors = builder.udiv(count, w)
    with cgutils.for_range(builder, builder.udiv(vectors, ir.Constant(it, 4))) as lp:
        body(builder.mul(lp.index, ir.Constant(it, 4 * _W)), 4)
    rem = builder.urem(vectors, ir.Constant(it, 4))
    start = builder.mul(builder.sub(vectors, rem), w)
    for k in range(1, 4):
        with builder.if_then(builder.icmp_unsigned("==", rem, ir.Constant(it, k))):
            body(start, k)
    with cgutils.for_range_slice(builder, builder.mul(vectors, w), count, ir.Constant(it, 1),
                                 inc=True) as (index, _):
        body(index, 0)


# -- borrowed views ----------------------------------------------------------------------------
def _borrowed_py(a):
    """The array itself (plain Python); compiled, :func:`_borrowed_simd`."""
    return a


@intrinsic
def _borrowed_simd(typingctx, arr):
    """A view of ``arr`` without a reference to its memory: Numba then updates no reference
    count for it (the count is NULL), where it would for the array itself at every call that
    passes it. Only for arrays that outlive the view: arguments of the calling function."""
    if not isinstance(arr, types.Array):
        raise errors.TypingError("_borrowed needs an array")
    sig = arr(arr)

    def codegen(context, builder, signature, args):
        src = context.make_array(arr)(context, builder, args[0])
        out = context.make_array(arr)(context, builder)
        populate_array(out, data=src.data, shape=src.shape, strides=src.strides,
                       itemsize=src.itemsize, meminfo=None, parent=None)
        return out._getvalue()

    return sig, codegen


# -- U = X_n v ---------------------------------------------------------------------------------
def _dot_lanes(x, v, nb):
    """sum_{k < LANES nb} x_k v_k in the fixed order of the compiled kernel (plain Python).

    Lane w (0 <= w < 16) accumulates x_k v_k for k = w, w + 16, ... in order; the lanes are then
    added as t_w = (l_w + l_{w+8}) + (l_{w+4} + l_{w+12}) and (t_0 + t_2) + (t_1 + t_3). This is
    the definition; compiled code computes exactly this with IEEE operations on vectors of
    eight doubles (:func:`_dots_simd`).
    """
    acc = [0.0] * 16
    for b in range(nb):
        o = 16 * b
        for w in range(16):
            acc[w] += x[o + w] * v[o + w]
    t = [(acc[w] + acc[w + 8]) + (acc[w + 4] + acc[w + 12]) for w in range(4)]
    return (t[0] + t[2]) + (t[1] + t[3])


def _dots_py(U, X, n, v, nb, prefetch):
    """U_j = :func:`_dot_lanes` (X[n, j], v, nb) for every row j of sample n (plain Python; the
    compiled kernel calls :func:`_dots_simd`, which computes the same). ``prefetch`` only moves
    data into the caches."""
    for j in range(X.shape[1]):
        U[j] = _dot_lanes(X[n, j], v, nb)


@intrinsic
def _dots_simd(typingctx, U, X, n, v, nb, prefetch):
    """LLVM vector code for :func:`_dots_py`: ROWS rows at a time, each row's 16 lanes in two
    <8 x double> accumulators held in registers (eight independent chains, so the adds are not
    bound by their latency; every row's sum keeps the order of :func:`_dot_lanes`), one load of
    v for all rows. The reduction a = lanes 0-7 + lanes 8-15, then t = a_0-3 + a_4-7, is
    t_w = (l_w + l_{w+8}) + (l_{w+4} + l_{w+12}).

    If ``prefetch`` is not 0 (the offset of the next sample's block, in entries), one line is
    requested with llvm.prefetch per row and block of 16 entries read. For float64 X these are
    the first half of the next block, in address order (:func:`_prefetch_schedule_py`); for
    float32 X (16 entries, one line) the line at that offset from the one read: every line of
    the next block.

    Numba's LLVM pipeline has the SLP vectorizer off and strict floating point forbids the loop
    vectorizer to reorder a reduction, so a scalar loop stays one dependency chain; written with
    explicit vectors, the sum is vectorized and its order is still the one stated (plain fmul
    and fadd: no reassociation, no fused multiply-add)."""
    if not (_is_data(U, 1, (types.float64,)) and _is_data(X, 3) and _is_data(v, 1)):
        raise errors.TypingError("_dots_simd needs C-contiguous float arrays")
    sig = types.void(U, X, types.intp, v, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        Ua = context.make_array(signature.args[0])(context, builder, args[0])
        xty, vty = signature.args[1], signature.args[3]
        xa = context.make_array(xty)(context, builder, args[1])
        va = context.make_array(vty)(context, builder, args[3])
        n, nb, pf = args[2], args[4], args[5]
        it = nb.type
        _, D, d = cgutils.unpack_tuple(builder, xa.shape, 3)
        zero = ir.Constant(_VEC, [0.0] * _W)
        base = builder.mul(n, builder.mul(D, d))
        linear = xty.dtype == types.float64
        half_row = builder.udiv(d, ir.Constant(it, 2))
        accs = [[cgutils.alloca_once_value(builder, zero) for _ in range(2)]
                for _ in range(ROWS)]
        do_pf = builder.icmp_signed("!=", pf, ir.Constant(it, 0))
        low = ir.Constant(ir.VectorType(_I32, 4), [0, 1, 2, 3])
        high = ir.Constant(ir.VectorType(_I32, 4), [4, 5, 6, 7])

        def rows(first, count):
            """U[first + r] for r < count, the rows summed side by side."""
            starts = [builder.add(base, builder.mul(builder.add(first, ir.Constant(it, r)), d))
                      for r in range(count)]
            for r in range(count):
                for acc in accs[r]:
                    builder.store(zero, acc)
            with cgutils.for_range(builder, nb) as lb:
                off = builder.mul(lb.index, ir.Constant(it, LANES))
                with builder.if_then(do_pf, likely=True):
                    if linear:  # the first half of the next block, in order
                        at = builder.add(builder.add(base, pf), builder.mul(first, half_row))
                        at = builder.add(at, builder.mul(lb.index, ir.Constant(it, _W * count)))
                        for r in range(count):
                            _prefetch(builder, xa, builder.add(at, ir.Constant(it, _W * r)))
                    else:
                        for r in range(count):
                            _prefetch(builder, xa, builder.add(builder.add(starts[r], off), pf))
                for i in range(2):
                    o = builder.add(off, ir.Constant(it, _W * i))
                    vv = _load(context, builder, va, vty, o)
                    for r in range(count):
                        x = _load(context, builder, xa, xty, builder.add(starts[r], o))
                        acc = accs[r][i]
                        builder.store(builder.fadd(builder.load(acc), builder.fmul(x, vv)), acc)
            for r in range(count):
                a = builder.fadd(builder.load(accs[r][0]), builder.load(accs[r][1]))
                t = builder.fadd(builder.shuffle_vector(a, a, low),
                                 builder.shuffle_vector(a, a, high))
                e = [builder.extract_element(t, ir.Constant(_I32, i)) for i in range(4)]
                s = builder.fadd(builder.fadd(e[0], e[2]), builder.fadd(e[1], e[3]))
                builder.store(s, builder.gep(Ua.data, [builder.add(first, ir.Constant(it, r))]))

        group = ir.Constant(it, ROWS)
        with cgutils.for_range(builder, builder.udiv(D, group)) as lp:
            rows(builder.mul(lp.index, group), ROWS)
        rem = builder.urem(D, group)
        last = builder.sub(D, rem)
        for count in range(1, ROWS):
            with builder.if_then(builder.icmp_unsigned("==", rem, ir.Constant(it, count))):
                rows(last, count)
        return context.get_dummy_value()

    return sig, codegen


# -- grad_v += X_n^T gu ------------------------------------------------------------------------
def _axpy_lanes_py(gv, gu, X, n, nb, prefetch):
    """gv_k += sum_j gu_j X[n, j, k] for k < LANES nb, in the fixed order of the compiled
    kernel (plain Python): for each k, t = sum over j = 0, 1, ... in order, then gv_k += t.
    ``prefetch`` (an offset in entries to the data to request, or 0) only moves data into the
    caches. Compiled code calls :func:`_axpy_sample_simd`."""
    Xn = X[n]
    for k in range(LANES * nb):
        t = 0.0
        for j in range(Xn.shape[0]):
            t += gu[j] * Xn[j, k]
        gv[k] += t


@intrinsic
def _axpy_sample_simd(typingctx, gv, gu, X, n, nb, prefetch):
    """LLVM vector code for :func:`_axpy_lanes_py`: 64 consecutive k in eight <8 x double>
    registers (fewer for the last block if 16 nb is not a multiple of 64), summed over the D
    rows, then added to gv once (one store per entry and sample). Several k side by side change
    no sum's order.

    If ``prefetch`` is not 0 (the offset of the next sample's block, in entries) and X is
    float64, the second half of the next block, whose first half :func:`_dots_simd` requested,
    is requested in address order, k / 2 lines per row of a block of k vectors
    (:func:`_prefetch_schedule_py`): the memory streams in the next sample while this one's
    arithmetic runs from cache."""
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
        half_block = builder.udiv(builder.mul(D, d), ir.Constant(it, 2))
        zero = ir.Constant(_VEC, [0.0] * _W)
        accs = [cgutils.alloca_once_value(builder, zero) for _ in range(_AXPY_VECS)]
        do_pf = builder.icmp_signed("!=", pf, ir.Constant(it, 0))
        split = xty.dtype == types.float64

        def block(col, k):
            """gv[col : col + _W k] += sum_j gu_j X[n, j, col : col + _W k]."""
            for acc in accs[:k]:
                builder.store(zero, acc)
            with cgutils.for_range(builder, D) as lj:
                gvec = _splat(builder, builder.load(builder.gep(gua.data, [lj.index])))
                row = builder.add(builder.add(base_n, builder.mul(lj.index, d)), col)
                if split:
                    with builder.if_then(do_pf, likely=True):
                        ahead = builder.add(builder.add(base_n, pf), half_block)
                        ahead = builder.add(ahead, builder.udiv(builder.mul(D, col),
                                                                ir.Constant(it, 2)))
                        ahead = builder.add(ahead, builder.mul(lj.index, ir.Constant(it, 4 * k)))
                        for h in range(0, _W * k // 2, _W):
                            _prefetch(builder, xa, builder.add(ahead, ir.Constant(it, h)))
                for i, acc in enumerate(accs[:k]):
                    x = _load(context, builder, xa, xty, builder.add(row, ir.Constant(it, _W * i)))
                    builder.store(builder.fadd(builder.load(acc), builder.fmul(gvec, x)), acc)
            for i, acc in enumerate(accs[:k]):
                off = builder.add(col, ir.Constant(it, _W * i))
                _store_f64(builder, builder.fadd(_load_f64(builder, gva, off), builder.load(acc)),
                           gva, off)

        per = _AXPY_VECS * _W // LANES          # blocks of LANES entries in a full block
        full = ir.Constant(it, per)
        with cgutils.for_range(builder, builder.udiv(nb, full)) as lw:
            block(builder.mul(lw.index, ir.Constant(it, per * LANES)), _AXPY_VECS)
        rem = builder.urem(nb, full)
        col = builder.mul(builder.sub(nb, rem), ir.Constant(it, LANES))
        for count in range(1, per):
            with builder.if_then(builder.icmp_unsigned("==", rem, ir.Constant(it, count))):
                block(col, count * LANES // _W)
        return context.get_dummy_value()

    return sig, codegen


# -- the head: z = A U, act, the gradient in A --------------------------------------------------
def _matvec_py(out, M, x):
    """out_i = sum_j M[j, i] x_j for every i, each sum from 0.0 in the order j = 0, 1, ...
    (plain Python; compiled, :func:`_matvec_simd`)."""
    for i in range(out.shape[0]):
        out[i] = 0.0
    for j in range(x.shape[0]):
        xj = x[j]
        for i in range(out.shape[0]):
            out[i] += M[j, i] * xj


@intrinsic
def _matvec_simd(typingctx, out, M, x):
    """LLVM vector code for :func:`_matvec_py`: up to 32 entries of ``out`` side by side in
    four <8 x double> accumulators held in registers, each a chain over j in order (the last
    out.size mod 8 entries one by one, in the same order)."""
    if not _is_f64(out, M, x):
        raise errors.TypingError("_matvec_simd needs C-contiguous float64 arrays")
    sig = types.void(out, M, x)

    def codegen(context, builder, signature, args):
        oa, ma, xa = (context.make_array(t)(context, builder, a)
                      for t, a in zip(signature.args, args))
        (size,) = cgutils.unpack_tuple(builder, oa.shape, 1)
        (rows,) = cgutils.unpack_tuple(builder, xa.shape, 1)
        it = size.type
        dbl = ir.DoubleType()

        def body(first, k):
            zero = ir.Constant(_VEC, [0.0] * _W) if k else ir.Constant(dbl, 0.0)
            accs = [cgutils.alloca_once_value(builder, zero) for _ in range(max(k, 1))]
            for acc in accs:
                builder.store(zero, acc)
            with cgutils.for_range(builder, rows) as lj:
                xj = builder.load(builder.gep(xa.data, [lj.index]))
                xv = _splat(builder, xj) if k else xj
                row = builder.add(builder.mul(lj.index, size), first)
                for i, acc in enumerate(accs):
                    at = builder.add(row, ir.Constant(it, _W * i))
                    mv = _load_f64(builder, ma, at) if k else builder.load(builder.gep(ma.data,
                                                                                       [at]))
                    builder.store(builder.fadd(builder.load(acc), builder.fmul(mv, xv)), acc)
            for i, acc in enumerate(accs):
                at = builder.add(first, ir.Constant(it, _W * i))
                if k:
                    _store_f64(builder, builder.load(acc), oa, at)
                else:
                    builder.store(builder.load(acc), builder.gep(oa.data, [at]))

        _vector_groups(builder, size, body)
        return context.get_dummy_value()

    return sig, codegen


def _outer_add_py(gA, G, U):
    """gA_ij += G_i U_j (plain Python; compiled, :func:`_outer_add_simd`)."""
    for i in range(G.shape[0]):
        gi = G[i]
        for j in range(U.shape[0]):
            gA[i, j] += gi * U[j]


@intrinsic
def _outer_add_simd(typingctx, gA, G, U):
    """LLVM vector code for :func:`_outer_add_py`, eight j side by side."""
    if not _is_f64(gA, G, U):
        raise errors.TypingError("_outer_add_simd needs C-contiguous float64 arrays")
    sig = types.void(gA, G, U)

    def codegen(context, builder, signature, args):
        ga, Ga, Ua = (context.make_array(t)(context, builder, a)
                      for t, a in zip(signature.args, args))
        (rows,) = cgutils.unpack_tuple(builder, Ga.shape, 1)
        (cols,) = cgutils.unpack_tuple(builder, Ua.shape, 1)
        it = cols.type
        with cgutils.for_range(builder, rows) as li:
            gi = builder.load(builder.gep(Ga.data, [li.index]))
            gvec = _splat(builder, gi)
            row = builder.mul(li.index, cols)

            def body(first, k):
                for i in range(max(k, 1)):
                    o = builder.add(first, ir.Constant(it, _W * i))
                    at = builder.add(row, o)
                    if k:
                        prod = builder.fmul(gvec, _load_f64(builder, Ua, o))
                        _store_f64(builder, builder.fadd(_load_f64(builder, ga, at), prod), ga, at)
                    else:
                        ptr = builder.gep(ga.data, [at])
                        prod = builder.fmul(gi, builder.load(builder.gep(Ua.data, [o])))
                        builder.store(builder.fadd(builder.load(ptr), prod), ptr)

            _vector_groups(builder, cols, body)
        return context.get_dummy_value()

    return sig, codegen


# Compiled code calls the intrinsics, plain Python (NUMBA_DISABLE_JIT=1) their twins.
if numba.config.DISABLE_JIT:
    _borrowed, _dots, _axpy_lanes = _borrowed_py, _dots_py, _axpy_lanes_py
    _matvec, _outer_add = _matvec_py, _outer_add_py
else:
    _borrowed, _dots, _axpy_lanes = _borrowed_simd, _dots_simd, _axpy_sample_simd
    _matvec, _outer_add = _matvec_simd, _outer_add_simd


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
        if m < 0:
            err += 1.0
        elif m == 0:
            err += 0.5
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
