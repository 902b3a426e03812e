"""Real images: a positional-attention ViT against a standard ViT (SPEC section 6, claim 6).

Optional: the models and the training need PyTorch (``pip install -e '.[vit]'``); the data
loaders (:mod:`.data`), the statistics (:mod:`.stats`) and saved results (:mod:`.comparison`) need
only NumPy/SciPy (and scikit-learn for the bundled digits). Nothing here is imported by the rest
of the toolkit, and the PyTorch modules are loaded only when one of their names is used.

Public API: :class:`~.models.ViTConfig`, :class:`~.models.ViT`, :func:`~.models.build_model` (models); :class:`~.recipes.Recipe`,
:data:`~.recipes.RECIPES`, :func:`~.training.train_one`, :func:`~.training.compare`, :func:`~.training.study` (training: the comparison with
its controls and the shuffled-patch experiment); :class:`~.data.ImageData`, :func:`~.data.load_dataset`,
:func:`~.data.block_permutation`, :func:`~.data.shuffle_blocks` (data); :class:`~.comparison.ViTResult`,
:class:`~.comparison.ShuffleResult` (results); :func:`~.locality_stats.mean_ci`, :func:`~.locality_stats.paired_gap_ci`, :func:`~.locality_stats.locality_z`
(statistics).
"""
from __future__ import annotations

import importlib

from patchassoc.simulations.engines.vit.data import (DATASETS, ImageData, block_permutation,
                                                     load_dataset, patch_permutation,
                                                     shuffle_blocks, token_permutation,
                                                     unshuffle_blocks)
from patchassoc.simulations.engines.vit.comparison import ShuffleResult, ViTResult
from patchassoc.simulations.engines.vit.locality_stats import locality_z, mean_ci, paired_gap_ci

_LAZY = {
    "ATTENTIONS": "models", "ViTConfig": "models", "ViT": "models", "build_model": "models",
    "Recipe": "recipes", "RECIPES": "recipes", "recipe_for": "recipes", "train_one": "training",
    "compare": "training", "patchify": "training", "study": "training", "run_tasks": "training",
    "Task": "training", "CNNConfig": "models", "CNN": "models", "build_cnn": "models",
}

__all__ = ["DATASETS", "ImageData", "load_dataset", "patch_permutation", "block_permutation",
           "shuffle_blocks", "unshuffle_blocks", "token_permutation", "ViTResult",
           "ShuffleResult", "mean_ci", "paired_gap_ci", "locality_z", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        try:
            module = importlib.import_module(f".{_LAZY[name]}", __name__)
        except ImportError as exc:
            if getattr(exc, "name", None) == "torch":
                raise ImportError("patchassoc.simulations.engines.vit needs PyTorch for its models: "
                                  "pip install -e '.[vit]'") from exc
            raise
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
