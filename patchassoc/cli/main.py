"""The ``patchassoc`` command line (also ``python -m patchassoc``).

Every subcommand shares the options ``--preset``, ``--set key=value`` (repeatable, any
:class:`~patchassoc.theory.config.Config` field), ``--seed``, ``--out``, ``--json`` (exactly one
JSON object on stdout, nothing else there) and ``--quiet`` (no progress bar on stderr).

A subcommand is a module of :mod:`patchassoc.cli` listed in :data:`COMMANDS`. It defines

- ``NAME`` and ``HELP`` (strings), optionally ``DEFAULT_PRESET``;
- ``add_arguments(parser)``: its own options (may be absent);
- ``run(ctx) -> dict``: the work, given a :class:`Context`; returns the JSON-ready summary.
  It may define ``render(summary) -> str`` for the human-readable text (default: key: value).

Bad input (:class:`ValueError`, including
:class:`~patchassoc.simulations.runtime.errors.UsageError`, and argument errors) prints one line
``patchassoc: error: ...`` on stderr and exits with status 2. An interrupted command exits with
status 130 after keeping what it finished.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from patchassoc.theory.config import PRESETS, Config, parse_override, preset
from patchassoc.cli import (main_association, main_bench, main_check, main_grid, main_lemmas,
                            main_locality, main_paper_figures, main_population,
                            main_population_eval, main_reproduce, main_scaling, main_seeds,
                            main_solutions, main_train, main_transfer, main_vit)
from patchassoc.cli import main_robustness

from patchassoc.cli.options import nonneg_int
from patchassoc.simulations.runtime.errors import UsageError
from patchassoc.simulations.runtime.results import to_jsonable

__all__ = ["main", "Context", "COMMANDS", "build_parser"]

#: Subcommand modules, in the order ``--help`` lists them.
COMMANDS = (main_train, main_locality, main_reproduce, main_population, main_population_eval,
            main_lemmas, main_solutions, main_check, main_bench, main_vit, main_transfer,
            main_association, main_grid, main_seeds, main_paper_figures, main_scaling,
            main_robustness)

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

    def finish(self, study: str, outcome, what: str) -> dict:
        """The outcome's summary with the study's figures drawn into ``out`` (unless
        ``--no-figures``), and one line on stderr when the run stopped early (``what stopped:
        status``): what it recorded was saved."""
        from patchassoc.figures.catalog import draw
        summary = outcome.summary
        if not getattr(self.args, "no_figures", False):
            summary["figures"] = draw(study, outcome, self.out)
        if summary.get("exit_status"):
            print(f"patchassoc: {what} stopped: {summary['status']}; what was recorded was "
                  f"saved to {self.out}", file=sys.stderr)
        return summary


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
    g.add_argument("--seed", type=nonneg_int, default=0, help="random seed (default 0)")
    g.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help=f"output folder (default {DEFAULT_OUT}/<command>)")
    g.add_argument("--json", action="store_true",
                   help="print exactly one JSON object on stdout and nothing else there")
    g.add_argument("--quiet", action="store_true", help="no progress bar or status lines")
    return shared


def _load_commands() -> dict[str, Any]:
    return {mod.NAME: mod for mod in COMMANDS}


def build_parser(chosen: str | None = None) -> tuple[argparse.ArgumentParser, dict[str, Any]]:
    """The parser and the commands by name. Only the ``chosen`` command (all of them when it is
    None) gets its own options and its long description: a command imports its study when it
    builds them, so ``patchassoc --help`` and another command's run load no study."""
    commands = _load_commands()
    parser = _Parser(prog="patchassoc",
                     description="Exact computation and simulation of patch association in "
                                 "positional-attention vision transformers (Jelassi, Sander, Li, "
                                 "NeurIPS 2022).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    shared = _shared_options()
    for name, mod in commands.items():
        full = chosen is None or name == chosen
        describe = getattr(mod, "describe", None)
        p = sub.add_parser(name, help=mod.HELP, parents=[shared],
                           description=describe() if full and describe else mod.HELP)
        if full and hasattr(mod, "add_arguments"):
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
        parser, commands = build_parser(next((a for a in argv if not a.startswith("-")), ""))
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
