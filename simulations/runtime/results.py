"""Saving and loading results: a folder with ``config.json``, ``metrics.json`` and
``arrays.npz``. Every write is atomic (a temporary file in the same folder, then
:func:`os.replace`), so an interrupted run never leaves a half-written file behind.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np

__all__ = ["atomic_write_bytes", "atomic_write_text", "write_json", "read_json", "write_arrays",
           "read_arrays", "save_folder", "load_folder", "to_jsonable"]


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def to_jsonable(obj: Any) -> Any:
    """Convert NumPy scalars/arrays (recursively) into plain JSON types."""
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not np.isfinite(obj):
        return None if np.isnan(obj) else (1e308 if obj > 0 else -1e308)
    return obj


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(to_jsonable(obj), indent=2, sort_keys=True) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def write_arrays(path: str | os.PathLike, arrays: Mapping[str, np.ndarray]) -> Path:
    import io
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return atomic_write_bytes(path, buf.getvalue())


def read_arrays(path: str | os.PathLike) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def save_folder(folder: str | os.PathLike, config: Mapping[str, Any], metrics: Mapping[str, Any],
                arrays: Mapping[str, np.ndarray]) -> Path:
    """Write a result folder: config.json, metrics.json, arrays.npz."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_arrays(folder / "arrays.npz", arrays)
    write_json(folder / "config.json", config)
    write_json(folder / "metrics.json", metrics)
    return folder


def load_folder(folder: str | os.PathLike) -> tuple[dict, dict, dict[str, np.ndarray]]:
    """Read back (config, metrics, arrays) written by :func:`save_folder`."""
    folder = Path(folder)
    missing = [n for n in ("config.json", "metrics.json", "arrays.npz") if not (folder / n).exists()]
    if missing:
        raise FileNotFoundError(f"{folder} is not a result folder (missing {', '.join(missing)})")
    return (read_json(folder / "config.json"), read_json(folder / "metrics.json"),
            read_arrays(folder / "arrays.npz"))
