"""Changing the activation in its one definition changes every engine, and no compiled kernel
is left stale (issue 25, "Activation in one place").

The package's sources are copied to a temporary tree and ``theory/activation.py`` is edited
there: act(t) = t^p + nu t becomes 2 t^p + nu t (``_value`` and ``_slope``, the formula), a
function no (p, nu) of the config gives. Then, in fresh processes on the copy:

- compiled, with one Numba cache directory for the run before the edit and the run after it:
  the sampled kernel's margins and the exact engine's tables change, and equal what the edited
  source computes (the NumPy model's margins; the tables' kernel run as plain Python), so the
  kernels were compiled anew, not loaded stale from the cache (``_jit.SHARED_SOURCES``);
- as plain Python (``NUMBA_DISABLE_JIT=1``, the engines' source run directly, cheap at these
  sizes): the sampled kernel, the NumPy model and the exact engine all move by far more than
  their tolerances, the kernel still equals the NumPy model, the exact engine still equals the
  brute-force oracle, and the kernel's gradient in v still equals finite differences of its
  loss.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reference_population import ENGINE_VS_BRUTEFORCE_REL
from tests.tolerances import FD_STEP, GRAD_FD_REL, KERNEL_VS_NUMPY_REL

_ROOT = Path(__file__).resolve().parents[2]
_SUBPACKAGES = ("theory", "simulations", "figures", "benchmarks")
_EDIT = [("    return tp + nu * t\n", "    return 2.0 * tp + nu * t\n"),
         ("    return p * tpm1 + nu\n", "    return 2.0 * p * tpm1 + nu\n")]

_COMPILED = r"""
import json
import numpy as np
from patchassoc.simulations.engines import sampled_kernels as K
from patchassoc.simulations.engines.population.exact import _kernels
from patchassoc.simulations.engines.population.exact.states import _states
from patchassoc.theory import model
rng = np.random.default_rng(0)
X = rng.standard_normal((20, 4, 16)); y = np.sign(rng.standard_normal(20))
v = rng.standard_normal(16) / 2; A = K.softmax_rows(rng.standard_normal((4, 4)))
m = K._margins_serial(X, y, v, A, 5, 0.03)
npos, nneg, _, _, _ = _states(2, 0.3)
args = (2, 1, 0.9, 0.4, 0.3, 0.1, 5, 0.03, npos, nneg)
tab, sig = _kernels._tables(*args)
tab_py, sig_py = _kernels._tables.py_func(*args)
f_numpy = model.forward(X, v, A, 5, 0.03)[2]
print(json.dumps({"m": m.tolist(), "m_numpy": (y * f_numpy).tolist(),
                  "tables": tab.ravel().tolist() + sig.ravel().tolist(),
                  "tables_plain": tab_py.ravel().tolist() + sig_py.ravel().tolist(),
                  "cache_hits": sum(K._margins_serial.stats.cache_hits.values())}))
"""

_PLAIN = r"""
import json
import numpy as np
from patchassoc.simulations.engines import sampled_kernels as K
from patchassoc.simulations.engines.population import exact
from patchassoc.simulations.engines.population.bruteforce import bruteforce_risk
from patchassoc.theory import model
from patchassoc.theory.invariant import invariant_logits
from patchassoc.theory.structure import random_partition
rng = np.random.default_rng(0)
X = rng.standard_normal((30, 4, 16)); y = np.sign(rng.standard_normal(30))
v = rng.standard_normal(16) / 2; A = K.softmax_rows(rng.standard_normal((4, 4)))
p, nu = 5, 0.03
k = K.loss_and_grad(X, y, v, A, p, nu)
r = model.loss_and_grad(X, y, v, A, p, nu)
h = FD_STEP
fd = [(K.loss_and_grad(X, y, v + h * e, A, p, nu)["loss"]
       - K.loss_and_grad(X, y, v - h * e, A, p, nu)["loss"]) / (2 * h) for e in np.eye(16)]
