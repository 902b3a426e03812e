"""The brute-force oracle is independent of the engines it checks (issue 13).

- its source imports nothing from the engines (:mod:`.exact`, :mod:`..kernels`,
  :mod:`.._scalar`);
- its own primitives (softmax, activation, logistic, softmax backpropagation) equal their
  closed forms;
- breaking one engine primitive makes the engine-vs-oracle comparison fail: in a subprocess
  with ``NUMBA_DISABLE_JIT=1`` (the kernels are then plain Python and look their helpers up in
  the module at call time), the exact engine's activation ``_act`` and logistic ``_logistic``
  are replaced by versions off by a relative 1e-6; the engine then disagrees with the oracle
  by far more than the agreement tolerance, while the unpatched engine, in the same process,
  agrees.
"""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from patchassoc.simulations.engines.population import bruteforce
from patchassoc.simulations.engines.population.bruteforce import (activation, bruteforce_risk,
                                                          grad_logits, logistic, softmax)
from patchassoc.theory.structure import random_partition

from tests.reference_population import ENGINE_VS_BRUTEFORCE_REL
from tests.tolerances import ORACLE_PRIMITIVE_REL

ENGINE_MODULES = {"exact", "kernels", "_scalar", "_jit"}


def test_oracle_imports_nothing_from_the_engines():
    tree = ast.parse(Path(bruteforce.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
            imported.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
    parts = {p for name in imported for p in name.split(".")}
    assert not parts & ENGINE_MODULES, sorted(imported)


def test_oracle_primitives_match_closed_forms():
    rng = np.random.default_rng(0)
    z = rng.uniform(-2.0, 2.0, 50)
    for p, nu in ((3, 0.0), (5, 0.03), (7, 0.5)):
        act, dact = activation(z, p, nu)
        scale = np.abs(z) ** p + nu * np.abs(z)                 # the terms summed in act
        assert np.all(np.abs(act - (z ** p + nu * z)) <= ORACLE_PRIMITIVE_REL * scale)
        assert np.all(np.abs(dact - (p * z ** (p - 1) + nu))
                      <= ORACLE_PRIMITIVE_REL * (p * np.abs(z) ** (p - 1) + nu))
    m = np.array([-700.0, -30.0, -1.0, 0.0, 0.5, 30.0, 700.0])
    loss, dl = logistic(m)
    ref_l = np.where(m < 0, -m + np.log1p(np.exp(m)), np.log1p(np.exp(-np.abs(m))))
    assert np.all(np.abs(loss - ref_l) <= ORACLE_PRIMITIVE_REL * np.abs(ref_l))
    ref_dl = -1.0 / (1.0 + np.exp(np.clip(m, -700, 700)))
    assert np.all(np.abs(dl - ref_dl) <= ORACLE_PRIMITIVE_REL * np.abs(ref_dl))
    Q = rng.normal(size=(5, 5))
    A = softmax(Q)
    E = np.exp(Q)
    assert np.allclose(A, E / E.sum(axis=1, keepdims=True), rtol=ORACLE_PRIMITIVE_REL, atol=0)
    gA = rng.normal(size=(5, 5))
    # explicit Jacobian of each softmax row: diag(a) - a a^T
    ref = np.stack([(np.diag(A[i]) - np.outer(A[i], A[i])) @ gA[i] for i in range(5)])
    assert np.max(np.abs(grad_logits(A, gA) - ref)) <= ORACLE_PRIMITIVE_REL * np.max(
        np.abs(A) @ np.abs(gA).T)


_BREAK_SCRIPT = r"""
import json, math
import numpy as np
from patchassoc.simulations.engines.population import exact
from patchassoc.simulations.engines.population.exact import _kernels
from patchassoc.simulations.engines.population.bruteforce import bruteforce_risk
from patchassoc.theory.invariant import invariant_logits
from patchassoc.theory.structure import random_partition

L, C, q, p, nu = 3, 2, 0.3, 5, 0.03
alpha, a, b, c = 0.9, 1.2, 0.6, -0.3
S = random_partition(L, C, np.random.default_rng(3))
bf = bruteforce_risk(invariant_logits(a, b, c, S), S, q, p, nu, alpha, grad=True)

def gap():
    ev = exact.evaluate(L, C, q, p, nu, alpha, a, b, c)
    return {"risk": abs(ev.risk - bf.risk) / bf.risk,
            "alpha": abs(ev.grad["alpha"] - bf.grad_alpha) / bf.grad_alpha_abs}

out = {"jit_disabled": not hasattr(_kernels._tables, "py_func"), "clean": gap()}
act, logistic = _kernels._act, _kernels._logistic
_kernels._act = lambda z, p, nu: tuple(x * (1.0 + 1e-6) for x in act(z, p, nu))
out["act"] = gap()
_kernels._act = act
_kernels._logistic = lambda m: tuple(x * (1.0 + 1e-6) for x in logistic(m))
out["logistic"] = gap()
_kernels._logistic = logistic
out["restored"] = gap()
print(json.dumps(out))
"""


def test_breaking_an_engine_primitive_fails_the_oracle_comparison():
    """The comparison can fail: a relative 1e-6 error in the exact engine's activation or
    logistic moves its risk / gradient by ~1e-6 relative, 1e6 times the agreement tolerance
    ENGINE_VS_BRUTEFORCE_REL; the oracle, with its own primitives, does not move."""
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    proc = subprocess.run([sys.executable, "-c", _BREAK_SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["jit_disabled"]
    for key in ("clean", "restored"):
        assert out[key]["risk"] <= ENGINE_VS_BRUTEFORCE_REL, out
        assert out[key]["alpha"] <= ENGINE_VS_BRUTEFORCE_REL, out
    for broken in ("act", "logistic"):
        assert out[broken]["risk"] > 1e3 * ENGINE_VS_BRUTEFORCE_REL, out
    # the activation error reaches the gradient too
    assert out["act"]["alpha"] > 1e3 * ENGINE_VS_BRUTEFORCE_REL, out


def test_oracle_sums_of_absolute_terms_bound_the_gradient():
    S = random_partition(3, 2, np.random.default_rng(1))
    Q = np.random.default_rng(2).normal(size=(S.D, S.D))
    bf = bruteforce_risk(Q, S, 0.3, 5, 0.03, 1.1, grad=True)
    assert np.all(np.abs(bf.grad_A) <= bf.grad_A_abs) and np.all(bf.grad_A_abs > 0)
    assert abs(bf.grad_alpha) <= bf.grad_alpha_abs


@pytest.mark.parametrize("name", ["TIE_RTOL"])
def test_oracle_states_the_engines_tie_convention(name):
    """Same convention (SPEC section 5), two independent definitions."""
    from patchassoc.simulations.engines.population import exact
    assert getattr(bruteforce, name) == getattr(exact, name)
