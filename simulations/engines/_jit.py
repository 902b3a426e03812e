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
"""
from __future__ import annotations

import hashlib
import os

import numba
from numba.core.caching import FunctionCache
from numba.core.dispatcher import Dispatcher
from numba.extending import register_jitable

from patchassoc.theory import activation as _activation

__all__ = ["jit", "pjit", "inline_jit", "prange", "N_CHUNKS", "SHARED_SOURCES",
           "shared_digest"]

#: Number of accumulator chunks used by parallel reductions: fixed, so sums are taken in the same
#: order whatever the thread count.
N_CHUNKS = 16

_HERE = os.path.dirname(os.path.abspath(__file__))

#: The source files whose jitted functions (or constants) are compiled into kernels of other
#: files: the activation's one definition, the shared scalar logistic, this file
#: (:data:`N_CHUNKS`), and the vector code (intrinsics and constants) of the sampled kernels.
SHARED_SOURCES = (os.path.abspath(_activation.__file__), os.path.join(_HERE, "_scalar.py"),
                  os.path.abspath(__file__), os.path.join(_HERE, "_sampled_simd.py"))


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
