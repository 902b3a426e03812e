"""Numba kernels against the plain-NumPy definition and against finite differences."""
import json
import os
import subprocess
import sys
import time

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from patchassoc.simulations.engines import _sampled_simd, sampled_kernels as kernels
from patchassoc.benchmarks import step_bench
from patchassoc.simulations.engines.sampler import sample, streams, unit_vector
from patchassoc.theory import model
from patchassoc.theory.structure import random_partition

from tests.scales import FLOAT32_DATA_REL, scales, within
from tests.tolerances import FD_STEP, GRAD_FD_REL, KERNEL_VS_NUMPY_REL, SOFTMAX_ROW_SUM_ABS


def _problem(seed, L=2, C=3, d=6, n=40, sigma=0.3, scale=0.8):
    rng = np.random.default_rng(seed)
    S = random_partition(L, C, rng)
    w = unit_vector(d, rng)
    data = sample(n, w, S, q=0.4, sigma=sigma, rng=rng)
    v = scale * rng.standard_normal(d)
    Q = rng.standard_normal((S.D, S.D))
    return data, v, Q, rng


@given(seed=st.integers(0, 2**32 - 1), L=st.integers(1, 4), C=st.integers(1, 4),
       d=st.integers(1, 8), p=st.sampled_from([3, 5, 7]), nu=st.floats(0, 1))
def test_kernel_matches_numpy(seed, L, C, d, p, nu):
    data, v, Q, _ = _problem(seed, L, C, d, n=17)
    out = _assert_kernel_matches_numpy(data, v, model.softmax_rows(Q), p, nu)
    assert out["error"] == pytest.approx(
        model.loss_and_grad(data.X, data.y, v, model.softmax_rows(Q), p, nu)["error"],
        rel=KERNEL_VS_NUMPY_REL, abs=1e-300)


def _assert_kernel_matches_numpy(data, v, A, p, nu) -> dict:
    """The kernel's loss, gradients and margins against the NumPy definition; returns the
    kernel's output. Two summation orders of the same sums differ by rounding of the summed
    terms (tests/scales.py), which stays positive where a gradient or a margin cancels to ~0."""
    ref = model.loss_and_grad(data.X, data.y, v, A, p, nu)
    out = kernels.loss_and_grad(data.X, data.y, v, A, p, nu)
    assert out["loss"] == pytest.approx(ref["loss"], rel=KERNEL_VS_NUMPY_REL, abs=1e-300)
    sc = scales(data.X, data.y, v, A, p, nu)
    for key in ("grad_v", "grad_A", "grad_Q"):
        assert within(out[key] - ref[key], getattr(sc, key), KERNEL_VS_NUMPY_REL)
    m = kernels.margins(data.X, data.y, v, A, p, nu)
    assert within(m - data.y * model.forward(data.X, v, A, p, nu)[2], sc.margin,
                  KERNEL_VS_NUMPY_REL)
    return out


def _loop_reference(X, y, v, A, p, nu):
    """Loss, error and gradients by the chain rule, one sample at a time, in plain NumPy: the
    slow, obviously correct reference (no shared code with the kernels or theory.model)."""
    N, D, d = X.shape
    loss, err = 0.0, 0.0
    grad_v, grad_A = np.zeros(d), np.zeros((D, D))
    for n in range(N):
        U = X[n] @ v                                 # U_j = <v, X_nj>
        z = A @ U                                    # z_i = sum_j A_ij U_j
        m = y[n] * np.sum(z**p + nu * z)             # margin y f(X_n)
        loss += np.logaddexp(0.0, -m)                # l(m) = log(1 + e^-m)
        err += 1.0 if m < 0 else (0.5 if m == 0 else 0.0)
        dl = -np.exp(-np.logaddexp(0.0, m))          # l'(m) = -1 / (1 + e^m)
        G = y[n] * dl * (p * z ** (p - 1) + nu) / N  # d(l / N) / dz_i
        grad_A += np.outer(G, U)                     # dz_i / dA_ij = U_j
        grad_v += X[n].T @ (A.T @ G)                 # dz_i / dv = sum_j A_ij X_nj
    grad_Q = A * (grad_A - np.sum(A * grad_A, axis=1, keepdims=True))  # row softmax
    return {"loss": loss / N, "error": err / N, "grad_v": grad_v, "grad_A": grad_A,
            "grad_Q": grad_Q}


