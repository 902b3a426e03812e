"""Loaders of the ViT comparison on files written here in the CIFAR and SVHN formats, the digits
split, the patch permutation and the statistics (no PyTorch needed for these, but the module is
part of the optional suite)."""
import os
import pickle

import numpy as np
import pytest
from scipy import stats
from scipy.io import savemat

pytest.importorskip("torch")
pytest.importorskip("sklearn")

from patchassoc.simulations.runtime.errors import CorruptFile, UsageError  # noqa: E402
from patchassoc.simulations.engines.vit.data import (DIGITS_SPLIT, _stratified_split, load_cifar10,  # noqa: E402
                                  load_cifar100, load_dataset, load_digits, load_svhn,
                                  patch_grid, patch_permutation)
from patchassoc.simulations.engines.vit.locality_stats import (attention_distance, mean_ci, paired_gap_ci,  # noqa: E402
                                   uniform_distance)

from .tolerances import CI_REL  # noqa: E402


def _cifar_rows(rng, n):
    return rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)


def _write_pickle(path, obj):
    with open(path, "wb") as fh:
        pickle.dump(obj, fh, protocol=2)  # the CIFAR batches are protocol-2 pickles


def write_cifar10(root, rng, per_batch=3, n_test=4):
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rows, labels = [], []
    for i in range(1, 6):
        data = _cifar_rows(rng, per_batch)
        lab = [int(v) for v in rng.integers(0, 10, per_batch)]
        _write_pickle(folder / f"data_batch_{i}", {b"batch_label": b"training batch",
                                                   b"labels": lab, b"data": data,
                                                   b"filenames": [b"x.png"] * per_batch})
        rows.append(data)
        labels += lab
    test = _cifar_rows(rng, n_test)
    test_labels = [int(v) for v in rng.integers(0, 10, n_test)]
    _write_pickle(folder / "test_batch", {b"labels": test_labels, b"data": test})
    _write_pickle(folder / "batches.meta", {b"label_names": [b"a"] * 10})
    return folder, np.concatenate(rows), np.array(labels), test, np.array(test_labels)


def test_cifar10_reads_the_python_batches_pixel_for_pixel(tmp_path):
    rng = np.random.default_rng(0)
    folder, rows, labels, test, test_labels = write_cifar10(tmp_path, rng)
    for where in (tmp_path, folder):  # the parent folder or the batches folder itself
        data = load_cifar10(where)
        assert data.x_train.shape == (15, 32, 32, 3) and data.x_test.shape == (4, 32, 32, 3)
        assert data.x_train.dtype == np.uint8 and data.n_classes == 10
        np.testing.assert_array_equal(data.y_train, labels)
        np.testing.assert_array_equal(data.y_test, test_labels)
        # row layout: 1024 red, 1024 green, 1024 blue values, each a row-major 32 x 32 image
        for i, r, c, ch in [(0, 0, 1, 0), (7, 31, 2, 1), (14, 5, 30, 2)]:
            assert data.x_train[i, r, c, ch] == rows[i, ch * 1024 + r * 32 + c]
        np.testing.assert_array_equal(data.x_test[3, :, :, 2],
                                      test[3, 2048:].reshape(32, 32))


def test_cifar_batches_pickled_by_numpy_1_load(tmp_path):
    """The distributed batches name ``numpy.core.multiarray`` (NumPy 1.x); NumPy 2 writes
    ``numpy._core``. Protocol-2 GLOBAL opcodes are plain text, so rewrite them and reload."""
    rng = np.random.default_rng(6)
    folder, rows, labels, *_ = write_cifar10(tmp_path, rng)
    raw = (folder / "data_batch_1").read_bytes()
    assert b"numpy._core.multiarray" in raw or b"numpy.core.multiarray" in raw
    (folder / "data_batch_1").write_bytes(raw.replace(b"numpy._core.multiarray",
                                                      b"numpy.core.multiarray"))
    data = load_cifar10(tmp_path)
    np.testing.assert_array_equal(data.x_train[:3].transpose(0, 3, 1, 2).reshape(3, -1),
                                  rows[:3])


def test_cifar100_uses_the_fine_labels(tmp_path):
    rng = np.random.default_rng(1)
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    fine = [int(v) for v in rng.integers(0, 100, 6)]
    train = _cifar_rows(rng, 6)
    _write_pickle(folder / "train", {b"data": train, b"fine_labels": fine,
                                     b"coarse_labels": [0] * 6})
    _write_pickle(folder / "test", {b"data": _cifar_rows(rng, 2), b"fine_labels": [99, 0],
                                    b"coarse_labels": [19, 0]})
    data = load_dataset("cifar100", tmp_path)
    assert data.n_classes == 100 and data.x_train.shape == (6, 32, 32, 3)
    np.testing.assert_array_equal(data.y_train, fine)
    np.testing.assert_array_equal(data.y_test, [99, 0])
    np.testing.assert_array_equal(data.x_train[2, :, :, 0], train[2, :1024].reshape(32, 32))


