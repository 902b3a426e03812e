"""Fashion-MNIST offline: the idx reader, the stored digests, where the files are found, and
how they are fetched from Debian without root.

Fashion-MNIST (Xiao, Rasul, Vollgraf 2017; MIT licence) is 60,000 training and 10,000 test
grey images of 28 x 28 pixels in 10 classes, in four files of the idx format:

- ``train-images-idx3-ubyte``, ``t10k-images-idx3-ubyte``: the big-endian header
  ``00 00 08 03`` (unsigned bytes, 3 dimensions), then N, 28, 28 as 32-bit big-endian integers,
  then N * 28 * 28 pixel bytes, row-major;
- ``train-labels-idx1-ubyte``, ``t10k-labels-idx1-ubyte``: ``00 00 08 01``, then N, then N label
  bytes in 0..9.

Each file may be gzip-compressed (``.gz``, as distributed). A file is accepted only when the
SHA-256 of its decompressed bytes equals the digest stored here (:data:`SHA256`), so the same
data recompressed, or left uncompressed, is accepted, and a changed or truncated file is
refused in one line naming it. The reader also checks what the header says against the file's
length, the dimensions and the label range, so a file of the right format but the wrong content
gives a clear message before the digest is even compared.

Where the files are looked for, in order: the folder given (``--data-dir``) and its
subfolder ``fashion-mnist/``; Debian's ``/usr/share/datasets/fashion-mnist`` (package
``dataset-fashion-mnist``); the cache ``$XDG_CACHE_HOME/patchassoc/fashion-mnist`` (default
``~/.cache/patchassoc``). :func:`fetch` fills the cache (or a folder given) without root:
``apt-get download dataset-fashion-mnist`` into a temporary folder, ``dpkg-deb -x``, then the
four files are checked and moved into place.

This module needs NumPy only (hashlib and gzip from the standard library), never PyTorch.

References
----------
SPEC section 6, claim 6.
"""
from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import subprocess
import tempfile
import zlib
from pathlib import Path

import numpy as np

from patchassoc.simulations.runtime.errors import CorruptFile, RunError, UsageError

__all__ = ["NAME", "FILES", "SHA256", "SHA256_DEBIAN_GZ", "DEBIAN_PACKAGE", "DEBIAN_FOLDER",
           "N_TRAIN", "N_TEST", "SIDE", "N_CLASSES", "read_idx", "cache_dir", "find_folder",
           "read_fashion_mnist", "fetch", "verify_folder"]

NAME = "fashion-mnist"
N_TRAIN, N_TEST, SIDE, N_CLASSES = 60000, 10000, 28, 10
#: The four files (standard names, without ``.gz``) and the array shape each holds.
FILES = {
    "train-images-idx3-ubyte": (N_TRAIN, SIDE, SIDE),
    "train-labels-idx1-ubyte": (N_TRAIN,),
    "t10k-images-idx3-ubyte": (N_TEST, SIDE, SIDE),
    "t10k-labels-idx1-ubyte": (N_TEST,),
}
#: SHA-256 of each file's decompressed bytes (the idx data itself), computed once from the files
#: of Debian's dataset-fashion-mnist 0.0~git20200523.55506a9-1, whose .gz files matched the
#: package's own md5sums (see :data:`SHA256_DEBIAN_GZ`).
SHA256 = {
    "train-images-idx3-ubyte": "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
    "train-labels-idx1-ubyte": "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
    "t10k-images-idx3-ubyte": "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
    "t10k-labels-idx1-ubyte": "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
}
#: SHA-256 of the .gz files as that Debian package ships them (Debian recompressed them, so they
#: differ from the upstream .gz files while their content does not); reported by ``patchassoc
#: data``, not required.
SHA256_DEBIAN_GZ = {
    "train-images-idx3-ubyte": "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7",
    "train-labels-idx1-ubyte": "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056",
    "t10k-images-idx3-ubyte": "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa",
    "t10k-labels-idx1-ubyte": "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05",
}
DEBIAN_PACKAGE = "dataset-fashion-mnist"
#: Where the package installs the files (and where ``dpkg-deb -x`` puts them below its target).
_PACKAGE_PATH = "usr/share/datasets/fashion-mnist"
DEBIAN_FOLDER = Path("/") / _PACKAGE_PATH

#: idx type codes: the only one Fashion-MNIST uses is 0x08 (unsigned byte).
_UBYTE = 0x08


def _hand_placed_hint() -> str:
    names = ", ".join(f"{f}.gz" for f in FILES)
    return (f"place the standard files {names} (gzip-compressed or not) in a folder and pass it "
            f"with --data-dir")


