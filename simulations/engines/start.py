"""Where a run starts and when it records, shared by the sampled and the population engines:
the initial parameters of SPEC section 2 (v0 ~ N(0, omega^2 I_d), Q0 = kappa I) and the
log-spaced steps at which a trajectory is recorded."""
from __future__ import annotations

import math

import numpy as np

from patchassoc.theory.config import Config

__all__ = ["initial_parameters", "record_steps"]


def record_steps(steps: int, records: int) -> np.ndarray:
    """Step 0, then ``records - 1`` log-spaced steps up to ``steps`` (unique integers)."""
    if steps == 0:
        return np.zeros(1, dtype=np.int64)
    grid = np.geomspace(1, steps, max(1, records - 1))
    return np.unique(np.concatenate([[0], np.rint(grid).astype(np.int64), [steps]]))


def initial_parameters(config: Config, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """v0 ~ N(0, omega^2 I_d) and the attention parameter: Q0 = kappa I, or P0 = sqrt(kappa) I."""
    v0 = config.omega * rng.standard_normal(config.d)
    if config.param == "gram":
        theta0 = math.sqrt(config.kappa) * np.eye(config.D)
    else:
        theta0 = config.kappa * np.eye(config.D)
    return v0, theta0