#: (L, C, d, n) of the loop-reference check: the reference size's D = 16 and d = 256 with
#: n = 600 (above PARALLEL_MIN_ENTRIES and PREFETCH_MIN_BYTES: the threaded, prefetching path),
#: odd sizes with tails everywhere, and rows shorter than LANES.
LOOP_CASES = [(4, 4, 256, 600), (3, 5, 83, 37), (2, 3, 5, 11), (1, 1, 16, 5)]


@pytest.mark.parametrize("L, C, d, n", LOOP_CASES)
def test_kernel_matches_a_loop_over_samples(L, C, d, n):
    """The kernels (both drivers, and the step of gradient descent) against the loop reference,
    to the rounding of two summation orders (tests/scales.py, KERNEL_VS_NUMPY_REL)."""
    data, v, Q, _ = _problem(11, L=L, C=C, d=d, n=n, sigma=1 / np.sqrt(d), scale=3 / np.sqrt(d))
    A = kernels.softmax_rows(Q)
    X, y = kernels.check_data(data.X, data.y)
    ref = _loop_reference(X, y, v, A, 5, 0.03)
    m = kernels.margins(X, y, v, A, 5, 0.03)
    assert 0.05 < np.mean(m < 0) < 0.95 or n < 20  # margins of both signs: a real test
    sc = scales(X, y, v, A, 5, 0.03)
    out = kernels.loss_and_grad(X, y, v, A, 5, 0.03, data_checked=True)
    step = kernels._step_quantities(X, y, v, Q, 5, 0.03)
    for driver in (kernels._loss_grad_serial, kernels._loss_grad_parallel):
        loss, err, gv, gA = driver(X, y, v, A, 5, 0.03)
        assert loss == out["loss"] and np.array_equal(gv, out["grad_v"])
        assert np.array_equal(gA, out["grad_A"])
    assert step[1] == out["loss"] and np.array_equal(step[3], out["grad_v"])
    assert out["loss"] == pytest.approx(ref["loss"], rel=KERNEL_VS_NUMPY_REL)
    assert out["error"] == ref["error"]
    for key in ("grad_v", "grad_A", "grad_Q"):
        assert within(out[key] - ref[key], getattr(sc, key), KERNEL_VS_NUMPY_REL), key
    # the comparison can fail: one sample's gradient left out is far outside the bound
    short = _loop_reference(X[1:], y[1:], v, A, 5, 0.03)
    assert not within(out["grad_v"] - short["grad_v"] * (n - 1) / n, sc.grad_v,
                      KERNEL_VS_NUMPY_REL)


@given(Q=st.lists(st.floats(-700, 700), min_size=16, max_size=16))
def test_softmax_rows_sum_to_one(Q):
    Q = np.array(Q).reshape(4, 4)
    A = kernels.softmax_rows(Q)
    assert np.all(A >= 0) and np.all(np.isfinite(A))
    assert np.max(np.abs(A.sum(axis=1) - 1.0)) <= SOFTMAX_ROW_SUM_ABS
    np.testing.assert_allclose(A, model.softmax_rows(Q), rtol=1e-12, atol=1e-300)


def _rel_err(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def _fd(fun, x, h=FD_STEP):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        g[idx] = (fun(x + e) - fun(x - e)) / (2 * h)
    return g


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("p,nu", [(3, 0.0), (5, 0.03)])
def test_gradients_free_logits_vs_finite_differences(seed, p, nu):
    data, v, Q, _ = _problem(seed)

    def loss(v_, Q_):
        return kernels.loss_and_grad(data.X, data.y, v_, kernels.softmax_rows(Q_), p, nu)["loss"]

    out = kernels.loss_and_grad(data.X, data.y, v, kernels.softmax_rows(Q), p, nu)
    assert _rel_err(out["grad_v"], _fd(lambda x: loss(x, Q), v)) <= GRAD_FD_REL
    assert _rel_err(out["grad_Q"], _fd(lambda x: loss(v, x), Q)) <= GRAD_FD_REL


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [3, 6])
def test_gradients_gram_vs_finite_differences(seed, k):
    data, v, _, rng = _problem(seed)
    P = 0.7 * rng.standard_normal((6, k))
    p, nu = 5, 0.03

    def loss(P_):
        A = kernels.softmax_rows(model.gram_logits(P_))
        return kernels.loss_and_grad(data.X, data.y, v, A, p, nu)["loss"]

    out = kernels.loss_and_grad(data.X, data.y, v, kernels.softmax_rows(P @ P.T), p, nu)
    grad_P = model.gram_grad(out["grad_Q"], P)
    assert _rel_err(grad_P, _fd(loss, P)) <= GRAD_FD_REL


