"""What the commands share on the command line: the vocabulary of option names, the deprecated
names that still work for one release, and the argument types.

:data:`VOCABULARY` holds every option name a command may have, with its meaning: one name per
idea across every command, lower case throughout (docs/cli.md shows it as a table;
tests/cli/test_option_vocabulary.py walks every command's parser against it).
:data:`DEPRECATED` holds the names that were replaced, per command; :func:`add_deprecated_aliases`
keeps each one working as its new name, hidden from ``--help``, with one line on stderr
(:func:`deprecation_notices`).

Each argument type turns one command-line word into a value or raises
:class:`argparse.ArgumentTypeError`, which the parser prints as one error line (exit 2)."""
from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Mapping, Sequence

__all__ = ["VOCABULARY", "DEPRECATED", "REMOVED_IN", "add_deprecated_aliases",
           "deprecation_line", "deprecation_notices", "current_argv", "nonneg_int", "positive_int",
           "positive_float", "out_path", "input_path", "add_no_figures", "add_dask_options"]

#: Every option name a command may have, and what it means (one name per idea, lower case).
VOCABULARY: dict[str, str] = {
    # -- shared by every command
    "-h": "show the command's help and exit (also --help)",
    "--help": "show the command's help and exit",
    "--version": "print the version and exit (patchassoc --version)",
    "--preset": "the configuration preset (tiny, ref, ...)",
    "--set": "override one configuration field, KEY=VALUE (repeatable)",
    "--seed": "the random seed (the first seed where a command runs several)",
    "--out": "the output folder",
    "--json": "exactly one JSON object on stdout, nothing else there",
    "--quiet": "no progress bar, status lines or deprecation notices on stderr",
    # -- how long a run goes
    "--steps": "gradient-descent steps a run makes (at most this many where the run stops at "
               "its criterion or a rule caps its budget)",
    "--t-max": "the horizon of a gradient flow, its time counted in GD steps",
    "--steps-per-ln-d": "scaling: the GD budget grows as T(d) = ceil(this x ln d) steps",
    # -- what a command reads
    "--from": "a result folder written by an earlier patchassoc command, read instead of "
              "computed (check: a reproduction; solutions: a train run)",
    "--vit-from": "a result folder written by patchassoc vit (check decides claim 6 on it)",
    "--upstream-from": "where claim 2's empirical-risk flows are (a reproduction, its seeds "
                       "folder or a flows folder): transfer reads its upstream there",
    "--config": "a config.json written by train or population (or its folder): re-run what it "
                "records, the configuration, seed and options",
    "--data-dir": "a folder of data-set files (vit reads it, data fills it)",
    "--data": "which data set",
    "--matrix": "a .npy file holding an attention or logit matrix",
    "--sets": "a .npy file holding a partition into sets",
    # -- sizes, grids and families
    "--seeds": "how many seeds",
    "--upstream-seeds": "how many upstream (pretraining) seeds",
    "--shuffle-seeds": "how many seeds for the shuffled-patch runs",
    "--control-seeds": "how many seeds for the control models (of the --seeds)",
    "--recipe": "which declared training recipe (default or long)",
    "--protocol": "which declared protocol (limit: the one that decides; budget: the first "
                  "declaration's reading within a budget)",
    "--status": "report what a study folder holds so far, read only, and exit",
    "--ns": "the sample sizes N",
    "--ds": "the patch dimensions d",
    "--ks": "the exponents k of d = round(e^k)",
    "--family": "run the study along claim 7's scaling family (a law in d)",
    "--gd-ks": "the exponents k read by gradient descent",
    "--flow-ks": "the exponents k read by the gradient flow",
    "--sweep-ks": "the L = C values of the patch-count sweep",
    "--sampled-ks": "the exponents k of the sampled-data study",
    "--block-max-k": "the largest k for the certified block-uniform error",
    "--max-patches": "the largest number of patches D = L C",
    "--budget-max-patches": "the largest number of patches D that also gets the GD reading",
    "--sets-rule": "the number of sets L as a function of d",
    "--set-size-rule": "the set size C as a function of d",
    "--q-rule": "q as a function of d",
    "--kappa-rule": "kappa as a function of d",
    "--lambdas": "the regularization grid lambda",
    "--alpha": "alpha = <v, w*>",
    "--a": "the diagonal logit a of invariant logits Q = a I + b (B - I) + c (J - B)",
    "--b": "the within-set logit b of invariant logits",
    "--c": "the across-set logit c of invariant logits",
    "--alt-q": "q of the alternative configuration",
    "--mc-samples": "Monte Carlo draws",
    "--max-configurations": "refuse an enumeration beyond this many configurations",
    "--max-train": "use only the first N training images",
    "--tol": "the certified truncation tolerance",
    "--eps": "the association threshold epsilon",
    "--queries": "the query patches to draw",
    "--lemma": "a lemma to check (repeatable)",
    "--kind": "what the matrix holds",
    "--test-mode": "how test images are drawn",
    "--positional": "which positional model",
    "--shuffle": "a block size of the shuffled-patch experiment (repeatable)",
    "--shuffle-epochs": "epochs of the shuffled-patch runs",
    "--epochs": "training epochs (a recipe override)",
    "--batch-size": "the batch size (a recipe override)",
    "--lr": "the learning rate (a recipe override)",
    "--dim": "the embedding dimension (a recipe override)",
    "--depth": "the number of layers (a recipe override)",
    "--heads": "the number of heads (a recipe override)",
    "--repeats": "repeats per timing",
    # -- where and how it runs
    "--jobs": "how many local processes (or runs) work at once",
    "--dask": "the address of a Dask scheduler to run on",
    "--dask-timeout": "how long to wait for the Dask scheduler and its workers",
    "--threads": "PyTorch CPU threads per run",
    "--device": "cpu or cuda",
    "--only": "run only this step (repeatable)",
    "--claims": "run only these claims' part of a study (numbers separated by commas)",
    # -- switches
    "--quick": "a reduced, faster run: a preview, never a verdict",
    "--reduced": "the reproduction's reduced study: a preview",
    "--flow": "follow the gradient flow to --t-max instead of running GD",
    "--convergence": "also compare with sampled-data runs for growing N",
    "--prune": "also prune the enumeration by probability and margin",
    "--animate": "also write the dynamics as an animation",
    "--strict": "a claim that is not run also fails the command",
    "--force": "recompute what already finished",
    "--budget-readings": "also compute the readings within a step budget",
    "--compare-jacobians": "also compare the Jacobian variants",
    "--no-figures": "write no figure (matplotlib is not imported)",
    "--no-recompute": "refuse instead of recomputing a step made for other work",
    "--no-control": "skip the negative control",
    "--no-alt": "skip the alternative configuration",
    "--no-gd": "skip the gradient-descent protocol read beside the flows",
    "--no-sampled": "skip the sampled-data row",
    "--no-train": "do not train",
    "--no-write": "write nothing",
    "--no-shuffle": "skip the shuffled-patch experiment",
}

