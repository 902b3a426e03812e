"""The shuffled-patch experiment's bookkeeping: the block shuffle is a seeded bijection with an
inverse, it moves whole patches as the token permutation says, the locality statistic and its
z-score on maps whose answer is known, the summary's paired intervals, the command's JSON keys,
and bad ``--shuffle`` values."""
import json

import numpy as np
import pytest
from scipy import stats

from patchassoc.simulations.runtime.errors import UsageError
from patchassoc.simulations.engines.vit.data import (block_permutation, check_block, default_blocks,
                                             shuffle_blocks, token_permutation,
                                             unshuffle_blocks)
from patchassoc.simulations.engines.vit.comparison import ShuffleResult
from patchassoc.simulations.engines.vit.locality_stats import (cosine_gram, locality_z, topk_distance,
                                              undo_permutation)

from .tolerances import CI_REL


def _images(n=3, side=8, channels=2, seed=0):
    return np.random.default_rng(seed).integers(0, 256, size=(n, side, side, channels),
                                                dtype=np.uint8)


@pytest.mark.parametrize("block", [1, 2, 4])
def test_block_shuffle_is_a_seeded_bijection_and_invertible(block):
    x = _images()
    sigma = block_permutation((8, 8), block, seed=3)
    n = (8 // block) ** 2
    np.testing.assert_array_equal(np.sort(sigma), np.arange(n))
    assert not np.any(sigma == np.arange(n))  # a derangement: every block moves
    np.testing.assert_array_equal(sigma, block_permutation((8, 8), block, seed=3))
    assert not np.array_equal(sigma, block_permutation((8, 8), block, seed=4))
    y = shuffle_blocks(x, block, sigma)
    np.testing.assert_array_equal(unshuffle_blocks(y, block, sigma), x)
    # output block k is input block sigma[k], for every image and channel
    g = 8 // block
    for k in range(n):
        (r, c), (r0, c0) = divmod(k, g), divmod(int(sigma[k]), g)
        np.testing.assert_array_equal(
            y[:, r * block:(r + 1) * block, c * block:(c + 1) * block],
            x[:, r0 * block:(r0 + 1) * block, c0 * block:(c0 + 1) * block])


def test_a_block_as_large_as_the_image_is_no_shuffle():
    x = _images()
    sigma = block_permutation((8, 8), 8, seed=0)
    np.testing.assert_array_equal(sigma, [0])
    np.testing.assert_array_equal(shuffle_blocks(x, 8, sigma), x)
    assert default_blocks((8, 8, 1), 2) == [2, 4, 8]
    assert default_blocks((32, 32, 3), 4) == [4, 8, 16, 32]


@pytest.mark.parametrize("block", [2, 4])
def test_token_permutation_matches_the_patches_of_the_shuffled_images(block):
    torch = pytest.importorskip("torch")
    from patchassoc.simulations.engines.vit.training import patchify

    x = _images()
    sigma = block_permutation((8, 8), block, seed=1)
    tau = token_permutation((8, 8), block, sigma, patch=2)
    to_tensor = lambda a: torch.from_numpy(a.transpose(0, 3, 1, 2).astype(np.float32))  # noqa: E731
    shuffled = patchify(to_tensor(shuffle_blocks(x, block, sigma)), 2)
    original = patchify(to_tensor(x), 2)
    assert torch.equal(shuffled, original[:, torch.from_numpy(tau)])


def test_bad_blocks_are_usage_errors():
    with pytest.raises(UsageError, match="divide the image"):
        check_block((8, 8), 3)
    with pytest.raises(UsageError, match="multiple of the patch"):
        check_block((8, 8), 1, patch=2)
    with pytest.raises(UsageError, match="positive integer"):
        check_block((8, 8), 0)
    with pytest.raises(ValueError, match="permutation"):
        shuffle_blocks(_images(), 4, [0, 1, 2, 2])


def _grid_distance(g):
    xy = np.stack(np.divmod(np.arange(g * g), g), axis=1)
    return np.linalg.norm(xy[:, None] - xy[None], axis=-1)


def test_locality_statistic_on_known_maps():
    g, k = 4, 4
    dist = _grid_distance(g)
    # each query's top-4 other patches under a map decreasing with distance are its 4 nearest
    nearest = np.sort(dist + np.diag(np.full(g * g, np.inf)), axis=1)[:, :k].mean(axis=1)
    local = -dist
    assert topk_distance(local, (g, g), k) == pytest.approx(nearest.mean(), rel=1e-15)
    z = locality_z(local, (g, g), k=k, draws=200, seed=0)
    assert z["z"] > 3 and z["p_value"] == pytest.approx(1 / 201)
    # the farthest patches instead: less local than any relabelling is impossible to beat
    far = locality_z(dist, (g, g), k=k, draws=200, seed=0)
    assert far["z"] < -3
    # a constant map breaks every tie the same way (towards the lower index), whatever the
    # relabelling: the null has no spread and the z-score is undefined
    flat = locality_z(np.ones((g * g, g * g)), (g, g), k=k)
    assert np.isnan(flat["z"])
    with pytest.raises(ValueError, match="k must"):
        topk_distance(local, (g, g), k=16)


def test_undoing_the_shuffle_recovers_a_local_map():
    g = 4
    local = -_grid_distance(g)
    tau = token_permutation((8, 8), 2, block_permutation((8, 8), 2, seed=0), patch=2)
    trained = local[np.ix_(tau, tau)]  # token i holds the patch at grid position tau[i]
    np.testing.assert_array_equal(undo_permutation(trained, tau), local)
    z = locality_z(trained, (g, g), tau, seed=1)
    assert z["statistic"] == pytest.approx(topk_distance(local, (g, g)), rel=1e-15)
    assert z["statistic_token_order"] > z["statistic"]  # scrambled as trained
    G = cosine_gram(np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]]))
    np.testing.assert_allclose(G, [[1, 2 ** -0.5, 0], [2 ** -0.5, 1, 2 ** -0.5],
                                   [0, 2 ** -0.5, 1]], rtol=0, atol=1e-15)


