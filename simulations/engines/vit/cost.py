"""The cost of one training epoch of each claim-6 model, measured without reading accuracy.

A recipe's number of epochs is sized by what an epoch costs, never by what the models reach
(SPEC section 6, claim 6). :func:`epoch_cost` trains each model (the positional ViT, the
standard ViT, the uniform-attention and the no-token-mixing ViTs, and the small CNN) for one
epoch on the first ``n_train`` training images with a recipe's augmentation, in one process
with one torch thread (as the study runs them), and times one pass of the model over the test
images (the per-epoch test accuracy of the long recipe). Only CPU-seconds leave this module:
the training runs see a test set of a few images and their accuracy is dropped, and the test
pass is made by an untrained model whose predictions are discarded.

The cost of a full epoch is extrapolated linearly in the number of training images (a step's
cost does not depend on which images it holds):
``train_cpu_s * N / n_train + eval_cpu_s``.

Run as ``python -m patchassoc.simulations.engines.vit.cost`` (prints a table of CPU-seconds).

References
----------
SPEC section 6, claim 6 (the long Fashion-MNIST recipe, sized by this measurement).
"""
from __future__ import annotations

import argparse
import time
from dataclasses import replace

import torch

from patchassoc.simulations.engines.vit.data import ImageData, load_dataset, patch_grid
from patchassoc.simulations.engines.vit.models import build_cnn, build_model, CNNConfig
from patchassoc.simulations.engines.vit.training import (Recipe, _evaluate, prepare,
                                                         recipe_for, train_one)

__all__ = ["COST_MODELS", "epoch_cost", "main"]

#: The models of the claim-6 study, in the order the table prints them.
COST_MODELS = ("positional", "content", "uniform", "none", "cnn")


def _eval_cpu_s(data: ImageData, recipe: Recipe, model_kind: str) -> float:
    """CPU-seconds of one pass over ``data``'s test images by an untrained model (its
    predictions are discarded)."""
    _, _, x_test, y_test = prepare(data)
    H, W, C = data.image_shape
    gh, gw = patch_grid(data.image_shape, recipe.patch)
    if model_kind == "cnn":
        model = build_cnn(CNNConfig(C, H, data.n_classes, recipe.cnn_width), 0)
    else:
        model = build_model(recipe.model_config(gh * gw, C * recipe.patch ** 2, data.n_classes,
                                                model_kind), 0)
    cpu0 = time.process_time()
    _evaluate(model, model_kind, x_test, y_test, recipe.patch, torch.arange(gh * gw), "cpu")
    return time.process_time() - cpu0


def epoch_cost(data: ImageData, recipe: Recipe, n_train: int = 3000,
               models=COST_MODELS, seed: int = 0) -> dict[str, dict[str, float]]:
    """CPU-seconds of one epoch of each model, measured on ``n_train`` training images.

    Parameters
    ----------
    data : ImageData
        The full data set (the extrapolation uses its number of training images).
    recipe : Recipe
        The recipe whose augmentation and batch size are timed (its epochs are set to 1).
    n_train : int
        Training images of the timed epoch (the first ones).
    models : sequence of str
        Models to time (:data:`COST_MODELS`).
    seed : int
        Run seed of the timed runs.

    Returns
    -------
    dict
        Per model: ``train_cpu_s`` (the timed epoch), ``eval_cpu_s`` (one pass over the test
        images), ``epoch_cpu_s`` (the extrapolated full epoch with its test pass).
    """
    if n_train < recipe.batch_size:
        raise ValueError(f"n_train ({n_train}) must hold at least one batch "
                         f"({recipe.batch_size})")
    small = data.subset(n_train=n_train, n_test=8)
    one = replace(recipe, epochs=1)
    out = {}
    n_full = int(data.x_train.shape[0])
    for kind in models:
        run = train_one(small, one, kind, seed)
        train_s = run.cpu_s
        eval_s = _eval_cpu_s(data, recipe, kind)
        out[kind] = dict(train_cpu_s=train_s, eval_cpu_s=eval_s,
                         epoch_cpu_s=train_s * n_full / n_train + eval_s)
    return out


def main(argv=None) -> None:
    """Print the table of :func:`epoch_cost` (CPU-seconds only)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="fashion-mnist")
    p.add_argument("--augment", default=None, choices=("none", "crop", "crop_flip"))
    p.add_argument("--pad", type=int, default=None)
    p.add_argument("--n-train", type=int, default=3000)
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    recipe = recipe_for(a.data, augment=a.augment, pad=a.pad)
    data = load_dataset(a.data)
    table = epoch_cost(data, recipe, a.n_train)
    print(f"{a.data}, augment {recipe.augment} (pad {recipe.pad}), batch {recipe.batch_size}, "
          f"1 torch thread; timed on {a.n_train} training images")
    print(f"{'model':12s}{'timed CPU-s':>14s}{'test pass CPU-s':>18s}{'full epoch CPU-s':>19s}")
    for kind, row in table.items():
        print(f"{kind:12s}{row['train_cpu_s']:14.2f}{row['eval_cpu_s']:18.2f}"
              f"{row['epoch_cpu_s']:19.1f}")
    print(f"{'sum':12s}{'':32s}{sum(r['epoch_cpu_s'] for r in table.values()):19.1f}")


if __name__ == "__main__":
    main()
