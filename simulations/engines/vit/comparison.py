"""The saved result of a ViT comparison, and its summary statistics (NumPy only, no PyTorch, so
figures and reports can read a result on any machine).

A result folder holds ``config.json`` (the metadata: data set, recipe, seeds, timings),
``metrics.json`` (the summary of :meth:`ViTResult.summary`) and ``arrays.npz``: the test accuracy
(kinds x seeds), the training loss per epoch (kinds x seeds x epochs), the attention maps
(kinds x seeds x depth x heads x D x D, in token order; for the standard ViT the average over the
test images), the learned positional encodings (kinds x seeds x D x dim, token order) and the token
permutation (identity unless the comparison itself ran on shuffled images).

A :class:`ShuffleResult` (the shuffled-patch experiment) holds the test accuracy (models x block
sizes x seeds; NaN where a model did not run: the ViTs skip the blocks that cut through
patches), the token permutation of each ViT block size, and the ViTs' attention maps and
positional encodings (ViT models x ViT block sizes x seeds x ...); its summary has the accuracy
table with 95 % t-intervals, each model's paired accuracy change from the unshuffled images to
its finest shuffle, and the locality z-scores of :func:`~.locality_stats.locality_z` of the positional
attention and of the positional encodings' cosine Gram matrix, once the shuffle is undone.

References
----------
SPEC section 6, claim 6.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from patchassoc.simulations.runtime.results import load_folder, save_folder
from patchassoc.simulations.engines.vit.locality_stats import (attention_distance, cosine_gram, locality_z,
                                                      mean_ci, paired_gap_ci, uniform_distance)

__all__ = ["ViTResult", "ShuffleResult", "REFERENCE", "TREATMENT", "CONTROLS"]

#: The baseline (standard ViT) and the treatment (positional attention) of the comparison.
REFERENCE, TREATMENT = "content", "positional"
#: The controls: fixed uniform attention, and no token mixing (per-patch MLP, mean pooling).
CONTROLS = ("uniform", "none")


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
    pos : ndarray, shape (kinds, seeds, D, dim), or None
        Learned positional encodings in token order (None in results saved before they were
        recorded).
    """

    meta: dict
    accuracy: np.ndarray
    train_loss: np.ndarray
    attention: np.ndarray
    permutation: np.ndarray
    pos: np.ndarray | None = None

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
        """Mean test accuracy of each kind with its 95 % t-interval over seeds, its training loss
        per epoch (mean over seeds), the paired gap
        (positional minus standard) with its interval, attention distances (in patches), and,
        when the controls ran, the paired gaps of the positional model over each control
        (``positional_vs_uniform``, ``positional_vs_none``)."""
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
                             train_loss_per_epoch=self.train_loss[self.kinds.index(kind)]
                             .mean(axis=0).tolist(),
                             attention_distance_per_layer=dist.mean(axis=(0, 2)).tolist(),
                             n_params=self.meta.get("n_params", {}).get(kind))
        out["uniform_attention_distance"] = uniform
        if REFERENCE in self.kinds:
            for kind in self.kinds:
                if kind != REFERENCE:
                    out[f"gap_{kind}"] = paired_gap_ci(self.accuracy_of(kind),
                                                       self.accuracy_of(REFERENCE))
        if TREATMENT in self.kinds:
            for control in CONTROLS:
                if control in self.kinds:
                    out[f"{TREATMENT}_vs_{control}"] = paired_gap_ci(
                        self.accuracy_of(TREATMENT), self.accuracy_of(control))
        out["wall_s"] = self.meta.get("wall_s")
        out["cpu_s"] = self.meta.get("cpu_s")
        return out

    def save(self, folder) -> Path:
        arrays = dict(accuracy=self.accuracy, train_loss=self.train_loss,
                      attention=self.attention.astype(np.float32), permutation=self.permutation)
        if self.pos is not None:
            arrays["pos"] = self.pos
        return save_folder(folder, self.meta, self.summary(), arrays)

    @classmethod
    def load(cls, folder) -> "ViTResult":
        meta, _, arrays = load_folder(folder)
        for key in ("accuracy", "train_loss", "attention", "permutation"):
            if key not in arrays:
                raise FileNotFoundError(f"{folder} is not a ViT result (no {key} array)")
        return cls(meta=meta, accuracy=arrays["accuracy"], train_loss=arrays["train_loss"],
                   attention=arrays["attention"].astype(np.float64),
                   permutation=arrays["permutation"].astype(np.int64), pos=arrays.get("pos"))


