"""Fashion-MNIST offline: the idx reader on files written here, the digests, where the files are
found, the fetch from Debian's package (with stand-ins for apt-get and dpkg-deb), the ``data``
command's one-line errors, and the real files when this machine has them.

No PyTorch needed: the module reads with NumPy only."""
import gzip
import hashlib
import json
import os
import stat

import numpy as np
import pytest

from patchassoc.simulations.engines.vit import fashion_mnist as fm
from patchassoc.simulations.runtime.errors import CorruptFile, RunError, UsageError

SMALL = {"train-images-idx3-ubyte": (6, 28, 28), "train-labels-idx1-ubyte": (6,),
         "t10k-images-idx3-ubyte": (4, 28, 28), "t10k-labels-idx1-ubyte": (4,)}


def idx_bytes(arr: np.ndarray) -> bytes:
    """The idx encoding of a uint8 array: 00 00 08 ndim, the dimensions big-endian, the data."""
    arr = np.ascontiguousarray(arr, dtype=np.uint8)
    head = bytes([0, 0, 0x08, arr.ndim]) + np.asarray(arr.shape, dtype=">u4").tobytes()
    return head + arr.tobytes()


def write_set(folder, rng, gz=True):
    """Four small files in the real format; returns their arrays."""
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for name, shape in SMALL.items():
        high = 10 if "labels" in name else 256
        arrays[name] = rng.integers(0, high, size=shape, dtype=np.uint8)
        raw = idx_bytes(arrays[name])
        if gz:
            (folder / f"{name}.gz").write_bytes(gzip.compress(raw))
        else:
            (folder / name).write_bytes(raw)
    return arrays


@pytest.fixture
def small(monkeypatch, tmp_path):
    """The module's table of files and digests pointed at small files written by the test, and
    Debian's folder and the cache pointed into tmp_path."""
    arrays = write_set(tmp_path / "src", np.random.default_rng(0))
    monkeypatch.setattr(fm, "FILES", dict(SMALL))
    monkeypatch.setattr(fm, "SHA256", {n: hashlib.sha256(idx_bytes(a)).hexdigest()
                                       for n, a in arrays.items()})
    monkeypatch.setattr(fm, "DEBIAN_FOLDER", tmp_path / "usr/share/datasets/fashion-mnist")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return arrays


def one_line(exc) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_read_idx_returns_the_array_written_gzipped_or_not(tmp_path):
    rng = np.random.default_rng(1)
    for shape in [(3, 28, 28), (7,), (2, 3, 4, 5)]:
        arr = rng.integers(0, 256, size=shape, dtype=np.uint8)
        (tmp_path / "a").write_bytes(idx_bytes(arr))
        (tmp_path / "a.gz").write_bytes(gzip.compress(idx_bytes(arr)))
        for name in ("a", "a.gz"):
            got = fm.read_idx(tmp_path / name, shape,
                              hashlib.sha256(idx_bytes(arr)).hexdigest())
            assert got.dtype == np.uint8 and got.shape == shape
            np.testing.assert_array_equal(got, arr)
    # the header is big-endian: 256 images of 1 x 2 pixels
    arr = np.arange(512, dtype=np.int64).astype(np.uint8).reshape(256, 1, 2)
    raw = idx_bytes(arr)
    assert raw[:8] == bytes([0, 0, 8, 3, 0, 0, 1, 0])
    (tmp_path / "b").write_bytes(raw)
    np.testing.assert_array_equal(fm.read_idx(tmp_path / "b"), arr)


@pytest.mark.parametrize("mutate, message", [
    (lambda raw: b"", "not an idx file"),
    (lambda raw: b"\x01" + raw[1:], "not an idx file"),
    (lambda raw: raw[:2] + b"\x0d" + raw[3:], "type code 0x0d"),
    (lambda raw: raw[:3] + b"\x09" + raw[4:], "header cut short"),
    (lambda raw: raw[:-1], "the file holds 14"),
    (lambda raw: raw + b"\x00", "the file holds 16"),
    (lambda raw: raw[:4] + bytes([0, 0, 0, 5, 0, 0, 0, 3]) + raw[12:], "expected (3, 5)"),
    (lambda raw: raw[:-1] + bytes([raw[-1] ^ 1]), "SHA-256 of its content"),
])
def test_read_idx_refuses_a_malformed_file_in_one_line_naming_it(tmp_path, mutate, message):
    arr = np.arange(15, dtype=np.uint8).reshape(3, 5)
    raw = idx_bytes(arr)
    path = tmp_path / "x-idx2-ubyte"
    path.write_bytes(mutate(raw))
    with pytest.raises(CorruptFile) as info:
        fm.read_idx(path, (3, 5), hashlib.sha256(raw).hexdigest())
    assert message in one_line(info) and str(path) in str(info.value)


