"""The package's single jit policy.

Every Numba kernel is compiled with :data:`jit` (``nopython``, cached on disk, no fastmath, so
results are bit-for-bit reproducible), and :data:`pjit` adds ``parallel=True`` for the few kernels
whose benchmark shows it pays; those merge fixed per-chunk accumulators in a fixed order, so their
results do not depend on the number of threads. :data:`inline_jit` is :data:`jit` inlined into
its callers by Numba (``inline="always"``), for the small helpers a kernel calls once per
sample: no call and no passing of arrays at that rate; inlining changes no operation.
``NUMBA_DISABLE_JIT=1`` turns all three into plain Python, which the tests use to exercise the
kernels' source directly.

The on-disk cache. Numba keys a function's cached machine code on its own source file (its
modification time and size) and bytecode. A function of another file that it calls (the
activation of :mod:`patchassoc.theory.activation`, the logistic of ``_scalar``) is compiled into
it, yet an edit of that other file leaves the entry valid: a fresh process would run the old
callee (seen with numba 0.68). So every kernel compiled here is also keyed on a digest of the
contents of :data:`SHARED_SOURCES`, the files whose functions are compiled into kernels of other
files (``tests/engines/test_jit_cache.py`` checks that the list is complete): an edit of one of
them gives every kernel a new key, and the kernels are compiled anew. The key is Numba's own
(``FunctionCache._index_key``) with the digest appended; nothing else of the cache changes.

The activation's functions (:data:`patchassoc.theory.activation.JITABLE`) are registered with
Numba here (``register_jitable``), so that the theory layer imports no Numba.

:func:`borrowed` gives a view of an array that holds no reference to its memory, so Numba
updates no reference count for it: the sampled kernels' chunks pass their shared arrays so
(no count updated by every thread at every helper call), and the exact engine's search passes
its arrays so to the steps inlined at the rate of the nodes. A view changes no value.
"""
from __future__ import annotations

import hashlib
import os

import numba
from numba import errors, types
from numba.core.caching import FunctionCache
from numba.core.dispatcher import Dispatcher
from numba.extending import intrinsic, register_jitable
from numba.np.arrayobj import populate_array

from patchassoc.theory import activation as _activation

__all__ = ["jit", "pjit", "inline_jit", "prange", "borrowed", "N_CHUNKS", "SHARED_SOURCES",
           "shared_digest"]

#: Number of accumulator chunks used by parallel reductions: fixed, so sums are taken in the same
#: order whatever the thread count.
N_CHUNKS = 16

_HERE = os.path.dirname(os.path.abspath(__file__))

#: The source files whose jitted functions (or constants) are compiled into kernels of other
#: files: the activation's one definition, the shared scalar logistic, this file
#: (:data:`N_CHUNKS`), the vector code (intrinsics and constants) of the sampled kernels, and
#: the exact engine's shared kernels (tables, a leaf's terms, sums), compiled into its search.
SHARED_SOURCES = (os.path.abspath(_activation.__file__), os.path.join(_HERE, "_scalar.py"),
                  os.path.abspath(__file__), os.path.join(_HERE, "_sampled_simd.py"),
                  os.path.join(_HERE, "population", "exact", "_kernels.py"))


def shared_digest(paths=SHARED_SOURCES) -> str:
    """sha256 of the contents of ``paths``, in order (each prefixed by its length)."""
    h = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as fh:
            data = fh.read()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


_DIGEST = shared_digest()


class _SharedSourceCache(FunctionCache):
    """Numba's function cache, its index key extended by the digest of :data:`SHARED_SOURCES`."""

    def _index_key(self, sig, codegen):
        return (*super()._index_key(sig, codegen), _DIGEST)


def _policy(**options):
    """A decorator: ``numba.njit(**options)``, cached on disk under :class:`_SharedSourceCache`
    (as ``cache=True`` would, with the extended key)."""
    def decorate(func):
        disp = numba.njit(cache=False, fastmath=False, **options)(func)
        if isinstance(disp, Dispatcher):  # not under NUMBA_DISABLE_JIT
            disp._cache = _SharedSourceCache(func)
        return disp
    return decorate


# The activation's one definition is plain Python in the theory layer; registered, the kernels
# can call it and Numba compiles it into them.
for _func in _activation.JITABLE:
    register_jitable(_func)

jit = _policy()
pjit = _policy(parallel=True)
inline_jit = _policy(inline="always")
prange = numba.prange


def _borrowed_py(a):
    """The array itself (plain Python); compiled, :func:`_borrowed_view`."""
    return a


@intrinsic
def _borrowed_view(typingctx, arr):
    """A view of ``arr`` without a reference to its memory: Numba then updates no reference
    count for it (the count is NULL), where it would for the array itself at every call that
    passes it. Only for arrays that outlive the view: arguments of the calling function."""
    if not isinstance(arr, types.Array):
        raise errors.TypingError("borrowed needs an array")
    sig = arr(arr)

    def codegen(context, builder, signature, args):
        src = context.make_array(arr)(context, builder, args[0])
        out = context.make_array(arr)(context, builder)
        populate_array(out, data=src.data, shape=src.shape, strides=src.strides,
                       itemsize=src.itemsize, meminfo=None, parent=None)
        return out._getvalue()

    return sig, codegen


#: ``borrowed(a)``: a view of the array ``a`` without a reference count (compiled code), or
#: ``a`` itself (plain Python, ``NUMBA_DISABLE_JIT=1``).
borrowed = _borrowed_py if numba.config.DISABLE_JIT else _borrowed_view
