"""Claim 6 on Fashion-MNIST (SPEC section 6): the declared study's floor and preview rule, the
record naming the data set it was decided on, and ``check --vit-from DIR`` deciding claim 6 on a
``patchassoc vit`` folder with the reproduction's digits reading beside it. Summaries are
written here; nothing is trained."""
import json

import pytest

pytest.importorskip("torch")

from patchassoc.simulations.runtime.verified import (write_step_record,  # noqa: E402
                                                     write_summary)
from patchassoc.simulations.studies import claim6_vit, registry  # noqa: E402
from patchassoc.simulations.engines.vit.training import LONG_RECIPES, RECIPES  # noqa: E402
from patchassoc.theory.config import preset  # noqa: E402
from tests.vit.no_torch import PRELUDE  # noqa: E402


def ci(mean, half, n=5):
    return dict(mean=mean, ci_low=mean - half, ci_high=mean + half, half_width=half, n=n)


def summary(data="fashion-mnist", pos=0.88, std=0.885, gap=(-0.005, 0.004), **changes):
    s = {"data": data, "n_train": 60000 if data == "fashion-mnist" else 1347,
         "seeds": [0, 1, 2, 3, 4], "recipe": RECIPES.get(data, RECIPES["digits"]).to_dict(),
         "content": {"accuracy": ci(std, 0.003)},
         "positional": {"accuracy": ci(pos, 0.003), "attention_distance_per_layer": [2.0, 2.1]},
         "uniform": {"accuracy": ci(0.86, 0.003)}, "none": {"accuracy": ci(0.84, 0.003)},
         "gap_positional": ci(*gap), "positional_vs_uniform": ci(0.02, 0.004),
         "positional_vs_none": ci(0.04, 0.004), "uniform_attention_distance": 3.61}
    s.update(changes)
    return s


def long_summary(**kwargs):
    """A summary of the long Fashion-MNIST study (SPEC section 6, claim 6; issue 38)."""
    extra = dict(recipe=LONG_RECIPES["fashion-mnist"].to_dict(), recipe_name="long",
                 control_seeds=[0, 1, 2])
    extra.update({k: kwargs.pop(k) for k in list(kwargs) if k in extra})
    s = summary(**kwargs)
    s.update(extra)
    return s


def test_the_declared_study_decides_and_its_floor_is_84_percent():
    s = summary()
    assert claim6_vit.preview_reasons(s) == []
    c = claim6_vit.claim6(s)
    assert c["passed"] and c["floor"] == 0.84 and c["data"] == "fashion-mnist"
    assert c["claim"].startswith("decided on Fashion-MNIST (2 epochs):")
    assert "(both >= 84 %)" in c["claim"]
    assert claim6_vit.claim6(long_summary())["claim"].startswith(
        "decided on Fashion-MNIST (long recipe, 18 epochs):")
    assert claim6_vit.preview_reasons(long_summary()) == []
    assert claim6_vit.preview_reasons(long_summary(seeds=[0, 1, 2, 3, 4],
                                                   control_seeds=[0, 1])) == [
        "2 control seeds (declared 3)"]
    assert claim6_vit.preview_reasons(long_summary(recipe=RECIPES["fashion-mnist"].to_dict())) \
        == ["epochs 2 (declared 18)", "warmup_epochs 0.2 (declared 1.8)",
            "augment none (declared crop_flip)", "pad 1 (declared 2)"]
    low = claim6_vit.claim6(summary(pos=0.835, std=0.838))
    assert not low["passed"] and "below the floor of 84 %: positional, standard" in low["detail"]
    assert low["cause"]["code"] == "ii"  # no loss curves: nothing says it was still moving
    assert "no per-epoch training loss for positional and standard" in low["cause"]["why"]
    # the same numbers pass the digits' gap rule but not its floor of 93 %
    assert not claim6_vit.claim6(summary(data="digits"))["passed"]
    assert claim6_vit.claim6(summary(data="digits"))["claim"].startswith("decided on digits:")


def test_a_fail_names_its_cause():
    falling = summary(pos=0.83, std=0.90)
    falling["positional"]["train_loss_per_epoch"] = [0.70, 0.50]
    c = claim6_vit.claim6(falling)
    assert c["cause"]["code"] == "i" and "positional 0.700 -> 0.500" in c["cause"]["why"]
    falling["positional"]["train_loss_per_epoch"] = [0.500, 0.499]  # flat: it ended there
    assert claim6_vit.claim6(falling)["cause"]["code"] == "ii"
    wide = claim6_vit.claim6(summary(gap=(-0.03, 0.02)))
    assert wide["cause"]["code"] == "ii" and "[-5.00, -1.00] leaves +-3" in wide["cause"]["why"]
    assert "cause" not in claim6_vit.claim6(summary())


