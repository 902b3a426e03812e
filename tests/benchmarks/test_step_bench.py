"""The fast paths of a training step and of a transfer cell compute what they replace, bit for
bit: the projected test error against its NumPy expression (counts over the test images), and
gradient descent against its step written with the validated public kernels."""
import math

import numpy as np
import pytest

from patchassoc.simulations.engines import sampled_kernels as kernels
from patchassoc.simulations.engines.sampled_descent import gradient_descent
from patchassoc.simulations.engines.sampler import sample, unit_vector
from patchassoc.simulations.studies.claim5_transfer import evaluation, tasks
from patchassoc.theory.model import act, gram_grad, zero_one
from patchassoc.theory.structure import random_partition


def _numpy_test_error(v, A, w, structure, setting, p, nu, rng):
    """The projected test error as plain NumPy (the expression the fast path replaces)."""
    orth = setting.noise == "orthogonal"
    total, done = 0.0, 0
    while done < setting.n_test:
        n = min(setting.test_chunk, setting.n_test - done)
        y = rng.choice(np.array([-1.0, 1.0]), size=n)
        lstar = rng.integers(structure.L, size=n)
        u = rng.random((n, structure.D))
        s = np.where(u < setting.q / 2, 1.0, np.where(u < setting.q, -1.0, 0.0))
        s[np.arange(n)[:, None], structure.sets[lstar]] = y[:, None]
        alpha = float(v @ w)
        tau = setting.sigma * (math.sqrt(max(float(v @ v) - alpha * alpha, 0.0)) if orth
                               else float(np.linalg.norm(v)))
        U = alpha * s + tau * rng.standard_normal((n, structure.D))
        total += float(zero_one(y * act(U @ A.T, p, nu).sum(axis=1)).sum())
        done += n
    return total / setting.n_test


@pytest.mark.parametrize("case", range(8))
def test_projected_test_error_is_the_numpy_expression(case):
    """Same draws, same count: v = 0 (every margin 0, ties counted 1/2 by the reference path),
    tiny and large v, both noise laws, p = 1, 3, 5, a chunk that does not divide n_test."""
    rng = np.random.default_rng(case)
    S = random_partition(*[(4, 4), (2, 3), (3, 5), (8, 8)][case % 4], rng)
    w = unit_vector(32, rng)
    v = [0.0, 1e-3, 0.3, 2.0][case % 4] * (rng.standard_normal(32) / 6 + w)
    A = kernels.softmax_rows(rng.standard_normal((S.D, S.D)) * (case % 3) * 2)
    setting = tasks.TransferSetting(sigma=[0.0, 0.2, 1.0][case % 3], q=0.3,
                                    noise=("isotropic", "orthogonal")[case % 2],
                                    n_test=3001, test_chunk=1000)
    p, nu = (1, 3, 5)[case % 3], (0.0, 0.03)[case % 2]
    fast = tasks.measure_test_error(v, A, w, S, setting, p, nu, np.random.default_rng(9))
    ref = _numpy_test_error(v, A, w, S, setting, p, nu, np.random.default_rng(9))
    assert fast == ref
    if case % 4 == 0:
        assert fast == 0.5  # every margin is 0: a tie each


def test_fast_count_defers_margins_within_rounding_of_zero():
    """A row whose margin cancels (act is odd: act(t) + act(-t) = 0) is not decided by the
    fast count (-1: the caller counts with the reference expression); clear rows are counted,
    and a wrong sign would be seen."""
    units = 100.0
    z = np.array([[0.7, 0.1], [-0.7, 0.1], [0.3, -0.3]])
    y = np.array([1.0, 1.0, 1.0])
    assert evaluation._count_errors(y[:2], z[:2], 3, 0.03, units) == 1
    assert evaluation._count_errors(-y[:2], z[:2], 3, 0.03, units) == 1
    assert evaluation._count_errors(np.array([-1.0, 1.0]), z[:2], 3, 0.03, units) == 2
    assert evaluation._count_errors(y, z, 3, 0.03, units) == -1
    assert evaluation._chunk_errors(y, z, np.eye(2), 3, 0.03) == 1.5


def _public_kernel_descent(data, theta, v, p, nu, eta_v, eta_Q, steps, gram, fixed):
    """Gradient descent written with the validated public kernels (what every step of
    ``gradient_descent`` used to call): final (v, theta) and the loss of every step."""
    losses = []
    for _ in range(steps + 1):
        A = kernels.softmax_rows(theta @ theta.T if gram else theta)
        out = kernels.loss_and_grad(data.X, data.y, v, A, p, nu)
        losses.append(out["loss"])
        if len(losses) > steps:
            break
        v = v - eta_v * out["grad_v"]
        g = gram_grad(out["grad_Q"], theta) if gram else out["grad_Q"].copy()
        if fixed:
            np.fill_diagonal(g, 0.0)
        theta = theta - eta_Q * g
    return v, theta, losses


@pytest.mark.parametrize("gram, fixed, d",
                         [(False, False, 20), (False, True, 37), (True, False, 16),
                          (False, True, 73)])
def test_gradient_descent_is_the_public_kernels_step_bit_for_bit(gram, fixed, d):
    rng = np.random.default_rng(d)
    S = random_partition(2, 3, rng)
    w = unit_vector(d, rng)
    data = sample(7, w, S, q=0.4, sigma=0.5 / math.sqrt(d), rng=rng)
    v0 = 0.3 * rng.standard_normal(d)
    theta0 = np.eye(S.D) + 0.1 * rng.standard_normal((S.D, S.D))
    steps = 12
    traj = gradient_descent(data, theta0, v0, p=5, nu=0.03, eta_v=0.5, eta_Q=2.0, steps=steps,
                            at=range(steps + 1), w_star=w, gram=gram,
                            diagonal="fixed" if fixed else "trained")
    v, theta, losses = _public_kernel_descent(data, theta0, v0, 5, 0.03, 0.5, 2.0, steps, gram,
                                              fixed)
    assert traj.status == "ok" and traj.steps_done == steps
    assert np.array_equal(traj.v, v) and np.array_equal(traj.theta, theta)
    assert np.array_equal(traj.train_loss, losses)
    assert not np.array_equal(v, v0)  # it moved: the comparison can fail


def test_gradient_descent_stops_on_a_non_finite_step():
    """A step size that overflows the parameters stops the run with its status (the loop no
    longer validates v and theta on every step; a non-finite one shows in the loss or the
    gradient)."""
    rng = np.random.default_rng(0)
    S = random_partition(2, 2, rng)
    w = unit_vector(8, rng)
    data = sample(5, w, S, q=0.4, sigma=0.1, rng=rng)
    traj = gradient_descent(data, np.eye(S.D), rng.standard_normal(8), p=5, nu=0.03,
                            eta_v=1e300, eta_Q=1e300, steps=5, at=[0, 5], w_star=w)
    assert traj.status.startswith("non-finite at step")
    assert np.all(np.isfinite(traj.train_loss))