def _shuffle_result():
    rng = np.random.default_rng(0)
    models, blocks, seeds, D, dim = ["positional", "content", "cnn"], [2, 4, 8], [0, 1, 2], 16, 8
    acc = rng.uniform(0.8, 1.0, size=(3, 3, 3))
    taus = np.stack([token_permutation((8, 8), b, block_permutation((8, 8), b, 0), 2)
                     for b in blocks])
    att = rng.dirichlet(np.ones(D), size=(2, 3, 3, 1, 2, D))
    meta = dict(data="digits", models=models, vit_models=["positional", "content"],
                blocks=blocks, seeds=seeds, grid=[4, 4], image_shape=[8, 8, 1],
                recipe=dict(epochs=3))
    return ShuffleResult(meta, acc, taus, rng.normal(size=(2, 3, 3, D, dim)), att)


def test_shuffle_summary_table_and_paired_change(tmp_path):
    res = _shuffle_result()
    s = res.summary()
    cnn = res.accuracy[2]
    cell = s["accuracy"]["cnn"]["4"]
    lo, hi = stats.t.interval(0.95, 2, loc=cnn[1].mean(), scale=stats.sem(cnn[1]))
    assert cell["mean"] == pytest.approx(cnn[1].mean(), rel=CI_REL)
    assert (cell["ci_low"], cell["ci_high"]) == (pytest.approx(lo, rel=CI_REL),
                                                 pytest.approx(hi, rel=CI_REL))
    change = s["change_finest_minus_coarsest"]["cnn"]
    assert change["mean"] == pytest.approx((cnn[0] - cnn[2]).mean(), rel=CI_REL)
    assert set(s["locality"]) == {"attention", "pos_positional", "pos_content"}
    assert s["locality_z"] == s["locality"]["attention"]["2"]["z"]
    res.save(tmp_path / "sh")
    back = ShuffleResult.load(tmp_path / "sh")
    np.testing.assert_array_equal(back.accuracy, res.accuracy)
    np.testing.assert_array_equal(back.token_permutation, res.token_permutation)


def test_shuffle_figure_draws_the_maps_back_in_place(tmp_path):
    pytest.importorskip("matplotlib")
    from patchassoc.figures import vit_shuffle

    res = _shuffle_result()
    q = vit_shuffle.default_query(res.grid)
    unshuffled, as_trained, undone = vit_shuffle.panel_maps(res, "attention", q)
    tau = res.token_permutation[0]
    M = res.maps("attention", 2)[0]
    np.testing.assert_array_equal(as_trained.reshape(-1), M[q])
    np.testing.assert_array_equal(undone.reshape(-1), undo_permutation(M, tau)[q])
    paths = vit_shuffle.save(res, tmp_path)
    assert all(p.stat().st_size > 1000 for p in paths)


