"""What another CPU kind computes, emulated on this machine (issue 41).

A CPU with AVX-512 and one without run other code for the same NumPy, OpenBLAS and Numba calls:
NumPy dispatches its vectorized loops by CPU feature, OpenBLAS picks its kernels by CPU, and Numba
compiles for the host. A child process is started with each of those switched to another path
(NumPy's baseline loops only, OpenBLAS's Sandybridge kernels, Numba's generic x86-64 target, and
its own Numba cache), and computes the probe's numbers (``cross_cpu_probe.py``); this process
computes them too. SPEC section 6 ("What the numbers' bits depend on") declares the outcome:
sampled GD (isotropic and orthogonal noise), population GD and the exact engine bit for bit; the
flow within the cross-CPU tolerance of ``compare_runs`` (its solver's linear algebra is BLAS's).
A control shows that the switches do change what they switch: NumPy's ``x ** 5`` and a BLAS dot
product give other bits in the child on an AVX-512 machine (where they cannot, the control is
skipped, saying why).
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from patchassoc.benchmarks.compare_runs import CROSS_CPU

from tests.engines.cross_cpu_probe import EXACT_GROUPS, TOLERANCE_GROUPS, probe

_ROOT = Path(__file__).resolve().parents[2]


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


_FLAGS = _cpu_flags()
pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or "avx" not in _FLAGS,
    reason="the emulated CPU kind (OpenBLAS's Sandybridge kernels) needs an x86-64 CPU with AVX")

#: Another CPU kind's code paths, on this CPU.
OTHER_CPU = {"NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
             "OPENBLAS_CORETYPE": "Sandybridge", "NUMBA_CPU_NAME": "generic"}


def _child(tmp_path: Path, module_args: list[str]) -> None:
    env = dict(os.environ, **OTHER_CPU, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    proc = subprocess.run([sys.executable, *module_args], cwd=_ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cross-cpu")
    _child(tmp, ["-m", "tests.engines.cross_cpu_probe", str(tmp / "other.npz")])
    with np.load(tmp / "other.npz") as other:
        return probe(), {k: other[k] for k in other.files}


@pytest.mark.parametrize("group", EXACT_GROUPS)
def test_these_are_bit_for_bit_on_another_cpu_kind(both, group):
    here, other = both
    keys = [k for k in here if k.startswith(group + ".")]
    assert keys and set(keys) <= set(other)
    differ = [k for k in keys if not np.array_equal(here[k], other[k], equal_nan=True)]
    assert differ == []


@pytest.mark.parametrize("group", TOLERANCE_GROUPS)
def test_the_flow_agrees_within_the_cross_cpu_tolerance(both, group):
    here, other = both
    for key in [k for k in here if k.startswith(group + ".")]:
        a, b = here[key], other[key]
        assert a.shape == b.shape, key
        assert np.all(np.abs(a - b) <= CROSS_CPU.atol + CROSS_CPU.rtol * np.maximum(
            np.abs(a), np.abs(b))), key
    assert np.array_equal(here["flow.topc_rows"], other["flow.topc_rows"])


_CONTROL = """
import numpy as np
z = np.random.default_rng(0).standard_normal(4000)
np.save({path!r}, np.concatenate([z ** 5, [z[:3997] @ z[3:]]]))
"""


def test_the_switches_change_what_they_switch(tmp_path):
    """Control: on an AVX-512 machine NumPy's vectorized pow and OpenBLAS's dot product give
    other bits in the emulated child, so the tests above compare two code paths, not one."""
    import numpy._core._multiarray_umath as umath

    if not umath.__cpu_features__.get("AVX512F"):
        pytest.skip("this CPU has no AVX-512: NumPy and OpenBLAS already take the AVX2 paths")
    path = tmp_path / "child.npy"
    _child(tmp_path, ["-c", _CONTROL.format(path=str(path))])
    here_path = tmp_path / "here.npy"
    exec(_CONTROL.format(path=str(here_path)))
    here, other = np.load(here_path), np.load(path)
    assert not np.array_equal(here[:-1], other[:-1])        # NumPy's pow
    assert here[-1] != other[-1]                            # OpenBLAS's dot product
