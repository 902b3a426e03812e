"""The numbers the cross-CPU test compares, computed in whatever process runs this.

    python -m tests.engines.cross_cpu_probe OUT.npz

writes them; :func:`probe` returns them. Run once in the test's process and once in a child whose
environment makes NumPy, OpenBLAS and Numba take other code paths (another CPU kind, emulated
on this one: ``tests/engines/test_cross_cpu.py``).
"""
from __future__ import annotations

import sys

import numpy as np

#: What is bit for bit on every CPU kind (SPEC section 6, "What the numbers' bits depend on").
EXACT_GROUPS = ("train", "train_orthogonal", "population", "evaluation")
#: What agrees within the declared cross-CPU tolerance (the flow's solver uses BLAS).
TOLERANCE_GROUPS = ("flow",)


def probe() -> dict[str, np.ndarray]:
    import patchassoc
    from patchassoc.theory.config import preset

    out: dict[str, np.ndarray] = {}
    small = dict(diagonal="fixed", steps=60, records=4, n_train=300, d=40, n_test=300)
    for group, extra in (("train", {}), ("train_orthogonal", {"noise": "orthogonal"})):
        t = patchassoc.train(preset("ref", **small, **extra), seed=0).trajectory
        for key in ("theta", "v", "alpha", "v_perp_norm", "test_error", "train_loss",
                    "train_error", "A", "share_min", "topc_rows"):
            out[f"{group}.{key}"] = np.asarray(getattr(t, key), dtype=np.float64)
    pop = patchassoc.population_descent(preset("ref", diagonal="fixed"), seed=0, steps=150,
                                        records=6).trajectory
    for key in ("alpha", "a", "b", "c", "loss", "error", "grad_norm", "per_step"):
        out[f"population.{key}"] = np.asarray(getattr(pop, key), dtype=np.float64)
    ev = patchassoc.population_eval(1.2, 3.0, 2.5, 0.0, "ref")
    out["evaluation.values"] = np.array([ev.risk, ev.error, ev.bayes_error,
                                         *(ev.grad[k] for k in ("alpha", "a", "b", "c"))])
    flow = patchassoc.population_flow(preset("ref", diagonal="fixed"), seed=0,
                                      t_max=1e9).trajectory
    for key in ("t", "alpha", "b", "c", "risk", "error", "share", "topc_rows"):
        out[f"flow.{key}"] = np.asarray(getattr(flow, key), dtype=np.float64)
    return out


if __name__ == "__main__":
    np.savez(sys.argv[1], **probe())