@dataclass(frozen=True, eq=False)
class ShuffleResult:
    """The shuffled-patch experiment: accuracy against block size, and the learned positional
    maps of the ViTs.

    Parameters
    ----------
    meta : dict
        ``data``, ``models``, ``vit_models``, ``blocks`` (pixels; the image side = no shuffle),
        ``vit_blocks`` (the blocks the ViTs ran: multiples of the patch side; ``blocks`` when
        absent, as in results saved before it existed), ``seeds``, ``grid``, ``recipe``,
        ``shuffle_seed``, ``block_permutations``...
    accuracy : ndarray, shape (models, blocks, seeds)
        Test accuracy in [0, 1]; NaN exactly where a ViT did not run (a block not in
        ``vit_blocks``).
    token_permutation : ndarray of int, shape (vit blocks, D)
        tau per ViT block size: token t of a shuffled image is the patch at grid position
        tau[t].
    pos : ndarray, shape (vit models, vit blocks, seeds, D, dim)
        Learned positional encodings in token order.
    attention : ndarray, shape (vit models, vit blocks, seeds, depth, heads, D, D)
        Attention maps in token order (input-independent for the positional ViT; the mean over
        the test images for the standard ViT).
    """

    meta: dict
    accuracy: np.ndarray
    token_permutation: np.ndarray
    pos: np.ndarray
    attention: np.ndarray

    def __post_init__(self) -> None:
        M, B, S = len(self.meta["models"]), len(self.meta["blocks"]), len(self.meta["seeds"])
        V, BV = len(self.meta["vit_models"]), len(self.vit_blocks)
        D = int(np.prod(self.meta["grid"]))
        if self.accuracy.shape != (M, B, S):
            raise ValueError(f"accuracy must have shape ({M}, {B}, {S}), got "
                             f"{self.accuracy.shape}")
        if not set(self.vit_blocks) <= set(self.blocks):
            raise ValueError("vit_blocks must be among blocks")
        ran = np.ones((M, B), dtype=bool)
        for i, m in enumerate(self.meta["models"]):
            if m != "cnn":
                ran[i] = [b in self.vit_blocks for b in self.blocks]
        if (np.isnan(self.accuracy).any(axis=-1) != ~ran).any() or \
                not np.isnan(self.accuracy[~ran]).all():
            raise ValueError("accuracy must be NaN exactly where a ViT did not run (blocks not "
                             "in vit_blocks)")
        if self.token_permutation.shape != (BV, D):
            raise ValueError(f"token_permutation must have shape ({BV}, {D})")
        if V and (self.pos.shape[:4] != (V, BV, S, D) or self.attention.shape[:3] != (V, BV, S)
                  or self.attention.shape[-2:] != (D, D)):
            raise ValueError("pos and attention must start with (vit models, vit blocks, seeds) "
                             "and hold D x D maps")

    @property
    def grid(self) -> tuple[int, int]:
        return tuple(int(g) for g in self.meta["grid"])

    @property
    def blocks(self) -> list[int]:
        return [int(b) for b in self.meta["blocks"]]

    @property
    def vit_blocks(self) -> list[int]:
        """The blocks the ViTs ran (multiples of the patch side)."""
        return [int(b) for b in self.meta.get("vit_blocks", self.meta["blocks"])]

    def blocks_of(self, model: str) -> list[int]:
        """The blocks ``model`` ran: every block for the CNN, :attr:`vit_blocks` for a ViT."""
        return self.blocks if model == "cnn" else self.vit_blocks

    def accuracy_of(self, model: str, block: int) -> np.ndarray:
        if block not in self.blocks_of(model):
            raise ValueError(f"{model} did not run at block {block} (it cuts through patches)")
        return self.accuracy[self.meta["models"].index(model), self.blocks.index(block)]

    def tau(self, block: int) -> np.ndarray:
        """The token permutation of ViT block ``block``."""
        return self.token_permutation[self.vit_blocks.index(block)]

    def maps(self, source: str, block: int) -> np.ndarray:
        """Similarity maps (seeds, D, D) in token order: ``"attention"`` (the positional ViT's
        attention, mean over layers and heads) or ``"pos_<model>"`` (the cosine Gram matrix of
        the positional encodings of ViT ``model``), at ViT block ``block``."""
        j = self.vit_blocks.index(block)
        vits = list(self.meta["vit_models"])
        if source == "attention" and self._positional() is not None:
            return self.attention[vits.index(self._positional()), j].mean(axis=(1, 2))
        if source.startswith("pos_") and source[4:] in vits:
            return cosine_gram(self.pos[vits.index(source[4:]), j])
        raise ValueError(f"unknown map source {source!r}")

    def _positional(self) -> str | None:
        """The positional-attention model of the experiment (positional, or free logits)."""
        return next((m for m in ("positional", "logits") if m in self.meta["vit_models"]), None)

    def map_sources(self) -> list[str]:
        vits = list(self.meta["vit_models"])
        return ((["attention"] if self._positional() else [])
                + [f"pos_{m}" for m in vits if m in ("positional", "logits", "content")])

    def summary(self) -> dict:
        """Accuracy table (model -> block -> mean with 95 % CI, for the blocks the model ran),
        the paired change from the largest to the smallest block of each model, and the locality
        of each learned map per ViT block (the z-score against 200 random relabellings, after
        undoing the shuffle). Computed once per result (its arrays are not meant to change)."""
        cached = self.__dict__.get("_summary")
        if cached is None:
            cached = self._summary()
            object.__setattr__(self, "_summary", cached)
        return cached

    def _summary(self) -> dict:
        blocks, vit_blocks = self.blocks, self.vit_blocks
        models = list(self.meta["models"])
        table = {m: {str(b): dict(mean_ci(self.accuracy_of(m, b)),
                                  per_seed=self.accuracy_of(m, b).tolist())
                     for b in self.blocks_of(m)} for m in models}
        finest_of = {m: min(self.blocks_of(m)) for m in models}
        coarsest = max(blocks)
        # each model's change from no shuffle to the finest block it ran
        change = {m: dict(paired_gap_ci(self.accuracy_of(m, finest_of[m]),
                                        self.accuracy_of(m, coarsest)), finest=finest_of[m])
                  for m in models if finest_of[m] != coarsest and coarsest in self.blocks_of(m)}
        locality = {src: {str(b): locality_z(self.maps(src, b), self.grid, self.tau(b))
                          for b in vit_blocks} for src in self.map_sources()}
        vit_finest = min(vit_blocks) if vit_blocks else None
        head = locality.get("attention", {}).get(str(vit_finest))
        return dict(data=self.meta["data"], blocks=blocks, vit_blocks=vit_blocks,
                    models=models, seeds=list(self.meta["seeds"]), grid=list(self.grid),
                    no_shuffle_block=int(max(self.meta["image_shape"][:2])),
                    epochs=self.meta["recipe"]["epochs"], accuracy=table,
                    change_finest_minus_coarsest=change, finest=min(blocks),
                    vit_finest=vit_finest, finest_of=finest_of, coarsest=coarsest,
                    locality=locality, locality_z=None if head is None else head["z"],
                    wall_s=self.meta.get("wall_s"), cpu_s=self.meta.get("cpu_s"))

    def save(self, folder) -> Path:
        arrays = dict(accuracy=self.accuracy, token_permutation=self.token_permutation,
                      pos=self.pos, attention=self.attention.astype(np.float32))
        return save_folder(folder, self.meta, self.summary(), arrays)

    @classmethod
    def load(cls, folder) -> "ShuffleResult":
        meta, _, arrays = load_folder(folder)
        for key in ("accuracy", "token_permutation", "pos", "attention"):
            if key not in arrays:
                raise FileNotFoundError(f"{folder} is not a shuffled-patch result (no {key})")
        return cls(meta=meta, accuracy=arrays["accuracy"],
                   token_permutation=arrays["token_permutation"].astype(np.int64),
                   pos=arrays["pos"], attention=arrays["attention"].astype(np.float64))
