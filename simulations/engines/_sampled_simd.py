"""The explicit vector code of the sampled-data kernels (:mod:`.sampled_kernels`), private.

Numba intrinsics that emit LLVM vector code (eight doubles per vector) for the loops over X and
the head of one sample, each beside its plain-Python twin, which states the order of operations
it computes and which plain Python (``NUMBA_DISABLE_JIT=1``) runs instead:

- U = X_n v, ROWS rows side by side: :func:`_dots_simd` (:func:`_dots_py`, :func:`_dot_lanes`);
- grad_v += X_n^T gu, 64 entries side by side: :func:`_axpy_sample_simd` (:func:`_axpy_lanes_py`);
- out = M^T x: :func:`_matvec_simd` (:func:`_matvec_py`); gA += G U^T: :func:`_outer_add_simd`
  (:func:`_outer_add_py`);
- the order of the software prefetches of the next sample's block: :func:`_prefetch_schedule_py`.

The kernels of :mod:`.sampled_kernels` call the names ``_dots``, ``_axpy_lanes``, ``_matvec``
and ``_outer_add`` (bound at the end of this file to the intrinsics, or to the twins when the
jit is disabled). Every sum is plain IEEE fmul and fadd in the stated order (no
fastmath, no fused multiply-add), several sums side by side in vector lanes, never one sum
reassociated: the compiled code gives the same bits as the twins. The intrinsics are compiled
into the kernels of the other file, so this file is one of the jit policy's
:data:`~patchassoc.simulations.engines._jit.SHARED_SOURCES`.
"""
from __future__ import annotations

import numba
from llvmlite import ir
from numba import errors, types
from numba.core import cgutils
from numba.extending import intrinsic

#: Lanes of a dot product (:func:`_dot_lanes`): lane w sums the terms k = w (mod LANES) in
#: order, as two vectors of eight doubles held in SIMD registers.
LANES = 16

#: Rows of a sample whose projections are summed side by side (:func:`_dots_simd`).
ROWS = 4

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
    _dots, _axpy_lanes = _dots_py, _axpy_lanes_py
    _matvec, _outer_add = _matvec_py, _outer_add_py
else:
    _dots, _axpy_lanes = _dots_simd, _axpy_sample_simd
    _matvec, _outer_add = _matvec_simd, _outer_add_simd