#: When the deprecated names go.
REMOVED_IN = "0.2"

#: The replaced option names, per command: old -> new. Each still works for one release
#: (:func:`add_deprecated_aliases`), hidden from --help, with one line on stderr.
DEPRECATED: dict[str, dict[str, str]] = {
    "seeds": {"--horizon": "--steps"},
    "solutions": {"--gd-steps": "--steps", "--train-from": "--from"},
    "grid": {"--max-steps": "--steps", "--max-D": "--max-patches",
             "--budget-max-D": "--budget-max-patches"},
    "scaling": {"--max-steps": "--steps", "--steps-per-log": "--steps-per-ln-d",
                "--L-rule": "--sets-rule", "--C-rule": "--set-size-rule"},
    "sample-size": {"--sizes": "--ns"},
    "check": {"--vit": "--vit-from"},
    "data": {"--dir": "--data-dir"},
}

#: Where a parsed namespace keeps the deprecation lines until the command line prints them.
_NOTICES = "_deprecation_notices"


def deprecation_line(old: str, new: str) -> str:
    """The one line a deprecated option prints on stderr."""
    return f"patchassoc: {old} is deprecated; use {new} (it goes in {REMOVED_IN})"


class _DeprecatedAlias(argparse.Action):
    """An old option string that behaves exactly as the new option's action (same dest, type,
    number of values, choices), hidden from --help; it records its deprecation line."""

    def __init__(self, option_strings, dest, new_action: argparse.Action, **kwargs) -> None:
        self.new_action = new_action
        super().__init__(option_strings, dest=new_action.dest, nargs=new_action.nargs,
                         const=new_action.const, default=argparse.SUPPRESS,
                         type=new_action.type, choices=new_action.choices, required=False,
                         help=argparse.SUPPRESS, metavar=new_action.metavar)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        new = self.new_action.option_strings[-1]
        line = deprecation_line(option_string or self.option_strings[0], new)
        notices = namespace.__dict__.setdefault(_NOTICES, [])
        if line not in notices:
            notices.append(line)
        self.new_action(parser, namespace, values, new)