def read_idx(path, shape: tuple[int, ...] | None = None, digest: str | None = None
             ) -> np.ndarray:
    """The uint8 array of one idx file (gzip-compressed when its name ends in ``.gz``).

    Parameters
    ----------
    path : path-like
        The file.
    shape : tuple of int or None
        The shape it must hold (None: whatever its header says).
    digest : str or None
        The SHA-256 (hex) its decompressed bytes must have (None: not checked).

    Returns
    -------
    ndarray of uint8
        The data, shaped as the header says.

    Raises
    ------
    CorruptFile
        One line naming the file: unreadable, not gzip, not idx, not unsigned bytes, a length
        that disagrees with its header, the wrong shape, or the wrong digest.

    Notes
    -----
    SPEC section 6, claim 6 (the data of the Fashion-MNIST comparison).
    """
    path = Path(path)
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as fh:
                raw = fh.read()
        else:
            raw = path.read_bytes()
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise CorruptFile(path, f"not a readable gzip file ({exc}); a corrupt or truncated "
                         f"download: delete it and fetch it again") from exc
    except OSError as exc:
        raise CorruptFile(path, f"cannot be read ({exc.strerror or exc})") from exc
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise CorruptFile(path, "not an idx file (it must start with two zero bytes)")
    kind, ndim = raw[2], raw[3]
    if kind != _UBYTE:
        raise CorruptFile(path, f"idx type code 0x{kind:02x}, expected 0x08 (unsigned bytes)")
    head = 4 + 4 * ndim
    if ndim < 1 or len(raw) < head:
        raise CorruptFile(path, f"idx header cut short ({len(raw)} bytes for {ndim} "
                         f"dimensions)")
    dims = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    size = int(np.prod(dims, dtype=np.int64))
    if len(raw) != head + size:
        raise CorruptFile(path, f"the header announces {' x '.join(map(str, dims))} = {size} "
                         f"bytes of data, the file holds {len(raw) - head}")
    if shape is not None and dims != tuple(shape):
        raise CorruptFile(path, f"holds an array of shape {dims}, expected {tuple(shape)}")
    if digest is not None:
        got = hashlib.sha256(raw).hexdigest()
        if got != digest:
            raise CorruptFile(path, f"SHA-256 of its content {got[:16]}... differs from "
                             f"Fashion-MNIST's {digest[:16]}...: a corrupt or different file; "
                             f"delete it and run `patchassoc data fashion-mnist`")
    return np.frombuffer(raw, dtype=np.uint8, offset=head).reshape(dims)


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/patchassoc`` (default ``~/.cache/patchassoc``)."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".cache") / "patchassoc"


def _file_in(folder: Path, name: str) -> Path | None:
    for candidate in (folder / f"{name}.gz", folder / name):
        if candidate.is_file():
            return candidate
    return None


def _complete(folder: Path) -> dict[str, Path] | None:
    files = {name: _file_in(folder, name) for name in FILES}
    return files if all(files.values()) else None


def _candidates(data_dir=None) -> list[Path]:
    if data_dir is not None:
        root = Path(data_dir).expanduser()
        return [root, root / NAME]
    return [DEBIAN_FOLDER, cache_dir() / NAME]


def find_folder(data_dir=None) -> tuple[Path, dict[str, Path]]:
    """The folder holding the four files and their paths: in ``data_dir`` (or its
    ``fashion-mnist/``) when given, else Debian's folder, else the cache.

    Raises
    ------
    UsageError
        One line naming the places looked at, how to fetch the files and their standard names.
    """
    places = _candidates(data_dir)
    for folder in places:
        files = _complete(folder) if folder.is_dir() else None
        if files:
            return folder, files
    if data_dir is not None and not Path(data_dir).expanduser().is_dir():
        raise UsageError(f"data folder {data_dir} does not exist; run `patchassoc data "
                         f"fashion-mnist --data-dir {data_dir}`, or {_hand_placed_hint()}")
    raise UsageError(f"no Fashion-MNIST files in {' or '.join(str(p) for p in places)}: run "
                     f"`patchassoc data fashion-mnist`, or {_hand_placed_hint()}")


def verify_folder(files: dict[str, Path]) -> dict[str, np.ndarray]:
    """Read and check the four files (shapes, digests, label range); returns their arrays."""
    arrays = {name: read_idx(path, FILES[name], SHA256[name]) for name, path in files.items()}
    for name in ("train-labels-idx1-ubyte", "t10k-labels-idx1-ubyte"):
        top = int(arrays[name].max())
        if top >= N_CLASSES:  # cannot happen with the right digest; kept for a changed table
            raise CorruptFile(files[name], f"labels must lie in 0..{N_CLASSES - 1}, got {top}")
    return arrays


