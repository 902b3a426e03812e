"""The long Fashion-MNIST recipe (SPEC section 6, claim 6; issue 38): its declared values, the
learning rate of every step (linear warm-up then cosine decay over E), the augmentation's
determinism under a seed, and a long study cut after one run that resumes from it with the same
numbers. Trained on tiny synthetic images; nothing here reads Fashion-MNIST."""
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from patchassoc.simulations.engines.vit import training  # noqa: E402
from patchassoc.simulations.engines.vit.data import ImageData  # noqa: E402
from patchassoc.simulations.engines.vit.run_store import RunStore, run_key  # noqa: E402
from patchassoc.simulations.engines.vit.training import (  # noqa: E402
    LONG_RECIPES, RECIPES, Recipe, Task, augment, recipe_for, schedule_steps, train_one)
from patchassoc.simulations.runtime.errors import UsageError  # noqa: E402
from patchassoc.simulations.studies import claim6_long  # noqa: E402

SPEC = Path(__file__).resolve().parents[2] / "docs" / "SPEC.md"


def images(n_train=48, n_test=24, side=8, seed=0, name="fashion-mnist"):
    """Random grey images with labels that depend on the left half (so a flip matters)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, size=(n_train + n_test, side, side, 1), dtype=np.uint8)
    y = (x[:, :, : side // 2, 0].mean(axis=(1, 2)) > 127.5).astype(np.int64)
    return ImageData(name, x[:n_train], y[:n_train], x[n_train:], y[n_train:], 2, 255)


TINY = Recipe(patch=4, dim=16, depth=1, heads=2, mlp_ratio=2, epochs=3, batch_size=8,
              warmup_epochs=1.0, augment="crop_flip", pad=2, cnn_width=4)


def test_the_long_recipe_is_the_declared_one():
    long, short = LONG_RECIPES["fashion-mnist"], RECIPES["fashion-mnist"]
    changed = {k: v for k, v in long.to_dict().items() if short.to_dict()[k] != v}
    assert changed == dict(epochs=18, warmup_epochs=1.8, augment="crop_flip", pad=2)
    assert schedule_steps(long, 60000) == (844, 8442)   # W = round(1.8 x 469), T = 18 x 469
    text = " ".join(SPEC.read_text().split())
    assert "E = 18 epochs of 469 steps (T = 8,442 steps)" in text
    assert "(W = round(1.8 x 469) = 844 steps" in text
    assert "random crop after zero padding by 2 pixels, then a horizontal flip" in text
    assert recipe_for("fashion-mnist", "long") == long
    with pytest.raises(UsageError, match="no long recipe for data set 'digits'"):
        recipe_for("digits", "long")


def test_the_learning_rate_warms_up_linearly_then_decays_by_a_cosine_over_e(monkeypatch):
    """The learning rate train_one hands to AdamW at every step: 6 steps per epoch (48 images,
    batch 8), 11 epochs, W = 6 warm-up steps, T = 66."""
    seen = []
    real = training._FusedAdamW.step

    def spy(self, lr):
        seen.append(lr)
        return real(self, lr)

    monkeypatch.setattr(training._FusedAdamW, "step", spy)
    recipe = replace(TINY, epochs=11, lr=1e-3, augment="none")
    train_one(images(), recipe, "positional", 0)
    W, T = schedule_steps(recipe, 48)
    assert (W, T) == (6, 66) and len(seen) == T
    lr = recipe.lr
    assert seen[0] == pytest.approx(lr / 6, rel=1e-15)
    assert seen[2] == pytest.approx(lr / 2, rel=1e-15) and seen[5] == lr
    assert seen[6] == lr                                    # cos(0) = 1 at the first decay step
    assert seen[36] == pytest.approx(lr / 2, rel=1e-15)    # halfway through the decay
    assert seen[51] == pytest.approx(lr * (1 + math.cos(0.75 * math.pi)) / 2, rel=1e-15)
    assert seen[-1] == pytest.approx(lr * (1 + math.cos(math.pi * 59 / 60)) / 2, rel=1e-15)
    assert 0 < seen[-1] < 1e-3 * lr
    assert all(a >= b for a, b in zip(seen[W:], seen[W + 1:]))   # never rises after warm-up


def test_the_augmentation_is_fixed_by_its_seed():
    x = torch.arange(2 * 1 * 6 * 6, dtype=torch.float32).reshape(2, 1, 6, 6)
    x = x.repeat(16, 1, 1, 1)
    first = augment(x, "crop_flip", 2, torch.Generator().manual_seed(3))
    again = augment(x, "crop_flip", 2, torch.Generator().manual_seed(3))
    other = augment(x, "crop_flip", 2, torch.Generator().manual_seed(4))
    assert torch.equal(first, again) and not torch.equal(first, other)
    # without padding the only change left is the flip: each image is itself or its mirror
    flips = augment(x, "crop_flip", 0, torch.Generator().manual_seed(3))
    same = (flips == x).flatten(1).all(1)
    mirrored = (flips == x.flip(3)).flatten(1).all(1)
    assert bool((same | mirrored).all()) and 0 < int(mirrored.sum()) < x.shape[0]


def _batches(monkeypatch, data, seed, model="positional"):
    """The augmented mini-batches train_one feeds the model, in order."""
    seen = []
    real = training.augment

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        seen.append(out.clone())
        return out

    monkeypatch.setattr(training, "augment", spy)
    run = train_one(data, TINY, model, seed, curve=True)
    monkeypatch.setattr(training, "augment", real)
    return seen, run


def test_the_same_seed_gives_the_same_batches_bit_for_bit(monkeypatch):
    data = images()
    a, run_a = _batches(monkeypatch, data, 0)
    b, run_b = _batches(monkeypatch, data, 0)
    c, _ = _batches(monkeypatch, data, 1)
    paired, _ = _batches(monkeypatch, data, 0, model="content")
    assert len(a) == 3 * 6 and all(torch.equal(u, v) for u, v in zip(a, b))
    assert all(torch.equal(u, v) for u, v in zip(a, paired))   # every model of a seed: paired
    assert not any(torch.equal(u, v) for u, v in zip(a, c))
    np.testing.assert_array_equal(run_a.train_loss, run_b.train_loss)
    np.testing.assert_array_equal(run_a.test_accuracy, run_b.test_accuracy)
    assert run_a.test_accuracy.shape == (3,) and run_a.test_accuracy[-1] == run_a.accuracy


def test_measuring_the_curve_changes_no_training_number():
    data = images()
    with_curve = train_one(data, TINY, "content", 2, curve=True)
    without = train_one(data, TINY, "content", 2)
    np.testing.assert_array_equal(with_curve.train_loss, without.train_loss)
    np.testing.assert_array_equal(with_curve.attention, without.attention)
    assert with_curve.accuracy == without.accuracy and without.test_accuracy is None


def _study(tmp_path, name, monkeypatch, data):
    monkeypatch.setattr(claim6_long, "load_dataset", lambda *a, **k: data)
    return claim6_long.run_long(tmp_path / name, seeds=2, control_seeds=1, jobs=1, threads=1,
                                epochs=2, dim=16, depth=1, heads=2, batch_size=8, cnn_width=4)


def test_a_long_study_cut_after_one_run_resumes_from_it_with_the_same_numbers(tmp_path,
                                                                              monkeypatch):
    data = images(side=28, n_train=32, n_test=16)
    whole = _study(tmp_path, "whole", monkeypatch, data).summary
    real = training.run_tasks

    def cut(data_, tasks, *args, **kwargs):   # the first run finishes, then Ctrl-C
        real(data_, tasks[:1], *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "run_tasks", cut)
    with pytest.raises(KeyboardInterrupt):
        _study(tmp_path, "cut", monkeypatch, data)
    runs = sorted(p.name for p in (tmp_path / "cut" / "runs").iterdir())
    assert runs == ["content-seed0"] and not (tmp_path / "cut" / "summary.json").exists()
    asked = dict(seeds=2, control_seeds=1, epochs=2, dim=16, depth=1, heads=2, batch_size=8,
                 cnn_width=4)
    st = claim6_long.status(tmp_path / "cut", **asked)
    assert (st["finished"], st["total"], st["gap"]) == (1, 7, None)
    assert st["runs"][0]["accuracy"] == whole["content"]["per_seed"][0]
    trained = []

    def spy(data_, tasks, *args, **kwargs):
        trained.extend(tasks)
        return real(data_, tasks, *args, **kwargs)

    monkeypatch.setattr(training, "run_tasks", spy)
    resumed = _study(tmp_path, "cut", monkeypatch, data).summary
    assert len(trained) == 6 and ("content", 0) not in [(t.model, t.seed) for t in trained]
    assert resumed["cost"]["runs_reused"] == 1 and resumed["cost"]["runs_trained"] == 6
    for m in ("content", "positional", "uniform", "none", "cnn"):
        assert resumed[m]["per_seed"] == whole[m]["per_seed"]
        for k in ("train_loss_per_seed", "test_accuracy_per_seed"):
            assert resumed["curves"]["models"][m][k] == whole["curves"]["models"][m][k]
    assert resumed["gap_positional"] == whole["gap_positional"]
    st = claim6_long.status(tmp_path / "cut", **asked)
    assert st["finished"] == 7 and st["gap"] == whole["gap_positional"]
    assert claim6_long.status(tmp_path / "cut", **dict(asked, epochs=3))["finished"] == 0
    assert [t.model for t in claim6_long.long_tasks(TINY, [0, 1], [0])] == [
        "content", "positional", "content", "positional", "uniform", "cnn", "none"]
    assert whole["claim6"]["status"] == "preview"    # a tiny run never decides


def test_a_saved_run_of_another_recipe_is_refused_not_overwritten(tmp_path):
    data = images()
    task = Task("positional", 0, None, TINY)
    run = train_one(data, TINY, "positional", 0, curve=True)
    store = RunStore(tmp_path)
    key = run_key(task, data, "cpu", 1, True, torch.__version__)
    store.save(task, run, key)
    back = store.load(task, key)
    assert back.accuracy == run.accuracy
    np.testing.assert_array_equal(back.test_accuracy, run.test_accuracy)
    other = dict(key, recipe=dict(key["recipe"], epochs=4))
    with pytest.raises(UsageError, match="recipe epochs differs: saved 3, asked 4") as err:
        store.load(task, other)
    assert "\n" not in str(err.value) and str(store.path(task)) in str(err.value)
    (store.path(task) / "arrays.npz").write_bytes(b"cut")   # cut while being written
    assert store.load(task, key) is None


@pytest.mark.parametrize("args, message", [
    (["--data", "digits", "--recipe", "long"], "no long recipe for data set 'digits'"),
    (["--data", "fashion-mnist", "--recipe", "long", "--shuffle", "4"],
     "--shuffle: the long recipe runs no shuffled-patch experiment"),
    (["--data", "fashion-mnist", "--recipe", "long", "--seeds", "2", "--control-seeds", "3"],
     "--control-seeds 3 > --seeds 2"),
    (["--data", "digits", "--control-seeds", "2"], "--control-seeds is for --recipe long"),
])
def test_a_bad_long_request_is_one_line_and_status_2(tmp_path, capsys, monkeypatch, args,
                                                     message):
    from patchassoc.cli.main import main

    monkeypatch.setattr(claim6_long, "load_dataset", lambda *a, **k: images(side=28))
    assert main(["vit", *args, "--quiet", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
