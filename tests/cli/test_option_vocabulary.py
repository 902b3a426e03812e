"""One vocabulary of options (issue 40): every command's parser against
:data:`patchassoc.cli.options.VOCABULARY`, the deprecated names against their new ones, and
``--no-figures`` on every command that draws.

The parsers are walked as ``patchassoc`` builds them (:func:`patchassoc.cli.main.build_parser`),
so a command that adds an option outside the vocabulary, or one with an upper-case letter, fails
here; so does a docs table that drifts from the constant."""
from __future__ import annotations

import argparse
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from patchassoc.cli import main as cli
from patchassoc.cli.main import COMMANDS, build_parser, main
from patchassoc.cli.options import (DEPRECATED, REMOVED_IN, VOCABULARY, _DeprecatedAlias,
                                    deprecation_line, deprecation_notices)

ROOT = Path(__file__).resolve().parents[2]

#: A value each deprecated option accepts (and the positional arguments its command needs).
SAMPLE = {
    ("seeds", "--horizon"): ["12"],
    ("solutions", "--gd-steps"): ["50"],
    ("solutions", "--train-from"): ["some/train-run"],
    ("grid", "--max-steps"): ["100"],
    ("grid", "--max-D"): ["36"],
    ("grid", "--budget-max-D"): ["40"],
    ("scaling", "--max-steps"): ["60"],
    ("scaling", "--steps-per-log"): ["500"],
    ("scaling", "--L-rule"): ["log2"],
    ("scaling", "--C-rule"): ["3"],
    ("sample-size", "--sizes"): ["100,200"],
    ("check", "--vit"): ["some/vit-run"],
    ("data", "--dir"): ["some/folder"],
}
POSITIONAL = {"data": ["fashion-mnist"]}


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser, _ = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {"": parser, **sub.choices}


def _options(parser: argparse.ArgumentParser, hidden: bool = False) -> dict[str, argparse.Action]:
    """The parser's option strings and their actions; the deprecated aliases only with
    ``hidden``."""
    return {s: a for a in parser._actions for s in a.option_strings
            if hidden or not isinstance(a, _DeprecatedAlias)}


# -- the vocabulary --------------------------------------------------------------------------
def test_every_option_of_every_command_is_in_the_vocabulary_and_lower_case():
    outside, upper = [], []
    for name, parser in _subparsers().items():
        for option in _options(parser):
            if option not in VOCABULARY:
                outside.append(f"{name or 'patchassoc'} {option}")
            if option != option.lower():
                upper.append(f"{name or 'patchassoc'} {option}")
    assert not outside, f"options outside patchassoc.cli.options.VOCABULARY: {outside}"
    assert not upper, f"option names with an upper-case letter: {upper}"
    assert all(k == k.lower() and k.startswith("-") for k in VOCABULARY)


def test_every_name_of_the_vocabulary_is_used_and_means_something():
    used = {o for p in _subparsers().values() for o in _options(p)}
    assert set(VOCABULARY) <= used, sorted(set(VOCABULARY) - used)
    assert all(len(meaning) > 5 for meaning in VOCABULARY.values())


def test_one_name_per_idea_where_there_were_several():
    """The ideas of the issue go by one name each: the flow's horizon, a count of GD steps,
    the folders read, the sample sizes."""
    parsers = _subparsers()
    for command in ("train", "population", "grid", "seeds", "sample-size", "scaling"):
        assert "--t-max" in _options(parsers[command]), command
    for command in ("population", "grid", "seeds", "solutions", "scaling"):
        assert "--steps" in _options(parsers[command]), command
    assert "--from" in _options(parsers["check"]) and "--from" in _options(parsers["solutions"])
    assert "--data-dir" in _options(parsers["vit"]) and "--data-dir" in _options(parsers["data"])
    assert "--ns" in _options(parsers["sample-size"]) and "--ns" in _options(parsers["scaling"])
    gone = {old for table in DEPRECATED.values() for old in table}
    assert not gone & {o for p in parsers.values() for o in _options(p)}


def _markdown_table(text: str, header: str) -> list[list[str]]:
    lines = text[text.index(header):].splitlines()
    rows = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows


def test_the_docs_tables_are_the_vocabulary_and_the_deprecated_names():
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = _markdown_table(text, "| option | meaning | commands |")
    assert {r[0].strip("`"): r[1] for r in rows} == VOCABULARY
    assert [r[0].strip("`") for r in rows] == list(VOCABULARY)    # in the constant's order
    rows = _markdown_table(text, "| command | old | new |")
    assert [(r[0], r[1].strip("`"), r[2].strip("`")) for r in rows] == [
        (cmd, old, new) for cmd, table in DEPRECATED.items() for old, new in table.items()]


# -- the deprecated names ----------------------------------------------------------------------
ALIASES = [(cmd, old, new) for cmd, table in DEPRECATED.items() for old, new in table.items()]


def test_every_deprecated_alias_has_a_sample_value():
    assert set(SAMPLE) == {(cmd, old) for cmd, old, _ in ALIASES}


