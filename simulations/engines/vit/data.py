"""Image data for the ViT comparison: scikit-learn's bundled digits and Debian's Fashion-MNIST
offline, and local copies of CIFAR-10, CIFAR-100 and SVHN.

Every loader returns an :class:`ImageData`: uint8 images of shape (N, H, W, channels) with their
integer labels, split into train and test. Nothing here downloads anything: the digits ship inside
scikit-learn; Fashion-MNIST is read from Debian's folder, the cache or a folder given (fetching it
is :func:`~patchassoc.simulations.engines.vit.fashion_mnist.fetch`, ``patchassoc data``); CIFAR
and SVHN are read from a folder the user already has, and a missing folder or file is a
:class:`~patchassoc.simulations.runtime.errors.UsageError` naming what was expected (exit status
2); a file that is there but cannot be read as its format is a
:class:`~patchassoc.simulations.runtime.errors.CorruptFile` naming it (exit status 1).

Formats read (the standard distributions of each benchmark):

- Fashion-MNIST: the four idx files (see :mod:`~patchassoc.simulations.engines.vit.fashion_mnist`,
  which reads and checks them).

- CIFAR-10, "python version": ``cifar-10-batches-py/`` with ``data_batch_1`` .. ``data_batch_5``
  and ``test_batch``, each a pickled dict with ``b"data"`` (N x 3072 uint8: the 1024 red, then
  green, then blue values of a 32 x 32 image, row-major) and ``b"labels"`` (N ints in 0..9).
- CIFAR-100, "python version": ``cifar-100-python/`` with ``train`` and ``test``, the same layout
  with ``b"fine_labels"`` (0..99; used here) and ``b"coarse_labels"``.
- SVHN, "format 2" (cropped digits): ``train_32x32.mat`` and ``test_32x32.mat``, MATLAB files with
  ``X`` (32 x 32 x 3 x N uint8) and ``y`` (N x 1, digits 1..10 where 10 stands for 0).

The pickles are read with a restricted unpickler that only rebuilds plain containers and NumPy
arrays, so a foreign file cannot run code.

The shuffled-patch experiment (the paper's, SPEC section 6 claim 6): every image is cut into square
blocks of b x b pixels, a (gh/b) x (gw/b) block grid, and one fixed random permutation sigma of the
blocks is applied to every image (train and test alike): output block k is input block sigma(k)
(:func:`block_permutation`, :func:`shuffle_blocks`, :func:`unshuffle_blocks`). sigma is drawn from
the seed and b, and is a derangement (no block stays in place) whenever there are at least two
blocks; b equal to the image side is one block, i.e. no shuffle. When b is a multiple of the ViT
patch side p, the shuffle moves whole patches: token t of a shuffled image is the patch at grid
position tau(t) of the original image (:func:`token_permutation`). A model that learns positions
from scratch (a ViT with learned positional encodings) loses nothing; one whose bias is locality on
the pixel grid (a CNN) does, the more the finer the blocks.

:func:`patch_permutation` (one fixed permutation of the patch positions, drawn without the block
structure) is kept for callers that permute tokens directly.

This module needs NumPy and SciPy only (scikit-learn for the digits), never PyTorch.

References
----------
SPEC section 6, claim 6.
"""
from __future__ import annotations

import io
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from patchassoc.simulations.engines.vit.fashion_mnist import NAME as FASHION_MNIST
from patchassoc.simulations.engines.vit.fashion_mnist import N_CLASSES, read_fashion_mnist
from patchassoc.simulations.runtime.errors import CorruptFile, UsageError

__all__ = ["ImageData", "DATASETS", "load_dataset", "load_digits", "load_fashion_mnist",
           "load_cifar10",
           "load_cifar100", "load_svhn", "patch_grid", "patch_permutation", "DIGITS_SPLIT",
           "check_block", "block_permutation", "shuffle_blocks", "unshuffle_blocks",
           "token_permutation", "default_blocks"]

#: Names accepted by :func:`load_dataset` (and ``patchassoc vit --data``).
DATASETS = ("digits", "fashion-mnist", "cifar10", "cifar100", "svhn")

#: The fixed split of the 1797 digits: (train, test) sizes, stratified by class.
DIGITS_SPLIT = (1347, 450)


