"""Training and evaluation of the standard and positional-attention ViTs over seeds.

One run trains a model of :mod:`patchassoc.simulations.vit.models` on the training images with AdamW
(linear warm-up then cosine decay of the learning rate, per step), cross-entropy with optional
label smoothing, mini-batches in a seeded random order, and optional light augmentation (random
crop after zero padding, horizontal flip); then it measures the test accuracy and records the
attention: the input-independent maps of a positional model, or the average over the test images
of a standard model's maps.

:func:`compare` runs every model kind on the same seeds. For a given seed every kind sees the
same mini-batch order and the same augmentation draws (a paired design), so the per-seed accuracy
gap is a paired difference. All randomness comes from :class:`torch.Generator` objects derived
from the run seed with :class:`numpy.random.SeedSequence`; the global torch seed is never used.
Float32 throughout: a neural-network training, not an exact engine.

References
----------
SPEC section 6, claim 6.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, replace
from typing import Callable, Sequence

import numpy as np
import torch
from torch import nn

from ..errors import UsageError
from .data import ImageData, patch_grid, patch_permutation
from .models import ATTENTIONS, ViTConfig, build_model, count_parameters
from .result import ViTResult

__all__ = ["Recipe", "RECIPES", "recipe_for", "prepare", "patchify", "augment", "train_one",
           "RunOutcome", "compare", "resolve_device", "AUGMENTATIONS"]

AUGMENTATIONS = ("none", "crop", "crop_flip")


@dataclass(frozen=True)
class Recipe:
    """Architecture and training recipe shared by the compared models.

    Parameters
    ----------
    patch : int
        Patch side p (the image side must be a multiple).
    dim, depth, heads, mlp_ratio : int
        Architecture (see :class:`~patchassoc.simulations.vit.models.ViTConfig`).
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

    def __post_init__(self) -> None:
        for name in ("patch", "dim", "depth", "heads", "mlp_ratio", "epochs", "batch_size"):
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
                     attention: str) -> ViTConfig:
        return ViTConfig(n_patches=n_patches, patch_dim=patch_dim, n_classes=n_classes,
                         dim=self.dim, depth=self.depth, heads=self.heads,
                         mlp_ratio=self.mlp_ratio, attention=attention)


#: Default recipe per data set. Digits: sized to run in minutes on two CPU cores. CIFAR/SVHN: a
#: small ViT for 32 x 32 images (4 x 4 patches, an 8 x 8 grid), meant for a GPU.
RECIPES: dict[str, Recipe] = {
    "digits": Recipe(),
    "cifar10": Recipe(patch=4, dim=192, depth=6, heads=6, mlp_ratio=2, epochs=100,
                      batch_size=128, lr=1e-3, weight_decay=0.05, warmup_epochs=5,
                      label_smoothing=0.1, augment="crop_flip", pad=4),
    "svhn": Recipe(patch=4, dim=192, depth=6, heads=6, mlp_ratio=2, epochs=30,
                   batch_size=128, lr=1e-3, weight_decay=0.05, warmup_epochs=2,
                   label_smoothing=0.1, augment="crop", pad=4),
}
RECIPES["cifar100"] = RECIPES["cifar10"]


def recipe_for(data: str, **overrides) -> Recipe:
    """The default recipe of data set ``data`` with some fields replaced (``None`` = keep)."""
    if data not in RECIPES:
        raise UsageError(f"no recipe for data set {data!r}")
    changes = {k: v for k, v in overrides.items() if v is not None}
    return replace(RECIPES[data], **changes)


def resolve_device(name: str) -> torch.device:
    """``cpu``, or ``cuda`` when a CUDA device is present (otherwise a UsageError)."""
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda":
        if not torch.cuda.is_available():
            raise UsageError("--device cuda: no CUDA device is available to PyTorch here")
        return torch.device("cuda")
    raise UsageError(f"unknown device {name!r}; choose cpu or cuda")