@pytest.mark.parametrize("command, old, new", ALIASES)
def test_a_deprecated_option_is_its_new_name_hidden_with_one_line(command, old, new):
    assert old.lstrip("-") != new.lstrip("-") and new in VOCABULARY
    parser, _ = build_parser(command)
    value = SAMPLE[(command, old)]
    head = [command, *POSITIONAL.get(command, [])]
    with_old = parser.parse_args(head + [old, *value])
    with_new = parser.parse_args(head + [new, *value])
    assert deprecation_notices(with_old) == [
        f"patchassoc: {old} is deprecated; use {new} (it goes in {REMOVED_IN})"]
    assert deprecation_notices(with_new) == []
    assert vars(with_old) == vars(with_new)                # the same parsed namespace
    # also as --old=value, and given twice: still one line
    twice = parser.parse_args(head + [f"{old}={value[0]}", old, *value])
    assert deprecation_notices(twice) == [deprecation_line(old, new)]
    # the same namespace as the new name given twice (an appending option, e.g. check's
    # repeatable --vit-from, holds both values)
    assert vars(twice) == vars(parser.parse_args(head + [f"{new}={value[0]}", new, *value]))
    sub = _subparsers()[command]
    assert isinstance(_options(sub, hidden=True)[old], _DeprecatedAlias)
    text = sub.format_help()
    assert new in text and old not in text.replace(new, "")    # hidden from --help


def test_the_deprecation_line_is_printed_once_and_not_under_quiet(tmp_path, capsys):
    """Through the command line: the command behaves as with the new name (here its own error
    about the value, naming the new option), and a failing command's one line carries the
    notice (issue 39: one line, even for `check --vit /empty`)."""
    assert main(["grid", "--max-D", "3", "--out", str(tmp_path / "g")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["patchassoc: error: --max-patches must lie in 4..48; note: --max-D is "
                   "deprecated; use --max-patches (it goes in 0.2)"]
    assert main(["grid", "--max-D", "3", "--quiet", "--out", str(tmp_path / "g")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "patchassoc: error: --max-patches must lie in 4..48"]


def test_a_run_with_a_deprecated_name_equals_the_run_with_the_new_one(tmp_path, capsys):
    """The same arrays, bit for bit, and the same step count recorded."""
    import numpy as np
    base = ["solutions", "--preset", "tiny", "--lambdas", "0,16", "--no-alt", "--no-sampled",
            "--no-figures", "--json", "--mc-samples", "1000"]
    assert main(base + ["--gd-steps", "40", "--out", str(tmp_path / "old")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [deprecation_line("--gd-steps", "--steps")]
    assert main(base + ["--steps", "40", "--out", str(tmp_path / "new"), "--quiet"]) == 0
    capsys.readouterr()
    arrays = sorted(p.relative_to(tmp_path / "new") for p in (tmp_path / "new").rglob("*.npz"))
    assert len(arrays) >= 2
    for rel in arrays:
        with np.load(tmp_path / "old" / rel) as a, np.load(tmp_path / "new" / rel) as b:
            assert sorted(a.files) == sorted(b.files)
            for key in a.files:
                assert np.array_equal(a[key], b[key], equal_nan=True), (rel, key)
    gd = [json.loads((tmp_path / run / "main" / "population_gd" / "metrics.json").read_text())
          for run in ("old", "new")]
    assert gd[0]["steps"] == gd[1]["steps"] == 40


def test_the_resume_hint_shows_the_new_names():
    from patchassoc.cli.options import current_argv
    assert current_argv("grid", ["grid", "--max-D", "36", "--max-steps=50", "--quick"]) == [
        "grid", "--max-patches", "36", "--steps=50", "--quick"]
    assert current_argv("population", ["population", "--steps", "5"]) == [
        "population", "--steps", "5"]


# -- --no-figures ------------------------------------------------------------------------------
def _draws(mod) -> bool:
    """A command draws when its module reaches the figures (its own draw, the shared finish, or
    the catalog)."""
    source = inspect.getsource(mod)
    return any(s in source for s in ("ctx.draw(", "ctx.finish(", "figures.catalog"))


DRAWING = [mod.NAME for mod in COMMANDS if _draws(mod)]


def test_the_commands_that_draw_are_found():
    assert set(DRAWING) >= {"train", "population", "solutions", "grid", "seeds", "sample-size",
                            "paper-figures", "scaling", "robustness", "locality", "transfer",
                            "vit", "reproduce"}
    assert "population-eval" not in DRAWING and "check" not in DRAWING


@pytest.mark.parametrize("command", DRAWING)
def test_every_command_that_draws_takes_no_figures(command):
    assert "--no-figures" in _options(_subparsers()[command])


_NO_FIGURES_RUNS = r"""
import sys
from pathlib import Path
from patchassoc.cli.main import main
out = Path(sys.argv[1])
runs = {
    "train": ["train", "--preset", "tiny", "--set", "steps=30"],
    "locality": ["locality", "--preset", "tiny", "--set", "L=4", "--set", "C=4", "--set",
                 "steps=30"],
    "population": ["population", "--preset", "tiny", "--steps", "40"],
    "solutions": ["solutions", "--preset", "tiny", "--lambdas", "0,16", "--steps", "40",
                  "--no-alt", "--no-sampled", "--mc-samples", "1000"],
}
for name, argv in runs.items():
    status = main(argv + ["--no-figures", "--quiet", "--json", "--out", str(out / name)])
    assert status == 0, (name, status)
assert "matplotlib" not in sys.modules, "--no-figures imported matplotlib"
print("ok")
"""


def test_tiny_runs_with_no_figures_write_no_figure_and_import_no_matplotlib(tmp_path):
    proc = subprocess.run([sys.executable, "-c", _NO_FIGURES_RUNS, str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "ok"
    written = {p.relative_to(tmp_path).parts[0] for p in tmp_path.rglob("*") if p.is_file()}
    assert written == {"train", "locality", "population", "solutions"}   # the runs wrote
    figures = [p for p in tmp_path.rglob("*") if p.suffix in (".png", ".pdf", ".gif", ".mp4")]
    assert figures == []


def test_context_draw_draws_nothing_with_no_figures(tmp_path):
    ctx = cli.Context(config=None, seed=0, out=tmp_path, progress=False, json=True,
                      args=argparse.Namespace(no_figures=True))
    assert ctx.draw("population", object()) == [] and not ctx.figures