@dataclass(frozen=True, eq=False)
class ImageData:
    """A train/test split of labelled images.

    Parameters
    ----------
    name : str
        Data-set name (one of :data:`DATASETS`).
    x_train, x_test : ndarray of uint8, shape (N, H, W, channels)
        Images (pixel values 0..255, or 0..16 for the digits: see ``max_value``).
    y_train, y_test : ndarray of int64, shape (N,)
        Labels in 0 .. n_classes - 1.
    n_classes : int
        Number of classes.
    max_value : float
        The largest possible pixel value (255, or 16 for the digits).
    """

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    max_value: float

    def __post_init__(self) -> None:
        for split in ("train", "test"):
            x, y = getattr(self, f"x_{split}"), getattr(self, f"y_{split}")
            if x.ndim != 4:
                raise ValueError(f"x_{split} must have shape (N, H, W, channels), got {x.shape}")
            if y.shape != (x.shape[0],):
                raise ValueError(f"y_{split} must have shape ({x.shape[0]},), got {y.shape}")
            if y.size and (y.min() < 0 or y.max() >= self.n_classes):
                raise ValueError(f"y_{split} must lie in 0..{self.n_classes - 1}")
        if self.x_train.shape[1:] != self.x_test.shape[1:]:
            raise ValueError(f"train and test images differ in shape: {self.x_train.shape[1:]} "
                             f"vs {self.x_test.shape[1:]}")

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """(H, W, channels)."""
        return tuple(int(s) for s in self.x_train.shape[1:])

    def shuffled(self, block: int, permutation: np.ndarray) -> "ImageData":
        """Both splits with the blocks of side ``block`` permuted by ``permutation`` (see
        :func:`shuffle_blocks`)."""
        return ImageData(self.name, shuffle_blocks(self.x_train, block, permutation),
                         self.y_train, shuffle_blocks(self.x_test, block, permutation),
                         self.y_test, self.n_classes, self.max_value)

    def subset(self, n_train: int | None = None, n_test: int | None = None) -> "ImageData":
        """The first ``n_train`` training and ``n_test`` test images (for quick runs)."""
        return ImageData(self.name, self.x_train[:n_train], self.y_train[:n_train],
                         self.x_test[:n_test], self.y_test[:n_test], self.n_classes,
                         self.max_value)


def _stratified_split(y: np.ndarray, n_test: int, rng: np.random.Generator
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, test) with ``n_test`` test items, each class represented in proportion
    (largest-remainder rounding), both sorted."""
    classes, counts = np.unique(y, return_counts=True)
    exact = counts * n_test / y.size
    take = np.floor(exact).astype(int)
    short = n_test - take.sum()
    take[np.argsort(-(exact - take), kind="stable")[:short]] += 1
    test = []
    for c, k in zip(classes, take):
        idx = np.flatnonzero(y == c)
        test.append(rng.choice(idx, size=k, replace=False))
    test = np.sort(np.concatenate(test))
    train = np.setdiff1d(np.arange(y.size), test)
    return train, test


def load_digits(split_seed: int = 0) -> ImageData:
    """scikit-learn's bundled 8 x 8 handwritten digits (1797 images, values 0..16), split into
    1347 train / 450 test images, stratified by class, with a fixed seeded split.

    Parameters
    ----------
    split_seed : int
        Seed of the split (default 0: the split every run of the toolkit uses).
    """
    try:
        from sklearn.datasets import load_digits as _sk_digits
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise UsageError("the digits data needs scikit-learn: pip install -e '.[vit]'") from exc
    bunch = _sk_digits()
    images = np.asarray(bunch.images, dtype=np.float64)
    if not np.array_equal(images, np.round(images)):
        raise ValueError("unexpected non-integer digits pixels")
    x = images.astype(np.uint8)[..., None]
    y = np.asarray(bunch.target, dtype=np.int64)
    train, test = _stratified_split(y, DIGITS_SPLIT[1], np.random.default_rng(split_seed))
    return ImageData("digits", x[train], y[train], x[test], y[test], 10, 16.0)


def _folder(data_dir, name: str, subfolder: str, files: list[str]) -> Path:
    """The folder holding ``files``: ``data_dir`` itself or ``data_dir/subfolder``."""
    if data_dir is None:
        raise UsageError(f"--data-dir is required for {name}: a folder with {subfolder}/ "
                         f"({', '.join(files)}); nothing is ever downloaded")
    root = Path(data_dir).expanduser()
    if not root.is_dir():
        raise UsageError(f"data folder {root} does not exist (expected {name} files "
                         f"{', '.join(files)}, in it or in {subfolder}/ below it)")
    for folder in (root / subfolder, root):
        if all((folder / f).is_file() for f in files):
            return folder
    folder = root / subfolder if (root / subfolder).is_dir() else root
    missing = [f for f in files if not (folder / f).is_file()]
    raise UsageError(f"no {name} data in {root}: missing {', '.join(missing)} in {folder} "
                     f"(the standard {name} files; nothing is ever downloaded)")


class _SafeUnpickler(pickle.Unpickler):
    """Rebuilds plain containers and NumPy arrays only (what CIFAR batches hold)."""

    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
        ("numpy", "ndarray"), ("numpy", "dtype"),
        ("_codecs", "encode"),
    }

    def find_class(self, module: str, name: str):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}")
        if module == "_codecs":
            import codecs
            return codecs.encode
        if module == "numpy":
            return getattr(np, name)
        return getattr(_multiarray(), name)


def _multiarray():
    """NumPy's multiarray module (``numpy._core`` in NumPy 2, ``numpy.core`` before)."""
    import importlib
    try:
        return importlib.import_module("numpy._core.multiarray")
    except ImportError:  # pragma: no cover - NumPy 1.x
        return importlib.import_module("numpy.core.multiarray")