@given(seed=st.integers(0, 2**32 - 1))
def test_grad_Q_rows_sum_to_zero(seed):
    data, v, Q, _ = _problem(seed)
    out = kernels.loss_and_grad(data.X, data.y, v, kernels.softmax_rows(3 * Q), 5, 0.03)
    scale = np.max(np.abs(out["grad_Q"]))
    assert np.max(np.abs(out["grad_Q"].sum(axis=1))) <= 1e-13 * max(scale, 1e-300) * 6


def test_kernel_rejects_bad_input():
    data, v, Q, _ = _problem(0)
    A = kernels.softmax_rows(Q)
    with pytest.raises(ValueError, match="v must have shape"):
        kernels.loss_and_grad(data.X, data.y, v[:-1], A, 5, 0.03)
    with pytest.raises(ValueError, match="A must have shape"):
        kernels.loss_and_grad(data.X, data.y, v, A[:-1], 5, 0.03)
    bad = A.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        kernels.loss_and_grad(data.X, data.y, v, bad, 5, 0.03)


def test_sampler_is_seeded_and_follows_the_distribution():
    r1, r2 = streams(3), streams(3)
    S = random_partition(4, 4, r1["structure"])
    assert np.array_equal(S.sets, random_partition(4, 4, r2["structure"]).sets)
    w = unit_vector(32, r1["feature"])
    a = sample(20000, w, S, 0.3, 0.1, r1["train"])
    b = sample(20000, w, S, 0.3, 0.1, streams(3)["train"])
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)
    # signal set carries y w*; elsewhere delta != 0 with probability q, each sign q/2
    signal = S.sets[a.lstar]
    assert np.all(a.s[np.arange(a.n)[:, None], signal] == a.y[:, None])
    mask = np.ones_like(a.s, dtype=bool)
    mask[np.arange(a.n)[:, None], signal] = False
    noise = a.s[mask]
    se = np.sqrt(0.3 * 0.7 / noise.size)
    assert abs(np.mean(noise != 0) - 0.3) < 5 * se
    assert abs(np.mean(noise == 1) - 0.15) < 5 * se
    assert abs(np.mean(a.y) ) < 5 / np.sqrt(a.n)
    resid = a.X - a.s[..., None] * w
    assert abs(resid.std() - 0.1) < 0.002


def test_orthogonal_noise_is_orthogonal():
    r = streams(0)
    S = random_partition(2, 2, r["structure"])
    w = unit_vector(16, r["feature"])
    a = sample(100, w, S, 0.3, 0.5, r["train"], orthogonal=True)
    np.testing.assert_allclose(a.X @ w, a.s, atol=1e-12)


def test_serial_and_parallel_drivers_agree_bit_for_bit():
    data, v, Q, _ = _problem(5, L=3, C=2, d=5, n=301)
    A = kernels.softmax_rows(Q)
    args = (data.X, data.y, v, A, 5, 0.03)
    s = kernels._loss_grad_serial(*args)
    p = kernels._loss_grad_parallel(*args)
    assert s[0] == p[0] and s[1] == p[1]
    assert np.array_equal(s[2], p[2]) and np.array_equal(s[3], p[3])
    assert np.array_equal(kernels._margins_serial(*args), kernels._margins_parallel(*args))


def test_data_checked_requires_prepared_arrays():
    data, v, Q, _ = _problem(1)
    A = kernels.softmax_rows(Q)
    X, y = kernels.check_data(data.X, data.y)
    a = kernels.loss_and_grad(X, y, v, A, 5, 0.03, data_checked=True)
    b = kernels.loss_and_grad(data.X, data.y, v, A, 5, 0.03)
    assert a["loss"] == b["loss"] and np.array_equal(a["grad_v"], b["grad_v"])
    with pytest.raises(ValueError, match="check_data"):
        kernels.loss_and_grad(data.X.astype(np.float16), y, v, A, 5, 0.03, data_checked=True)
    bad = data.X.copy()
    bad[0, 0, 0] = np.inf
    with pytest.raises(ValueError, match="non-finite"):
        kernels.check_data(bad, data.y)


