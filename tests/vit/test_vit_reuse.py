"""The ViT step's cost savings change no number: the direct fused AdamW is torch's AdamW bit for
bit, a training equals the textbook loop (torch's optimizer and scheduler, patches cut per batch)
bit for bit, a B = 8 "shuffle" of the 8 x 8 digits is the unshuffled run (so the study trains it
once and reports it in both tables); and the step's worker count follows ``PATCHASSOC_JOBS``;
a run smaller than claim 6's declared study is a preview."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")

from torch import nn  # noqa: E402

from patchassoc.simulations.runtime.errors import UsageError  # noqa: E402
from patchassoc.simulations.engines.vit.data import block_permutation  # noqa: E402
from patchassoc.simulations.engines.vit.models import CNNConfig, build_cnn, build_model  # noqa: E402
from patchassoc.simulations.engines.vit.training import (  # noqa: E402
    CNN_WIDTH, Task, _FusedAdamW, _lr_factor, _seeds, patchify, prepare, recipe_for, shuffle_for,
    study, train_one)

TINY = dict(dim=16, depth=1, heads=2, epochs=2, batch_size=64)


def test_fused_adamw_is_torchs_adamw_bit_for_bit():
    """Two parameter groups (decay and none), a warm-up/cosine schedule, and a parameter that
    gets no gradient on some steps (torch skips it and does not advance its step count)."""
    gen = torch.Generator().manual_seed(0)
    make = lambda: [torch.randn(5, 3, generator=gen), torch.randn(3, generator=gen),  # noqa
                    torch.randn(4, generator=gen)]
    init = make()
    data = [torch.randn(7, 5, generator=gen) for _ in range(6)]
    mine = [p.clone().requires_grad_() for p in init]
    ref = [p.clone().requires_grad_() for p in init]
    warmup, total = 2, 6
    opt = _FusedAdamW([(mine[:1], 0.05), (mine[1:], 0.0)])
    topt = torch.optim.AdamW([{"params": ref[:1], "weight_decay": 0.05},
                              {"params": ref[1:], "weight_decay": 0.0}], lr=3e-2, fused=True)
    sched = torch.optim.lr_scheduler.LambdaLR(topt, lambda s: _lr_factor(s, warmup, total))

    def loss(ps, x, step):
        out = (x @ ps[0] + ps[1]).tanh().sum()
        return out + (ps[2] ** 2).sum() if step % 3 else out  # ps[2]: no gradient every third

    for step, x in enumerate(data):
        opt.zero_grad()
        loss(mine, x, step).backward()
        opt.step(3e-2 * _lr_factor(step, warmup, total))
        topt.zero_grad(set_to_none=True)
        loss(ref, x, step).backward()
        topt.step()
        sched.step()
        for a, b in zip(mine, ref):
            assert torch.equal(a, b), step
    assert not torch.equal(mine[0], init[0])  # the test moved the weights
    steps = [float(topt.state[p]["step"]) for p in ref]
    assert steps == [6.0, 6.0, 4.0]


def _reference_run(data, recipe, kind, seed, perm=None):
    """The training as written with torch's AdamW(fused=True) and LambdaLR, the images indexed
    and cut into patches on every batch (the loop before the savings)."""
    x_train, y_train, x_test, y_test = prepare(data)
    H, W, C = data.image_shape
    D = (H // recipe.patch) * (W // recipe.patch)
    perm = torch.arange(D) if perm is None else torch.as_tensor(perm)
    init_seed, order_seed = _seeds(seed)
    model = (build_cnn(CNNConfig(C, H, data.n_classes, CNN_WIDTH), init_seed) if kind == "cnn"
             else build_model(recipe.model_config(D, C * recipe.patch ** 2, data.n_classes,
                                                  kind), init_seed))
    order = torch.Generator().manual_seed(order_seed)
    n = x_train.shape[0]
    spe = math.ceil(n / recipe.batch_size)
    total, warmup = spe * recipe.epochs, int(round(recipe.warmup_epochs * spe))
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim < 2 or "norm" in name or name == "pos" else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": recipe.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=recipe.lr,
                            fused=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _lr_factor(s, warmup, total))
    losses = []
    for _ in range(recipe.epochs):
        idx = torch.randperm(n, generator=order)
        tot = 0.0
        for start in range(0, n, recipe.batch_size):
            b = idx[start:start + recipe.batch_size]
            xb = x_train[b] if kind == "cnn" else patchify(x_train[b], recipe.patch)[:, perm]
            loss = nn.functional.cross_entropy(model(xb), y_train[b])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            tot += float(loss.detach()) * b.numel()
        losses.append(tot / n)
    return model, np.array(losses)


@pytest.mark.parametrize("kind, permuted", [("positional", True), ("content", False),
                                            ("cnn", False)])
def test_a_training_is_the_textbook_loop_bit_for_bit(digits, kind, permuted):
    recipe = recipe_for("digits", **TINY)
    perm = np.random.default_rng(1).permutation(16) if permuted else None
    model, losses = _reference_run(digits, recipe, kind, seed=2, perm=perm)
    out = train_one(digits, recipe, kind, seed=2, permutation=perm)
    np.testing.assert_array_equal(out.train_loss, losses)
    assert losses[-1] < losses[0]
    if kind != "cnn":
        np.testing.assert_array_equal(out.pos, model.pos.detach().double().numpy())


def test_a_b8_shuffle_of_8x8_images_is_the_unshuffled_run(digits):
    """Trained on its own through the shuffle code path, a B = 8 run has the unshuffled run's
    accuracy, loss curve, weights (positional encodings) and attention."""
    recipe = recipe_for("digits", **TINY)
    sigma = block_permutation((8, 8), 8, seed=0)
    assert sigma.tolist() == [0]
    shuffled = digits.shuffled(8, sigma)
    np.testing.assert_array_equal(shuffled.x_train, digits.x_train)
    same, none_sigma, tau = shuffle_for(digits, 8, 0, recipe.patch)
    assert same is digits and none_sigma is None and tau.tolist() == list(range(16))
    for kind in ("positional", "content"):
        a = train_one(digits, recipe, kind, seed=1)
        b = train_one(shuffled, recipe, kind, seed=1)
        assert a.accuracy == b.accuracy
        np.testing.assert_array_equal(a.train_loss, b.train_loss)
        np.testing.assert_array_equal(a.pos, b.pos)
        np.testing.assert_array_equal(a.attention, b.attention)


def test_the_study_trains_the_b8_vit_cells_once_and_reports_them_in_both_tables(digits):
    recipe = recipe_for("digits", **dict(TINY, epochs=1))
    done = []
    kwargs = dict(kinds=("content", "positional"), blocks=(4, 8),
                  shuffle_models=("positional", "content", "cnn"))
    vit, sh = study(digits, recipe, [0, 1], on_done=lambda t, o: done.append(t), **kwargs)
    # 2 kinds x 2 seeds, plus 3 models x 2 blocks x 2 seeds, minus the 2 x 2 ViT cells at B = 8
    assert len(done) == len(set(done)) == 4 + 12 - 4
    assert Task("positional", 0, None, recipe) in done
    j = sh.meta["blocks"].index(8)
    for i, kind in enumerate(("positional", "content")):
        k = list(vit.meta["kinds"]).index(kind)
        np.testing.assert_array_equal(sh.accuracy[i, j], vit.accuracy[k])
        np.testing.assert_array_equal(sh.pos[i, j], vit.pos[k])
        np.testing.assert_array_equal(sh.attention[i, j], vit.attention[k])
    assert not np.array_equal(sh.pos[0, 0], vit.pos[1])  # B = 4 is another run
    # a different recipe for the experiment shares nothing with the comparison
    done.clear()
    study(digits, recipe, [0, 1], shuffle_recipe=recipe_for("digits", **dict(TINY, epochs=2)),
          on_done=lambda t, o: done.append(t), **kwargs)
    assert len(done) == 4 + 12


def test_worker_count_follows_patchassoc_jobs(monkeypatch):
    import os

    from patchassoc.simulations.studies.claim6_vit import default_jobs, default_threads

    monkeypatch.delenv("PATCHASSOC_JOBS", raising=False)
    assert default_jobs("digits", "cpu") == min(2, os.cpu_count() or 1)
    assert default_jobs("cifar10", "cpu") == 1
    assert default_threads("digits") == 1
    assert default_threads("cifar10") == max(1, os.cpu_count() or 1)
    monkeypatch.setenv("PATCHASSOC_JOBS", "1")
    assert default_jobs("digits", "cpu") == 1
    monkeypatch.setenv("PATCHASSOC_JOBS", "3")
    assert default_jobs("digits", "cpu") == 3 and default_jobs("cifar10", "cpu") == 3
    assert default_threads("cifar10") == 1  # one torch thread per worker
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("PATCHASSOC_JOBS", bad)
        with pytest.raises(UsageError, match="PATCHASSOC_JOBS must be a positive integer"):
            default_jobs("digits", "cpu")


def test_a_run_smaller_than_the_declared_study_is_a_preview():
    from patchassoc.simulations.studies.claim6_vit import claim6, preview_reasons
    from patchassoc.simulations.studies.claim6_vit import readings as figure_readings
    from patchassoc.simulations.engines.vit.training import RECIPES

    def ci(mean, half, n=5):
        return dict(mean=mean, ci_low=mean - half, ci_high=mean + half, half_width=half, n=n)

    declared = {"data": "digits", "n_train": 1347, "seeds": [0, 1, 2, 3, 4],
                "recipe": RECIPES["digits"].to_dict(), "content": {"accuracy": ci(0.96, 0.01)},
                "positional": {"accuracy": ci(0.965, 0.01),
                               "attention_distance_per_layer": [1.9, 2.0]},
                "gap_positional": ci(0.005, 0.01), "uniform_attention_distance": 2.01}
    assert preview_reasons(declared) == []
    c = claim6(declared)
    assert c["passed"] and "status" not in c
    quick = dict(declared, n_train=256, seeds=[0, 1], gap_positional=ci(0.005, 0.01, n=2),
                 recipe=dict(declared["recipe"], epochs=2))
    assert preview_reasons(quick) == ["256 of 1347 training images", "epochs 2 (declared 30)",
                                      "2 seeds (declared 5)"]
    c = claim6(quick)
    assert c["status"] == "preview" and c["detail"].startswith("A pipeline check, not a result")
    quick["claim6"] = c
    text = figure_readings(quick)["vit_attention"]
    assert text.startswith("A pipeline check, not a result") and "no verdict" in text
    assert preview_reasons(dict(quick, data="cifar10")) == []  # no declared study there


def test_the_command_takes_its_worker_count_from_patchassoc_jobs(tmp_path, capsys, monkeypatch):
    import json

    from patchassoc.cli.main import main

    monkeypatch.setenv("PATCHASSOC_JOBS", "1")  # without it: 2 workers on a 2-core machine
    status = main(["vit", "--no-shuffle", "--epochs", "1", "--dim", "16", "--depth", "1",
                   "--heads", "2", "--seeds", "2", "--max-train", "64", "--quiet", "--json",
                   "--out", str(tmp_path / "o")])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    s = json.loads(captured.out)
    assert s["jobs"] == 1 and s["torch_threads"] == 1
    assert s["claim6"]["status"] == "preview"
