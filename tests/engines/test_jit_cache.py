"""The jit policy's cache key covers every file compiled into a kernel of another file.

A kernel's cached machine code holds the functions of other files it calls; Numba keys it on
its own file only, so ``_jit`` adds a digest of :data:`SHARED_SOURCES` to the key. This checks
that the list is complete (every jitted function of the package that names a function or
kernel of another file names one of those files) and that the digest is in the key. The
end-to-end check (an edit of the activation recompiles the kernels) is
tests/engines/test_activation_engines.py.
"""
import importlib
import inspect
import os
import pkgutil
import types

import numba
import pytest
from numba.core.dispatcher import Dispatcher

import patchassoc.simulations
import patchassoc.theory
from patchassoc.simulations.engines import _jit, sampled_kernels


def _modules():
    for pkg in (patchassoc.theory, patchassoc.simulations):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            yield importlib.import_module(info.name)


def _file(obj):
    func = obj.py_func if isinstance(obj, Dispatcher) else obj
    return os.path.abspath(inspect.getsourcefile(func))


def _cross_file_callees():
    """(kernel, callee file) for every jitted function that names, among its globals, a
    function or kernel defined in another file."""
    found = set()
    for mod in _modules():
        for name, obj in vars(mod).items():
            if not isinstance(obj, Dispatcher) or obj.py_func.__module__ != mod.__name__:
                continue
            for ref in obj.py_func.__code__.co_names:
                callee = vars(mod).get(ref)
                if isinstance(callee, (Dispatcher, types.FunctionType)):
                    where = _file(callee)
                    if where != _file(obj):
                        found.add((f"{mod.__name__}.{name}", where))
    return found


def test_every_cross_file_callee_is_a_shared_source():
    found = _cross_file_callees()
    files = {where for _, where in found}
    assert files, "the scan found no cross-file call: it is broken"
    # the activation and the logistic are among them (the scan sees what it must)
    assert _jit.SHARED_SOURCES[0] in files and _jit.SHARED_SOURCES[1] in files
    missing = sorted(f"{kernel} -> {where}" for kernel, where in found
                     if where not in _jit.SHARED_SOURCES)
    assert missing == []


@pytest.mark.skipif(numba.config.DISABLE_JIT, reason="no cache without the jit")
def test_the_digest_is_in_every_kernels_cache_key(monkeypatch):
    disp = sampled_kernels._margins_serial
    assert isinstance(disp._cache, _jit._SharedSourceCache)
    import numpy as np

    X, y = np.ones((2, 2, 3)), np.ones(2)
    disp(X, y, np.ones(3), np.full((2, 2), 0.5), 5, 0.03)
    sig = next(iter(disp.overloads))
    codegen = disp.targetctx.codegen()
    key = disp._cache._index_key(sig, codegen)
    assert key[-1] == _jit.shared_digest() == _jit._DIGEST
    monkeypatch.setattr(_jit, "_DIGEST", "another")
    assert disp._cache._index_key(sig, codegen)[:-1] == key[:-1]
    assert disp._cache._index_key(sig, codegen)[-1] == "another"


def test_the_digest_follows_the_contents(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("y = 2\n")
    d0 = _jit.shared_digest((a, b))
    assert _jit.shared_digest((a, b)) == d0
    a.write_text("x = 3\n")
    assert _jit.shared_digest((a, b)) != d0