# -- the vectorized lane path (rows of length d >= kernels.LANES) ---------------------------------
#: Row lengths around the lane width: one block, one block plus a tail, several blocks with and
#: without a tail, a full block of 64 entries of grad_v (4 LANES) and one more with a tail. Rows
#: shorter than LANES take the scalar path the tests above exercise.
LANE_DS = (kernels.LANES, kernels.LANES + 1, 2 * kernels.LANES + 5, 3 * kernels.LANES,
           4 * kernels.LANES, 5 * kernels.LANES + 3)


@given(seed=st.integers(0, 2**32 - 1), d=st.sampled_from(LANE_DS), p=st.sampled_from([3, 5]),
       nu=st.floats(0, 1))
def test_lane_path_matches_numpy(seed, d, p, nu):
    data, v, Q, _ = _problem(seed, L=2, C=2, d=d, n=9, sigma=1 / np.sqrt(d), scale=2.0)
    _assert_kernel_matches_numpy(data, v, model.softmax_rows(Q), p, nu)


def test_lane_path_catches_a_wrong_row_entry():
    """Negative control: the comparison above can fail. Changing one entry of X in the tail of
    a row (past the last full block of lanes) moves the kernel's gradient far beyond the
    tolerance, so the tail is not silently dropped."""
    d = 2 * kernels.LANES + 5
    data, v, Q, _ = _problem(3, L=2, C=2, d=d, n=9, sigma=1 / np.sqrt(d), scale=2.0)
    A = model.softmax_rows(Q)
    ref = model.loss_and_grad(data.X, data.y, v, A, 5, 0.03)
    X = data.X.copy()
    X[0, 1, d - 1] += 0.5
    out = kernels.loss_and_grad(X, data.y, v, A, 5, 0.03)
    sc = scales(data.X, data.y, v, A, 5, 0.03)
    assert not within(out["grad_v"] - ref["grad_v"], sc.grad_v, KERNEL_VS_NUMPY_REL)


#: (L, C, d, n) of the thread-count test: a tail of d mod LANES entries; four-row groups of U
#: and a full 64-entry block of grad_v with a tail (D = 16 as at the reference size); and the
#: prefetching path (X of 17 MiB, past PREFETCH_MIN_BYTES).
THREAD_CASES = [(2, 3, kernels.LANES + 7, 203), (4, 4, 4 * kernels.LANES + 9, 203),
                (4, 4, 16 * kernels.LANES, 540)]


@pytest.mark.parametrize("L, C, d, n", THREAD_CASES)
def test_parallel_driver_is_bit_identical_whatever_the_thread_count(L, C, d, n):
    data, v, Q, _ = _problem(7, L=L, C=C, d=d, n=n, sigma=1 / np.sqrt(d), scale=2.0)
    A = kernels.softmax_rows(Q)
    args = (data.X, data.y, v, A, 5, 0.03)
    assert (data.X.nbytes >= kernels.PREFETCH_MIN_BYTES) == (n == 540)
    serial = kernels._loss_grad_serial(*args)
    before = numba.get_num_threads()
    try:
        for threads in range(1, numba.config.NUMBA_NUM_THREADS + 1):
            numba.set_num_threads(threads)
            par = kernels._loss_grad_parallel(*args)
            assert par[0] == serial[0] and par[1] == serial[1]
            assert np.array_equal(par[2], serial[2]) and np.array_equal(par[3], serial[3])
            assert np.array_equal(kernels._margins_parallel(*args), kernels._margins_serial(*args))
            assert np.array_equal(kernels._projections_parallel(data.X, v),
                                  kernels._projections_serial(data.X, v))
    finally:
        numba.set_num_threads(before)


def _chunk_sums(X, y, v, A, p, nu):
    """The per-chunk (loss, error, grad_v, grad_A) sums of the drivers, chunk by chunk."""
    N, D, d = X.shape
    AT = np.ascontiguousarray(A.T)
    out = []
    for c in range(kernels.N_CHUNKS):
        gv, gA = np.zeros(d), np.zeros((D, D))
        loss, err = kernels._accumulate(X, y, v, A, AT, p, nu, c * N // kernels.N_CHUNKS,
                                        (c + 1) * N // kernels.N_CHUNKS, gv, gA,
                                        np.empty((4, D)), False)
        out.append((loss, err, gv, gA))
    return out


