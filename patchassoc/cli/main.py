"""The ``patchassoc`` command line (also ``python -m patchassoc``).

Every subcommand shares the options ``--preset``, ``--set key=value`` (repeatable, any
:class:`~patchassoc.theory.config.Config` field), ``--seed``, ``--out``, ``--json`` (exactly one JSON object
on stdout, nothing else there) and ``--quiet`` (no progress bar on stderr).

A subcommand is a module of :mod:`patchassoc.cli` listed in :data:`COMMANDS`. It defines

- ``NAME`` and ``HELP`` (strings), optionally ``DEFAULT_PRESET``;
- ``add_arguments(parser)``: its own options (may be absent);
- ``run(ctx) -> dict``: the work, given a :class:`Context`; returns the JSON-ready summary.
  It may define ``render(summary) -> str`` for the human-readable text (default: key: value).

Bad input (:class:`ValueError`, including :class:`~patchassoc.simulations.runtime.errors.UsageError`, and argument
errors) prints one line ``patchassoc: error: ...`` on stderr and exits with status 2. An
interrupted command exits with status 130 after keeping what it finished.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from patchassoc.theory.config import PRESETS, Config, parse_override, preset

from patchassoc.simulations.runtime.errors import UsageError
from patchassoc.simulations.runtime.results import to_jsonable

__all__ = ["main", "Context", "COMMANDS", "build_parser"]

#: Subcommand modules, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = (
    "patchassoc.cli.main_train",
    "patchassoc.cli.main_locality",
    "patchassoc.cli.main_reproduce",
    "patchassoc.cli.main_population",
    "patchassoc.cli.main_population_eval",
    "patchassoc.cli.main_lemmas",
    "patchassoc.cli.main_solutions",
    "patchassoc.cli.main_check",
    "patchassoc.cli.main_bench",
    "patchassoc.cli.main_vit",
    "patchassoc.cli.main_transfer",
    "patchassoc.cli.main_association",
    "patchassoc.cli.main_grid",
    "patchassoc.cli.main_seeds",
    "patchassoc.cli.main_paper_figures",
    "patchassoc.cli.main_scaling",
)

DEFAULT_OUT = Path("patchassoc-out")


@dataclass
class Context:
    """What a subcommand receives: the resolved config and the shared options."""

    config: Config
    seed: int
    out: Path
    progress: bool
    json: bool
    args: argparse.Namespace
    overrides: dict = field(default_factory=dict)
    preset_name: str = "ref"

    def log(self, message: str) -> None:
        """A status line on stderr (silent with --quiet or --json)."""
        if self.progress and not self.json:
            print(message, file=sys.stderr, flush=True)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        raise UsageError(message)


def _shared_options() -> argparse.ArgumentParser:
    shared = _Parser(add_help=False)
    g = shared.add_argument_group("shared options")
    g.add_argument("--preset", default=None, metavar="NAME",
                   help=f"configuration preset ({', '.join(PRESETS)}; default depends on command, "
                        f"usually ref)")
    g.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config field, e.g. --set L=8 --set q=0.2 (repeatable)")
    g.add_argument("--seed", type=_nonneg_int, default=0, help="random seed (default 0)")
    g.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help=f"output folder (default {DEFAULT_OUT}/<command>)")
    g.add_argument("--json", action="store_true",
                   help="print exactly one JSON object on stdout and nothing else there")
    g.add_argument("--quiet", action="store_true", help="no progress bar or status lines")
    return shared


def _nonneg_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def _load_commands() -> dict[str, Any]:
    modules = {}
    for path in COMMANDS:
        mod = importlib.import_module(path)
        modules[mod.NAME] = mod
    return modules


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Any]]:
    commands = _load_commands()
    parser = _Parser(prog="patchassoc",
                     description="Exact computation and simulation of patch association in "
                                 "positional-attention vision transformers (Jelassi, Sander, Li, "
                                 "NeurIPS 2022).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    shared = _shared_options()
    for name, mod in commands.items():
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP, parents=[shared])
        if hasattr(mod, "add_arguments"):
            mod.add_arguments(p)
    return parser, commands


def _resolve_config(args: argparse.Namespace, default_preset: str) -> tuple[Config, dict, str]:
    name = args.preset or default_preset
    overrides = dict(parse_override(text) for text in args.overrides)
    return preset(name, **overrides), overrides, name


def _render(summary: dict) -> str:
    lines = []
    for key, value in summary.items():
        if isinstance(value, dict):
            continue
        if isinstance(value, float):
            value = f"{value:.6g}"
        lines.append(f"{key:>24}: {value}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``patchassoc`` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser, commands = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        mod = commands[args.command]
        config, overrides, preset_name = _resolve_config(
            args, getattr(mod, "DEFAULT_PRESET", "ref"))
        out = args.out if args.out is not None else DEFAULT_OUT / args.command
        ctx = Context(config=config, seed=args.seed, out=Path(out),
                      progress=not args.quiet,
                      json=args.json, args=args, overrides=overrides, preset_name=preset_name)
        summary = mod.run(ctx)
    except UsageError as exc:
        print(f"patchassoc: error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"patchassoc: error: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"patchassoc: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("patchassoc: interrupted; finished work was kept", file=sys.stderr)
        return 130
    status = 0
    if isinstance(summary, dict) and summary.get("exit_status"):
        status = int(summary.pop("exit_status"))
    if args.json:
        sys.stdout.write(json.dumps(to_jsonable(summary), sort_keys=True) + "\n")
    else:
        render = getattr(mod, "render", _render)
        print(render(summary))
    return status