TINY_MODEL = ["--epochs", "1", "--dim", "16", "--depth", "1", "--heads", "2", "--threads", "1",
              "--jobs", "1", "--seeds", "2"]
TINY = TINY_MODEL + ["--max-train", "64"]


def test_json_holds_the_gap_controls_table_and_locality(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    from patchassoc.cli.main import main

    status = main(["vit", "--shuffle", "2", "--shuffle", "8", "--quiet", "--json", "--out",
                   str(tmp_path / "o"), *TINY])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    s = json.loads(captured.out)
    for key in ("ci_low", "ci_high", "n"):
        assert key in s["gap_positional"]
    for control in ("uniform", "none"):
        assert set(s[control]["accuracy"]) >= {"mean", "ci_low", "ci_high"}
        assert set(s[f"positional_vs_{control}"]) >= {"mean", "ci_low", "ci_high"}
    table = s["shuffle"]["accuracy"]
    assert set(table) == {"positional", "content", "cnn"}
    assert all(set(table[m]) == {"2", "8"} for m in table)
    assert table["cnn"]["2"]["n"] == 2 and "ci_low" in table["cnn"]["2"]
    # B = 8 is no shuffle: its ViT cells are the comparison's own runs (same seeds and recipe)
    assert table["positional"]["8"]["per_seed"] == s["positional"]["per_seed"]
    assert table["content"]["8"]["per_seed"] == s["content"]["per_seed"]
    assert s["locality_z"] == s["shuffle"]["locality"]["attention"]["2"]["z"]
    assert s["claim6"]["ci"] == [100 * s["gap_positional"]["ci_low"],
                                 100 * s["gap_positional"]["ci_high"]]
    assert "controls:" in s["claim6"]["detail"]
    lines = (tmp_path / "o" / "runs.jsonl").read_text().splitlines()
    assert len(lines) == 2 * 4 + 2 * 2 + 2 * 2  # comparison; shuffled ViTs at B=2; CNN at 2, 8


@pytest.mark.parametrize("args, message", [
    (["--shuffle", "3"], "must divide the image size"),
    # B = 1 cuts through the 2 x 2 patches: the CNN could run it, the ViTs could not, so a shuffle
    # with no block that keeps patches whole is refused
    (["--shuffle", "1"], "no block size is a multiple of the patch size"),
    (["--shuffle", "0"], "positive integer"),
    (["--shuffle", "x"], "positive integer"),
    (["--shuffle", "4", "--shuffle", "4"], "distinct"),
    (["--shuffle", "4", "--no-shuffle"], "exclude each other"),
])
def test_bad_shuffle_values_are_one_line_and_status_2(tmp_path, capsys, args, message):
    pytest.importorskip("sklearn")
    from patchassoc.cli.main import main

    assert main(["vit", *args, "--quiet", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("patchassoc: error: ") and message in err[0]
    assert not (tmp_path / "o").exists()


def test_shuffled_patches_on_a_generated_cifar10_folder(tmp_path, capsys):
    """A local CIFAR-10 folder (tiny files in the real format): 32 x 32 images, 4 x 4 patches, a
    block shuffle of 16 pixels moves 2 x 2 groups of patches on the 8 x 8 patch grid."""
    pytest.importorskip("torch")
    from patchassoc.cli.main import main

    from .test_vit_data import write_cifar10

    write_cifar10(tmp_path / "data", np.random.default_rng(0), per_batch=4, n_test=6)
    out = tmp_path / "o"
    status = main(["vit", "--data", "cifar10", "--data-dir", str(tmp_path / "data"),
                   "--shuffle", "16", "--shuffle", "32", "--batch-size", "10", "--quiet",
                   "--json", "--out", str(out), *TINY_MODEL])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    s = json.loads(captured.out)
    assert s["data"] == "cifar10" and s["grid"] == [8, 8] and s["n_train"] == 20
    sh = s["shuffle"]
    assert sh["blocks"] == [16, 32] and sh["no_shuffle_block"] == 32 and sh["grid"] == [8, 8]
    res = ShuffleResult.load(out / "shuffle")
    sigma = block_permutation((32, 32), 16, 0)
    np.testing.assert_array_equal(res.meta["block_permutations"][0], sigma)
    np.testing.assert_array_equal(res.token_permutation[0],
                                  token_permutation((32, 32), 16, sigma, 4))
    np.testing.assert_array_equal(res.token_permutation[1], np.arange(64))
    assert res.attention.shape[:3] == (2, 2, 2) and res.attention.shape[-2:] == (64, 64)


def test_figure_readings_follow_the_numbers():
    from patchassoc.simulations.studies.claim6_vit import readings as figure_readings

    res = _shuffle_result()
    # make the CNN fall by 5 points at B = 2 on every seed, and the ViTs stay put
    acc = res.accuracy.copy()
    acc[:, 0] = acc[:, 2]
    acc[2, 0] = acc[2, 2] - np.array([0.05, 0.04, 0.06])
    sh = ShuffleResult(res.meta, acc, res.token_permutation, res.pos, res.attention).summary()

    def ci(mean, half, n=5):
        return dict(mean=mean, ci_low=mean - half, ci_high=mean + half, half_width=half, n=n)

    s = {"data": "digits", "seeds": [0, 1, 2, 3, 4], "content": {"accuracy": ci(0.96, 0.01)},
         "positional": {"accuracy": ci(0.965, 0.01), "attention_distance_per_layer": [1.9, 2.0]},
         "uniform": {"accuracy": ci(0.90, 0.01)}, "none": {"accuracy": ci(0.97, 0.01)},
         "gap_positional": ci(0.005, 0.01), "positional_vs_uniform": ci(0.065, 0.01),
         "positional_vs_none": ci(-0.005, 0.01), "uniform_attention_distance": 2.01,
         "claim6": {"passed": True}, "shuffle": sh}
    text = figure_readings(s)
    assert set(text) == {"vit_attention", "vit_shuffle"}
    assert "uniform attention 90.00 % [89.00, 91.00]" in text["vit_attention"]
    assert "(positional beats it)" in text["vit_attention"]
    assert "(positional does not beat it)" in text["vit_attention"]
    assert "the small CNN falls at B = 2 (-5.0 points" in text["vit_shuffle"]
    assert ("the positional ViT does not change detectably at B = 2 (+0.0 points"
            in text["vit_shuffle"])
    z = sh["locality"]["attention"]["2"]["z"]
    assert f"z {z:+.1f} at B = 2 once undone" in text["vit_shuffle"]
    del s["shuffle"]
    assert set(figure_readings(s)) == {"vit_attention"}


def _aligned_result(models=("positional", "content", "cnn")):
    """A synthetic Fashion-MNIST-shaped experiment: 28 x 28 images, 4 x 4 patches (7 x 7 grid),
    B = 2, 4, 7, 14, 28; the ViTs ran at 4 and 28 only (multiples of the patch side)."""
    rng = np.random.default_rng(3)
    blocks, vit_blocks, seeds, D, dim = [2, 4, 7, 14, 28], [4, 28], [0, 1, 2], 49, 8
    models = list(models)
    vits = [m for m in models if m != "cnn"]
    acc = rng.uniform(0.7, 0.9, size=(len(models), 5, 3))
    for i, m in enumerate(models):
        if m != "cnn":
            acc[i, [0, 2, 3]] = np.nan
    taus = np.stack([token_permutation((28, 28), b, block_permutation((28, 28), b, 0), 4)
                     for b in vit_blocks])
    att = rng.dirichlet(np.ones(D), size=(len(vits), 2, 3, 1, 2, D))
    meta = dict(data="fashion-mnist", models=models, vit_models=vits, blocks=blocks,
                vit_blocks=vit_blocks, seeds=seeds, grid=[7, 7], image_shape=[28, 28, 1],
                recipe=dict(epochs=2))
    return ShuffleResult(meta, acc, taus, rng.normal(size=(len(vits), 2, 3, D, dim)), att)


def test_vits_skip_blocks_that_cut_patches_and_the_summary_says_so(tmp_path):
    res = _aligned_result()
    s = res.summary()
    assert set(s["accuracy"]["cnn"]) == {"2", "4", "7", "14", "28"}
    assert set(s["accuracy"]["positional"]) == set(s["accuracy"]["content"]) == {"4", "28"}
    assert s["finest_of"] == {"positional": 4, "content": 4, "cnn": 2}
    assert s["vit_finest"] == 4 and s["finest"] == 2 and s["vit_blocks"] == [4, 28]
    change = s["change_finest_minus_coarsest"]
    cnn, pos = res.accuracy[2], res.accuracy[0]
    assert change["cnn"]["finest"] == 2 and change["positional"]["finest"] == 4
    assert change["cnn"]["mean"] == pytest.approx((cnn[0] - cnn[4]).mean(), rel=CI_REL)
    assert change["positional"]["mean"] == pytest.approx((pos[1] - pos[4]).mean(), rel=CI_REL)
    assert set(s["locality"]["attention"]) == {"4", "28"}
    assert s["locality_z"] == s["locality"]["attention"]["4"]["z"]
    np.testing.assert_array_equal(res.tau(4), res.token_permutation[0])
    with pytest.raises(ValueError, match="did not run at block 7"):
        res.accuracy_of("content", 7)
    res.save(tmp_path / "sh")
    back = ShuffleResult.load(tmp_path / "sh")
    np.testing.assert_array_equal(back.accuracy, res.accuracy)  # NaN where not run, kept
    assert back.vit_blocks == [4, 28]


def test_a_shuffle_result_must_mark_exactly_the_cells_not_run():
    res = _aligned_result()
    filled = res.accuracy.copy()
    filled[0, 0] = 0.5  # a number where the ViT did not run
    with pytest.raises(ValueError, match="NaN exactly where"):
        ShuffleResult(res.meta, filled, res.token_permutation, res.pos, res.attention)
    holed = res.accuracy.copy()
    holed[2, 1, 0] = np.nan  # a hole where the CNN ran
    with pytest.raises(ValueError, match="NaN exactly where"):
        ShuffleResult(res.meta, holed, res.token_permutation, res.pos, res.attention)


def test_the_reading_and_the_figure_show_the_blocks_each_model_ran(tmp_path):
    from patchassoc.cli.main_vit import _shuffle_lines
    from patchassoc.figures import vit_shuffle
    from patchassoc.simulations.studies.claim6_vit import _shuffle_reading

    res = _aligned_result()
    s = res.summary()
    text = _shuffle_reading(s)
    assert "the ViTs skip B = 2, 7, 14" in text
    assert "positional ViT not run, " in text and "at B = 4 once undone" in text
    lines = "\n".join(_shuffle_lines(s))
    assert lines.count("not run") == 6  # two ViTs at B = 2, 7, 14
    paths = vit_shuffle.save(res, tmp_path)
    assert sorted(p.suffix for p in paths) == [".pdf", ".png"]
    fig = vit_shuffle.plot(res)
    ax = fig.axes[0]
    xs = {c.get_label(): list(np.round(2 ** c.lines[0].get_xdata()).astype(int))
          for c in ax.containers}
    assert xs == {"positional ViT": [4, 28], "standard ViT": [4, 28],
                  "small CNN": [2, 4, 7, 14, 28]}


def test_the_study_trains_vits_only_at_patch_aligned_blocks():
    pytest.importorskip("torch")
    from patchassoc.simulations.engines.vit.data import ImageData
    from patchassoc.simulations.engines.vit.training import recipe_for, study

    rng = np.random.default_rng(4)
    x = rng.integers(0, 256, size=(40, 12, 12, 1), dtype=np.uint8)
    y = rng.integers(0, 3, size=40)
    data = ImageData("toy", x[:32], y[:32], x[32:], y[32:], 3, 255.0)
    recipe = recipe_for("fashion-mnist", dim=8, depth=1, heads=2, epochs=1, batch_size=16,
                        cnn_width=2)
    done = []
    vit, sh = study(data, recipe, [0], kinds=("content", "positional"), blocks=[2, 4, 12],
                    on_done=lambda t, o: done.append((t.model, t.block)))
    assert sorted(done, key=str) == sorted(
        [("content", None), ("positional", None), ("cnn", 2), ("cnn", 4), ("cnn", None),
         ("positional", 4), ("content", 4)], key=str)
    assert sh.vit_blocks == [4, 12] and sh.blocks == [2, 4, 12]
    assert np.isnan(sh.accuracy[:2, 0]).all() and not np.isnan(sh.accuracy[2]).any()
    # the unshuffled ViT cells are the comparison's own runs
    np.testing.assert_array_equal(sh.accuracy_of("content", 12), vit.accuracy_of("content"))
