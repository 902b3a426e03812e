"""Training of the ViTs: patchify layout, augmentation, a few tiny training steps, determinism,
the paired comparison and its saved result."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")

from patchassoc.simulations.runtime.errors import UsageError  # noqa: E402
from patchassoc.simulations.engines.vit.data import token_permutation  # noqa: E402
from patchassoc.simulations.engines.vit.comparison import ViTResult  # noqa: E402
from patchassoc.simulations.engines.vit.training import (augment, compare, patchify, prepare, recipe_for,  # noqa: E402
                                              shuffle_for, train_one)

from .tolerances import ROW_SUM_ABS_F32, SAVED_ATTENTION_ABS  # noqa: E402

#: A recipe small enough for a test: a handful of steps on a couple hundred digits.
TINY = dict(dim=16, depth=1, heads=2, epochs=2, batch_size=64)


def test_patchify_is_row_major_over_the_grid():
    x = torch.arange(2 * 3 * 4 * 6, dtype=torch.float32).reshape(2, 3, 4, 6)  # B, C, H, W
    tokens = patchify(x, 2)
    assert tokens.shape == (2, 6, 12)  # a 2 x 3 grid of 2x2 patches of 3 channels
    for b, r, c in [(0, 0, 0), (1, 1, 2), (0, 1, 1)]:
        expected = x[b, :, 2 * r:2 * r + 2, 2 * c:2 * c + 2].reshape(-1)
        assert torch.equal(tokens[b, r * 3 + c], expected)
    with pytest.raises(ValueError, match="must divide"):
        patchify(x, 3)


def test_augmentation():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(16, 3, 8, 8, generator=g)
    assert augment(x, "none", 4, g) is x
    assert torch.equal(augment(x, "crop", 0, g), x)  # no padding: the only crop is the image
    flipped = augment(x, "crop_flip", 0, g)
    same = [torch.equal(flipped[i], x[i]) for i in range(16)]
    mirrored = [torch.equal(flipped[i], x[i].flip(-1)) for i in range(16)]
    assert all(s or m for s, m in zip(same, mirrored)) and any(mirrored) and any(same)
    a = augment(x, "crop", 2, torch.Generator().manual_seed(7))
    b = augment(x, "crop", 2, torch.Generator().manual_seed(7))
    assert torch.equal(a, b) and a.shape == x.shape
    # a crop is a shifted window of the zero-padded image: every row is found in the padding
    pad = torch.nn.functional.pad(x, (2, 2, 2, 2))
    for i in range(4):
        hits = [(dy, dx) for dy in range(5) for dx in range(5)
                if torch.equal(pad[i, :, dy:dy + 8, dx:dx + 8], a[i])]
        assert hits


def test_prepare_standardizes_with_training_statistics(digits):
    x_train, y_train, x_test, y_test = prepare(digits)
    assert x_train.shape == (192, 1, 8, 8) and x_train.dtype == torch.float32
    assert abs(float(x_train.mean())) < 1e-5 and abs(float(x_train.std()) - 1) < 1e-2
    assert torch.equal(y_test, torch.from_numpy(digits.y_test))


def test_a_few_steps_fit_a_small_batch(digits):
    """Training works: on 32 images, 30 full-batch steps cut the training loss by a fifth
    (from about log 10 = 2.30: the 0.02-scale initialization starts near uniform outputs)."""
    recipe = recipe_for("digits", dim=16, depth=1, heads=2, epochs=30, batch_size=32,
                        lr=1e-2, warmup_epochs=0)
    small = digits.subset(n_train=32)
    for kind in ("content", "positional"):
        out = train_one(small, recipe, kind, seed=0)
        assert abs(out.train_loss[0] - np.log(10)) < 0.05
        assert out.train_loss[-1] < 0.8 * out.train_loss[0]


@pytest.mark.parametrize("kind", ["content", "positional", "logits"])
def test_training_is_deterministic_and_records_attention(digits, kind):
    recipe = recipe_for("digits", **TINY)
    a = train_one(digits, recipe, kind, seed=3)
    b = train_one(digits, recipe, kind, seed=3)
    assert a.accuracy == b.accuracy
    np.testing.assert_array_equal(a.train_loss, b.train_loss)
    np.testing.assert_array_equal(a.attention, b.attention)
    assert a.attention.shape == (1, 2, 16, 16)
    assert np.abs(a.attention.sum(-1) - 1).max() <= ROW_SUM_ABS_F32
    assert 0.0 <= a.accuracy <= 1.0 and a.train_loss.shape == (2,)
    c = train_one(digits, recipe, kind, seed=4)
    assert not np.array_equal(a.train_loss, c.train_loss)


def test_compare_pairs_seeds_and_round_trips(digits, tmp_path):
    recipe = recipe_for("digits", **TINY)
    res = compare(digits, recipe, seeds=[0, 1], shuffle=2)
    assert res.accuracy.shape == (2, 2) and res.train_loss.shape == (2, 2, 2)
    assert res.attention.shape == (2, 2, 1, 2, 16, 16) and res.pos.shape == (2, 2, 16, 16)
    shuffled, sigma, tau = shuffle_for(digits, 2, 0, 2)
    np.testing.assert_array_equal(res.permutation, tau)
    np.testing.assert_array_equal(tau, token_permutation((8, 8), 2, sigma, 2))
    s = res.summary()
    diffs = res.accuracy_of("positional") - res.accuracy_of("content")
    assert s["gap_positional"]["mean"] == pytest.approx(diffs.mean(), abs=1e-15)
    assert s["content"]["accuracy"]["mean"] == pytest.approx(res.accuracy[0].mean(), abs=1e-15)
    # grid_attention undoes the permutation: entry (perm[i], perm[j]) is token entry (i, j)
    p = res.permutation
    G, T = res.grid_attention("positional"), res.attention_of("positional")
    assert G[0, 0, 1, p[3], p[5]] == T[0, 0, 1, 3, 5]
    # the positional run is the same whatever the other kind trained beside it
    alone = train_one(shuffled, recipe, "positional", 1)
    assert alone.accuracy == res.accuracy_of("positional")[1]
    np.testing.assert_array_equal(alone.pos, res.pos[1, 1])
    res.save(tmp_path / "r")
    back = ViTResult.load(tmp_path / "r")
    np.testing.assert_array_equal(back.accuracy, res.accuracy)
    np.testing.assert_allclose(back.attention, res.attention, rtol=0, atol=SAVED_ATTENTION_ABS)
    np.testing.assert_array_equal(back.pos, res.pos)
    assert back.meta["seeds"] == [0, 1] and back.meta["permuted"] is True
    assert back.meta["shuffle_block"] == 2 and back.meta["block_permutation"] == sigma.tolist()


def test_parallel_workers_give_the_same_numbers(digits):
    recipe = recipe_for("digits", dim=16, depth=1, heads=2, epochs=1, batch_size=64)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        serial = compare(digits, recipe, seeds=[5], jobs=1)
        parallel = compare(digits, recipe, seeds=[5], jobs=2)  # one worker per model kind
    finally:
        torch.set_num_threads(threads)
    np.testing.assert_array_equal(serial.accuracy, parallel.accuracy)
    np.testing.assert_array_equal(serial.train_loss, parallel.train_loss)
    np.testing.assert_array_equal(serial.attention, parallel.attention)
    assert parallel.meta["jobs"] == 2 and serial.meta["jobs"] == 1


def test_bad_input(digits):
    recipe = recipe_for("digits", **TINY)
    with pytest.raises(UsageError, match="at least one seed"):
        compare(digits, recipe, seeds=[])
    with pytest.raises(ValueError, match="permutation"):
        train_one(digits, recipe, "content", 0, permutation=np.zeros(16, dtype=int))
    with pytest.raises(ValueError, match="augment"):
        recipe_for("digits", augment="mixup")
    with pytest.raises(UsageError, match="no CUDA|cpu or cuda"):
        compare(digits, recipe, seeds=[0], device="tpu")