def test_a_flipped_byte_in_a_gzip_file_is_refused(tmp_path):
    arr = np.random.default_rng(2).integers(0, 256, size=(50, 28, 28), dtype=np.uint8)
    raw = idx_bytes(arr)
    gz = bytearray(gzip.compress(raw))
    refused = 0
    for where in (len(gz) // 3, len(gz) // 2, len(gz) - 6):  # deflate data, and the CRC
        bad = bytearray(gz)
        bad[where] ^= 0x01
        (tmp_path / "f.gz").write_bytes(bytes(bad))
        with pytest.raises(CorruptFile) as info:
            fm.read_idx(tmp_path / "f.gz", (50, 28, 28), hashlib.sha256(raw).hexdigest())
        assert str(tmp_path / "f.gz") in one_line(info)
        refused += 1
    assert refused == 3


def test_the_loader_finds_checks_and_returns_the_files(small, tmp_path):
    from patchassoc.simulations.engines.vit.data import load_dataset

    for where in (tmp_path / "src", tmp_path):  # the folder itself, or the one above it
        if where == tmp_path:
            os.rename(tmp_path / "src", tmp_path / "fashion-mnist")
        d = load_dataset("fashion-mnist", where)
        assert d.name == "fashion-mnist" and d.n_classes == 10 and d.max_value == 255.0
        assert d.x_train.shape == (6, 28, 28, 1) and d.x_test.shape == (4, 28, 28, 1)
        assert d.x_train.dtype == np.uint8 and d.y_train.dtype == np.int64
        np.testing.assert_array_equal(d.x_train[..., 0], small["train-images-idx3-ubyte"])
        np.testing.assert_array_equal(d.y_test, small["t10k-labels-idx1-ubyte"])


def test_without_a_folder_it_looks_in_debians_folder_then_the_cache(small, tmp_path):
    with pytest.raises(UsageError) as info:
        fm.find_folder()
    text = one_line(info)
    assert "patchassoc data fashion-mnist" in text
    assert all(f"{name}.gz" in text for name in SMALL)  # the names a user can place by hand
    cache = tmp_path / "cache" / "patchassoc" / "fashion-mnist"
    os.renames(tmp_path / "src", cache)
    assert fm.find_folder()[0] == cache
    os.renames(cache, fm.DEBIAN_FOLDER)
    assert fm.find_folder()[0] == fm.DEBIAN_FOLDER
    with pytest.raises(UsageError, match="does not exist"):
        fm.find_folder(tmp_path / "nowhere")


def test_a_label_out_of_range_is_refused(small, monkeypatch, tmp_path):
    labels = np.array([0, 1, 2, 10], dtype=np.uint8)
    (tmp_path / "src" / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(idx_bytes(labels)))
    monkeypatch.setitem(fm.SHA256, "t10k-labels-idx1-ubyte",
                        hashlib.sha256(idx_bytes(labels)).hexdigest())
    with pytest.raises(CorruptFile, match="labels must lie in 0..9, got 10"):
        fm.read_fashion_mnist(tmp_path / "src")


def _stand_ins(tmp_path, payload, apt_status=0, lists=True):
    """Executable stand-ins: apt-get copies a .deb here, dpkg-deb -x unpacks ``payload`` (a
    folder of files) where Debian's package puts them. Without ``lists`` the download fails
    until ``apt-get update`` has run (a fresh machine)."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    deb = tmp_path / "dataset-fashion-mnist_1_all.deb"
    deb.write_bytes(b"!<arch>\n")
    marker = tmp_path / "lists-updated"
    if lists:
        marker.touch()
    apt = bin_ / "apt-get"
    apt.write_text(f"#!/bin/sh\n[ \"$1\" = update ] && {{ touch '{marker}'; exit 0; }}\n"
                   f"[ \"$1 $2\" = 'download dataset-fashion-mnist' ] || exit 3\n"
                   f"[ -e '{marker}' ] || {{ echo 'E: Unable to locate package' >&2; exit 100; }}\n"
                   f"[ {apt_status} -eq 0 ] || {{ echo 'E: Unable to locate package' >&2; "
                   f"exit {apt_status}; }}\ncp '{deb}' .\n")
    dpkg = bin_ / "dpkg-deb"
    dpkg.write_text(f"#!/bin/sh\n[ \"$1\" = -x ] || exit 3\n"
                    f"mkdir -p \"$3/usr/share/datasets/fashion-mnist\"\n"
                    f"cp '{payload}'/* \"$3/usr/share/datasets/fashion-mnist/\"\n")
    for f in (apt, dpkg):
        f.chmod(f.stat().st_mode | stat.S_IEXEC)
    return str(apt), str(dpkg)


def test_fetch_downloads_extracts_checks_and_moves_the_files_into_place(small, tmp_path):
    apt, dpkg = _stand_ins(tmp_path, tmp_path / "src")
    out = fm.fetch(tmp_path / "dest", apt_get=apt, dpkg_deb=dpkg)
    target = tmp_path / "dest" / "fashion-mnist"
    assert out["how"] == "fetched" and out["folder"] == str(target)
    assert sorted(p.name for p in target.iterdir()) == sorted(f"{n}.gz" for n in SMALL)
    assert not out["searched_by_default"]
    again = fm.fetch(tmp_path / "dest", apt_get="/nonexistent", dpkg_deb="/nonexistent")
    assert again["how"] == "found"  # present: nothing is called
    # into the cache by default, which the loader then searches
    out = fm.fetch(None, apt_get=apt, dpkg_deb=dpkg)
    assert out["searched_by_default"]
    assert out["folder"] == str(tmp_path / "cache" / "patchassoc" / "fashion-mnist")
    assert fm.read_fashion_mnist()[0].shape == (6, 28, 28, 1)


def test_fetch_on_a_fresh_machine_updates_the_lists_once_then_downloads(small, tmp_path):
    apt, dpkg = _stand_ins(tmp_path, tmp_path / "src", lists=False)
    with pytest.raises(RunError, match="Unable to locate package"):
        fm.fetch(tmp_path / "dest", apt_get=apt, dpkg_deb=dpkg, update=False)
    assert not (tmp_path / "lists-updated").exists()
    out = fm.fetch(tmp_path / "dest", apt_get=apt, dpkg_deb=dpkg, update=True)
    assert out["how"] == "fetched" and (tmp_path / "lists-updated").exists()


def test_fetch_refuses_a_corrupt_package_and_moves_nothing(small, tmp_path):
    bad = tmp_path / "src" / "train-labels-idx1-ubyte.gz"
    raw = bytearray(gzip.decompress(bad.read_bytes()))
    raw[-1] ^= 0x01
    bad.write_bytes(gzip.compress(bytes(raw)))
    apt, dpkg = _stand_ins(tmp_path, tmp_path / "src")
    with pytest.raises(CorruptFile) as info:
        fm.fetch(tmp_path / "dest", apt_get=apt, dpkg_deb=dpkg)
    assert "SHA-256" in one_line(info)
    assert list((tmp_path / "dest" / "fashion-mnist").iterdir()) == []  # work folder removed


@pytest.mark.parametrize("which, message", [
    ("missing", "is not installed"),
    ("failing", "Unable to locate package"),
])
def test_fetch_says_in_one_line_when_it_cannot_and_names_the_files(small, tmp_path, which,
                                                                    message):
    apt, dpkg = _stand_ins(tmp_path, tmp_path / "src", apt_status=100)
    if which == "missing":
        apt = str(tmp_path / "no-such-apt-get")
    with pytest.raises(RunError) as info:
        fm.fetch(tmp_path / "dest", apt_get=apt, dpkg_deb=dpkg, update=True)
    text = one_line(info)
    assert message in text and "train-images-idx3-ubyte.gz" in text and "--data-dir" in text


def test_the_data_command_reports_and_refuses_in_one_line(small, tmp_path, capsys):
    from patchassoc.cli.main import main

    dest = tmp_path / "d"
    os.renames(tmp_path / "src", dest / "fashion-mnist")
    assert main(["data", "fashion-mnist", "--data-dir", str(dest), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["how"] == "found" and s["folder"] == str(dest / "fashion-mnist")
    assert set(s["files"]) == set(SMALL)
    path = dest / "fashion-mnist" / "t10k-images-idx3-ubyte.gz"
    raw = bytearray(gzip.decompress(path.read_bytes()))
    raw[100] ^= 0x01  # one byte flipped
    path.write_bytes(gzip.compress(bytes(raw)))
    assert main(["data", "fashion-mnist", "--data-dir", str(dest), "--quiet"]) == 1  # data
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("patchassoc: error: ") and str(path) in err[0]
    assert "SHA-256" in err[0]


def test_the_vit_command_refuses_missing_fashion_mnist_in_one_line(small, tmp_path, capsys):
    pytest.importorskip("torch")
    from patchassoc.cli.main import main

    assert main(["vit", "--data", "fashion-mnist", "--quiet", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "patchassoc data fashion-mnist" in err[0]
    assert not (tmp_path / "o").exists()


def _real_folder():
    try:
        return fm.find_folder()[1]
    except UsageError:
        return None


@pytest.mark.skipif(_real_folder() is None,
                    reason="Fashion-MNIST is not on this machine: `patchassoc data fashion-mnist` "
                           "fetches it (the README's test command runs it); the reader is "
                           "tested above on files the tests write")
def test_the_real_files_hold_fashion_mnist():
    x_train, y_train, x_test, y_test = fm.read_fashion_mnist()
    assert x_train.shape == (60000, 28, 28, 1) and x_test.shape == (10000, 28, 28, 1)
    np.testing.assert_array_equal(np.bincount(y_train), [6000] * 10)
    np.testing.assert_array_equal(np.bincount(y_test), [1000] * 10)
    # the first training labels of the standard files: ankle boot, T-shirt, T-shirt, dress, ...
    np.testing.assert_array_equal(y_train[:10], [9, 0, 0, 3, 0, 2, 7, 2, 5, 5])
    assert x_train.min() == 0 and x_train.max() == 255
