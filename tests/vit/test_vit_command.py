"""``patchassoc vit``: clear errors for missing data, a tiny end-to-end run on generated SVHN
files and on a slice of the digits, claim 6, and the attention figure."""
import json

import numpy as np
import pytest
from scipy.io import savemat

pytest.importorskip("torch")
pytest.importorskip("sklearn")

from patchassoc.figures import vit_attention  # noqa: E402
from patchassoc.cli.main import main  # noqa: E402
from patchassoc.simulations.studies.claim6_vit import DIGITS_FLOOR, claim6  # noqa: E402
from patchassoc.simulations.engines.vit.comparison import ViTResult  # noqa: E402

from .no_torch import PRELUDE  # noqa: E402
from .tolerances import ROW_SUM_ABS_F32  # noqa: E402

#: Options that make a run take a few tiny steps.
TINY = ["--epochs", "1", "--dim", "16", "--depth", "1", "--heads", "2", "--threads", "1",
        "--jobs", "1"]


def _one_error_line(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("patchassoc: error: ")
    return err[0]


@pytest.mark.parametrize("data", ["cifar10", "cifar100", "svhn"])
def test_missing_data_is_one_line_and_status_2(tmp_path, capsys, data):
    assert main(["vit", "--data", data, "--data-dir", str(tmp_path / "nope"), "--quiet"]) == 2
    assert "no such folder" in _one_error_line(capsys)
    assert main(["vit", "--data", data, "--data-dir", str(tmp_path), "--quiet"]) == 2
    assert "missing" in _one_error_line(capsys)
    assert main(["vit", "--data", data, "--quiet"]) == 2
    assert "--data-dir" in _one_error_line(capsys)


@pytest.fixture(scope="module")
def svhn_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("svhn")
    rng = np.random.default_rng(0)
    for name, n in (("train_32x32.mat", 24), ("test_32x32.mat", 10)):
        X = rng.integers(0, 256, size=(32, 32, 3, n), dtype=np.uint8)
        y = rng.integers(1, 11, size=(n, 1)).astype(np.uint8)
        savemat(root / name, {"X": X, "y": y})
    out = root / "out"
    return root, out


def test_end_to_end_on_generated_svhn(svhn_run, capsys):
    root, out = svhn_run
    status = main(["vit", "--data", "svhn", "--data-dir", str(root), "--seeds", "2",
                   "--batch-size", "8", "--no-shuffle", "--quiet", "--json", "--out", str(out),
                   *TINY])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    summary = json.loads(captured.out)  # exactly one JSON object on stdout
    assert summary["data"] == "svhn" and summary["grid"] == [8, 8]
    assert summary["n_train"] == 24 and summary["n_test"] == 10
    assert summary["seeds"] == [0, 1]
    pos, std = summary["positional"]["per_seed"], summary["content"]["per_seed"]
    assert all(a in {k / 10 for k in range(11)} for a in pos + std)  # accuracies on 10 images
    assert summary["gap_positional"]["mean"] == pytest.approx(np.mean(pos) - np.mean(std))
    assert summary["claim6"]["threshold"] == 3.0
    assert summary["recipe"]["augment"] == "crop" and summary["recipe"]["patch"] == 4
    for path in summary["figures"]:
        assert path.endswith((".png", ".pdf"))
        assert (out / path.split("/")[-1]).stat().st_size > 1000
    result = ViTResult.load(out)
    assert result.attention.shape == (4, 2, 1, 2, 64, 64)  # standard, positional, 2 controls
    np.testing.assert_allclose(result.accuracy_of("positional"), pos)
    assert summary["shuffle"] is None and summary["locality_z"] is None


def test_digits_slice_renders_the_report(tmp_path, capsys):
    out = tmp_path / "out"
    status = main(["vit", "--max-train", "64", "--seeds", "2", "--positional", "logits",
                   "--quiet", "--out", str(out), *TINY])
    text = capsys.readouterr().out
    assert status == 0
    assert "data: digits (64 train / 450 test, 4 x 4 patch grid), 2 seeds" in text
    assert "gap (positional - standard)" in text and "paired 95 % CI" in text
    assert "positional ViT, free logits" in text
    summary = json.loads((out / "metrics.json").read_text())
    assert "gap_logits" in summary and summary["logits"]["accuracy"]["n"] == 2


def _summary(pos, std, data="digits"):
    pos, std = np.asarray(pos), np.asarray(std)
    d = pos - std
    half = 2.776 * d.std(ddof=1) / np.sqrt(d.size)
    return {"data": data, "content": {"accuracy": {"mean": std.mean()}},
            "positional": {"accuracy": {"mean": pos.mean()}},
            "gap_positional": {"mean": d.mean(), "ci_low": d.mean() - half,
                               "ci_high": d.mean() + half, "n": d.size}}


def test_claim6_uses_the_interval_of_the_paired_gap():
    ok = claim6(_summary([0.96, 0.95, 0.97, 0.96, 0.95], [0.95, 0.96, 0.95, 0.94, 0.95]))
    assert ok["passed"] and ok["measured"] == pytest.approx(0.8) and ok["threshold"] == 3.0
    assert -3 < ok["ci"][0] < ok["ci"][1] < 3
    assert set(ok) >= {"claim", "measured", "threshold", "passed", "ci"}
    worse = claim6(_summary([0.91, 0.92, 0.90, 0.91, 0.92], [0.96, 0.95, 0.97, 0.96, 0.95]))
    assert not worse["passed"] and worse["measured"] == pytest.approx(-4.6)
    # the point estimate is inside +-3 points, but the interval is not: the claim fails
    wide = claim6(_summary([0.99, 0.93, 0.99, 0.93, 0.99], [0.95, 0.97, 0.95, 0.97, 0.95]))
    assert abs(wide["measured"]) < 3 and wide["ci"][0] < -3 and not wide["passed"]
    # one seed: no interval, no pass
    one = claim6({"data": "digits", "content": {"accuracy": {"mean": 0.96}},
                  "positional": {"accuracy": {"mean": 0.96}},
                  "gap_positional": {"mean": 0.0, "ci_low": float("nan"),
                                     "ci_high": float("nan"), "n": 1}})
    assert not one["passed"] and "2 seeds" in one["detail"]
    # close, but both below the digits floor: two broken models are not evidence
    low = claim6(_summary([0.80, 0.81, 0.80, 0.81, 0.80], [0.81, 0.80, 0.81, 0.81, 0.80]))
    assert not low["passed"] and 0.81 < DIGITS_FLOOR
    # no floor on the benchmarks, where accuracy depends on the budget
    assert claim6(_summary([0.80, 0.81, 0.80, 0.81, 0.80], [0.81, 0.80, 0.81, 0.81, 0.80],
                           data="cifar10"))["passed"]


def test_claim6_states_the_controls():
    s = _summary([0.96, 0.95, 0.97, 0.96, 0.95], [0.95, 0.96, 0.95, 0.94, 0.95])
    acc = {"mean": 0.9, "ci_low": 0.88, "ci_high": 0.92, "half_width": 0.02, "n": 5}
    s["uniform"] = {"accuracy": acc}
    s["none"] = {"accuracy": dict(acc, mean=0.97, ci_low=0.96, ci_high=0.98)}
    s["positional_vs_uniform"] = {"mean": 0.06, "ci_low": 0.05, "ci_high": 0.07,
                                  "half_width": 0.01, "n": 5}
    s["positional_vs_none"] = {"mean": -0.01, "ci_low": -0.02, "ci_high": -0.005,
                               "half_width": 0.01, "n": 5}
    detail = claim6(s)["detail"]
    assert "uniform attention 90.00 % [88.00, 92.00]" in detail
    assert "+6.00 [+5.00, +7.00] points (positional beats it)" in detail
    assert "no token mixing 97.00 %" in detail and "(positional is worse)" in detail


def test_attention_figure_draws_the_saved_maps(svhn_run):
    _, out = svhn_run
    if not (out / "arrays.npz").exists():
        pytest.fail("test_end_to_end_on_generated_svhn must run first (it writes the result)")
    result = ViTResult.load(out)
    queries = vit_attention.default_queries(result.grid)
    assert queries == [0, 4 * 8 + 4, 2 * 8 + 6, 6 * 8 + 2]
    fig = vit_attention.plot(result)
    images = [ax.images[0].get_array() for ax in fig.axes if ax.images]
    assert len(images) == 2 * len(queries)
    expected = vit_attention.query_maps(result, "positional", queries)
    for got, want in zip(images[:4], expected):
        np.testing.assert_array_equal(np.asarray(got), want)
    # each panel's outline sits on its query patch
    c, r = queries[1] % 8, queries[1] // 8
    rect = fig.axes[1].patches[0]
    assert rect.get_xy() == (c - 0.5, r - 0.5)
    # the positional row is one map for every image; each row of it sums to one over the grid
    np.testing.assert_allclose(expected.sum(axis=(1, 2)), 1.0, rtol=0, atol=ROW_SUM_ABS_F32)


_BLOCK_TORCH = PRELUDE + """
from patchassoc.cli.main import main
status = main(["vit", "--quiet", "--out", sys.argv[1]])
assert "torch" not in sys.modules
sys.exit(status)
"""


def test_without_torch_the_toolkit_loads_and_vit_says_how_to_install(tmp_path):
    """The rest of the toolkit never imports PyTorch; ``patchassoc vit`` then fails with one
    line naming the extra to install, and status 2."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", _BLOCK_TORCH, str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, cwd=root, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == ("patchassoc: error: patchassoc vit needs PyTorch: "
                                   "pip install -e '.[vit]'")
    assert not (tmp_path / "out").exists()
