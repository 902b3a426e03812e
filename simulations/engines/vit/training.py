"""Training and evaluation of the standard and positional-attention ViTs over seeds.

One run trains a model of :mod:`patchassoc.simulations.engines.vit.models` (a ViT of any attention
kind, or the small CNN) on the training images with AdamW (linear warm-up then cosine decay of the
learning rate, per step), cross-entropy with optional label smoothing, mini-batches in a seeded
random order, and optional light augmentation (random crop after zero padding, horizontal flip);
then it measures the test accuracy and records the attention: the input-independent maps of a
positional model, or the average over the test images of a standard model's maps.

:func:`run_tasks` trains a list of :class:`Task` (model, seed, shuffle block size, recipe), in
parallel processes if asked; :func:`compare` runs every model kind on the same seeds, and
:func:`study` adds the shuffled-patch experiment (SPEC section 6, claim 6). For a given seed every
model sees the same mini-batch order and the same augmentation draws (a paired design), so the
per-seed accuracy gap is a paired difference; a shuffled run sees the same images, block-shuffled
by one fixed permutation. All randomness comes from :class:`torch.Generator` objects derived
from the run seed with :class:`numpy.random.SeedSequence`; the global torch seed is never used.
Float32 throughout: a neural-network training, not an exact engine. On a GPU (``device="cuda"``)
TF32 is switched off, so the arithmetic is float32 there too; the numbers still differ from the
CPU's (matrix products and reductions sum in another order, and training amplifies rounding), so
a CUDA run is another draw of the same experiment, not the CPU's bits (SPEC section 6, claim 6).

Cost (the digits recipe, one torch thread). A step is tens of small operations, so the loop does
no per-step work it can hoist, without changing a number: without augmentation the model inputs
(patch tokens, or the images for the CNN) are built once and a mini-batch gathers its rows; AdamW
calls torch's fused kernel directly (:class:`_FusedAdamW`: the state, kernel and arguments of
``torch.optim.AdamW(fused=True)`` with the ``LambdaLR`` schedule, bit for bit, without the
optimizer's per-step bookkeeping); the loss is checked for finiteness once per epoch. A run
identical to another (same model, seed, recipe and images, e.g. a "shuffle" with one block
covering the image) is trained once by :func:`run_tasks`.

References
----------
SPEC section 6, claim 6.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch
from torch import nn

from patchassoc.simulations.engines.vit.comparison import ShuffleResult, ViTResult
from patchassoc.simulations.engines.vit.data import (ImageData, block_permutation, check_block,
                                                     patch_grid, token_permutation)
from patchassoc.simulations.engines.vit.models import (ATTENTIONS, CNNConfig, build_cnn,
                                                       build_model, count_parameters)
# the recipes live in a module without PyTorch; their names stay importable from here
from patchassoc.simulations.engines.vit.recipes import (  # noqa: F401
    AUGMENTATIONS, CNN_WIDTH, LONG_RECIPES, RECIPE_NAMES, RECIPES, Recipe, recipe_for)
from patchassoc.simulations.runtime.errors import UsageError
from patchassoc.simulations.runtime.executor import map_tasks
from patchassoc.simulations.runtime.progress import progress_bar

__all__ = ["schedule_steps", "prepare", "patchify", "augment", "train_one", "RunOutcome", "Task",
           "run_tasks", "compare", "study", "resolve_device", "MODELS", "shuffle_for"]

#: Every trainable model: the ViT attention kinds and the small CNN.
MODELS = ATTENTIONS + ("cnn",)


def resolve_device(name: str) -> torch.device:
    """``cpu``, or ``cuda`` when a CUDA device is present (otherwise a UsageError)."""
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda":
        if not torch.cuda.is_available():
            raise UsageError("--device cuda: no CUDA device is available to PyTorch here")
        return torch.device("cuda")
    raise UsageError(f"unknown device {name!r}; choose cpu or cuda")


def _float32_on(device: torch.device) -> None:
    """Keep float32 arithmetic on a GPU: no TF32 in matrix products or convolutions (cuDNN
    allows it by default), so a CUDA run differs from the CPU's only by summation order (SPEC
    section 6, claim 6: the declared CUDA tolerance)."""
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


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
    """One trained model: test accuracy, loss per epoch, attention maps (None for the CNN),
    positional encodings in token order (None for the CNN), timings, and the test accuracy
    after every epoch (None unless the run was asked for it: ``curve``)."""

    attention_kind: str
    seed: int
    accuracy: float
    train_loss: np.ndarray
    attention: np.ndarray | None
    n_params: int
    wall_s: float
    cpu_s: float
    pos: np.ndarray | None = None
    test_accuracy: np.ndarray | None = None


class _FusedAdamW:
    """AdamW (decoupled weight decay; betas 0.9, 0.999, eps 1e-8) on PyTorch's fused kernel,
    called directly: the same state, kernel and arguments as ``torch.optim.AdamW(fused=True)``
    with the learning rate set per step, so the same numbers bit for bit, without the
    optimizer's per-step Python bookkeeping (a sizeable part of a small digits step). Every
    parameter of a group shares one step count while every parameter receives a gradient (as
    in torch, a parameter without one is skipped and its count not advanced)."""

    def __init__(self, groups, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        self.beta1, self.beta2, self.eps = float(betas[0]), float(betas[1]), float(eps)
        self.groups = []
        for params, weight_decay in groups:
            params = list(params)
            if not params:
                continue
            dev = params[0].device
            steps = torch.zeros(len(params), dtype=torch.float32, device=dev)
            self.groups.append(dict(
                params=params, weight_decay=float(weight_decay), steps=steps,
                step_views=[steps[i] for i in range(len(params))],
                exp_avg=[torch.zeros_like(p, memory_format=torch.preserve_format)
                         for p in params],
                exp_avg_sq=[torch.zeros_like(p, memory_format=torch.preserve_format)
                            for p in params]))

    def zero_grad(self) -> None:
        for g in self.groups:
            for p in g["params"]:
                p.grad = None

    @torch.no_grad()
    def step(self, lr: float) -> None:
        for g in self.groups:
            params = g["params"]
            have = [i for i, p in enumerate(params) if p.grad is not None]
            if not have:
                continue
            if len(have) == len(params):
                g["steps"].add_(1)
                ps, avg, sq, steps = params, g["exp_avg"], g["exp_avg_sq"], g["step_views"]
            else:
                ps = [params[i] for i in have]
                avg = [g["exp_avg"][i] for i in have]
                sq = [g["exp_avg_sq"][i] for i in have]
                steps = [g["step_views"][i] for i in have]
                torch._foreach_add_(steps, 1)
            torch._fused_adamw_(ps, [p.grad for p in ps], avg, sq, [], steps, amsgrad=False,
                                lr=lr, beta1=self.beta1, beta2=self.beta2,
                                weight_decay=g["weight_decay"], eps=self.eps, maximize=False,
                                grad_scale=None, found_inf=None)


def schedule_steps(recipe: Recipe, n_train: int) -> tuple[int, int]:
    """(W, T): the warm-up steps and the total steps of ``recipe`` on ``n_train`` images,
    W = round(warmup_epochs x ceil(n_train / batch_size)), T = epochs x the same."""
    steps_per_epoch = math.ceil(n_train / recipe.batch_size)
    return int(round(recipe.warmup_epochs * steps_per_epoch)), steps_per_epoch * recipe.epochs


def _lr_factor(step: int, warmup: int, total: int) -> float:
    if warmup > 0 and step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def _seeds(seed: int) -> tuple[int, int]:
    """(init seed, data-order seed) derived from the run seed."""
    a, b = np.random.SeedSequence([int(seed), 0x5EED]).generate_state(2, dtype=np.uint64)
    return int(a >> np.uint64(1)), int(b >> np.uint64(1))


def _inputs(images: torch.Tensor, model: str, patch: int, perm: torch.Tensor | None
            ) -> torch.Tensor:
    """What ``model`` reads: the images for the CNN, the (permuted) patch tokens for a ViT."""
    if model == "cnn":
        return images
    return patchify(images, patch)[:, perm]


@torch.no_grad()
def _evaluate(model, kind, x, y, patch, perm, device, batch: int = 1000, maps: bool = True
              ) -> tuple[float, torch.Tensor | None]:
    """Test accuracy and, for a content model when ``maps``, the mean attention over the
    images."""
    model.eval()
    correct, total = 0, 0
    maps_sum = None
    for start in range(0, x.shape[0], batch):
        inputs = _inputs(x[start:start + batch].to(device), kind, patch, perm)
        if kind == "cnn":
            logits, layer_maps = model(inputs), None
        else:
            logits, layer_maps = model(inputs, return_attention=True)
        correct += int((logits.argmax(1).cpu() == y[start:start + batch]).sum())
        total += inputs.shape[0]
        if kind == "content" and maps:
            s = torch.stack([A.sum(0) for A in layer_maps]).double().cpu()
            maps_sum = s if maps_sum is None else maps_sum + s
    model.train()
    mean_maps = None if maps_sum is None else maps_sum / max(1, total)
    return correct / max(1, total), mean_maps


def train_one(data: ImageData, recipe: Recipe, attention: str, seed: int,
              device: torch.device | str = "cpu", permutation: np.ndarray | None = None,
              tensors=None, on_epoch: Callable[[int, float], None] | None = None,
              curve: bool = False) -> RunOutcome:
    """Train one model on ``data`` and evaluate it.

    Parameters
    ----------
    data : ImageData
        Train/test images (already block-shuffled for a shuffled run).
    recipe : Recipe
        Architecture and training recipe (the CNN uses its optimizer fields only).
    attention : {"content", "positional", "logits", "uniform", "none", "cnn"}
        The ViT attention kind, or ``"cnn"`` for the small CNN.
    seed : int
        Run seed: initial weights and the mini-batch order / augmentation draws.
    device : torch.device or str
        Where to train.
    permutation : ndarray of int or None
        Fixed token permutation applied to every image (ViTs only), or None.
    tensors : tuple or None
        Output of :func:`prepare` (to share it between runs).
    on_epoch : callable(epoch, mean loss) or None
        Called after each epoch.
    curve : bool
        Also measure the test accuracy after every epoch (``RunOutcome.test_accuracy``). The
        evaluation draws no random number and changes no weight, so the training's numbers are
        those of a run without it.

    Returns
    -------
    RunOutcome
        Test accuracy, per-epoch training loss, attention (depth, heads, D, D) in token order
        and the positional encodings (D, dim) for a ViT.
    """
    if attention not in MODELS:
        raise ValueError(f"attention must be one of {', '.join(MODELS)}; got {attention!r}")
    device = torch.device(device)
    _float32_on(device)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    x_train, y_train, x_test, y_test = tensors if tensors is not None else prepare(data)
    gh, gw = patch_grid(data.image_shape, recipe.patch)
    D = gh * gw
    perm = torch.arange(D) if permutation is None else torch.as_tensor(permutation).long()
    if sorted(perm.tolist()) != list(range(D)):
        raise ValueError(f"permutation must be a permutation of 0..{D - 1}")
    init_seed, order_seed = _seeds(seed)
    H, W, C = data.image_shape
    if attention == "cnn":
        if permutation is not None:
            raise ValueError("a token permutation applies to ViTs only (shuffle the images)")
        if H != W:
            raise ValueError(f"the CNN needs square images, got {H} x {W}")
        model = build_cnn(CNNConfig(C, H, data.n_classes, recipe.cnn_width),
                          init_seed).to(device)
    else:
        cfg = recipe.model_config(D, C * recipe.patch ** 2, data.n_classes, attention)
        model = build_model(cfg, init_seed).to(device)
    order = torch.Generator().manual_seed(order_seed)
    perm = perm.to(device)
    # Without augmentation a mini-batch is a gather of fixed rows: the model inputs (patch
    # tokens in token order, or the images) are built once, and a batch indexes them. This is
    # pure data movement, so the numbers are those of patchifying every batch.
    static = recipe.augment == "none"
    if static:
        inputs = _inputs(x_train.to(device), attention, recipe.patch, perm).contiguous()
    labels = y_train.to(device)

    n = x_train.shape[0]
    warmup, total = schedule_steps(recipe, n)
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim < 2 or "norm" in name or name == "pos" else decay).append(p)
    opt = _FusedAdamW([(decay, recipe.weight_decay), (no_decay, 0.0)])
    loss_fn = nn.CrossEntropyLoss(label_smoothing=recipe.label_smoothing)
    losses = np.zeros(recipe.epochs)
    test_curve = np.full(recipe.epochs, np.nan) if curve else None
    model.train()
    step = 0
    for epoch in range(recipe.epochs):
        idx = torch.randperm(n, generator=order)
        total_loss = 0.0
        for start in range(0, n, recipe.batch_size):
            b = idx[start:start + recipe.batch_size]
            if static:
                xb = inputs[b.to(device)]
            else:
                xb = _inputs(augment(x_train[b], recipe.augment, recipe.pad, order).to(device),
                             attention, recipe.patch, perm)
            loss = loss_fn(model(xb), labels[b.to(device)])
            opt.zero_grad()
            loss.backward()
            # the warm-up/cosine schedule of torch's LambdaLR: peak lr times the factor of
            # this step, as a Python float
            opt.step(recipe.lr * _lr_factor(step, warmup, total))
            step += 1
            total_loss += float(loss.detach()) * b.numel()
        # a non-finite loss makes the epoch's sum non-finite (the loss is >= 0)
        if not math.isfinite(total_loss):
            raise FloatingPointError(f"non-finite training loss at epoch {epoch} "
                                     f"({attention}, seed {seed})")
        losses[epoch] = total_loss / n
        if curve and epoch < recipe.epochs - 1:  # the last epoch's is the final evaluation's
            test_curve[epoch], _ = _evaluate(model, attention, x_test, y_test, recipe.patch,
                                             perm, device, maps=False)
        if on_epoch is not None:
            on_epoch(epoch, losses[epoch])
    acc, mean_maps = _evaluate(model, attention, x_test, y_test, recipe.patch, perm, device)
    if curve:
        test_curve[-1] = acc
    if attention == "cnn":
        maps, pos = None, None
    else:
        maps = (mean_maps.numpy() if attention == "content"
                else model.positional_attention().double().cpu().numpy())
        pos = model.pos.detach().double().cpu().numpy()
    return RunOutcome(attention, int(seed), float(acc), losses, maps, count_parameters(model),
                      time.perf_counter() - wall0, time.process_time() - cpu0, pos, test_curve)


@dataclass(frozen=True)
class Task:
    """One training run: ``model`` (a ViT attention kind or ``"cnn"``) with run ``seed`` on the
    images block-shuffled with blocks of ``block`` pixels (None: unshuffled), by ``recipe``."""

    model: str
    seed: int
    block: int | None
    recipe: Recipe


def shuffle_for(data: ImageData, block: int | None, shuffle_seed: int, patch: int
                ) -> tuple[ImageData, np.ndarray | None, np.ndarray | None]:
    """The images of a shuffled run: (data shuffled with blocks of ``block`` pixels, the block
    permutation sigma, the token permutation tau of ``patch`` x ``patch`` patches). ``block``
    None, or a block as large as the image, is no shuffle (sigma None, tau the identity). A
    block that is not a multiple of ``patch`` cuts through patches: the shuffle is then no
    permutation of tokens and tau is None (such a block is for the CNN only)."""
    D = int(np.prod(patch_grid(data.image_shape, patch)))
    if block is None:
        return data, None, np.arange(D)
    block = check_block(data.image_shape, block)
    sigma = block_permutation(data.image_shape, block, shuffle_seed)
    if sigma.size == 1:
        return data, None, np.arange(D)
    tau = (token_permutation(data.image_shape, block, sigma, patch) if block % patch == 0
           else None)
    return data.shuffled(block, sigma), sigma, tau


def _effective_block(data: ImageData, block: int | None) -> int | None:
    """None when ``block`` does not shuffle anything (one block covering the image)."""
    if block is None:
        return None
    H, W = data.image_shape[:2]
    return None if (block == H and block == W) else int(block)


_WORKER: dict = {}


def _init_worker(threads: int, queue, data: ImageData, shuffle_seed: int) -> None:
    torch.set_num_threads(threads)
    _WORKER.update(queue=queue, data=data, shuffle_seed=shuffle_seed, cache={})


def _task_inputs(data: ImageData, task: Task, shuffle_seed: int, cache: dict):
    key = (task.block, task.recipe.patch)
    if key not in cache:
        shuffled, _, _ = shuffle_for(data, task.block, shuffle_seed, task.recipe.patch)
        cache[key] = (shuffled, prepare(shuffled))
    return cache[key]


def _worker(task: Task, device: str, curve: bool = False) -> RunOutcome:
    data, tensors = _task_inputs(_WORKER["data"], task, _WORKER["shuffle_seed"],
                                 _WORKER["cache"])
    queue = _WORKER["queue"]
    return train_one(data, task.recipe, task.model, task.seed, device, None, tensors,
                     on_epoch=lambda e, l: queue.put(1), curve=curve)


def run_tasks(data: ImageData, tasks: Sequence[Task], device: str | torch.device = "cpu",
              shuffle_seed: int = 0, jobs: int = 1, progress: bool = False,
              on_done: Callable[[Task, RunOutcome], None] | None = None,
              curve: bool = False) -> dict[Task, RunOutcome]:
    """Train every task (duplicates once), in ``jobs`` spawned processes when ``jobs > 1``
    (:func:`patchassoc.simulations.runtime.executor.map_tasks`), in the order given; with
    ``curve`` every run also measures its test accuracy after each epoch (:func:`train_one`).

    A run's numbers do not depend on ``jobs`` or on the other tasks (for a fixed number of
    torch threads). ``on_done(task, outcome)`` is called as each run finishes (to save it);
    on Ctrl-C the finished runs have been handed to ``on_done`` and the rest are cancelled.
    With ``jobs > 1`` a script that calls this must do so under ``if __name__ == "__main__":``
    (the console script and ``python -m`` do).
    """

    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise UsageError(f"jobs must be a positive integer, got {jobs!r}")
    unique = list(dict.fromkeys(tasks))
    for t in unique:
        if t.model not in MODELS:
            raise ValueError(f"model must be one of {', '.join(MODELS)}; got {t.model!r}")
        if t.block is not None:
            check_block(data.image_shape, t.block, None if t.model == "cnn" else t.recipe.patch)
    dev = resolve_device(device) if isinstance(device, str) else device
    jobs = max(1, min(jobs, len(unique)))
    bar = progress_bar(sum(t.recipe.epochs for t in unique), f"vit {data.name}",
                       enable=progress, unit="epoch")
    outcomes: dict[Task, RunOutcome] = {}

    def done(task, outcome):
        outcomes[task] = outcome
        if on_done is not None:
            on_done(task, outcome)

    try:
        if jobs == 1:
            cache: dict = {}

            def train_here(task: Task) -> RunOutcome:
                shuffled, tensors = _task_inputs(data, task, shuffle_seed, cache)
                bar.set_postfix_str(f"{task.model} seed {task.seed} block {task.block}")
                return train_one(shuffled, task.recipe, task.model, task.seed, dev, None,
                                 tensors, on_epoch=lambda e, l: bar.update(1), curve=curve)

            map_tasks(train_here, [(task,) for task in unique],
                      lambda i, outcome: done(unique[i], outcome))
        else:
            # the workers hold the images (sent once, to the initializer) and report each epoch
            # on a queue that feeds the progress bar here
            import multiprocessing
            import queue as _queue

            epochs = multiprocessing.get_context("spawn").Queue()

            def drain() -> None:
                try:
                    while True:
                        bar.update(epochs.get_nowait())
                except _queue.Empty:
                    pass

            map_tasks(_worker, [(task, str(dev), curve) for task in unique],
                      lambda i, outcome: done(unique[i], outcome), jobs=jobs,
                      initializer=_init_worker,
                      initargs=(torch.get_num_threads(), epochs, data, shuffle_seed),
                      tick=0.5, on_tick=drain)
    finally:
        bar.close()
    return outcomes


def _check_seeds(seeds) -> list[int]:
    seeds = [int(s) for s in seeds]
    if len(seeds) < 1:
        raise UsageError("at least one seed is needed")
    if len(set(seeds)) != len(seeds):
        raise UsageError("seeds must be distinct")
    return seeds


def _comparison_result(data, recipe, seeds, kinds, block, shuffle_seed, outcomes, dev, jobs,
                       threads, wall_s, cpu_s) -> ViTResult:
    gh, gw = patch_grid(data.image_shape, recipe.patch)
    _, sigma, tau = shuffle_for(data, block, shuffle_seed, recipe.patch)
    eff = _effective_block(data, block)
    runs = {k: [outcomes[Task(k, s, eff, recipe)] for s in seeds] for k in kinds}
    acc = np.array([[o.accuracy for o in runs[k]] for k in kinds])
    loss = np.stack([np.stack([o.train_loss for o in runs[k]]) for k in kinds])
    att = np.stack([np.stack([o.attention for o in runs[k]]) for k in kinds])
    pos = np.stack([np.stack([o.pos for o in runs[k]]) for k in kinds])
    meta = dict(data=data.name, n_train=int(data.x_train.shape[0]),
                n_test=int(data.x_test.shape[0]), n_classes=int(data.n_classes),
                image_shape=list(data.image_shape), grid=[gh, gw], kinds=list(kinds),
                seeds=seeds, recipe=recipe.to_dict(), permuted=sigma is not None,
                shuffle_block=eff, block_permutation=None if sigma is None else sigma.tolist(),
                permutation_seed=int(shuffle_seed), device=str(dev),
                torch_threads=int(threads), jobs=int(jobs), torch_version=torch.__version__,
                n_params={k: runs[k][0].n_params for k in kinds},
                run_wall_s={k: [o.wall_s for o in runs[k]] for k in kinds},
                run_cpu_s={k: [o.cpu_s for o in runs[k]] for k in kinds},
                wall_s=wall_s, cpu_s=cpu_s)
    return ViTResult(meta=meta, accuracy=acc, train_loss=loss, attention=att,
                     permutation=np.asarray(tau, dtype=np.int64), pos=pos)


def compare(data: ImageData, recipe: Recipe, seeds: Sequence[int],
            kinds: Sequence[str] = ("content", "positional"), device: str = "cpu",
            shuffle: int | None = None, permutation_seed: int = 0, progress: bool = False,
            jobs: int = 1) -> ViTResult:
    """Train every ViT attention kind on every seed (paired: same seed, same batch order).

    Parameters
    ----------
    data, recipe : ImageData, Recipe
        The images and the shared recipe.
    seeds : sequence of int
        Run seeds.
    kinds : sequence of str
        Attention kinds to train (``"content"``, the standard ViT, is the reference of the
        summary's gaps).
    device : {"cpu", "cuda"}
        Where to train.
    shuffle : int or None
        Block size (pixels) of the fixed block shuffle of ``permutation_seed`` applied to every
        image, or None (see :mod:`.data`).
    progress : bool
        Show a progress bar (epochs) on stderr.
    jobs : int
        Runs trained at once in separate processes (see :func:`run_tasks`).

    Returns
    -------
    ViTResult
        Accuracies (kinds x seeds), loss curves, attention maps, positional encodings and the
        run's metadata; its permutation is the token permutation tau of the shuffle.
    """
    vit, _ = study(data, recipe, seeds, kinds, device=device, blocks=(), progress=progress,
                   jobs=jobs, shuffle_seed=permutation_seed, comparison_block=shuffle)
    return vit


def study(data: ImageData, recipe: Recipe, seeds: Sequence[int],
          kinds: Sequence[str] = ("content", "positional", "uniform", "none"),
          blocks: Sequence[int] = (), shuffle_models: Sequence[str] = ("positional", "content",
                                                                         "cnn"),
          shuffle_recipe: Recipe | None = None, shuffle_seeds: Sequence[int] | None = None,
          shuffle_seed: int = 0, device: str = "cpu", progress: bool = False, jobs: int = 1,
          comparison_block: int | None = None,
          on_done: Callable[[Task, RunOutcome], None] | None = None
          ) -> tuple[ViTResult, ShuffleResult | None]:
    """The comparison with its controls, and the shuffled-patch experiment, in one pool of runs.

    Parameters
    ----------
    data, recipe, seeds, kinds
        The comparison (see :func:`compare`): ``kinds`` on ``seeds`` with ``recipe``.
    blocks : sequence of int
        Block sizes of the shuffled-patch experiment (empty: no experiment). A block as large as
        the image means no shuffle; a run identical to one of the comparison (same model, seed,
        recipe, no shuffle) is trained once. The CNN runs at every block; the ViTs at the blocks
        that are multiples of the patch side (the others cut through patches, so they are no
        permutation of tokens).
    shuffle_models : sequence of str
        Models of the experiment (ViT attention kinds and ``"cnn"``).
    shuffle_recipe : Recipe or None
        Recipe of the experiment (default ``recipe``).
    shuffle_seeds : sequence of int or None
        Seeds of the experiment (default ``seeds``).
    shuffle_seed : int
        Seed of the fixed block permutations.
    device, progress, jobs, on_done
        See :func:`run_tasks`.
    comparison_block : int or None
        Shuffle the comparison's images too (the former permuted-patch control).

    Returns
    -------
    (ViTResult, ShuffleResult or None)
    """
    seeds = _check_seeds(seeds)
    kinds = tuple(kinds)
    for k in kinds:
        if k not in ATTENTIONS:
            raise UsageError(f"comparison kinds must be ViT attention kinds "
                             f"({', '.join(ATTENTIONS)}); got {k!r}")
    dev = resolve_device(device) if isinstance(device, str) else device
    blocks = [check_block(data.image_shape, b) for b in blocks]
    if len(set(blocks)) != len(blocks):
        raise UsageError(f"--shuffle values must be distinct, got {blocks}")
    vit_blocks = [b for b in blocks if b % recipe.patch == 0]
    if comparison_block is not None:
        check_block(data.image_shape, comparison_block, recipe.patch)
    s_recipe = recipe if shuffle_recipe is None else shuffle_recipe
    if s_recipe.patch != recipe.patch:
        raise UsageError("the shuffled-patch experiment must use the comparison's patch size")
    s_seeds = seeds if shuffle_seeds is None else _check_seeds(shuffle_seeds)
    s_models = tuple(shuffle_models)
    for m in s_models:
        if m not in MODELS:
            raise UsageError(f"shuffle models must be among {', '.join(MODELS)}; got {m!r}")
    if blocks and not vit_blocks and any(m != "cnn" for m in s_models):
        raise UsageError(f"--shuffle {', '.join(map(str, blocks))}: no block size is a multiple "
                         f"of the patch size {recipe.patch}, so the ViTs have no shuffle to run "
                         f"(add the image side, no shuffle)")
    cmp_block = _effective_block(data, comparison_block)
    tasks = [Task(k, s, cmp_block, recipe) for s in seeds for k in kinds]
    tasks += [Task(m, s, _effective_block(data, b), s_recipe)
              for b in blocks for s in s_seeds for m in s_models
              if m == "cnn" or b in vit_blocks]
    threads = torch.get_num_threads()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    outcomes = run_tasks(data, tasks, dev, shuffle_seed, jobs, progress, on_done)
    wall_s = time.perf_counter() - wall0
    used_jobs = max(1, min(jobs, len(outcomes)))
    worker_cpu = sum(o.cpu_s for o in outcomes.values()) if used_jobs > 1 else 0.0
    cpu_s = time.process_time() - cpu0 + worker_cpu
    vit = _comparison_result(data, recipe, seeds, kinds, comparison_block, shuffle_seed,
                             outcomes, dev, used_jobs, threads, wall_s, cpu_s)
    if not blocks:
        return vit, None
    return vit, _shuffle_result(data, s_recipe, s_seeds, s_models, blocks, shuffle_seed,
                                outcomes, wall_s, cpu_s)


def _shuffle_result(data, recipe, seeds, models, blocks, shuffle_seed, outcomes, wall_s, cpu_s
                    ) -> ShuffleResult:
    gh, gw = patch_grid(data.image_shape, recipe.patch)
    D = gh * gw
    vits = [m for m in models if m != "cnn"]
    vit_blocks = [b for b in blocks if b % recipe.patch == 0]
    # a ViT at a block that cuts through patches was not run: NaN, never a number
    acc = np.full((len(models), len(blocks), len(seeds)), np.nan)
    taus, sigmas = np.zeros((len(vit_blocks), D), dtype=np.int64), []
    pos, att = None, None
    for j, b in enumerate(blocks):
        _, sigma, tau = shuffle_for(data, b, shuffle_seed, recipe.patch)
        sigmas.append(None if sigma is None else sigma.tolist())
        eff = _effective_block(data, b)
        for i, m in enumerate(models):
            if m == "cnn" or b in vit_blocks:
                for k, s in enumerate(seeds):
                    acc[i, j, k] = outcomes[Task(m, s, eff, recipe)].accuracy
        if b not in vit_blocks:
            continue
        jv = vit_blocks.index(b)
        taus[jv] = tau
        for i, m in enumerate(vits):
            for k, s in enumerate(seeds):
                o = outcomes[Task(m, s, eff, recipe)]
                if pos is None:
                    pos = np.zeros((len(vits), len(vit_blocks), len(seeds)) + o.pos.shape)
                    att = np.zeros((len(vits), len(vit_blocks), len(seeds))
                                   + o.attention.shape)
                pos[i, jv, k] = o.pos
                att[i, jv, k] = o.attention
    if pos is None:
        pos, att = np.zeros((0, len(vit_blocks), len(seeds), D, 1)), np.zeros(
            (0, len(vit_blocks), len(seeds), 1, 1, D, D))
    meta = dict(data=data.name, n_train=int(data.x_train.shape[0]),
                n_test=int(data.x_test.shape[0]), grid=[gh, gw],
                image_shape=list(data.image_shape), models=list(models), vit_models=vits,
                blocks=[int(b) for b in blocks], vit_blocks=[int(b) for b in vit_blocks],
                seeds=list(seeds), recipe=recipe.to_dict(), cnn_width=int(recipe.cnn_width),
                shuffle_seed=int(shuffle_seed), block_permutations=sigmas,
                wall_s=wall_s, cpu_s=cpu_s)
    return ShuffleResult(meta=meta, accuracy=acc, token_permutation=taus, pos=pos,
                         attention=att)
