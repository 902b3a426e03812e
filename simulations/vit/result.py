"""The saved result of a ViT comparison, and its summary statistics (NumPy only, no PyTorch, so
figures and reports can read a result on any machine).

A result folder holds ``config.json`` (the metadata: data set, recipe, seeds, timings),
``metrics.json`` (the summary of :meth:`ViTResult.summary`) and ``arrays.npz``: the test accuracy
(kinds x seeds), the training loss per epoch (kinds x seeds x epochs), the attention maps
(kinds x seeds x depth x heads x D x D, in token order; for the standard ViT the average over the
test images) and the patch permutation (identity unless the permuted-patch control ran).

References
----------
SPEC section 6, claim 6.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..results import load_folder, save_folder
from .stats import attention_distance, mean_ci, paired_gap_ci, uniform_distance

__all__ = ["ViTResult", "REFERENCE", "TREATMENT"]

#: The baseline (standard ViT) and the treatment (positional attention) of the comparison.
REFERENCE, TREATMENT = "content", "positional"


@dataclass(frozen=True, eq=False)
class ViTResult:
    """Accuracies, loss curves and attention maps of a comparison over seeds.

    Parameters
    ----------
    meta : dict
        JSON-ready metadata: ``data``, ``kinds``, ``seeds``, ``grid``, ``recipe``, ``permuted``,
        timings, parameter counts...
    accuracy : ndarray, shape (kinds, seeds)
        Test accuracy in [0, 1].
    train_loss : ndarray, shape (kinds, seeds, epochs)
        Mean training loss per epoch.
    attention : ndarray, shape (kinds, seeds, depth, heads, D, D)
        Attention weights in token order (rows sum to 1).
    permutation : ndarray of int, shape (D,)
        Token t is the patch at grid position ``permutation[t]``.
    """

    meta: dict
    accuracy: np.ndarray
    train_loss: np.ndarray
    attention: np.ndarray
    permutation: np.ndarray

    def __post_init__(self) -> None:
        K, S = len(self.meta["kinds"]), len(self.meta["seeds"])
        if self.accuracy.shape != (K, S):
            raise ValueError(f"accuracy must have shape ({K}, {S}), got {self.accuracy.shape}")
        if self.train_loss.shape[:2] != (K, S) or self.attention.shape[:2] != (K, S):
            raise ValueError("train_loss and attention must start with (kinds, seeds)")
        D = int(np.prod(self.meta["grid"]))
        if self.attention.shape[-2:] != (D, D) or self.permutation.shape != (D,):
            raise ValueError(f"attention maps must be {D} x {D} and the permutation of length {D}")

    @property
    def kinds(self) -> list[str]:
        return list(self.meta["kinds"])

    @property
    def grid(self) -> tuple[int, int]:
        return tuple(int(g) for g in self.meta["grid"])

    def accuracy_of(self, kind: str) -> np.ndarray:
        return self.accuracy[self.kinds.index(kind)]

    def attention_of(self, kind: str) -> np.ndarray:
        return self.attention[self.kinds.index(kind)]

    def grid_attention(self, kind: str) -> np.ndarray:
        """Attention maps of ``kind`` (seeds, depth, heads, D, D) re-indexed by grid position
        (undoing the patch permutation), so a map can be drawn over the patch grid."""
        A = self.attention_of(kind)
        inv = np.argsort(self.permutation)
        return A[..., inv[:, None], inv[None, :]]

    def summary(self) -> dict:
        """Mean test accuracy of each kind with its 95 % t-interval over seeds, the paired gap
        (positional minus standard) with its interval, and attention distances (in patches)."""
        out: dict = dict(data=self.meta["data"], seeds=list(self.meta["seeds"]),
                         permuted=bool(self.meta["permuted"]), grid=list(self.grid),
                         n_train=self.meta["n_train"], n_test=self.meta["n_test"])
        uniform = uniform_distance(self.grid)
        for kind in self.kinds:
            acc = self.accuracy_of(kind)
            dist = attention_distance(self.attention_of(kind), self.grid, self.permutation)
            out[kind] = dict(accuracy=mean_ci(acc), per_seed=acc.tolist(),
                             final_train_loss=mean_ci(self.train_loss[self.kinds.index(kind),
                                                                      :, -1]),
                             attention_distance_per_layer=dist.mean(axis=(0, 2)).tolist(),
                             n_params=self.meta.get("n_params", {}).get(kind))
        out["uniform_attention_distance"] = uniform
        if REFERENCE in self.kinds:
            for kind in self.kinds:
                if kind != REFERENCE:
                    out[f"gap_{kind}"] = paired_gap_ci(self.accuracy_of(kind),
                                                       self.accuracy_of(REFERENCE))
        out["wall_s"] = self.meta.get("wall_s")
        out["cpu_s"] = self.meta.get("cpu_s")
        return out

    def save(self, folder) -> Path:
        arrays = dict(accuracy=self.accuracy, train_loss=self.train_loss,
                      attention=self.attention.astype(np.float32), permutation=self.permutation)
        return save_folder(folder, self.meta, self.summary(), arrays)

    @classmethod
    def load(cls, folder) -> "ViTResult":
        meta, _, arrays = load_folder(folder)
        for key in ("accuracy", "train_loss", "attention", "permutation"):
            if key not in arrays:
                raise FileNotFoundError(f"{folder} is not a ViT result (no {key} array)")
        return cls(meta=meta, accuracy=arrays["accuracy"], train_loss=arrays["train_loss"],
                   attention=arrays["attention"].astype(np.float64),
                   permutation=arrays["permutation"].astype(np.int64))
