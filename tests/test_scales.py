"""The rounding scales of tests/scales.py: they bound the quantities they scale (triangle
inequality), so ``REL * scale`` is at least REL times the result, and they are tight enough that a
real error (here 1e-9 of the gradient, far above rounding) fails the checks that use them."""
import numpy as np
import pytest

from patchassoc.simulations.engines import sampled_kernels as kernels
from patchassoc.simulations.engines.sampler import sample, unit_vector
from patchassoc.theory.structure import random_partition

from tests.scales import scales, within
from tests.tolerances import KERNEL_VS_NUMPY_REL, PARALLEL_REL


def _problem(seed, sigma):
    rng = np.random.default_rng(seed)
    S = random_partition(3, 2, rng)
    w = unit_vector(5, rng)
    data = sample(20, w, S, 0.4, sigma, rng)
    v = 0.8 * rng.standard_normal(5)
    A = kernels.softmax_rows(rng.standard_normal((S.D, S.D)))
    return data, w, v, A


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("p,nu", [(3, 0.0), (5, 0.03)])
def test_scales_bound_the_quantities(seed, p, nu):
    data, _, v, A = _problem(seed, 0.3)
    out = kernels.loss_and_grad(data.X, data.y, v, A, p, nu)
    sc = scales(data.X, data.y, v, A, p, nu)
    for key in ("grad_v", "grad_A", "grad_Q"):
        assert np.all(np.abs(out[key]) <= getattr(sc, key) * (1 + 1e-12))
    m = kernels.margins(data.X, data.y, v, A, p, nu)
    assert np.all(np.abs(m) <= sc.margin * (1 + 1e-12))


@pytest.mark.parametrize("seed", range(5))
def test_a_real_error_fails_the_scaled_checks(seed):
    data, w, v, A = _problem(seed, 0.0)
    g = kernels.loss_and_grad(data.X, data.y, v, A, 5, 0.03)["grad_v"]
    sc = scales(data.X, data.y, v, A, 5, 0.03)
    e = np.linalg.svd(w[None, :])[2][1]                  # a unit vector orthogonal to w*
    wrong = g + 1e-9 * np.linalg.norm(g) * e
    residual = wrong - (wrong @ w) * w
    assert np.linalg.norm(residual) > PARALLEL_REL * np.linalg.norm(sc.grad_v)
    assert not within(wrong - g, sc.grad_v, KERNEL_VS_NUMPY_REL)