def read_fashion_mnist(data_dir=None) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                np.ndarray]:
    """Fashion-MNIST's arrays, checked: (x_train, y_train, x_test, y_test), 60,000 train and
    10,000 test images (uint8, shape (N, 28, 28, 1), values 0..255) with labels 0..9 (int64), in
    the files' order (the standard split; nothing is shuffled here).
    :func:`patchassoc.simulations.engines.vit.data.load_fashion_mnist` wraps them.

    Parameters
    ----------
    data_dir : path-like or None
        A folder with the four files (or with ``fashion-mnist/`` holding them); None looks in
        Debian's folder and the cache (module notes).

    Notes
    -----
    SPEC section 6, claim 6.
    """
    _, files = find_folder(data_dir)
    a = verify_folder(files)
    return (np.ascontiguousarray(a["train-images-idx3-ubyte"][..., None]),
            a["train-labels-idx1-ubyte"].astype(np.int64),
            np.ascontiguousarray(a["t10k-images-idx3-ubyte"][..., None]),
            a["t10k-labels-idx1-ubyte"].astype(np.int64))


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _describe(folder: Path, files: dict[str, Path], how: str) -> dict:
    verify_folder(files)
    default = any(folder.resolve() == p.resolve() for p in _candidates(None) if p.exists())
    return dict(data=NAME, folder=str(folder), how=how, searched_by_default=default,
                files={name: dict(path=str(p), bytes=p.stat().st_size,
                                  sha256_content=SHA256[name],
                                  debian_gz=(p.name.endswith(".gz")
                                             and _sha256_file(p) == SHA256_DEBIAN_GZ[name]))
                       for name, p in files.items()},
                n_train=N_TRAIN, n_test=N_TEST, image_shape=[SIDE, SIDE, 1])


def _run(cmd: list[str], cwd: Path, what: str) -> None:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    except FileNotFoundError as exc:
        raise RunError(f"cannot fetch Fashion-MNIST: {cmd[0]} is not installed (a Debian "
                         f"tool); {_hand_placed_hint()}") from exc
    except subprocess.TimeoutExpired as exc:
        raise RunError(f"cannot fetch Fashion-MNIST: {what} took over 10 minutes; "
                         f"{_hand_placed_hint()}") from exc
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise RunError(f"cannot fetch Fashion-MNIST: {what} failed ({last}); "
                         f"{_hand_placed_hint()}")


def _download(apt_get: str, work: Path, update: bool) -> None:
    """``apt-get download`` into ``work``; when it fails and ``update`` (as root), the package
    lists are refreshed once (``apt-get update``: a fresh machine may hold none, or stale ones)
    and the download is tried again."""
    what = f"`{apt_get} download {DEBIAN_PACKAGE}`"
    try:
        _run([apt_get, "download", DEBIAN_PACKAGE], work, what)
    except RunError:
        if not update:
            raise
        _run([apt_get, "update", "-qq"], work, f"`{apt_get} update`")
        _run([apt_get, "download", DEBIAN_PACKAGE], work, what + " (after apt-get update)")


def fetch(dest=None, apt_get: str = "apt-get", dpkg_deb: str = "dpkg-deb",
          update: bool | None = None) -> dict:
    """Make the four checked files available and say where they are.

    Looks for them first (``dest`` when given; otherwise Debian's folder and the cache); when
    they are absent, downloads Debian's package with ``apt-get download`` (no root needed) into
    a temporary folder, extracts it with ``dpkg-deb -x``, checks the four files against
    :data:`SHA256` and moves them into ``dest/fashion-mnist`` (default: the cache folder).

    Parameters
    ----------
    dest : path-like or None
        Where to put the files (``dest/fashion-mnist/``); None: the cache (:func:`cache_dir`).
    apt_get, dpkg_deb : str
        The Debian tools to call (tests pass stand-ins).
    update : bool or None
        When the download fails, refresh the package lists (``apt-get update``) and try once
        more; None (default): only when running as root, the one user who may.

    Returns
    -------
    dict
        ``folder``, ``how`` (``found`` or ``fetched``), ``searched_by_default`` (the loader finds
        the folder without ``--data-dir``) and per file its path, size, content digest and
        whether the .gz is byte-identical to Debian's.

    Raises
    ------
    RunError
        One line when the files cannot be fetched (naming the standard file names a user can
        place by hand).
    CorruptFile
        When a file found or fetched is corrupt.
    """
    places = _candidates(dest) if dest is not None else _candidates(None)
    for folder in places:
        files = _complete(folder) if folder.is_dir() else None
        if files:
            return _describe(folder, files, "found")
    target = (Path(dest).expanduser() if dest is not None else cache_dir()) / NAME
    try:
        target.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".fetch-", dir=target))
    except OSError as exc:
        raise RunError(f"cannot write to {target} ({exc.strerror or exc}); choose another "
                         f"folder with --data-dir") from exc
    try:
        _download(apt_get, work, os.geteuid() == 0 if update is None else bool(update))
        debs = sorted(work.glob(f"{DEBIAN_PACKAGE}_*.deb"))
        if not debs:
            raise RunError(f"cannot fetch Fashion-MNIST: `{apt_get} download` left no .deb; "
                             f"{_hand_placed_hint()}")
        _run([dpkg_deb, "-x", str(debs[-1]), str(work / "x")], work, f"`{dpkg_deb} -x`")
        extracted = work / "x" / _PACKAGE_PATH
        files = _complete(extracted) if extracted.is_dir() else None
        if not files:
            raise RunError(f"cannot fetch Fashion-MNIST: the package {debs[-1].name} holds no "
                             f"/{_PACKAGE_PATH}; {_hand_placed_hint()}")
        verify_folder(files)  # before anything is moved into place
        for name, path in files.items():
            os.replace(path, target / path.name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return _describe(target, _complete(target), "fetched")