def add_deprecated_aliases(parser: argparse.ArgumentParser, aliases: Mapping[str, str]) -> None:
    """Make each old option string of ``aliases`` (old -> new) work as the parser's option
    ``new``, hidden from --help; a use records one deprecation line
    (:func:`deprecation_notices`)."""
    for old, new in aliases.items():
        action = parser._option_string_actions.get(new)
        if action is None:
            raise ValueError(f"{parser.prog}: deprecated {old} names {new}, which it lacks")
        if action.required:
            raise ValueError(f"{parser.prog}: {new} is required; an alias would not count")
        parser.add_argument(old, action=_DeprecatedAlias, new_action=action)


def deprecation_notices(args: argparse.Namespace) -> list[str]:
    """The deprecation lines of the options given, taken out of ``args`` (whose attributes are
    then the same as with the new names)."""
    return list(vars(args).pop(_NOTICES, []))


def current_argv(command: str, argv: Sequence[str]) -> list[str]:
    """``argv`` with each deprecated option of ``command`` written with its new name (the
    command line a resume hint shows)."""
    table = DEPRECATED.get(command, {})
    out = []
    for word in argv:
        name, eq, value = word.partition("=")
        out.append(table[name] + eq + value if name in table else word)
    return out


def _int_at_least(text: str, minimum: int, words: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise argparse.ArgumentTypeError(f"expected a {words} integer, got {text!r}")
    return value


def nonneg_int(text: str) -> int:
    """An integer >= 0."""
    return _int_at_least(text, 0, "non-negative")


def positive_int(text: str) -> int:
    """An integer >= 1."""
    return _int_at_least(text, 1, "positive")


def positive_float(text: str) -> float:
    """A finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def out_path(text: str) -> Path:
    """A folder path; an empty one is refused (it would mean the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a folder, got an empty path (use . for the "
                                         "current folder)")
    return Path(text)


def input_path(path: Path, option: str, kind: str, expected: str) -> Path:
    """``path`` as given to ``option``, checked before it is read: it must exist and be a
    ``kind`` (``"file"`` or ``"folder"``).

    Otherwise one line says what the path is (missing, a directory where a file is expected, a
    file where a folder is), with ``expected`` in parentheses: a
    :class:`~patchassoc.simulations.runtime.errors.UsageError`, exit status 2. ``path`` is
    returned unchanged."""
    from patchassoc.simulations.runtime.errors import UsageError
    if kind not in ("file", "folder"):
        raise ValueError(f"kind must be 'file' or 'folder', not {kind!r}")
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{option} {path}: no such {kind} ({expected})")
    if kind == "file" and path.is_dir():
        raise UsageError(f"{option} {path} is a directory, not a file ({expected})")
    if kind == "file" and not path.is_file():
        raise UsageError(f"{option} {path} is not a regular file ({expected})")
    if kind == "folder" and not path.is_dir():
        raise UsageError(f"{option} {path} is a file, not a folder ({expected})")
    return path


def add_no_figures(parser, what: str = "the figures") -> None:
    """``--no-figures``, on every command that draws: nothing is drawn and no plotting code is
    imported (``Context.draw`` returns no figure)."""
    parser.add_argument("--no-figures", action="store_true",
                        help=f"skip {what} (matplotlib is not imported)")


def add_dask_options(parser, help_text: str) -> None:
    """``--dask ADDRESS`` and ``--dask-timeout SECONDS``: the command line connects to the
    scheduler before the run (:func:`patchassoc.simulations.runtime.executor.connect_dask`),
    waiting at most that long for it and for a first worker, and says so in one line."""
    from patchassoc.simulations.runtime.executor import DASK_TIMEOUT
    parser.add_argument("--dask", default=None, metavar="ADDRESS", help=help_text)
    parser.add_argument("--dask-timeout", type=positive_float, default=DASK_TIMEOUT,
                        metavar="SECONDS",
                        help=f"wait at most this long for the Dask scheduler, for its first "
                             f"worker and, during the run, for a worker to come back "
                             f"(default {DASK_TIMEOUT:g})")
