"""Per-epoch curves of a long study: training loss and test accuracy of every run, by model.

A :class:`CurveResult` holds, for each model of a study (the ViT attention kinds and the small
CNN), its seeds, the final test accuracy per seed, the mean training loss of every epoch per
seed and the test accuracy after every epoch per seed, with each run's CPU- and wall-seconds.
Models may have different seeds (the long Fashion-MNIST recipe trains 5 seeds of the compared
ViTs and 3 of each control). Its summary gives, per model and epoch, the mean, minimum and
maximum over seeds of both curves, and the relative fall of the mean training loss over the last
epoch, (l_{E-1} - l_E) / l_{E-1}, the quantity SPEC's cause (i) reads (still falling when it
exceeds 1 %).

NumPy only (no PyTorch): figures and reports read a saved result on any machine.

References
----------
SPEC section 6, claim 6 (the long Fashion-MNIST recipe).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from patchassoc.simulations.runtime.results import load_folder, save_folder

__all__ = ["CurveResult", "STILL_FALLING"]

#: Relative fall of the mean training loss over the last epoch above which the loss is still
#: falling (SPEC section 6, claim 6, "What its FAIL says": more than 1 %).
STILL_FALLING = 0.01

_FIELDS = ("accuracy", "train_loss", "test_accuracy", "cpu_s", "wall_s")


@dataclass(frozen=True, eq=False)
class CurveResult:
    """Curves of every run of a study, by model.

    Parameters
    ----------
    meta : dict
        ``data``, ``models`` (in order), ``seeds`` (model -> list of seeds), ``recipe``,
        ``epochs`` and timings.
    runs : dict
        model -> dict of arrays: ``accuracy`` (seeds,), ``train_loss`` (seeds, epochs),
        ``test_accuracy`` (seeds, epochs), ``cpu_s`` and ``wall_s`` (seeds,).
    """

    meta: dict
    runs: dict

    def __post_init__(self) -> None:
        E = int(self.meta["epochs"])
        if list(self.runs) != list(self.meta["models"]):
            raise ValueError("runs must hold exactly the models of meta['models'], in order")
        for m in self.meta["models"]:
            S = len(self.meta["seeds"][m])
            r = self.runs[m]
            if set(r) != set(_FIELDS):
                raise ValueError(f"{m}: runs must hold {', '.join(_FIELDS)}")
            shapes = dict(accuracy=(S,), train_loss=(S, E), test_accuracy=(S, E), cpu_s=(S,),
                          wall_s=(S,))
            for k, shape in shapes.items():
                if np.shape(r[k]) != shape:
                    raise ValueError(f"{m}: {k} must have shape {shape}, got {np.shape(r[k])}")

    @property
    def models(self) -> list[str]:
        return list(self.meta["models"])

    def seeds_of(self, model: str) -> list[int]:
        return [int(s) for s in self.meta["seeds"][model]]

    def band(self, model: str, field: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(mean, min, max) over seeds of ``field`` (``train_loss`` or ``test_accuracy``) per
        epoch."""
        x = np.asarray(self.runs[model][field], dtype=np.float64)
        return x.mean(axis=0), x.min(axis=0), x.max(axis=0)

    def last_epoch_fall(self, model: str) -> float:
        """(l_{E-1} - l_E) / l_{E-1} of the mean training loss over seeds (NaN with one
        epoch)."""
        mean = self.band(model, "train_loss")[0]
        return float((mean[-2] - mean[-1]) / mean[-2]) if mean.size >= 2 else float("nan")

    def summary(self) -> dict:
        """Per model: seeds, per-seed accuracy, per-epoch mean / min / max of the training loss
        and the test accuracy, the last epoch's relative fall of the loss and whether it is
        still falling (> :data:`STILL_FALLING`), the per-seed training loss of every epoch, and
        the runs' CPU-seconds."""
        out = dict(data=self.meta["data"], epochs=int(self.meta["epochs"]), models={},
                   still_falling_above=STILL_FALLING)
        for m in self.models:
            r = self.runs[m]
            loss, acc = self.band(m, "train_loss"), self.band(m, "test_accuracy")
            fall = self.last_epoch_fall(m)
            out["models"][m] = dict(
                seeds=self.seeds_of(m), accuracy_per_seed=np.asarray(r["accuracy"]).tolist(),
                train_loss_mean=loss[0].tolist(), train_loss_min=loss[1].tolist(),
                train_loss_max=loss[2].tolist(),
                train_loss_per_seed=np.asarray(r["train_loss"]).tolist(),
                test_accuracy_mean=acc[0].tolist(), test_accuracy_min=acc[1].tolist(),
                test_accuracy_max=acc[2].tolist(),
                test_accuracy_per_seed=np.asarray(r["test_accuracy"]).tolist(),
                last_epoch_loss_fall=fall,
                loss_still_falling=bool(np.isfinite(fall) and fall > STILL_FALLING),
                cpu_s_per_run=np.asarray(r["cpu_s"]).tolist(),
                wall_s_per_run=np.asarray(r["wall_s"]).tolist(),
                cpu_s=float(np.sum(r["cpu_s"])))
        return out

    def save(self, folder) -> Path:
        arrays = {f"{m}__{k}": np.asarray(v, dtype=np.float64)
                  for m in self.models for k, v in self.runs[m].items()}
        return save_folder(folder, self.meta, self.summary(), arrays)

    @classmethod
    def load(cls, folder) -> "CurveResult":
        meta, _, arrays = load_folder(folder)
        runs = {}
        for m in meta.get("models", []):
            missing = [k for k in _FIELDS if f"{m}__{k}" not in arrays]
            if missing:
                raise FileNotFoundError(f"{folder} is not a curve result (no {m} {missing[0]})")
            runs[m] = {k: arrays[f"{m}__{k}"] for k in _FIELDS}
        return cls(meta=meta, runs=runs)
