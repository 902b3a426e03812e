"""The training recipes of claim 6, without PyTorch: what a study declares (architecture,
optimizer, epochs, augmentation) is read by the verdicts and ``check`` on machines without the
``vit`` extra, so it lives apart from the training code (:mod:`.training`, which re-exports it).

References
----------
SPEC section 6, claim 6.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from patchassoc.simulations.runtime.errors import UsageError

__all__ = ["Recipe", "RECIPES", "LONG_RECIPES", "RECIPE_NAMES", "recipe_for", "AUGMENTATIONS",
           "CNN_WIDTH"]

AUGMENTATIONS = ("none", "crop", "crop_flip")
#: Channels of the CNN's first convolution (:class:`~.models.CNNConfig`).
CNN_WIDTH = 32


@dataclass(frozen=True)
class Recipe:
    """Architecture and training recipe shared by the compared models.

    Parameters
    ----------
    patch : int
        Patch side p (the image side must be a multiple).
    dim, depth, heads, mlp_ratio : int
        Architecture (see :class:`~patchassoc.simulations.engines.vit.models.ViTConfig`).
    epochs : int
        Passes over the training set.
    batch_size : int
        Mini-batch size.
    lr : float
        Peak AdamW learning rate.
    weight_decay : float
        AdamW decoupled weight decay.
    warmup_epochs : float
        Length of the linear warm-up (then cosine decay to 0).
    label_smoothing : float
        Cross-entropy label smoothing in [0, 1).
    augment : {"none", "crop", "crop_flip"}
        Random crop after zero padding by ``pad`` pixels, and horizontal flip.
    pad : int
        Padding of the random crop.
    cnn_width : int
        Channels of the small CNN's first convolution (the CNN of the shuffled-patch
        experiment; see :class:`~patchassoc.simulations.engines.vit.models.CNNConfig`).
    """

    patch: int = 2
    dim: int = 64
    depth: int = 2
    heads: int = 4
    mlp_ratio: int = 2
    epochs: int = 30
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.05
    warmup_epochs: float = 3.0
    label_smoothing: float = 0.0
    augment: str = "none"
    pad: int = 1
    cnn_width: int = CNN_WIDTH

    def __post_init__(self) -> None:
        for name in ("patch", "dim", "depth", "heads", "mlp_ratio", "epochs", "batch_size",
                     "cnn_width"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.dim % self.heads:
            raise ValueError(f"heads ({self.heads}) must divide dim ({self.dim})")
        for name in ("lr", "weight_decay", "warmup_epochs", "label_smoothing"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.label_smoothing >= 1:
            raise ValueError(f"label_smoothing must be < 1, got {self.label_smoothing}")
        if self.augment not in AUGMENTATIONS:
            raise ValueError(f"augment must be one of {', '.join(AUGMENTATIONS)}; "
                             f"got {self.augment!r}")
        if isinstance(self.pad, bool) or not isinstance(self.pad, int) or self.pad < 0:
            raise ValueError(f"pad must be an integer >= 0, got {self.pad!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    def model_config(self, n_patches: int, patch_dim: int, n_classes: int,
                     attention: str) -> "ViTConfig":  # noqa: F821 (PyTorch's side, imported here)
        from patchassoc.simulations.engines.vit.models import ViTConfig
        return ViTConfig(n_patches=n_patches, patch_dim=patch_dim, n_classes=n_classes,
                         dim=self.dim, depth=self.depth, heads=self.heads,
                         mlp_ratio=self.mlp_ratio, attention=attention)


#: Default recipe per data set. Digits: sized to run in minutes on two CPU cores. Fashion-MNIST:
#: the recipe declared in SPEC section 6, claim 6 (4 x 4 patches, a 7 x 7 grid; 2 epochs over the
#: 60,000 images, sized to the study's budget on two CPU cores). CIFAR/SVHN: a small ViT for
#: 32 x 32 images (4 x 4 patches, an 8 x 8 grid), meant for a GPU.
RECIPES: dict[str, Recipe] = {
    "digits": Recipe(),
    "fashion-mnist": Recipe(patch=4, dim=64, depth=2, heads=4, mlp_ratio=2, epochs=2,
                            batch_size=128, lr=1e-3, weight_decay=0.05, warmup_epochs=0.2,
                            label_smoothing=0.0, augment="none", cnn_width=16),
    "cifar10": Recipe(patch=4, dim=192, depth=6, heads=6, mlp_ratio=2, epochs=100,
                      batch_size=128, lr=1e-3, weight_decay=0.05, warmup_epochs=5,
                      label_smoothing=0.1, augment="crop_flip", pad=4),
    "svhn": Recipe(patch=4, dim=192, depth=6, heads=6, mlp_ratio=2, epochs=30,
                   batch_size=128, lr=1e-3, weight_decay=0.05, warmup_epochs=2,
                   label_smoothing=0.1, augment="crop", pad=4),
}
RECIPES["cifar100"] = RECIPES["cifar10"]

#: The long recipes, by data set (SPEC section 6, claim 6; issue 38). Fashion-MNIST: the 2-epoch
#: recipe's data, architecture and optimizer, trained for 18 epochs (sized by the measured cost
#: of an epoch, :mod:`~patchassoc.simulations.engines.vit.cost`) with a warm-up of 1.8 epochs
#: (10 %) then cosine decay, and a random crop after zero padding by 2 pixels then a horizontal
#: flip.
LONG_RECIPES: dict[str, Recipe] = {
    "fashion-mnist": replace(RECIPES["fashion-mnist"], epochs=18, warmup_epochs=1.8,
                             augment="crop_flip", pad=2),
}
#: The recipe names of :func:`recipe_for`: the data set's default recipe, or its long one.
RECIPE_NAMES = ("default", "long")


def recipe_for(data: str, name: str = "default", **overrides) -> Recipe:
    """The recipe ``name`` (:data:`RECIPE_NAMES`) of data set ``data`` with some fields replaced
    (``None`` = keep)."""
    table = {"default": RECIPES, "long": LONG_RECIPES}.get(name)
    if table is None:
        raise UsageError(f"unknown recipe {name!r}; choose {' or '.join(RECIPE_NAMES)}")
    if data not in table:
        raise UsageError(f"no {name} recipe for data set {data!r}"
                         + (f" (long recipes: {', '.join(LONG_RECIPES)})" if name == "long"
                            else ""))
    changes = {k: v for k, v in overrides.items() if v is not None}
    return replace(table[data], **changes)