def test_bit_identity_checks_can_fail():
    """Negative control of the bitwise comparisons above: they see a change of summation order.
    The chunks' sums merged in chunk order give the drivers' bits; merged in reverse order, the
    same numbers to rounding, but other bits."""
    data, v, Q, _ = _problem(7, L=4, C=4, d=4 * kernels.LANES + 9, n=203,
                             sigma=1 / np.sqrt(4 * kernels.LANES + 9), scale=2.0)
    A = kernels.softmax_rows(Q)
    serial = kernels._loss_grad_serial(data.X, data.y, v, A, 5, 0.03)
    chunks = _chunk_sums(data.X, data.y, v, A, 5, 0.03)
    for order, same in ((chunks, True), (chunks[::-1], False)):
        loss, gv = 0.0, np.zeros_like(serial[2])
        for c_loss, _, c_gv, _ in order:
            loss += c_loss
            gv += c_gv
        assert np.array_equal(gv, serial[2]) == same
        np.testing.assert_allclose(gv, serial[2], rtol=1e-12, atol=1e-15)
        assert (loss / data.X.shape[0] == serial[0]) or not same


_PLAIN_PYTHON = """
import json, numpy as np
from numba import config
from patchassoc.simulations.engines import sampled_kernels as kernels
rng = np.random.default_rng(11)
out = {"jit_disabled": bool(config.DISABLE_JIT)}
L = kernels.LANES
# (D, d): D = 3, one block of lanes and a tail, then a double block (32 entries of grad_v side
# by side), a single one and a tail; D = 5, a four-row group of U and a row, a 64-entry block of
# grad_v and a tail, z = A U entry by entry; D = 9, two groups and a row, a 64-entry block and
# one more block, z = A U as one vector and an entry; D = 16, the reference D, four groups and
# z = A U as two vectors
for D, d in ((3, L + 9), (3, 3 * L + 9), (5, 4 * L + 9), (9, 5 * L), (16, 2 * L)):
    X = rng.standard_normal((6, D, d)) / 8
    y = np.where(rng.random(6) < 0.5, -1.0, 1.0)
    v = rng.standard_normal(d)
    A = kernels.softmax_rows(rng.standard_normal((D, D)))
    res = kernels.loss_and_grad(X, y, v, A, 5, 0.03)
    # the prefetching path (data past PREFETCH_MIN_BYTES) on this small sample
    gv, gA = np.zeros(d), np.zeros((D, D))
    loss, err = kernels._accumulate(X, y, v, A, np.ascontiguousarray(A.T), 5, 0.03, 0, 6, gv,
                                    gA, np.empty((4, D)), True)
    out[f"{D}x{d}"] = {
        "loss": res["loss"].hex(), "grad_v": [g.hex() for g in res["grad_v"]],
        "grad_A": [g.hex() for g in res["grad_A"].ravel()],
        "margins": [m.hex() for m in kernels.margins(X, y, v, A, 5, 0.03)],
        "projections": [u.hex() for u in kernels.projections(X, v).ravel()],
        "prefetch": [g.hex() for g in (loss, err, *gv, *gA.ravel())]}
print(json.dumps(out))
"""


