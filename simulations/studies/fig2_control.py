"""The paper's Fig. 2 negative control: the same model trained on data without spatial structure.

Data (``Config.data = "gaussian-cnn"``, :mod:`patchassoc.simulations.engines.sampler`): i.i.d.
N(0, sigma^2 I_d) patches on a 4 x 4 grid, labels y = sign f*(X) with f* a cubic
one-hidden-layer CNN over the 2 x 2 windows (one channel, a random C x d filter drawn from the
run's seed). The labelling is a sum over the windows, but nothing in the inputs ties the patches
of a window together, so there is no reason for the attention to associate them (paper, Fig. 2:
a few percent test error, yet a Gram matrix that looks random).

:func:`run_pair` trains the model of claim 2 (``diagonal=fixed``, the ref sizes D = 16, L = C = 4,
windows structure) on this data and, for comparison, on the structured data with the same
windows, and scores both with the paper's association metrics (SPEC section 3) at the sampled
level eps = 0.25: Def. 2.2 ranked on the learned logits, the set-mate share, and the ARI of the
sets recovered from the learned attention (:mod:`patchassoc.theory.recovery`). The control must
not associate; if it does, claim 2's control fails.

The control's trajectory records alpha = 0 (there is no feature w* in this data).

References
----------
SPEC sections 3 and 6 (claim 2, control); PAPER.md (negative result).
"""
from __future__ import annotations

from pathlib import Path

from patchassoc.theory.association import associate
from patchassoc.theory.config import Config, preset
from patchassoc.theory.recovery import recovery_report

from patchassoc.simulations.runtime.errors import raise_if_interrupted
from patchassoc.simulations.runtime.verified import read_summary, write_summary
from patchassoc.simulations.engines.sampled_descent import TrainResult, train

__all__ = ["CONTROL_EPS", "control_config", "train_data_option", "score", "run_pair",
           "load_pair"]

#: Level of association for sampled runs (SPEC section 3).
CONTROL_EPS = 0.25


def control_config(base: Config | None = None, **overrides) -> Config:
    """The claim-2 model on the Fig. 2 data: ref sizes, windows, fixed diagonal, gaussian-cnn."""
    base = base if base is not None else preset("ref")
    changes = dict(structure="windows", diagonal="fixed", data="gaussian-cnn")
    changes.update(overrides)
    return base.replace(**changes)


def train_data_option(config: Config, seed: int = 0, *, progress: bool = False) -> TrainResult:
    """Train on the distribution named by ``config.data`` (:func:`patchassoc.simulations.engines.sampled_descent.train`
    draws it: w* or the CNN filter from the ``feature`` stream, then the samples)."""
    return train(config, seed, progress=progress)


def score(result: TrainResult, eps: float = CONTROL_EPS) -> dict:
    """Test error, Def. 2.2 against the windows, share, and ARI of the recovered sets."""
    t = result.trajectory
    if t.steps.size == 0:
        raise ValueError("the run recorded no step")
    Q = t.theta if not t.gram else t.theta @ t.theta.T
    assoc = associate(Q, result.structure, kind="logits", eps=eps)
    rec = recovery_report(t.A[-1], result.structure, seed=result.seed)
    return {"data": result.config.data, "test_error": float(t.test_error[-1]),
            "train_error": float(t.train_error[-1]), "steps": int(t.steps_done),
            "status": t.status, **{f"assoc_{k}": v for k, v in assoc.to_dict().items()},
            "ari_top_c": rec["ari_top_c"], "ari_spectral": rec["ari_spectral"],
            "seconds": float(result.seconds)}


def run_pair(base: Config | None = None, seed: int = 0, out: str | Path | None = None, *,
             progress: bool = False) -> dict:
    """Train on the Fig. 2 data and on the structured data (same model and windows); score both.

    Returns a JSON-ready dict with ``control`` and ``structured`` scores and ``control_ok``
    (the control did not associate at eps = 0.25). With ``out``, each run is saved to
    ``out/<data>/`` and the summary to ``out/gaussian_cnn.json``.
    """
    control_cfg = control_config(base)
    structured_cfg = control_cfg.replace(data="structured")
    records = {}
    for name, cfg in (("control", control_cfg), ("structured", structured_cfg)):
        result = train_data_option(cfg, seed, progress=progress)
        raise_if_interrupted(result.trajectory.status, f"the Fig. 2 {name} run")
        if out is not None:
            result.save(Path(out) / cfg.data)
        records[name] = score(result)
    summary = {"seed": int(seed), "eps": CONTROL_EPS, **records,
               "control_ok": not records["control"]["assoc_associated"],
               "config": control_cfg.to_dict()}
    if out is not None:
        write_summary(Path(out) / "gaussian_cnn.json", summary)
    return summary


def load_pair(out: str | Path) -> tuple[dict, TrainResult, TrainResult]:
    """The summary and both runs saved by :func:`run_pair` (for the figure)."""
    out = Path(out)
    return (read_summary(out / "gaussian_cnn.json"), TrainResult.load(out / "gaussian-cnn"),
            TrainResult.load(out / "structured"))