def _numbers(path: Path, what: str, values) -> np.ndarray:
    """``values`` as a numeric array: refuses (one line naming ``path``) what is not a regular
    array of numbers (object or string dtype, ragged nesting), non-finite and non-integer
    values."""
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError) as exc:  # ragged nesting, or objects NumPy cannot hold
        raise CorruptFile(path, f"{what} is not a regular array ({exc})") from exc
    if arr.dtype.kind not in "uif":
        raise CorruptFile(path, f"{what} must be numbers, got dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise CorruptFile(path, f"{what} must be finite, found "
                             f"{int(np.sum(~np.isfinite(arr)))} NaN or infinite values")
        if not np.array_equal(arr, np.round(arr)):
            raise CorruptFile(path, f"{what} must be whole numbers")
    return arr


def _pixels(path: Path, values) -> np.ndarray:
    """Checked pixel values (numbers, finite, whole, in 0..255) as uint8, never cast silently."""
    arr = _numbers(path, "pixel data", values)
    if arr.size and (arr.min() < 0 or arr.max() > 255):
        raise CorruptFile(path, f"pixel values must lie in 0..255, got "
                         f"{arr.min():g}..{arr.max():g}")
    return arr.astype(np.uint8)


def _labels(path: Path, values, low: int, high: int) -> np.ndarray:
    """Checked labels (numbers, finite, whole, in ``low..high``) as a flat int64 array."""
    arr = _numbers(path, "labels", values).reshape(-1)
    if arr.size and (arr.min() < low or arr.max() > high):
        raise CorruptFile(path, f"labels must lie in {low}..{high}, got "
                         f"{arr.min():g}..{arr.max():g}")
    return arr.astype(np.int64)