def test_a_smaller_fashion_mnist_run_is_a_preview():
    s = summary(n_train=6000, seeds=[0, 1], recipe=dict(RECIPES["fashion-mnist"].to_dict(),
                                                        epochs=1))
    assert claim6_vit.preview_reasons(s) == ["6000 of 60000 training images",
                                             "epochs 1 (declared 2)", "2 seeds (declared 5)"]
    assert claim6_vit.claim6(s)["status"] == "preview"


def _reproduction(root, digits_passes=True):
    """A reproduction folder whose vit step holds a digits summary."""
    s = summary(data="digits", pos=0.966 if digits_passes else 0.90, std=0.963,
                gap=(0.0027, 0.009))
    write_step_record(root / "vit", {"summary": s})
    return root


def test_check_vit_decides_claim6_on_the_long_study_with_the_other_readings_beside(tmp_path):
    repro = _reproduction(tmp_path / "repro")
    write_summary(tmp_path / "out" / "fm-long" / "summary.json", long_summary())
    plain = registry.check(preset("ref"), 0, repro)
    six = next(c for c in plain["claims"] if c["id"] == "6")
    assert six["status"] == "pass" and six["claim"].startswith("decided on digits:")
    long_dir = tmp_path / "out" / "fm-long"
    out = registry.check(preset("ref"), 0, repro, vit_dir=[long_dir])
    six = [c for c in out["claims"] if c["id"] == "6"]
    assert len(six) == 1 and six[0]["status"] == "pass"
    assert six[0]["claim"].startswith("decided on Fashion-MNIST (long recipe, 18 epochs):")
    assert six[0]["source"] == str(long_dir) and six[0]["values"]["data"] == "fashion-mnist"
    assert six[0]["values"]["beside"]["claim"].startswith("decided on digits:")
    assert "Beside it: the digits (pass): decided on digits:" in six[0]["detail"]
    assert "2-epoch reading: not found beside the long study" in six[0]["detail"]
    # the 2-epoch study beside it is found among the long folder's siblings, and printed as a
    # reading within a budget: its FAIL does not fail the claim
    write_summary(tmp_path / "out" / "fm-2" / "summary.json", summary(pos=0.8255, std=0.8143))
    six = claim6_vit.decide(plain["claims"][5], long_dir)
    assert six["status"] == "pass" and six["values"]["beside_budget"]["status"] == "fail"
    assert six["values"]["beside_budget"]["folder"] == str((tmp_path / "out" / "fm-2").resolve())
    assert ("the 2-epoch reading, within a budget, not the verdict; " in six["detail"]
            and "(fail): decided on Fashion-MNIST (2 epochs):" in six["detail"])
    # given as a second --vit, in either order, it is the same record
    both = claim6_vit.decide(plain["claims"][5], [tmp_path / "out" / "fm-2", long_dir])
    assert both["status"] == "pass" and both["source"] == str(long_dir)
    assert both["values"]["beside_budget"]["folder"] == str(tmp_path / "out" / "fm-2")
    # a failing long study fails claim 6 even where the digits pass
    write_summary(long_dir / "summary.json", long_summary(pos=0.80, std=0.81))
    out = registry.check(preset("ref"), 0, repro, vit_dir=[long_dir])
    assert "6" in out["failed"] and out["exit_status"] == 1
    six = next(c for c in out["claims"] if c["id"] == "6")
    assert six["cause"]["code"] == "ii" and "below the floor of 84 %" in six["cause"]["why"]
    assert "after the declared 18 epochs" in six["cause"]["why"]


def test_the_2_epoch_study_alone_never_decides(tmp_path):
    """SPEC section 6, claim 6 (amended by issue 38): the 2-epoch Fashion-MNIST study is a
    reading within a budget; given alone, the reproduction's record stands, with it beside."""
    repro = _reproduction(tmp_path / "repro")
    write_summary(tmp_path / "fm" / "summary.json", summary(pos=0.80, std=0.81))
    out = registry.check(preset("ref"), 0, repro, vit_dir=[tmp_path / "fm"])
    six = next(c for c in out["claims"] if c["id"] == "6")
    assert six["status"] == "pass" and six["claim"].startswith("decided on digits:")
    assert six["values"]["beside_budget"]["status"] == "fail"
    assert "within a budget, not the verdict" in six["detail"]
    assert claim6_vit.decide(None, tmp_path / "fm")["status"] == "not run"
    with pytest.raises(claim6_vit.UsageError, match="at most one folder that decides"):
        write_summary(tmp_path / "fm-long" / "summary.json", long_summary())
        write_summary(tmp_path / "fm-long2" / "summary.json", long_summary())
        claim6_vit.decide(None, [tmp_path / "fm-long", tmp_path / "fm-long2"])