def _run_plain(disable_jit: bool) -> dict:
    env = dict(os.environ, NUMBA_DISABLE_JIT="1" if disable_jit else "0")
    proc = subprocess.run([sys.executable, "-c", _PLAIN_PYTHON], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_compiled_kernel_sums_in_the_order_its_source_states():
    """The vectorized machine code gives the same bits as the kernel's source run as plain
    Python (NUMBA_DISABLE_JIT=1): vectorization reordered no sum, used no fused multiply-add, and
    the orders the plain-Python twins state (the lanes of ``_dot_lanes``, ``_matvec_py``,
    ``_outer_add_py``, ``_axpy_lanes_py``, and the activation) are the ones computed, on any machine."""
    plain, compiled = _run_plain(True), _run_plain(False)
    assert plain.pop("jit_disabled") and not compiled.pop("jit_disabled")
    assert plain == compiled


def _step_problem():
    data, v, Q, _ = _problem(2, L=2, C=2, d=kernels.LANES + 3, n=50)
    X, y = kernels.check_data(data.X, data.y)
    return X, y, v, kernels.softmax_rows(Q)


def test_step_bench_reports_the_step_next_to_its_floor():
    """Bookkeeping of ``patchassoc bench``'s sampled step (timings are not asserted): the floor
    is the fastest of the reads, the 3-D read of earlier versions is reported beside it, and so
    is the step timed inside OpenBLAS's spin; each pool's group of calls follows a pause (a
    sleep lasts at least its length, so the lower bound on the elapsed time cannot fail by
    noise)."""
    X, y, v, A = _step_problem()
    t0 = time.perf_counter()
    r = step_bench.sampled_step_vs_read(X, y, v, A, 5, 0.03, repeats=1, torch=False,
                                        pause=0.005)
    assert time.perf_counter() - t0 >= 2 * step_bench.MIN_REPEATS * 0.005
    assert r["pause"] == 0.005 and 0 < r["seconds_after_blas"] < 60
    assert r["ratio_after_blas"] == r["seconds_after_blas"] / r["read_seconds"]
    assert r["repeats"] == step_bench.MIN_REPEATS and r["torch"] is None
    assert r["block"] == step_bench.BLOCK
    assert set(r["reads"]) == set(step_bench.READS) and r["floor"] in step_bench.READS
    assert r["read_seconds"] == min(r["reads"].values()) == r["reads"][r["floor"]]
    assert r["ratio"] == r["seconds"] / r["read_seconds"]
    assert r["serial_ratio"] == r["serial_seconds"] / r["read_seconds"]
    assert r["ratio_3d"] == r["seconds"] / r["read_3d_seconds"]
    assert r["serial_ratio_one_thread"] == r["serial_seconds"] / r["read_one_thread_seconds"]
    assert r["floor_one_thread"] in step_bench.READS
    f32 = r["float32"]
    assert f32["ratio"] == f32["seconds"] / r["read_seconds"]
    assert f32["ratio_to_own_read"] == f32["seconds"] / f32["read_seconds"]
    assert f32["floor"] in step_bench.READS
    assert r["driver"] == "serial"  # 50 x 4 x 19 entries: below PARALLEL_MIN_ENTRIES
    assert r["prefetch"] is False  # 30 KB: below PREFETCH_MIN_BYTES
    for key in ("seconds", "serial_seconds", "read_seconds", "read_3d_seconds",
                "read_one_thread_seconds"):
        assert 0 < r[key] < 60
    text = step_bench.describe(dict(r, N=50, D=4, d=X.shape[2]))
    assert "floor" in text and step_bench.READS[r["floor"]] in text and "3-D" in text
    roof = r["roofline"]
    assert roof["samples"] == 50  # 50 x 4 x 19 x 8 bytes: all of X fits IN_CACHE_BYTES
    assert roof["ratio"] == roof["step_per_sample"] / roof["read_per_sample"]
    assert roof["bound"] == max(1.0, roof["step_per_sample"] * 50 / r["read_seconds"])
    assert r["floor_spread"] >= 1.0
    assert "roofline" in text and "0.005 s pause" in text and "OpenBLAS" in text


def test_roofline_times_the_first_samples_that_fit_the_cache():
    """The roofline's in-cache sample count: as many whole samples as IN_CACHE_BYTES holds
    (at least one); its step is one chunk of the sample loop, the same numbers as the step's."""
    X, y, v, A = _step_problem()
    big = np.repeat(X, 40, axis=0)          # 2000 x 4 x 19 x 8 bytes = 1.2 MB
    r = step_bench.roofline(big, np.repeat(y, 40), v, A, 5, 0.03, repeats=1)
    assert r["samples"] == step_bench.IN_CACHE_BYTES // (4 * X.shape[2] * 8)
    wide = np.zeros((3, 64, 1024))         # one sample is 512 KiB > IN_CACHE_BYTES
    assert step_bench.roofline(wide, np.ones(3), np.zeros(1024), np.full((64, 64), 1 / 64), 5,
                               0.03, repeats=1)["samples"] == 1


def test_kernel_read_is_one_honest_read_of_X():
    """The bench's kernel read computes X v (every entry of X used), the step's projections bit
    for bit (the margins are computed from them), serial and threaded alike."""
    X, y, v, A = _step_problem()
    U = kernels.projections(X, v)
    assert U.shape == X.shape[:2]
    np.testing.assert_allclose(U, np.einsum("njk,k->nj", X, v), rtol=1e-12, atol=1e-15)
    assert np.array_equal(U, kernels._projections_parallel(X, v))
    m = kernels.margins(X, y, v, A, 5, 0.03)
    z = U @ A.T
    np.testing.assert_allclose(m, y * np.sum(z**5 + 0.03 * z, axis=1), rtol=1e-12, atol=1e-300)
    X2 = X.copy()
    X2[3, 1, -1] += 1.0  # the last entry of a row (the tail past the lanes) is read too
    assert not np.array_equal(kernels.projections(X2, v)[3], U[3])
    with pytest.raises(ValueError, match="v must have shape"):
        kernels.projections(X, v[:-1])


def test_torch_peer_step_computes_the_same_gradient():
    """The PyTorch step the bench compares against computes the same grad_v (so the comparison
    is between two computations of one quantity); its speed-up is normalised by its own read."""
    pytest.importorskip("torch")
    X, y, v, A = _step_problem()
    grad_v = kernels.loss_and_grad(X, y, v, A, 5, 0.03)["grad_v"]
    t, grad_torch = step_bench._torch_step(X, y, v, A, 5, 0.03, 2, grad_v, pause=0.0)
    assert "error" not in t, t
    # the same sums in another order (softmax of log A gives A to rounding): tests/scales.py
    assert within(grad_torch - grad_v, scales(X, y, v, A, 5, 0.03).grad_v, KERNEL_VS_NUMPY_REL)
    assert t["grad_v_rel_diff"] == np.linalg.norm(grad_torch - grad_v) / np.linalg.norm(grad_v)
    assert t["ratio_to_read"] == t["seconds"] / t["read_seconds"]
    # the comparison can fail: the gradient of the other sign is far outside the bound
    assert not within(-grad_torch - grad_v, scales(X, y, v, A, 5, 0.03).grad_v,
                      KERNEL_VS_NUMPY_REL)


# -- X stored in float32 -----------------------------------------------------------------------
def test_float32_data_is_the_float64_kernel_on_the_rounded_data():
    """float32 storage changes only the data: every product and sum is float64, so the result
    is bit for bit the float64 kernel's on X rounded to float32 (serial, threaded, margins)."""
    data, v, Q, _ = _problem(4, L=2, C=3, d=kernels.LANES + 3, n=61)
    A = kernels.softmax_rows(Q)
    X32, y = kernels.check_data(data.X, data.y, dtype=np.float32)
    assert X32.dtype == np.float32 and X32.flags.c_contiguous
    X64 = X32.astype(np.float64)
    args32, args64 = (X32, y, v, A, 5, 0.03), (X64, y, v, A, 5, 0.03)
    for driver in (kernels._loss_grad_serial, kernels._loss_grad_parallel):
        a, b = driver(*args32), driver(*args64)
        assert a[0] == b[0] and a[1] == b[1]
        assert np.array_equal(a[2], b[2]) and np.array_equal(a[3], b[3])
    assert np.array_equal(kernels.margins(*args32, data_checked=True),
                          kernels.margins(*args64))


@pytest.mark.parametrize("seed", range(3))
def test_float32_data_gradients_against_float64(seed):
    """Against the float64 data, the float32 step differs only by the rounding of X, bounded by
    FLOAT32_DATA_REL times the scales (tests/scales.py). That difference is real: it exceeds
    the float64 rounding bound, so the float64 comparison would fail on float32 data."""
    d = 2 * kernels.LANES + 5
    data, v, Q, _ = _problem(seed, L=2, C=2, d=d, n=40, sigma=1 / np.sqrt(d), scale=2.0)
    A = kernels.softmax_rows(Q)
    X32, y = kernels.check_data(data.X, data.y, dtype=np.float32)
    out32 = kernels.loss_and_grad(X32, y, v, A, 5, 0.03, data_checked=True)
    out64 = kernels.loss_and_grad(data.X, data.y, v, A, 5, 0.03)
    sc = scales(data.X, data.y, v, A, 5, 0.03)
    rel = FLOAT32_DATA_REL + 2 * KERNEL_VS_NUMPY_REL
    for key in ("grad_v", "grad_A", "grad_Q"):
        assert within(out32[key] - out64[key], getattr(sc, key), rel)
    assert not within(out32["grad_v"] - out64["grad_v"], sc.grad_v, 2 * KERNEL_VS_NUMPY_REL)
    m32 = kernels.margins(X32, y, v, A, 5, 0.03, data_checked=True)
    assert within(m32 - kernels.margins(data.X, data.y, v, A, 5, 0.03), sc.margin, rel)


def test_check_data_dtype_is_validated():
    data, _, _, _ = _problem(0)
    with pytest.raises(ValueError, match="dtype"):
        kernels.check_data(data.X, data.y, dtype=np.float16)
    with pytest.raises(ValueError, match="overflow"):
        kernels.check_data(np.full((2, 1, 1), 1e300), np.ones(2), dtype=np.float32)


#: sha256 of (theta, v, alpha, test_error, train_loss, train_error, A) of
#: ``train(preset("ref", diagonal="fixed", steps=100, records=5, **sizes), seed=0)``: the first
#: size takes the threaded driver with software prefetch (2100 x 16 x 64 entries, 17 MB), the
#: second the serial driver with d mod LANES = 8 (the scalar tails).
#: Where they were made: an AMD EPYC (Zen 4, AVX-512; NumPy 2.4.6 reports X86_V4 and AVX512_ICL,
#: OpenBLAS 0.3.31 its SkylakeX kernels), numpy 2.4.6, numba 0.68.1, glibc 2.36, with the kernels
#: of issue 41 (w* and the recorded alpha and ||v_perp|| summed in a fixed order). Why they hold
#: on another CPU kind: every operation of this path is an IEEE 754 operation in an order the
#: code fixes, or glibc's exp and log (one variant on every x86-64 CPU with FMA); the same
#: digests come out with NumPy's baseline loops, OpenBLAS's Haswell or Sandybridge kernels and
#: Numba's generic target (``tests/engines/test_cross_cpu.py`` checks it on each run). The
#: digests of the earlier kernels (main 7759578) summed alpha = <v, w*> with BLAS and held only
#: on CPUs whose OpenBLAS took its Haswell kernels (issue 41). A change of the library versions
#: may change them (NumPy's normal sampler, glibc's exp): then recompute them, and say so.
_TRAIN_DIGESTS = {
    (2100, 64, 500): "150e624f49fc234aa4bcf96a65b5910651ff6f2ec03831affed3d2b702ed5096",
    (300, 40, 300): "5375d6aaca8b52a3a38a497be3e27f80dc68398d6dd00177882cdd1840ce6021",
}


@pytest.mark.parametrize("sizes", sorted(_TRAIN_DIGESTS))
def test_training_gives_the_bits_of_the_reproductions_kernel(sizes):
    """A change of the sampled kernels must not change a trained number: 100 steps at ref
    (diagonal fixed) give the stored digest of the kernel the reproduction ran."""
    import hashlib

    import patchassoc
    from patchassoc.theory.config import preset

    n_train, d, n_test = sizes
    cfg = preset("ref", diagonal="fixed", steps=100, records=5, n_train=n_train, d=d,
                 n_test=n_test)
    t = patchassoc.train(cfg, seed=0).trajectory
    h = hashlib.sha256()
    for a in (t.theta, t.v, t.alpha, t.test_error, t.train_loss, t.train_error, t.A):
        h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    assert h.hexdigest() == _TRAIN_DIGESTS[sizes]


def _in_address_order(offsets, D, d) -> bool:
    """Whether ``offsets`` (entries into a D x d float64 block) request each 64-byte line of it
    once, in increasing address order."""
    return (all(o % 8 == 0 for o in offsets)
            and [o // 8 for o in offsets] == list(range(D * d // 8)))


@pytest.mark.parametrize("D, d", [(16, 256), (5, 48), (3, 32), (7, 80), (4, 16), (17, 144)])
def test_prefetch_schedule_requests_the_next_block_once_in_address_order(D, d):
    """The stated prefetch order of a float64 sample (the two passes' offsets into the next
    block): every 64-byte line of the block exactly once, in increasing address order, inside
    the block; the projections request the first half, the grad_v update the second. (A
    prefetch changes no value, so only this statement and the bench can see it.)"""
    offsets = _sampled_simd._prefetch_schedule_py(D, d)
    assert _in_address_order(offsets, D, d)
    first_pass = D * (d // kernels.LANES)
    assert max(offsets[:first_pass]) < D * d // 2 <= min(offsets[first_pass:])


def test_prefetch_order_check_can_fail():
    """The control: the schedule of the earlier kernels (every other line during the
    projections, the others during the grad_v update, column block by column block) covers the
    block, but not in address order, and the check says so."""
    D, d = 16, 256
    old = [j * d + 16 * lb for j in range(D) for lb in range(d // 16)]
    old += [j * d + 64 * b + 8 + 16 * i for b in range(d // 64) for j in range(D)
            for i in range(4)]
    assert sorted(o // 8 for o in old) == list(range(D * d // 8))
    assert not _in_address_order(old, D, d)