L, C, q = 2, 2, 0.3
alpha, a, b, c = 0.9, 1.2, 0.6, -0.3
S = random_partition(L, C, np.random.default_rng(3))
ev = exact.evaluate(L, C, q, p, nu, alpha, a, b, c)
bf = bruteforce_risk(invariant_logits(a, b, c, S), S, q, p, nu, alpha, grad=True)
print(json.dumps({"kernel": [k["loss"], *k["grad_v"]], "numpy": [r["loss"], *r["grad_v"]],
                  "fd": fd, "exact": [ev.risk, ev.grad["alpha"]],
                  "brute": [bf.risk, bf.grad_alpha], "brute_abs": bf.grad_alpha_abs}))
""".replace("FD_STEP", repr(FD_STEP))


def _copy_tree(dest: Path, edit: bool) -> Path:
    """The package's sources under ``dest/patchassoc`` (the installed layout), the activation
    edited if ``edit``."""
    pkg = dest / "patchassoc"
    ignore = shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc", "*.pyc")
    shutil.copytree(_ROOT / "patchassoc", pkg, ignore=ignore)
    for sub in _SUBPACKAGES:
        shutil.copytree(_ROOT / sub, pkg / sub, ignore=ignore)
    if edit:
        path = pkg / "theory" / "activation.py"
        text = path.read_text()
        for old, new in _EDIT:
            assert text.count(old) == 1, old
            text = text.replace(old, new)
        path.write_text(text)
    return dest


def _run(script: str, tree: Path, cache: Path, disable_jit: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), NUMBA_CACHE_DIR=str(cache),
               NUMBA_DISABLE_JIT="1" if disable_jit else "0")
    proc = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(tree)!r})\n"
                           + script], env=env, capture_output=True, text=True, timeout=600,
                          cwd=tree)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def _rel(a, b) -> float:
    import numpy as np

    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    base = tmp_path_factory.mktemp("activation")
    return _copy_tree(base / "before", False), _copy_tree(base / "after", True), base / "cache"


def test_an_edit_of_the_definition_recompiles_the_kernels(trees):
    before_tree, after_tree, cache = trees
    # the same cache directory and the same relative layout: only the definition differs
    layout = after_tree.parent / "tree"
    shutil.copytree(before_tree, layout)
    before = _run(_COMPILED, layout, cache, False)
    again = _run(_COMPILED, layout, cache, False)
    assert again["cache_hits"] > 0 and again == {**before, "cache_hits": again["cache_hits"]}
    shutil.rmtree(layout)
    shutil.copytree(after_tree, layout)
    after = _run(_COMPILED, layout, cache, False)
    for out in (before, after):
        assert _rel(out["m"], out["m_numpy"]) <= KERNEL_VS_NUMPY_REL
        assert out["tables"] == out["tables_plain"]
    assert _rel(after["m"], before["m"]) > 1e-3
    assert _rel(after["tables"], before["tables"]) > 1e-3


def test_an_edit_of_the_definition_moves_every_engine_and_they_still_agree(trees):
    before_tree, after_tree, cache = trees
    out = {name: _run(_PLAIN, tree, cache, True) for name, tree in
           (("before", before_tree), ("after", after_tree))}
    for o in out.values():
        assert _rel(o["kernel"], o["numpy"]) <= KERNEL_VS_NUMPY_REL
        assert _rel(o["kernel"][1:], o["fd"]) <= GRAD_FD_REL
        assert abs(o["exact"][0] - o["brute"][0]) <= ENGINE_VS_BRUTEFORCE_REL * o["brute"][0]
        assert abs(o["exact"][1] - o["brute"][1]) <= ENGINE_VS_BRUTEFORCE_REL * o["brute_abs"]
    for key in ("kernel", "numpy", "exact", "brute"):
        assert _rel(out["after"][key], out["before"][key]) > 1e-3, key