def test_svhn_reads_the_mat_files_and_maps_label_10_to_0(tmp_path):
    rng = np.random.default_rng(2)
    X = rng.integers(0, 256, size=(32, 32, 3, 5), dtype=np.uint8)
    y = np.array([[10], [1], [9], [10], [3]], dtype=np.uint8)
    savemat(tmp_path / "train_32x32.mat", {"X": X, "y": y})
    savemat(tmp_path / "test_32x32.mat", {"X": X[..., :2], "y": y[:2]})
    data = load_svhn(tmp_path)
    assert data.x_train.shape == (5, 32, 32, 3) and data.x_test.shape == (2, 32, 32, 3)
    np.testing.assert_array_equal(data.y_train, [0, 1, 9, 0, 3])
    np.testing.assert_array_equal(data.x_train[4], X[..., 4])


@pytest.mark.parametrize("loader", [load_cifar10, load_cifar100, load_svhn])
def test_missing_folder_or_files_is_one_clear_error(tmp_path, loader):
    with pytest.raises(UsageError, match="does not exist"):
        loader(tmp_path / "nowhere")
    with pytest.raises(UsageError, match="missing"):
        loader(tmp_path)  # exists, but empty
    with pytest.raises(UsageError, match="--data-dir is required"):
        loader(None)


def test_a_missing_batch_is_named(tmp_path):
    folder, *_ = write_cifar10(tmp_path, np.random.default_rng(3))
    os.remove(folder / "data_batch_4")
    with pytest.raises(UsageError) as info:
        load_cifar10(tmp_path)
    assert "data_batch_4" in str(info.value) and "\n" not in str(info.value)


def test_foreign_pickles_and_mat_files_are_refused(tmp_path):
    folder, *_ = write_cifar10(tmp_path, np.random.default_rng(4))

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    _write_pickle(folder / "test_batch", {b"data": Evil(), b"labels": [0]})
    with pytest.raises(CorruptFile, match="refusing to load"):
        load_cifar10(tmp_path)
    (tmp_path / "train_32x32.mat").write_bytes(b"not a mat file")
    (tmp_path / "test_32x32.mat").write_bytes(b"not a mat file")
    with pytest.raises(CorruptFile, match="not an SVHN"):
        load_svhn(tmp_path)


def _good_rows(n=3):
    return np.random.default_rng(7).integers(0, 256, size=(n, 3072), dtype=np.uint8)


@pytest.mark.parametrize("batch, message", [
    ({b"data": _good_rows().astype(object), b"labels": [0, 1, 2]}, "must be numbers, got dtype "
                                                                   "object"),
    ({b"data": np.where(np.arange(3 * 3072).reshape(3, 3072) == 5, np.nan,
                        _good_rows().astype(float)), b"labels": [0, 1, 2]}, "must be finite"),
    ({b"data": _good_rows() + 0.5, b"labels": [0, 1, 2]}, "whole numbers"),
    ({b"data": _good_rows().astype(np.int64) + 1, b"labels": [0, 1, 2]}, "lie in 0..255"),
    ({b"data": _good_rows(), b"labels": [0, 1, 10]}, "labels must lie in 0..9, got 0..10"),
    ({b"data": _good_rows(), b"labels": [0, -1, 2]}, "labels must lie in 0..9"),
    ({b"data": _good_rows(), b"labels": ["a", "b", "c"]}, "labels must be numbers"),
    ({b"data": _good_rows(), b"labels": [0.0, float("nan"), 1.0]}, "labels must be finite"),
    ({b"data": _good_rows(), b"labels": [0, 1]}, "N x 3072 with N labels"),
    ({b"data": _good_rows()[:, :3000], b"labels": [0, 1, 2]}, "N x 3072 with N labels"),
    ({b"data": [[1, 2], [3]], b"labels": [0, 1]}, "not a regular array"),
    ({b"data": b"raw bytes", b"labels": [0]}, "must be numbers"),
])
def test_a_malformed_cifar_batch_is_refused_in_one_line_naming_the_file(tmp_path, batch,
                                                                         message):
    """Object dtype, NaN, fractional or out-of-range pixels, labels out of range or of the wrong
    type, and counts that do not match: one CorruptFile line naming the file, never a traceback
    and never a silent cast to uint8."""
    folder, *_ = write_cifar10(tmp_path, np.random.default_rng(5))
    _write_pickle(folder / "data_batch_3", batch)
    with pytest.raises(CorruptFile) as info:
        load_cifar10(tmp_path)
    text = str(info.value)
    assert message in text and str(folder / "data_batch_3") in text and "\n" not in text


def test_a_malformed_cifar100_batch_is_refused_with_its_label_range(tmp_path):
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    _write_pickle(folder / "train", {b"data": _good_rows(), b"fine_labels": [0, 99, 100]})
    _write_pickle(folder / "test", {b"data": _good_rows(1), b"fine_labels": [0]})
    with pytest.raises(CorruptFile, match="labels must lie in 0..99, got 0..100"):
        load_cifar100(tmp_path)