def _read_cifar_batch(path: Path, label_key: bytes, n_classes: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    try:
        with open(path, "rb") as fh:
            batch = _SafeUnpickler(io.BytesIO(fh.read()), encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as exc:
        raise CorruptFile(path, f"not a CIFAR python batch ({exc})") from exc
    if not isinstance(batch, dict):
        raise CorruptFile(path, "not a CIFAR python batch (not a dict)")
    batch = {k.encode() if isinstance(k, str) else k: v for k, v in batch.items()}
    if b"data" not in batch or label_key not in batch:
        raise CorruptFile(path, f"not a CIFAR python batch (keys data and "
                         f"{label_key.decode()} expected)")
    data = _pixels(path, batch[b"data"])
    labels = _labels(path, batch[label_key], 0, n_classes - 1)
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or data.shape[0] != labels.size:
        raise CorruptFile(path, f"data must be N x 3072 with N labels, got {data.shape} and "
                         f"{labels.size} labels")
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), labels


def load_cifar10(data_dir) -> ImageData:
    """CIFAR-10 (python version) from ``data_dir`` or ``data_dir/cifar-10-batches-py``."""
    files = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    folder = _folder(data_dir, "CIFAR-10", "cifar-10-batches-py", files)
    parts = [_read_cifar_batch(folder / f, b"labels", 10) for f in files[:5]]
    x_test, y_test = _read_cifar_batch(folder / "test_batch", b"labels", 10)
    return _checked("cifar10", np.concatenate([p[0] for p in parts]),
                    np.concatenate([p[1] for p in parts]), x_test, y_test, 10, 255.0)


def load_cifar100(data_dir) -> ImageData:
    """CIFAR-100 (python version, fine labels) from ``data_dir`` or
    ``data_dir/cifar-100-python``."""
    folder = _folder(data_dir, "CIFAR-100", "cifar-100-python", ["train", "test"])
    x_train, y_train = _read_cifar_batch(folder / "train", b"fine_labels", 100)
    x_test, y_test = _read_cifar_batch(folder / "test", b"fine_labels", 100)
    return _checked("cifar100", x_train, y_train, x_test, y_test, 100, 255.0)


def _read_svhn(path: Path) -> tuple[np.ndarray, np.ndarray]:
    from scipy.io import loadmat
    try:
        mat = loadmat(path, variable_names=["X", "y"])
    except Exception as exc:  # scipy raises several types for a corrupt or foreign file
        raise CorruptFile(path, f"not an SVHN .mat file ({type(exc).__name__}: {exc})") from exc
    if "X" not in mat or "y" not in mat:
        raise CorruptFile(path, "not an SVHN .mat file (variables X and y expected)")
    X, y = _pixels(path, mat["X"]), _labels(path, mat["y"], 1, 10)
    if X.ndim != 4 or X.shape[:3] != (32, 32, 3) or X.shape[3] != y.size:
        raise CorruptFile(path, f"X must be 32 x 32 x 3 x N with N labels, got {X.shape} and "
                         f"{y.size} labels")
    return np.ascontiguousarray(X.transpose(3, 0, 1, 2)), y % 10


def load_svhn(data_dir) -> ImageData:
    """SVHN cropped digits (format 2) from ``data_dir`` or ``data_dir/svhn``; label 10 becomes 0.
    The ``extra`` set is not used."""
    folder = _folder(data_dir, "SVHN", "svhn", ["train_32x32.mat", "test_32x32.mat"])
    x_train, y_train = _read_svhn(folder / "train_32x32.mat")
    x_test, y_test = _read_svhn(folder / "test_32x32.mat")
    return _checked("svhn", x_train, y_train, x_test, y_test, 10, 255.0)


def _checked(name, x_train, y_train, x_test, y_test, n_classes, max_value) -> ImageData:
    for split, y in (("train", y_train), ("test", y_test)):
        if y.size and (y.min() < 0 or y.max() >= n_classes):
            raise CorruptFile(f"{name} {split} labels", f"must lie in 0..{n_classes - 1}, got "
                              f"{y.min()}..{y.max()}")
    return ImageData(name, x_train, y_train, x_test, y_test, n_classes, max_value)


def load_fashion_mnist(data_dir=None) -> ImageData:
    """Fashion-MNIST, 60,000 train / 10,000 test 28 x 28 grey images (values 0..255), 10
    classes, the standard split, from ``data_dir`` or where Debian's package and ``patchassoc
    data fashion-mnist`` put it; every file checked against its stored SHA-256 (see
    :mod:`~patchassoc.simulations.engines.vit.fashion_mnist`)."""
    x_train, y_train, x_test, y_test = read_fashion_mnist(data_dir)
    return ImageData(FASHION_MNIST, x_train, y_train, x_test, y_test, N_CLASSES, 255.0)


def load_dataset(name: str, data_dir=None, split_seed: int = 0) -> ImageData:
    """Load one of :data:`DATASETS` (``data_dir`` is ignored for the digits)."""
    if name == "digits":
        return load_digits(split_seed)
    if name == "fashion-mnist":
        return load_fashion_mnist(data_dir)
    if name == "cifar10":
        return load_cifar10(data_dir)
    if name == "cifar100":
        return load_cifar100(data_dir)
    if name == "svhn":
        return load_svhn(data_dir)
    raise UsageError(f"unknown data set {name!r}; choose one of {', '.join(DATASETS)}")


def patch_grid(image_shape: tuple[int, int, int], patch: int) -> tuple[int, int]:
    """The (rows, columns) of the patch grid of ``patch`` x ``patch`` patches."""
    H, W = image_shape[:2]
    if patch < 1 or H % patch or W % patch:
        raise UsageError(f"patch size {patch} must divide the image size {H} x {W}")
    return H // patch, W // patch


def patch_permutation(n_patches: int, seed: int) -> np.ndarray:
    """One fixed random permutation of the patch positions (the permuted-patch control).

    Token ``t`` of every permuted image is the patch at grid position ``perm[t]``.
    """
    return np.random.default_rng(np.random.SeedSequence([int(seed), 0x9E37])).permutation(
        n_patches)


def check_block(image_shape: tuple[int, ...], block, patch: int | None = None) -> int:
    """Validate a shuffle block size: a positive integer dividing the image height and width and,
    when ``patch`` is given, a multiple of the patch side (so a shuffle moves whole patches).
    Returns it as an int; raises :class:`~.UsageError` naming the option ``--shuffle``."""
    H, W = image_shape[:2]
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 1:
        raise UsageError(f"--shuffle {block!r}: the block size must be a positive integer "
                         f"(pixels)")
    block = int(block)
    if H % block or W % block:
        raise UsageError(f"--shuffle {block}: the block size must divide the image size "
                         f"{H} x {W}")
    if patch is not None and block % patch:
        raise UsageError(f"--shuffle {block}: the block size must be a multiple of the patch "
                         f"size {patch} (a shuffle moves whole patches)")
    return block


def default_blocks(image_shape: tuple[int, ...], patch: int) -> list[int]:
    """The block sizes p, 2p, 4p, ... up to the image side (which means no shuffle): for the
    8 x 8 digits with 2 x 2 patches, 2, 4 and 8."""
    side = min(image_shape[:2])
    out, b = [], patch
    while b <= side:
        if image_shape[0] % b == 0 and image_shape[1] % b == 0:
            out.append(b)
        b *= 2
    return out


def block_permutation(image_shape: tuple[int, ...], block: int, seed: int) -> np.ndarray:
    """The fixed permutation sigma of the (H/b) x (W/b) blocks (row-major) for shuffle seed
    ``seed``: a uniformly drawn derangement when there are at least two blocks (redrawn until no
    block stays in place), the identity of length 1 otherwise."""
    block = check_block(image_shape, block)
    n = (image_shape[0] // block) * (image_shape[1] // block)
    if n == 1:
        return np.zeros(1, dtype=np.int64)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), block, 0xB10C]))
    while True:
        perm = rng.permutation(n)
        if not np.any(perm == np.arange(n)):
            return perm.astype(np.int64)