def prepare(data: ImageData) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Float32 tensors (N, channels, H, W) scaled to [0, 1] then standardized per channel with
    the training mean and standard deviation, and int64 labels."""
    scale = 1.0 / float(data.max_value)
    x_train = data.x_train.astype(np.float32) * scale
    mean = x_train.mean(axis=(0, 1, 2), dtype=np.float64)
    std = x_train.std(axis=(0, 1, 2), dtype=np.float64)
    std = np.where(std > 0, std, 1.0)

    def norm(x):
        x = (x.astype(np.float32) * scale - mean.astype(np.float32)) / std.astype(np.float32)
        return torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))

    return (norm(data.x_train), torch.from_numpy(data.y_train.astype(np.int64)),
            norm(data.x_test), torch.from_numpy(data.y_test.astype(np.int64)))


def patchify(images: torch.Tensor, patch: int) -> torch.Tensor:
    """(B, C, H, W) -> (B, D, C * patch * patch), patches in row-major grid order
    (token r * W/p + c is the patch in grid row r, column c)."""
    B, C, H, W = images.shape
    if H % patch or W % patch:
        raise ValueError(f"patch size {patch} must divide the image size {H} x {W}")
    x = images.unfold(2, patch, patch).unfold(3, patch, patch)  # B, C, gh, gw, p, p
    gh, gw = H // patch, W // patch
    return x.permute(0, 2, 3, 1, 4, 5).reshape(B, gh * gw, C * patch * patch)


def augment(images: torch.Tensor, kind: str, pad: int, generator: torch.Generator
            ) -> torch.Tensor:
    """Random crop of each image after zero padding by ``pad`` (``crop``), then a random
    horizontal flip with probability 1/2 (``crop_flip``); ``none`` returns the input."""
    if kind == "none" or images.shape[0] == 0:
        return images
    B, C, H, W = images.shape
    padded = nn.functional.pad(images, (pad, pad, pad, pad))
    dy = torch.randint(0, 2 * pad + 1, (B,), generator=generator)
    dx = torch.randint(0, 2 * pad + 1, (B,), generator=generator)
    rows = (dy[:, None] + torch.arange(H)[None, :]).to(images.device)
    cols = (dx[:, None] + torch.arange(W)[None, :])
    if kind == "crop_flip":
        flip = torch.rand(B, generator=generator) < 0.5
        cols = torch.where(flip[:, None], cols.flip(1), cols)
    cols = cols.to(images.device)
    b = torch.arange(B, device=images.device)[:, None, None]
    out = padded.permute(0, 2, 3, 1)[b, rows[:, :, None], cols[:, None, :]]  # B, H, W, C
    return out.permute(0, 3, 1, 2).contiguous()


@dataclass(frozen=True, eq=False)
class RunOutcome:
    """One trained model: test accuracy, loss per epoch, attention maps, timings."""

    attention_kind: str
    seed: int
    accuracy: float
    train_loss: np.ndarray
    attention: np.ndarray
    n_params: int
    wall_s: float
    cpu_s: float


def _lr_factor(step: int, warmup: int, total: int) -> float:
    if warmup > 0 and step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def _seeds(seed: int) -> tuple[int, int]:
    """(init seed, data-order seed) derived from the run seed."""
    a, b = np.random.SeedSequence([int(seed), 0x5EED]).generate_state(2, dtype=np.uint64)
    return int(a >> np.uint64(1)), int(b >> np.uint64(1))


@torch.no_grad()
def _evaluate(model, x, y, patch, perm, device, batch: int = 1000
              ) -> tuple[float, torch.Tensor | None]:
    """Test accuracy and, for a content model, the mean attention over the images."""
    model.eval()
    correct, total = 0, 0
    maps_sum = None
    for start in range(0, x.shape[0], batch):
        tokens = patchify(x[start:start + batch].to(device), patch)[:, perm]
        logits, maps = model(tokens, return_attention=True)
        correct += int((logits.argmax(1).cpu() == y[start:start + batch]).sum())
        total += tokens.shape[0]
        if model.cfg.attention == "content":
            s = torch.stack([A.sum(0) for A in maps]).double().cpu()
            maps_sum = s if maps_sum is None else maps_sum + s
    model.train()
    mean_maps = None if maps_sum is None else maps_sum / max(1, total)
    return correct / max(1, total), mean_maps


def train_one(data: ImageData, recipe: Recipe, attention: str, seed: int,
              device: torch.device | str = "cpu", permutation: np.ndarray | None = None,
              tensors=None, on_epoch: Callable[[int, float], None] | None = None) -> RunOutcome:
    """Train one ViT with ``attention`` kind on ``data`` and evaluate it.

    Parameters
    ----------
    data : ImageData
        Train/test images.
    recipe : Recipe
        Architecture and training recipe.
    attention : {"content", "positional", "logits"}
        The attention kind.
    seed : int
        Run seed: initial weights and the mini-batch order / augmentation draws.
    device : torch.device or str
        Where to train.
    permutation : ndarray of int or None
        Fixed patch permutation applied to every image (the control), or None.
    tensors : tuple or None
        Output of :func:`prepare` (to share it between runs).
    on_epoch : callable(epoch, mean loss) or None
        Called after each epoch.

    Returns
    -------
    RunOutcome
        Test accuracy, per-epoch training loss, attention (depth, heads, D, D) in token order.
    """
    if attention not in ATTENTIONS:
        raise ValueError(f"attention must be one of {', '.join(ATTENTIONS)}; got {attention!r}")
    device = torch.device(device)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    x_train, y_train, x_test, y_test = tensors if tensors is not None else prepare(data)
    gh, gw = patch_grid(data.image_shape, recipe.patch)
    D = gh * gw
    perm = torch.arange(D) if permutation is None else torch.as_tensor(permutation).long()
    if sorted(perm.tolist()) != list(range(D)):
        raise ValueError(f"permutation must be a permutation of 0..{D - 1}")
    patch_dim = data.image_shape[2] * recipe.patch ** 2
    cfg = recipe.model_config(D, patch_dim, data.n_classes, attention)
    init_seed, order_seed = _seeds(seed)
    model = build_model(cfg, init_seed).to(device)
    order = torch.Generator().manual_seed(order_seed)

    n = x_train.shape[0]
    steps_per_epoch = math.ceil(n / recipe.batch_size)
    total = steps_per_epoch * recipe.epochs
    warmup = int(round(recipe.warmup_epochs * steps_per_epoch))
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim < 2 or "norm" in name or name == "pos" else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": recipe.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=recipe.lr,
                            fused=True)  # one kernel for all parameters: the step of a small
    # model is otherwise dominated by per-tensor overhead (measured ~10x faster on CPU)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _lr_factor(s, warmup, total))
    loss_fn = nn.CrossEntropyLoss(label_smoothing=recipe.label_smoothing)
    losses = np.zeros(recipe.epochs)
    model.train()
    for epoch in range(recipe.epochs):
        idx = torch.randperm(n, generator=order)
        total_loss = 0.0
        for start in range(0, n, recipe.batch_size):
            b = idx[start:start + recipe.batch_size]
            xb = augment(x_train[b], recipe.augment, recipe.pad, order).to(device)
            tokens = patchify(xb, recipe.patch)[:, perm.to(device)]
            loss = loss_fn(model(tokens), y_train[b].to(device))
            if not torch.isfinite(loss):
                raise FloatingPointError(f"non-finite training loss at epoch {epoch} "
                                         f"({attention}, seed {seed})")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total_loss += float(loss.detach()) * b.numel()
        losses[epoch] = total_loss / n
        if on_epoch is not None:
            on_epoch(epoch, losses[epoch])
    acc, mean_maps = _evaluate(model, x_test, y_test, recipe.patch, perm.to(device), device)
    if attention == "content":
        maps = mean_maps.numpy()
    else:
        maps = model.positional_attention().double().cpu().numpy()
    return RunOutcome(attention, int(seed), float(acc), losses, maps, count_parameters(model),
                      time.perf_counter() - wall0, time.process_time() - cpu0)


def _init_worker(threads: int, queue) -> None:
    global _QUEUE
    _QUEUE = queue
    torch.set_num_threads(threads)


_QUEUE = None


def _worker(data: ImageData, recipe: Recipe, kind: str, seed: int, device: str,
            permutation) -> RunOutcome:
    return train_one(data, recipe, kind, seed, device, permutation,
                     on_epoch=lambda e, l: _QUEUE.put(1))


def compare(data: ImageData, recipe: Recipe, seeds: Sequence[int],
            kinds: Sequence[str] = ("content", "positional"), device: str = "cpu",
            permute: bool = False, permutation_seed: int = 0, progress: bool = False,
            jobs: int = 1) -> ViTResult:
    """Train every attention kind on every seed (paired: same seed, same batch order).

    Parameters
    ----------
    data, recipe : ImageData, Recipe
        The images and the shared recipe.
    seeds : sequence of int
        Run seeds.
    kinds : sequence of str
        Attention kinds to train (the first is the reference of the summary's gaps).
    device : {"cpu", "cuda"}
        Where to train.
    permute : bool
        Apply the fixed patch permutation of ``permutation_seed`` to every image (the control).
    progress : bool
        Show a progress bar (epochs) on stderr.
    jobs : int
        Runs trained at once in separate processes (each with the current number of torch
        threads). A run's numbers do not depend on ``jobs`` (for a fixed thread count). With
        ``jobs > 1`` the workers are spawned processes: a script that calls this must do so
        under ``if __name__ == "__main__":`` (the console script and ``python -m`` do).

    Returns
    -------
    ViTResult
        Accuracies (kinds x seeds), loss curves, attention maps and the run's metadata.
    """
    from ..progress import progress_bar

    seeds = [int(s) for s in seeds]
    if len(seeds) < 1:
        raise UsageError("at least one seed is needed")
    if len(set(seeds)) != len(seeds):
        raise UsageError("seeds must be distinct")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise UsageError(f"jobs must be a positive integer, got {jobs!r}")
    kinds = tuple(kinds)
    dev = resolve_device(device) if isinstance(device, str) else device
    gh, gw = patch_grid(data.image_shape, recipe.patch)
    D = gh * gw
    perm = patch_permutation(D, permutation_seed) if permute else np.arange(D)
    run_perm = perm if permute else None
    tasks = [(kind, seed) for seed in seeds for kind in kinds]
    jobs = min(jobs, len(tasks))
    threads = torch.get_num_threads()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    outcomes: dict[tuple[str, int], RunOutcome] = {}
    bar = progress_bar(len(tasks) * recipe.epochs, f"vit {data.name}", enable=progress,
                       unit="epoch")
    try:
        if jobs == 1:
            tensors = prepare(data)
            for kind, seed in tasks:
                bar.set_postfix_str(f"{kind} seed {seed}")
                outcomes[kind, seed] = train_one(data, recipe, kind, seed, dev, run_perm,
                                                 tensors, on_epoch=lambda e, l: bar.update(1))
        else:
            outcomes = _compare_parallel(data, recipe, tasks, str(dev), run_perm, jobs,
                                         threads, bar)
    finally:
        bar.close()
    acc = np.array([[outcomes[k, s].accuracy for s in seeds] for k in kinds])
    loss = np.stack([np.stack([outcomes[k, s].train_loss for s in seeds]) for k in kinds])
    att = np.stack([np.stack([outcomes[k, s].attention for s in seeds]) for k in kinds])
    run_cpu = {k: [outcomes[k, s].cpu_s for s in seeds] for k in kinds}
    worker_cpu = sum(sum(v) for v in run_cpu.values()) if jobs > 1 else 0.0
    meta = dict(data=data.name, n_train=int(data.x_train.shape[0]),
                n_test=int(data.x_test.shape[0]), n_classes=int(data.n_classes),
                image_shape=list(data.image_shape), grid=[gh, gw], kinds=list(kinds),
                seeds=seeds, recipe=recipe.to_dict(), permuted=bool(permute),
                permutation_seed=int(permutation_seed), device=str(dev),
                torch_threads=int(threads), jobs=int(jobs), torch_version=torch.__version__,
                n_params={k: outcomes[k, seeds[0]].n_params for k in kinds},
                run_wall_s={k: [outcomes[k, s].wall_s for s in seeds] for k in kinds},
                run_cpu_s=run_cpu, wall_s=time.perf_counter() - wall0,
                cpu_s=time.process_time() - cpu0 + worker_cpu)
    return ViTResult(meta=meta, accuracy=acc, train_loss=loss, attention=att,
                     permutation=np.asarray(perm, dtype=np.int64))


def _compare_parallel(data, recipe, tasks, device, permutation, jobs, threads, bar
                      ) -> dict[tuple[str, int], RunOutcome]:
    """Run ``tasks`` in ``jobs`` spawned worker processes, feeding the progress bar."""
    import multiprocessing
    import queue as _queue
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    ctx = multiprocessing.get_context("spawn")  # fork is unsafe once torch has started threads
    epochs = ctx.Queue()
    outcomes = {}
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker,
                             initargs=(threads, epochs)) as pool:
        futures = {pool.submit(_worker, data, recipe, kind, seed, device, permutation):
                   (kind, seed) for kind, seed in tasks}
        pending = set(futures)
        try:
            while pending:
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for fut in done:
                    outcomes[futures[fut]] = fut.result()
                try:
                    while True:
                        bar.update(epochs.get_nowait())
                except _queue.Empty:
                    pass
        except BaseException:
            for fut in pending:
                fut.cancel()
            raise
    return outcomes