@pytest.mark.parametrize("X, y, message", [
    (np.full((32, 32, 3, 2), np.nan), [[1], [2]], "must be finite"),
    (np.full((32, 32, 3, 2), 300.0), [[1], [2]], "lie in 0..255"),
    (np.zeros((32, 32, 3, 2), dtype=np.uint8), [[0], [2]], "labels must lie in 1..10"),
    (np.zeros((32, 32, 3, 2), dtype=np.uint8), [[1], [2], [3]], "with N labels"),
    (np.zeros((32, 32, 1, 2), dtype=np.uint8), [[1], [2]], "32 x 32 x 3 x N"),
])
def test_a_malformed_svhn_file_is_refused_in_one_line_naming_it(tmp_path, X, y, message):
    good = np.zeros((32, 32, 3, 1), dtype=np.uint8)
    savemat(tmp_path / "train_32x32.mat", {"X": X, "y": np.asarray(y, dtype=np.float64)})
    savemat(tmp_path / "test_32x32.mat", {"X": good, "y": np.array([[1.0]])})
    with pytest.raises(CorruptFile) as info:
        load_svhn(tmp_path)
    text = str(info.value)
    assert message in text and str(tmp_path / "train_32x32.mat") in text and "\n" not in text


def test_a_malformed_batch_is_one_line_and_status_1_from_the_command(tmp_path, capsys):
    """A data error (a file there that cannot be read as its format): exit status 1."""
    from patchassoc.cli.main import main

    folder, *_ = write_cifar10(tmp_path, np.random.default_rng(8))
    _write_pickle(folder / "test_batch", {b"data": _good_rows().astype(object),
                                          b"labels": [0, 1, 2]})
    assert main(["vit", "--data", "cifar10", "--data-dir", str(tmp_path), "--quiet",
                 "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("patchassoc: error: ") and "test_batch" in err[0]
    assert not (tmp_path / "o").exists()


def test_digits_split_is_fixed_stratified_and_disjoint():
    a, b = load_digits(), load_digits()
    assert a.x_train.shape == (DIGITS_SPLIT[0], 8, 8, 1)
    assert a.x_test.shape == (DIGITS_SPLIT[1], 8, 8, 1)
    assert a.max_value == 16 and int(a.x_train.max()) == 16
    np.testing.assert_array_equal(a.x_test, b.x_test)
    np.testing.assert_array_equal(a.y_train, b.y_train)
    y = np.concatenate([a.y_train, a.y_test])
    counts, test_counts = np.bincount(y), np.bincount(a.y_test)
    assert np.all(np.abs(test_counts - counts * DIGITS_SPLIT[1] / y.size) < 1)
    c = load_digits(split_seed=1)
    assert not np.array_equal(a.y_test, c.y_test)


def test_stratified_split_indices_partition_the_data():
    y = np.random.default_rng(5).integers(0, 7, 301)
    train, test = _stratified_split(y, 77, np.random.default_rng(0))
    assert test.size == 77 and train.size == 224
    np.testing.assert_array_equal(np.sort(np.concatenate([train, test])), np.arange(301))


def test_patch_grid_and_permutation():
    assert patch_grid((8, 8, 1), 2) == (4, 4)
    assert patch_grid((32, 32, 3), 4) == (8, 8)
    with pytest.raises(UsageError):
        patch_grid((8, 8, 1), 3)
    p = patch_permutation(16, 0)
    np.testing.assert_array_equal(np.sort(p), np.arange(16))
    np.testing.assert_array_equal(p, patch_permutation(16, 0))
    assert not np.array_equal(p, np.arange(16))
    assert not np.array_equal(p, patch_permutation(16, 1))


def test_mean_ci_matches_the_t_interval():
    x = np.array([0.95, 0.97, 0.96, 0.93, 0.98])
    ci = mean_ci(x)
    lo, hi = stats.t.interval(0.95, x.size - 1, loc=x.mean(), scale=stats.sem(x))
    assert ci["ci_low"] == pytest.approx(lo, rel=CI_REL)
    assert ci["ci_high"] == pytest.approx(hi, rel=CI_REL)
    assert np.isnan(mean_ci([0.9])["half_width"])
    gap = paired_gap_ci(x, x - np.array([0.01, 0.02, 0.0, 0.01, 0.01]))
    assert gap["mean"] == pytest.approx(0.01, rel=CI_REL)
    d = np.array([0.01, 0.02, 0.0, 0.01, 0.01])
    assert gap["half_width"] == pytest.approx(
        stats.t.ppf(0.975, 4) * d.std(ddof=1) / np.sqrt(5), rel=CI_REL)


def test_attention_distance():
    grid = (4, 4)
    assert attention_distance(np.eye(16), grid) == 0.0
    # each patch attends to its right neighbour (wrapping within the row): distances 1,1,1,3
    A = np.zeros((16, 16))
    for i in range(16):
        r, c = divmod(i, 4)
        A[i, r * 4 + (c + 1) % 4] = 1.0
    assert attention_distance(A, grid) == pytest.approx(1.5)
    # uniform attention: the mean pairwise distance, whatever the permutation
    perm = patch_permutation(16, 3)
    U = np.full((16, 16), 1 / 16)
    assert attention_distance(U, grid, perm) == pytest.approx(uniform_distance(grid))
    # identity in token order stays distance 0 after a permutation
    assert attention_distance(np.eye(16), grid, perm) == 0.0
