"""Configuration: presets resolve the reference scalings; every invalid field gets a clear error."""
import math

import pytest

from patchassoc.theory.config import PRESETS, Config, parse_override, preset


def test_ref_preset_resolves_reference_scalings():
    cfg = preset("ref")
    assert (cfg.d, cfg.L, cfg.C, cfg.D) == (256, 4, 4, 16)
    assert cfg.q == pytest.approx(math.log(256) / 16, rel=0, abs=1e-15)
    assert cfg.sigma == 1 / 16
    assert cfg.kappa == pytest.approx(math.log(math.log(256)), abs=1e-15)
    assert (cfg.p, cfg.nu, cfg.omega, cfg.eta_v, cfg.eta_Q) == (5, 0.03, 1e-3, 0.1, 50.0)


def test_paper_preset():
    cfg = preset("paper")
    assert (cfg.d, cfg.L, cfg.C, cfg.D) == (4096, 8, 8, 64)
    assert cfg.q == pytest.approx(math.log(4096) / 64, abs=1e-15)


def test_scalings_follow_overrides_unless_set():
    assert preset("ref", d=1024).sigma == 1 / 32
    assert preset("ref", d=1024, sigma=0.5).sigma == 0.5


def test_round_trip_through_dict():
    cfg = preset("ref", L=2, C=8, param="gram")
    assert Config.from_dict(cfg.to_dict()) == cfg


def test_sizes_keep_D_unless_both_L_and_C_change():
    assert (preset("ref", C=8).L, preset("ref", C=8).D) == (2, 16)
    assert (preset("ref", L=8).C, preset("ref", L=8).D) == (2, 16)
    cfg = preset("ref", L=6, C=8)
    assert (cfg.L, cfg.C, cfg.D) == (6, 8, 48)
    assert preset("ref", D=64).L == 16
    with pytest.raises(ValueError, match="C = 3 does not divide the number of patches D = 16"):
        preset("ref", C=3)
    with pytest.raises(ValueError, match="L = 5 does not divide"):
        preset("ref", L=5)
    with pytest.raises(ValueError, match="D must equal L"):
        Config(L=4, C=4, D=15)


@pytest.mark.parametrize("overrides,field", [
    (dict(structure="windows", L=3, C=3), "windows"),
    (dict(structure="windows", L=2, C=4), "square"),
    (dict(L=0), "L"),
    (dict(C=0), "C"),
    (dict(d=0), "d"),
    (dict(n_train=0), "n_train"),
    (dict(q=1.5), "q"),
    (dict(q=-0.1), "q"),
    (dict(sigma=-1.0), "sigma"),
    (dict(p=4), "p"),
    (dict(p=1), "p"),
    (dict(nu=-0.1), "nu"),
    (dict(eta_v=float("nan")), "eta_v"),
    (dict(kappa=float("inf")), "kappa"),
    (dict(omega=-1.0), "omega"),
    (dict(param="cosine"), "param"),
    (dict(noise="pink"), "noise"),
    (dict(steps=-1), "steps"),
    (dict(L=2.5), "L"),
])
def test_invalid(overrides, field):
    with pytest.raises(ValueError, match=field):
        preset("ref", **overrides)


def test_unknown_preset_and_field():
    with pytest.raises(ValueError, match="unknown preset"):
        preset("huge")
    with pytest.raises(ValueError, match="unknown config field"):
        Config.from_dict({"patches": 16})


@pytest.mark.parametrize("text,expected", [
    ("L=8", ("L", 8)), ("q=0.2", ("q", 0.2)), ("steps=1e3", ("steps", 1000)),
    ("param=gram", ("param", "gram")), ("sigma=ref", ("sigma", None)),
])
def test_parse_override(text, expected):
    assert parse_override(text) == expected


@pytest.mark.parametrize("text,match", [
    ("L8", "key=value"), ("Z=3", "unknown config field"), ("L=2.5", "integer"),
    ("q=abc", "number"), ("q=", "needs a value"),
])
def test_parse_override_errors(text, match):
    with pytest.raises(ValueError, match=match):
        parse_override(text)


def test_every_preset_is_valid():
    for name in PRESETS:
        assert preset(name).D >= 1
