"""The files every package has (issue 40): a LICENSE that matches setup.cfg's licence, a
CITATION.cff that names this version and the paper, one home for the version, hypothesis only
in the test extra, and ``patchassoc --version``."""
from __future__ import annotations

import configparser
import re
import subprocess
import sys
from pathlib import Path

import patchassoc

ROOT = Path(__file__).resolve().parents[1]


def _setup_cfg() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return cfg


def test_license_file_is_the_declared_mit_licence():
    cfg = _setup_cfg()
    assert cfg["metadata"]["license"] == "MIT"
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License")
    assert "Permission is hereby granted, free of charge" in text


def test_version_lives_in_one_place():
    cfg = _setup_cfg()
    assert cfg["metadata"]["version"].strip() == "attr: patchassoc._version.__version__"
    hits = [p for p in ROOT.glob("patchassoc/*.py")
            if re.search(r"^__version__\s*=", p.read_text(), re.M)]
    assert [p.name for p in hits] == ["_version.py"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", patchassoc.__version__)


def test_citation_cff_names_this_version_and_the_paper():
    text = (ROOT / "CITATION.cff").read_text()
    fields = dict(re.findall(r"^([a-z-]+):\s*(.*)$", text, re.M))
    assert fields["cff-version"] == "1.2.0"
    assert fields["version"] == patchassoc.__version__
    assert fields["license"] == "MIT"
    assert "preferred-citation" in fields
    assert "Vision Transformers provably learn spatial structure" in text
    for author in ("Jelassi", "Sander", "Li"):
        assert f"family-names: {author}" in text


def test_hypothesis_is_a_test_requirement_only():
    cfg = _setup_cfg()
    runtime = cfg["options"]["install_requires"]
    assert "hypothesis" not in runtime
    assert "hypothesis" in cfg["options.extras_require"]["test"]
    for root in ("theory", "simulations", "patchassoc", "figures", "benchmarks"):
        for path in (ROOT / root).rglob("*.py"):
            assert not re.search(r"^\s*(import|from) hypothesis", path.read_text(), re.M), path


def test_command_line_prints_the_version():
    run = subprocess.run([sys.executable, "-m", "patchassoc", "--version"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"patchassoc {patchassoc.__version__}"
    assert run.stderr == ""
