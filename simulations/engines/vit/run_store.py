"""Finished training runs saved one by one, so that a long study cut short resumes from them.

A :class:`RunStore` keeps each finished run of a study in its own result folder,
``<study>/runs/<model>-seed<seed>/`` (written by
:func:`~patchassoc.simulations.runtime.results.save_folder`: its manifest is written last, so a
run whose saving was cut is never read back). Beside the run's numbers it stores its key
(:func:`run_key`): everything the run's numbers depend on, namely the model, the seed, the
shuffle block, the recipe, the data set and its sizes, the device, the number of torch threads,
the torch version and whether the per-epoch test accuracy was measured. A saved run is reused
only when its key equals the key of the run asked for, so a resumed study gives the numbers an
uncut one gives; a saved run with another key is refused (one error line naming its folder),
never overwritten. A run folder that cannot be read (cut while being written) is trained again.

References
----------
SPEC section 6, claim 6 (the long Fashion-MNIST recipe: "each run is saved when it finishes").
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from patchassoc.simulations.engines.vit.data import ImageData
from patchassoc.simulations.runtime.errors import CorruptFile, UsageError
from patchassoc.simulations.runtime.results import load_folder, save_folder

__all__ = ["run_key", "RunStore", "RUNS"]

#: The subfolder of a study that holds its runs.
RUNS = "runs"


def run_key(task, data: ImageData, device: str, threads: int, curve: bool,
            torch_version: str) -> dict:
    """What a run's numbers depend on (JSON-ready): its task (model, seed, shuffle block,
    recipe), the data set's name and sizes, the device, the torch threads, the torch version and
    ``curve`` (the per-epoch test accuracy measured)."""
    return dict(model=task.model, seed=int(task.seed),
                block=None if task.block is None else int(task.block),
                recipe=task.recipe.to_dict(), data=data.name,
                n_train=int(data.x_train.shape[0]), n_test=int(data.x_test.shape[0]),
                device=str(device), torch_threads=int(threads), curve=bool(curve),
                torch_version=str(torch_version))


def _difference(saved, key: dict) -> str:
    """The first field (a recipe's field by name) whose saved value differs from ``key``'s."""
    saved = saved if isinstance(saved, dict) else {}
    for k, want in key.items():
        have = saved.get(k)
        if have == want:
            continue
        if isinstance(want, dict) and isinstance(have, dict):
            sub = next((f for f in want if have.get(f) != want[f]), None)
            if sub is not None:
                return f"{k} {sub} differs: saved {have.get(sub)!r}, asked {want[sub]!r}"
        return f"{k} differs: saved {have!r}, asked {want!r}"
    return "its key differs"


class RunStore:
    """The saved runs of one study folder.

    Parameters
    ----------
    folder : path-like
        The study folder; runs go to its ``runs/`` subfolder.
    """

    def __init__(self, folder) -> None:
        self.folder = Path(folder) / RUNS

    def path(self, task) -> Path:
        """The folder of ``task``'s run."""
        block = "" if task.block is None else f"-block{int(task.block)}"
        return self.folder / f"{task.model}-seed{int(task.seed)}{block}"

    def save(self, task, outcome, key: dict) -> Path:
        """Save a finished run (its numbers, maps and key)."""
        arrays = dict(train_loss=np.asarray(outcome.train_loss, dtype=np.float64))
        if outcome.test_accuracy is not None:
            arrays["test_accuracy"] = np.asarray(outcome.test_accuracy, dtype=np.float64)
        if outcome.attention is not None:
            arrays["attention"] = np.asarray(outcome.attention)
        if outcome.pos is not None:
            arrays["pos"] = np.asarray(outcome.pos)
        metrics = dict(attention_kind=outcome.attention_kind, seed=int(outcome.seed),
                       accuracy=float(outcome.accuracy), n_params=int(outcome.n_params),
                       wall_s=float(outcome.wall_s), cpu_s=float(outcome.cpu_s))
        return save_folder(self.path(task), dict(key=key), metrics, arrays)

    def load(self, task, key: dict):
        """The saved run of ``task`` when its key is ``key``; None when there is none (or its
        folder cannot be read: it was cut while being written).

        Raises
        ------
        UsageError
            A run of ``task`` is saved there with another key (another recipe, data set, device,
            thread count or torch version): one line naming its folder and the first field that
            differs.
        """
        from patchassoc.simulations.engines.vit.training import RunOutcome

        folder = self.path(task)
        if not (folder / "manifest.json").is_file():
            return None
        try:
            config, metrics, arrays = load_folder(folder)
        except (CorruptFile, OSError, ValueError):
            return None
        saved = config.get("key")
        if saved != key:
            raise UsageError(f"{folder} holds a run of another study ({_difference(saved, key)});"
                             f" use another --out, or remove that folder")
        return RunOutcome(metrics["attention_kind"], int(metrics["seed"]),
                          float(metrics["accuracy"]), arrays["train_loss"],
                          arrays.get("attention"), int(metrics["n_params"]),
                          float(metrics["wall_s"]), float(metrics["cpu_s"]), arrays.get("pos"),
                          arrays.get("test_accuracy"))