def test_a_folder_without_a_declared_study_gives_a_preview(tmp_path):
    write_summary(tmp_path / "c" / "summary.json", summary(data="cifar10"))
    rec = claim6_vit.decide(None, tmp_path / "c")
    assert rec["status"] == "preview" and "cifar10 has no declared study" in rec["detail"]


def test_check_vit_with_a_bad_folder_is_one_line_and_status_2(tmp_path, capsys):
    from patchassoc.cli.main import main

    repro = _reproduction(tmp_path / "repro")
    args = ["check", "--from", str(repro), "--quiet", "--out", str(tmp_path / "o"), "--vit-from"]
    assert main([*args, str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no `patchassoc vit` result in" in err[0]
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "summary.json").write_text("{not json")
    assert main([*args, str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(tmp_path / "bad" / "summary.json") in err[0]
    write_summary(tmp_path / "fm" / "summary.json", long_summary())
    assert main([*args, str(tmp_path / "fm"), "--json"]) == 1  # other claims not run
    s = json.loads(capsys.readouterr().out)
    six = next(c for c in s["claims"] if c["id"] == "6")
    assert six["status"] == "pass" and "Fashion-MNIST" in six["claim"]


def test_a_summary_saved_without_loss_curves_gets_them_from_its_arrays(tmp_path):
    import numpy as np

    from patchassoc.simulations.engines.vit.comparison import ViTResult

    rng = np.random.default_rng(0)
    loss = rng.uniform(0.3, 0.9, size=(2, 5, 2))
    res = ViTResult(meta=dict(data="fashion-mnist", kinds=["content", "positional"],
                              seeds=[0, 1, 2, 3, 4], grid=[2, 2], permuted=False, n_train=60000,
                              n_test=10000),
                    accuracy=rng.uniform(0.8, 0.9, size=(2, 5)), train_loss=loss,
                    attention=rng.dirichlet(np.ones(4), size=(2, 5, 1, 1, 4)),
                    permutation=np.arange(4))
    res.save(tmp_path)
    s = summary()
    write_summary(tmp_path / "summary.json", s)  # no train_loss_per_epoch in it
    back = claim6_vit.folder_summary(tmp_path)
    np.testing.assert_allclose(back["positional"]["train_loss_per_epoch"], loss[1].mean(axis=0),
                               rtol=1e-15)
    np.testing.assert_allclose(res.summary()["content"]["train_loss_per_epoch"],
                               loss[0].mean(axis=0), rtol=1e-15)


def test_a_folder_whose_arrays_cannot_be_read_says_why_its_cause_has_no_trend(tmp_path):
    """A summary without per-epoch losses in a folder whose arrays cannot be loaded (written
    before result folders had a manifest, say): the FAIL is the rule's (ii), and its cause says
    that the trend was not there to read, and why."""
    write_summary(tmp_path / "summary.json", long_summary(pos=0.83, std=0.82))
    (tmp_path / "arrays.npz").write_bytes(b"not an npz")
    rec = claim6_vit.decide(None, tmp_path)
    assert rec["status"] == "fail" and rec["cause"]["code"] == "ii"
    assert "no per-epoch training loss for positional and standard" in rec["cause"]["why"]
    assert str(tmp_path) in rec["cause"]["why"]    # the reason names the folder


_CLAIM6_WITHOUT_TORCH = PRELUDE + """
import json
from patchassoc.simulations.studies.claim6_vit import claim6
out = claim6(json.loads(sys.stdin.read()))
assert "torch" not in sys.modules
print(json.dumps(out, sort_keys=True, default=str))
"""


@pytest.mark.parametrize("make", [summary, long_summary, lambda: summary(epochs=1)])
def test_claim6_is_read_without_torch(make):
    """check --from on a machine without the vit extra: claim 6's verdict (the declared recipes,
    the preview reasons) reads a saved summary without importing PyTorch, and says what it says
    with PyTorch (the recipes lived beside the training code, and check --from stopped with
    ModuleNotFoundError: torch)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    s = make()
    expected = claim6_vit.claim6(s)
    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(repo) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", _CLAIM6_WITHOUT_TORCH], input=json.dumps(s),
                          capture_output=True, text=True, env=env, cwd=repo, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == json.loads(json.dumps(expected, sort_keys=True, default=str))
    assert "passed" in expected and "measured" in expected
