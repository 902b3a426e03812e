"""``--device cuda``: the declared tolerance against the CPU (SPEC section 6, claim 6), where a
CUDA device exists, and the one-line refusal where none does.

Bit equality with the CPU does not hold on a GPU (matrix products and reductions sum in another
order); the declared tolerance is on the initial loss and the first step's gradients, with TF32
off."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from patchassoc.simulations.engines.vit.models import (CNNConfig, build_cnn,  # noqa: E402
                                                       build_model)
from patchassoc.simulations.engines.vit.training import (_float32_on, patchify,  # noqa: E402
                                                         recipe_for)

from .tolerances import CUDA_REL  # noqa: E402

HAS_CUDA = torch.cuda.is_available()


def _first_step(model, inputs, labels, device):
    """(loss, {name: gradient}) of one forward/backward pass on ``device``."""
    model = model.to(device)
    model.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(inputs.to(device)), labels.to(device))
    loss.backward()
    return float(loss.detach()), {n: p.grad.detach().double().cpu().numpy()
                         for n, p in model.named_parameters()}


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device here: the CPU/GPU tolerance of SPEC "
                                         "section 6 (claim 6) is tested only where CUDA exists")
@pytest.mark.parametrize("kind", ["content", "positional", "cnn"])
def test_the_first_step_on_cuda_matches_the_cpu_within_the_declared_tolerance(kind):
    _float32_on(torch.device("cuda"))
    recipe = recipe_for("fashion-mnist")
    gen = torch.Generator().manual_seed(0)
    images = torch.randn(64, 1, 28, 28, generator=gen)
    labels = torch.randint(0, 10, (64,), generator=gen)
    if kind == "cnn":
        make, inputs = (lambda: build_cnn(CNNConfig(1, 28, 10, recipe.cnn_width), 0)), images
    else:
        cfg = recipe.model_config(49, 16, 10, kind)
        make, inputs = (lambda: build_model(cfg, 0)), patchify(images, recipe.patch)
    loss_cpu, g_cpu = _first_step(make(), inputs, labels, "cpu")
    loss_gpu, g_gpu = _first_step(make(), inputs, labels, "cuda")
    assert abs(loss_gpu - loss_cpu) <= CUDA_REL * abs(loss_cpu)
    for name, g in g_cpu.items():
        scale = np.abs(g).max()
        assert np.abs(g_gpu[name] - g).max() <= CUDA_REL * scale, name


@pytest.mark.skipif(HAS_CUDA, reason="a CUDA device exists here: the refusal is for machines "
                                     "without one")
def test_device_cuda_without_cuda_is_one_line_and_status_2(tmp_path, capsys):
    pytest.importorskip("sklearn")
    from patchassoc.cli.main import main

    assert main(["vit", "--device", "cuda", "--seeds", "2", "--max-train", "32", "--quiet",
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("patchassoc: error: ") and "no CUDA" in err[0]


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device here: the long recipe on CUDA is tested "
                                         "only where CUDA exists")
def test_the_long_recipe_runs_on_cuda_with_the_cpus_augmentation_draws(monkeypatch):
    """``--recipe long --device cuda`` runs the same recipe: the crop and flip are drawn on the
    CPU from the run's generator, so a CUDA run sees the CPU run's batches bit for bit; its
    numbers are another draw within the declared tolerance (SPEC section 6, claim 6)."""
    from dataclasses import replace

    from patchassoc.simulations.engines.vit import training
    from .test_vit_long import TINY, images

    seen = {"cpu": [], "cuda": []}
    real = training.augment
    for device in ("cpu", "cuda"):
        def spy(*args, _device=device, **kwargs):
            out = real(*args, **kwargs)
            seen[_device].append(out.clone().cpu())
            return out

        monkeypatch.setattr(training, "augment", spy)
        run = training.train_one(images(side=28), replace(TINY, epochs=2), "positional", 0,
                                 device, curve=True)
        assert np.isfinite(run.train_loss).all() and run.test_accuracy.shape == (2,)
    assert len(seen["cpu"]) == len(seen["cuda"]) > 0
    assert all(torch.equal(a, b) for a, b in zip(seen["cpu"], seen["cuda"]))


@pytest.mark.skipif(HAS_CUDA, reason="a CUDA device exists here: the refusal is for machines "
                                     "without one")
def test_the_long_recipe_on_cuda_without_cuda_is_one_line_and_status_2(tmp_path, capsys,
                                                                       monkeypatch):
    from patchassoc.cli.main import main
    from patchassoc.simulations.studies import claim6_long

    from .test_vit_long import images

    monkeypatch.setattr(claim6_long, "load_dataset", lambda *a, **k: images(side=28))
    assert main(["vit", "--data", "fashion-mnist", "--recipe", "long", "--device", "cuda",
                 "--quiet", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("patchassoc: error: ") and "no CUDA" in err[0]