def _check_perm(perm, n: int) -> np.ndarray:
    perm = np.asarray(perm)
    if perm.shape != (n,) or not np.array_equal(np.sort(perm), np.arange(n)):
        raise ValueError(f"permutation must be a permutation of 0..{n - 1}")
    return perm.astype(np.int64)


def shuffle_blocks(x: np.ndarray, block: int, permutation) -> np.ndarray:
    """Images ``x`` (N, H, W, channels) with their b x b blocks permuted: block k (row-major over
    the block grid) of the output is block ``permutation[k]`` of the input."""
    x = np.asarray(x)
    if x.ndim != 4:
        raise ValueError(f"images must have shape (N, H, W, channels), got {x.shape}")
    N, H, W, C = x.shape
    block = check_block((H, W), block)
    gh, gw = H // block, W // block
    perm = _check_perm(permutation, gh * gw)
    blocks = x.reshape(N, gh, block, gw, block, C).transpose(0, 1, 3, 2, 4, 5)
    blocks = blocks.reshape(N, gh * gw, block, block, C)[:, perm]
    out = blocks.reshape(N, gh, gw, block, block, C).transpose(0, 1, 3, 2, 4, 5)
    return np.ascontiguousarray(out.reshape(N, H, W, C))


def unshuffle_blocks(x: np.ndarray, block: int, permutation) -> np.ndarray:
    """The inverse of :func:`shuffle_blocks` with the same ``permutation``."""
    x = np.asarray(x)
    n = (x.shape[1] // block) * (x.shape[2] // block) if x.ndim == 4 and block > 0 else 0
    return shuffle_blocks(x, block, np.argsort(_check_perm(permutation, n)))


def token_permutation(image_shape: tuple[int, ...], block: int, permutation, patch: int
                      ) -> np.ndarray:
    """tau of a block shuffle seen by a ViT with p x p patches: token t (row-major over the
    patch grid) of a shuffled image is the patch at grid position ``tau[t]`` of the original."""
    H, W = image_shape[:2]
    block = check_block((H, W), block, patch)
    gh, gw = patch_grid((H, W, 1), patch)
    label = np.arange(gh * gw).reshape(gh, gw).repeat(patch, 0).repeat(patch, 1)
    moved = shuffle_blocks(label[None, :, :, None], block, permutation)[0, :, :, 0]
    return np.ascontiguousarray(moved[::patch, ::patch].reshape(-1)).astype(np.int64)
