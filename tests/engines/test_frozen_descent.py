"""GD on v for a frozen attention with few distinct rows (:mod:`frozen_descent`): its rows and
aggregated patches, the descent against the general engine (``gradient_descent`` with the
attention frozen) to rounding, each way it stops, the state it keeps, and the compiled loop
against its own source run as plain Python (bit for bit)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from patchassoc.simulations.engines import sampled_kernels as kernels
from patchassoc.simulations.engines.frozen_descent import (aggregate, distinct_rows,
                                                           frozen_descent)
from patchassoc.simulations.engines.sampled_descent import gradient_descent
from patchassoc.simulations.engines.sampler import Sample, sample, unit_vector
from patchassoc.theory.structure import random_partition

#: Two engines summing in different orders, after at most a few hundred steps: v agrees to
#: this many times its largest entry (measured: a few 1e-16).
ENGINES_RTOL = 1e-12


def _problem(seed=0, L=3, C=3, d=24, n=40, sigma=0.4):
    rng = np.random.default_rng(seed)
    S = random_partition(L, C, rng)
    w = unit_vector(d, rng)
    data = sample(n, w, S, 0.3, sigma, rng, False)
    return S, w, data, 1e-3 * rng.standard_normal(d)


def test_distinct_rows_and_their_multiplicities():
    S, *_ = _problem()
    D = S.D
    rows, mult = distinct_rows(np.full((D, D), 1.0 / D))
    assert rows.shape == (1, D) and mult.tolist() == [float(D)]
    B = S.same_set() / S.C
    rows, mult = distinct_rows(B)
    assert rows.shape == (S.L, D) and mult.tolist() == [float(S.C)] * S.L
    assert np.array_equal(rows[0], B[0])        # in the order the rows first occur
    rows, mult = distinct_rows(np.eye(D))
    assert rows.shape == (D, D) and np.array_equal(rows, np.eye(D))
    with pytest.raises(ValueError, match="matrix"):
        distinct_rows(np.ones(3))


def test_aggregated_patches_are_the_attention_weighted_sums():
    S, w, data, _ = _problem()
    rows, _ = distinct_rows(S.same_set() / S.C)
    Z = aggregate(rows, data.X)
    assert Z.shape == (data.X.shape[0], S.L, data.X.shape[2])
    assert np.allclose(Z, np.einsum("rj,njk->nrk", rows, data.X), rtol=1e-14, atol=1e-15)
    with pytest.raises(ValueError, match="do not fit"):
        aggregate(rows[:, :-1], data.X)


@pytest.mark.parametrize("which", ["uniform", "block"])
def test_the_descent_is_the_general_engines_to_rounding(which):
    S, w, data, v0 = _problem()
    D = S.D
    Q = np.zeros((D, D)) if which == "uniform" else np.where(S.same_set() > 0, 0.0, -1000.0)
    A = kernels.softmax_rows(Q)
    rows, mult = distinct_rows(A)
    Z = aggregate(rows, data.X)
    for tol in (None, 1e-3):
        ref = gradient_descent(data, Q, v0, p=5, nu=0.03, eta_v=0.1, eta_Q=50.0, steps=300,
                               at=[0, 300], w_star=w, train_attention=False, tol=tol)
        run = frozen_descent(Z, data.y, mult, v0, p=5, nu=0.03, eta=0.1, steps=300, tol=tol)
        assert run.steps_done == int(ref.steps_done) and run.status == ref.status
        assert np.max(np.abs(run.v - ref.v)) <= ENGINES_RTOL * np.max(np.abs(ref.v))
        assert run.train_loss == pytest.approx(float(ref.train_loss[-1]), rel=1e-10)
        assert run.train_error == float(ref.train_error[-1])


def test_each_way_the_descent_stops_and_the_state_it_keeps():
    S, w, data, v0 = _problem()
    rows, mult = distinct_rows(S.same_set() / S.C)
    Z = aggregate(rows, data.X)
    kw = dict(p=5, nu=0.03, eta=0.1)
    full = frozen_descent(Z, data.y, mult, v0, steps=400, **kw)
    assert full.status == "ok" and full.steps_done == 400 and full.kept is None
    kept = frozen_descent(Z, data.y, mult, v0, steps=400, keep=150, **kw)
    head = frozen_descent(Z, data.y, mult, v0, steps=150, **kw)
    assert np.array_equal(kept.v, full.v)
    assert np.array_equal(kept.kept[0], head.v) and kept.kept[1] == head.train_loss
    fit = frozen_descent(Z, data.y, mult, v0, steps=400, tol=1e-2, **kw)
    assert fit.status == "converged" and fit.train_loss <= 1e-2 and fit.steps_done < 400
    # one image twice with opposite labels: the minimum is at f = 0, reached at rest
    X1 = data.X[:1]
    twin = Sample(X=np.concatenate([X1, X1]), y=np.array([1.0, -1.0]),
                  s=np.zeros((2, S.D)), lstar=np.zeros(2, dtype=np.int64))
    rest = frozen_descent(aggregate(rows, twin.X), twin.y, mult, 0.3 * np.ones(Z.shape[2]),
                          steps=100000, rest=1e-9, **kw)
    assert rest.status == "at rest" and rest.train_loss == pytest.approx(np.log(2.0), rel=1e-9)
    boom = frozen_descent(Z, data.y, mult, 50.0 * np.ones(Z.shape[2]), steps=100, **kw)
    assert boom.status.startswith("non-finite")
    with pytest.raises(ValueError, match="shapes"):
        frozen_descent(Z, data.y[:-1], mult, v0, steps=3, **kw)


_PLAIN = """
import json, numpy as np
from numba.core import config
from patchassoc.simulations.engines.frozen_descent import aggregate, distinct_rows, frozen_descent
from patchassoc.simulations.engines.sampler import sample, unit_vector
from patchassoc.theory.structure import random_partition
rng = np.random.default_rng(7)
S = random_partition(2, 3, rng)
w = unit_vector(11, rng)
data = sample(30, w, S, 0.3, 0.4, rng, False)
rows, mult = distinct_rows(S.same_set() / S.C)
run = frozen_descent(aggregate(rows, data.X), data.y, mult, 1e-3 * rng.standard_normal(11),
                     p=5, nu=0.03, eta=0.1, steps=120, tol=1e-4, rest=1e-9, keep=60)
print(json.dumps({"jit_disabled": bool(config.DISABLE_JIT), "v": run.v.tolist(),
                  "kept": run.kept[0].tolist(), "loss": run.train_loss, "steps": run.steps_done}))
"""


def test_the_compiled_loop_sums_in_the_order_its_source_states():
    out = {}
    for disable in (True, False):
        env = dict(os.environ, NUMBA_DISABLE_JIT="1" if disable else "0")
        proc = subprocess.run([sys.executable, "-c", _PLAIN], env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        out[disable] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out[True].pop("jit_disabled") and not out[False].pop("jit_disabled")
    assert out[True] == out[False]
