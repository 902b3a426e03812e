"""The ``patchassoc`` command line (also ``python -m patchassoc``).

Every subcommand shares the options ``--preset``, ``--set key=value`` (repeatable, any
:class:`~patchassoc.theory.config.Config` field), ``--seed``, ``--out``, ``--json`` (exactly one
JSON object on stdout, nothing else there, with ``schema``, the version of the records,
:data:`~patchassoc.simulations.runtime.results.SCHEMA`) and ``--quiet`` (no progress bar on
stderr). A command that writes into ``--out`` leaves ``provenance.json`` there
(:mod:`~patchassoc.simulations.runtime.provenance`).
Option names come from one vocabulary (:data:`patchassoc.cli.options.VOCABULARY`, lower case,
one name per idea); a name it replaced still works for one release, hidden from ``--help``, and
prints one line ``patchassoc: --old is deprecated; use --new (it goes in 0.2)`` on stderr (not
under ``--quiet``; :data:`patchassoc.cli.options.DEPRECATED`).

A subcommand is a module of :mod:`patchassoc.cli` listed in :data:`COMMANDS`. It defines

- ``NAME`` and ``HELP`` (strings), optionally ``DEFAULT_PRESET`` and ``WRITES_OUT = False``
  (a command that writes nothing: its ``--out`` is neither created nor checked; or a function of
  the parsed arguments, for a command that writes only with some options), ``ALLOCATES`` (what
  it allocates, :mod:`patchassoc.cli.resources`: refused before the run when it cannot fit in
  memory; or a function of the parsed arguments) and ``check_inputs(config, args)`` (cheap
  checks of its own options and input folders, run before anything is created or computed);
  ``RERUN = True``: a command whose folder's ``config.json`` records its command and options
  (:meth:`Context.run_record`) takes ``--config FILE`` to re-run what FILE records;
- ``add_arguments(parser)``: its own options (may be absent);
- ``run(ctx) -> dict``: the work, given a :class:`Context`; returns the JSON-ready summary.
  It may define ``render(summary) -> str`` for the human-readable text (default: key: value).

An error prints one line ``patchassoc: error: ...`` on stderr, and the exit status says which
kind it was (:func:`exit_status`):

- 2, a usage or configuration error: argument errors, bad input (:class:`ValueError`, including
  :class:`~patchassoc.simulations.runtime.errors.UsageError`: an invalid configuration, size,
  option value or input folder, a Dask address that does not answer, a configuration whose
  arrays cannot fit in this machine's memory, refused before the run by
  :mod:`patchassoc.cli.resources`);
- 1, a data, operating-system or runtime error: a file that cannot be read as what it should be
  (:class:`~patchassoc.simulations.runtime.errors.CorruptFile`), every operating-system error
  (:class:`OSError`: a read-only or full disk, a path that is not a folder or is too long, a
  permission denied; the message names the path), a tool or download the command runs that
  fails (:class:`~patchassoc.simulations.runtime.errors.RunError`), and running out of memory.
  A command whose result fails (a claim that fails, a reproduction step that failed) also
  exits with 1.

A command that writes into ``--out`` first checks that it can
(the folder is created and a probe file written), so a run never computes for minutes and
then fails to save. A Dask address (``--dask``) is connected before the run, with a bounded
wait (``--dask-timeout``).

An interrupted command (Ctrl-C, also inside a Numba kernel or its compiler's callbacks; or a
run that stopped with an ``interrupted`` status) keeps what it finished, prints one line
``patchassoc: interrupted: ...`` saying what finished and the command that resumes it, and exits
with status 130; an ``--out`` folder it created and left empty is removed. SIGTERM is read the
same way, with the same line, and exits with status 143 (128 + 15). With ``--quiet`` or
``--json`` no Python warning reaches stderr. When the
reader of stdout goes away (``| head``) the command stops quietly with status 141 (128 +
SIGPIPE), as other Unix tools do.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence


def _terminated(signum, frame):
    """SIGTERM is read as Ctrl-C (same line, what finished kept), with its own exit status."""
    _SIGNAL["number"] = signum
    raise KeyboardInterrupt(f"signal {signum}")


#: The signal that ended the command (SIGINT unless SIGTERM came).
_SIGNAL = {"number": signal.SIGINT}

try:  # Ctrl-C while the command line loads (numpy and the commands, about half a second)
    _old_term = signal.signal(signal.SIGTERM, _terminated) \
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL else None
    from patchassoc.theory.config import PRESETS, Config, parse_override, preset
    from patchassoc.cli import (main_association, main_bench, main_check, main_data,
                                main_flow_distance, main_flow_limit, main_grid, main_lemmas, main_locality, main_paper_figures,
                                main_population, main_population_eval, main_reproduce,
                                main_robustness, main_sample_size, main_scaling, main_seeds,
                                main_solutions, main_train, main_transfer, main_vit)

    from patchassoc._version import __version__
    from patchassoc.cli.options import (DEPRECATED, add_deprecated_aliases, current_argv,
                                        deprecation_notices, nonneg_int, out_path)
    from patchassoc.simulations.runtime.errors import (CorruptFile, Interrupted, RunError,
                                                       UsageError, interrupted_by)
    from patchassoc.simulations.runtime.provenance import begin, write_provenance
    from patchassoc.simulations.runtime.results import SCHEMA, json_ready
except KeyboardInterrupt:
    sys.stderr.write("patchassoc: interrupted while starting; nothing was done\n")
    raise SystemExit(128 + _SIGNAL["number"]) from None
if _old_term is not None:   # main() installs it for the run; an importer keeps its own
    signal.signal(signal.SIGTERM, _old_term)

__all__ = ["main", "Context", "COMMANDS", "build_parser", "exit_status"]

#: Subcommand modules, in the order ``--help`` lists them.
COMMANDS = (main_train, main_locality, main_reproduce, main_population, main_population_eval,
            main_lemmas, main_solutions, main_check, main_bench, main_vit, main_transfer,
            main_association, main_grid, main_seeds, main_sample_size, main_paper_figures,
            main_scaling, main_data, main_robustness, main_flow_limit, main_flow_distance)

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
    #: The command's own options that change its numbers (:func:`run_options`).
    run_options: tuple = ()

    def run_record(self, **resolved) -> dict:
        """What a result folder's ``config.json`` records beside the configuration and the
        seed, for ``--config`` to re-run it: the command, and its options that change the run
        as they ran (``resolved``: the values the command resolved itself, such as a default
        horizon or number of steps)."""
        options = {dest: getattr(self.args, dest, None) for dest in self.run_options}
        options.update(resolved)
        return {"command": self.args.command, "options": options}

    def log(self, message: str) -> None:
        """A status line on stderr (silent with --quiet or --json)."""
        if self.progress and not self.json:
            print(message, file=sys.stderr, flush=True)

    @property
    def figures(self) -> bool:
        """Whether the command draws its figures (not with ``--no-figures``)."""
        return not getattr(self.args, "no_figures", False)

    def draw(self, study: str, outcome, folder: Path | None = None) -> list[str]:
        """The study's figures drawn from ``outcome`` into ``folder`` (default ``out``), their
        paths; none with ``--no-figures``, which then imports no plotting code at all."""
        if not self.figures:
            return []
        from patchassoc.figures.catalog import draw
        return draw(study, outcome, self.out if folder is None else folder)

    def finish(self, study: str, outcome, what: str) -> dict:
        """The outcome's summary with the study's figures drawn into ``out`` (unless
        ``--no-figures``), its animation with ``--animate``, and one line on stderr when the
        run stopped early (``what stopped: status``): what it recorded was saved."""
        summary = outcome.summary
        notes = ""
        summary["figures"] = self.draw(study, outcome)
        if self.figures and not summary["figures"] and summary.get("exit_status"):
            from patchassoc.figures.catalog import DRAWERS
            if study in DRAWERS:
                # a run that stopped early may hold too little to draw: said in its line
                notes = "; no figure (too little was recorded to draw)"
        if getattr(self.args, "animate", False):
            from patchassoc.figures.catalog import animate
            self.log(f"[{study}] animating the dynamics ...")
            try:
                summary["animations"] = animate(study, outcome, self.out)
                self.log(f"[{study}] animation: {', '.join(summary['animations'])}")
            except ValueError as exc:
                if not summary.get("exit_status"):
                    raise
                # a run that stopped early may hold too little to animate: said in its line
                summary["animations"] = []
                notes += f"; no animation (--animate: {exc})"
        if summary.get("exit_status"):
            print(f"patchassoc: {what} stopped: {summary['status']}; what was recorded was "
                  f"saved to {self.out}{notes}", file=sys.stderr)
        return summary


#: A word that is a negative number (``-1``, ``-.5``, ``-1e308``, ``-inf``), read as an option's
#: value, never as an option: argparse's own rule knows no exponent (``--b -1e308`` was
#: "expected one argument").
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$",
                              re.IGNORECASE)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER

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
    g.add_argument("--out", type=out_path, default=None, metavar="DIR",
                   help=f"output folder (default {DEFAULT_OUT}/<command>)")
    g.add_argument("--json", action="store_true",
                   help="print exactly one JSON object on stdout and nothing else there")
    g.add_argument("--quiet", action="store_true", help="no progress bar or status lines")
    return shared


#: Options that do not change what a command computes (where its results go, how it shows
#: them, how many processes run it: the numbers do not depend on them), besides the shared ones.
PRESENTATION = frozenset({"help", "no_figures", "animate", "config", "jobs", "dask",
                          "dask_timeout"})
_SHARED = frozenset({"preset", "overrides", "seed", "out", "json", "quiet"})


def run_options(command_parser: argparse.ArgumentParser) -> tuple[str, ...]:
    """The destinations of a command's own options that change its numbers: every option of
    its parser but the shared ones and :data:`PRESENTATION`."""
    dests = (a.dest for a in command_parser._actions
             if a.dest not in _SHARED and a.dest not in PRESENTATION)
    return tuple(dict.fromkeys(dests))           # once each (an old name shares its dest)


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
    parser.add_argument("--version", action="version", version=f"patchassoc {__version__}",
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    shared = _shared_options()
    parser.command_parsers = {}
    for name, mod in commands.items():
        full = chosen is None or name == chosen
        describe = getattr(mod, "describe", None)
        p = sub.add_parser(name, help=mod.HELP, parents=[shared],
                           description=describe() if full and describe else mod.HELP)
        if getattr(mod, "RERUN", False):
            p.add_argument("--config", default=None, metavar="FILE",
                           help="re-run what FILE records: a config.json written by this "
                                "command (or the folder holding it); its configuration, seed "
                                "and options, which the command line may not change")
        if full and hasattr(mod, "add_arguments"):
            mod.add_arguments(p)
        if full:    # the replaced names, hidden, for one release (patchassoc.cli.options)
            add_deprecated_aliases(p, DEPRECATED.get(name, {}))
        parser.command_parsers[name] = p
    return parser, commands


def _resolve_config(args: argparse.Namespace, default_preset: str) -> tuple[Config, dict, str]:
    name = args.preset or default_preset
    overrides = dict(parse_override(text) for text in args.overrides)
    return preset(name, **overrides), overrides, name


class _Unset:
    """The default of every option when finding which ones the command line gave."""

    def __repr__(self) -> str:
        return "<unset>"


def _given(chosen: str, argv: Sequence[str]) -> set[str]:
    """The destinations of the options that ``argv`` gives (whatever their value: ``--seed 0``
    is given), by parsing it again with every default unset."""
    parser, _ = build_parser(chosen)
    sub = parser.command_parsers[chosen]
    unset = _Unset()
    sub.set_defaults(**{a.dest: unset for a in sub._actions if a.dest != "overrides"})
    args = parser.parse_args(argv)
    given = {k for k, v in vars(args).items() if v is not unset and k != "overrides"}
    return given | ({"overrides"} if args.overrides else set())


def _option_words(sub: argparse.ArgumentParser, options: dict, path: Path) -> list[str]:
    """The command-line words of the options a config.json records (read as if typed: the
    same checks), for the options of ``sub``."""
    actions: dict[str, argparse.Action] = {}
    for a in sub._actions:                # the first option of a dest: its name, not an alias
        if a.option_strings:
            actions.setdefault(a.dest, a)
    words: list[str] = []
    for dest, value in options.items():
        action = actions.get(dest)
        if action is None or dest in _SHARED or dest in PRESENTATION:
            raise UsageError(f"--config {path}: the option {dest!r} it records is not an "
                             f"option of this command")
        flag = action.option_strings[-1]
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            if not isinstance(value, bool):
                raise UsageError(f"--config {path}: option {dest!r} must be true or false")
            if value != action.default:
                words.append(flag)
        elif value is not None:
            if isinstance(value, list):
                text = ",".join(map(str, value))
            elif isinstance(value, float):
                text = repr(value)           # the shortest text that reads back to the same float
            else:
                text = str(value)
            words += [flag, text]
    return words


def _rerun(parser, mod, args: argparse.Namespace, argv: Sequence[str]):
    """(config, seed, args, path) of ``--config FILE``: the configuration, seed and options
    FILE records, the options read as if given on the command line; refused (UsageError) when
    the command line gives any option that would change the run, FILE is another command's or
    records no command."""
    from patchassoc.simulations.runtime.results import config_fields, read_json_object
    path = Path(args.config)
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():     # a missing input is a usage error (exit 2), as --from's is
        raise UsageError(f"--config {path}: no such file (give a config.json that train or "
                         f"population wrote, or its folder)")
    changing = sorted(_given(args.command, argv) & ({"preset", "overrides", "seed"}
                                                     | set(run_options(
                                                         parser.command_parsers[args.command]))))
    if changing:
        sub = parser.command_parsers[args.command]
        flags: dict[str, str] = {}
        for a in sub._actions:
            if a.option_strings:
                flags.setdefault(a.dest, a.option_strings[-1])
        names = ", ".join(flags.get(d, d) for d in changing)
        raise UsageError(f"{names} cannot be given with --config, which re-runs what "
                         f"{path} records (edit a copy of it, or run without --config)")
    record = read_json_object(path, "a config.json")
    if "command" not in record or "schema" not in record:
        raise UsageError(f"--config {path} records no command (written before schema 1, or by "
                         f"`reproduce`): re-run from a config.json that `train` or "
                         f"`population` wrote")
    if record["command"] != args.command:
        raise UsageError(f"--config {path} was written by `{record['command']}`, not "
                         f"`{args.command}`: run `patchassoc {record['command']} --config "
                         f"{path}`")
    options = record.get("options") or {}
    if not isinstance(options, dict):
        raise UsageError(f"--config {path}: 'options' must be a JSON object")
    words = _option_words(parser.command_parsers[args.command], options, path)
    args = parser.parse_args([*argv, *words])
    seed = record.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UsageError(f"--config {path}: seed must be a non-negative integer, got {seed!r}")
    args.seed = seed
    return Config.from_dict(config_fields(record)), seed, args, path


def _render(summary: dict) -> str:
    lines = []
    for key, value in summary.items():
        if isinstance(value, dict):
            continue
        if isinstance(value, float):
            value = f"{value:.6g}"
        lines.append(f"{key:>24}: {value}")
    return "\n".join(lines)


def exit_status(exc: BaseException) -> int:
    """The exit status of an error the command line reports in one line: 2 for a usage or
    configuration error, 1 for a data, operating-system or runtime error (module notes)."""
    if isinstance(exc, (CorruptFile, RunError, OSError, MemoryError)):
        return 1
    return 2


def _os_error(exc: OSError) -> str:
    """One line for an operating-system error, naming the path(s) when it has them."""
    what = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is None:
        return what
    where = str(exc.filename) + (f" -> {exc.filename2}" if exc.filename2 is not None else "")
    return f"{where}: {what}"


def _probe(out: Path) -> Path:
    """The probe file :func:`check_writable` writes into ``out`` (this process's own)."""
    return out / f".patchassoc-write-test-{os.getpid()}"


def check_writable(out: Path, created: list[Path] | None = None) -> list[Path]:
    """Create ``out`` and write (then remove) a probe file in it, so that a read-only or full
    disk, a path through a file, a name too long or a permission denied is reported before a
    long computation, not after it (an :class:`OSError` naming the path). Returns the folders
    it created, deepest first; they are also put in ``created`` before the first is made, so
    that a caller interrupted in here (Ctrl-C right after the folder appears) knows them."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file, not a folder")
    created = [] if created is None else created
    created.extend(p for p in (out, *out.parents) if not p.exists())
    out.mkdir(parents=True, exist_ok=True)
    probe = _probe(out)
    try:
        with open(probe, "wb") as fh:
            fh.write(b"\0" * 4096)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(out)) from None
    finally:
        try:
            probe.unlink()
        except OSError:
            pass
    return created


def _remove_if_empty(folders: Sequence[Path]) -> None:
    """Remove the folders the pre-flight check created when a command failed without writing
    into them (a refused command leaves nothing behind)."""
    for folder in folders:
        if not folder.exists():          # an interrupted mkdir made only the outer ones
            continue
        try:
            _probe(folder).unlink(missing_ok=True)   # left by an interruption in its finally
            folder.rmdir()
        except OSError:
            return


def _resume_hint(argv: Sequence[str]) -> str:
    return "to resume, run the same command again: " + shlex.join(["patchassoc", *argv])


def _interrupted_line(exc: BaseException | None, argv: Sequence[str], out: Path | None) -> str:
    """The one line of an interrupted command: what the runtime said was finished, else what is
    in ``out`` (None: the command writes nothing there, e.g. ``lemmas --no-write``)."""
    inner = exc
    while inner is not None and not isinstance(inner, Interrupted):
        inner = inner.__cause__ or inner.__context__
    if inner is not None and str(inner):
        what = str(inner)
    elif out is None:
        what = "nothing was written"
    else:
        what = f"what finished was kept in {out}"
    return f"patchassoc: interrupted: {what}; {_resume_hint(argv)}"


def _print_summary(mod, args, summary) -> int:
    """Print the summary on stdout; 141 when the reader went away (``| head``), else 0."""
    try:
        if args.json:
            if isinstance(summary, dict):     # the version of what the object holds
                summary = {**summary, "schema": SCHEMA}
            sys.stdout.write(json.dumps(json_ready(summary), sort_keys=True, allow_nan=False)
                             + "\n")
        else:
            render = getattr(mod, "render", _render)
            print(render(summary))
        sys.stdout.flush()
    except BrokenPipeError:
        # nobody reads stdout any more: stop quietly (and let the interpreter's final flush go
        # to /dev/null rather than print another BrokenPipeError)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141
    return 0


def _record_provenance(mod, args, out: Path | None, exit_status: int) -> None:
    """``provenance.json`` in ``out`` (what ran, with which versions, when), for a command
    that writes there; a failure to write it is one line on stderr, never the command's."""
    if mod is None or args is None or out is None or not _writes_out(mod, args) or \
            not out.is_dir():
        return
    try:
        write_provenance(out, exit_status=exit_status)
    except OSError as exc:
        print(f"patchassoc: warning: provenance not written: {_os_error(exc)}", file=sys.stderr)


def _writes_out(mod, args) -> bool:
    """Whether the command writes into ``--out`` (``WRITES_OUT``: a bool, or a function of the
    parsed arguments, e.g. ``lemmas --no-write``)."""
    writes = getattr(mod, "WRITES_OUT", True)
    return bool(writes(args) if callable(writes) else writes)


class _Redelivery:
    """A Ctrl-C swallowed where Python cannot raise (a ctypes callback of Numba's compiler, a
    finalizer) is signalled again to the main thread, from a helper thread, once the hook that
    saw it has returned. Signalled from inside the hook, the handler ran at the hook's own next
    check, and the interruption was swallowed a second time ("Exception ignored in
    sys.unraisablehook"): the command then ran to its end as if no Ctrl-C had come. Signalled
    again, it may land in another callback; the hook then sees it again, and signals it again.
    After :meth:`close` nothing more is signalled."""

    #: How long the helper waits before it signals (the hook has long returned by then).
    DELAY = 0.01

    def __init__(self) -> None:
        import threading
        self._lock = threading.Lock()
        self._open = True
        self._pending = False

    def swallowed(self) -> None:
        """A Ctrl-C (or SIGTERM) was swallowed: signal it again, once."""
        import threading
        with self._lock:
            if self._pending or not self._open:
                return
            self._pending = True
        threading.Thread(target=self._signal, name="patchassoc-interrupt", daemon=True).start()

    def _signal(self) -> None:
        import threading
        import time
        time.sleep(self.DELAY)
        with self._lock:
            if self._open and hasattr(signal, "pthread_kill"):
                # a real signal: it also ends a wait (a sleep, a future's result)
                signal.pthread_kill(threading.main_thread().ident, _SIGNAL["number"])
            elif self._open:     # Windows: no pthread_kill; the main thread sees it when it runs
                import _thread
                _thread.interrupt_main(_SIGNAL["number"])
            self._pending = False

    def close(self) -> None:
        """Nothing is signalled after this (one already signalled is still to come)."""
        with self._lock:
            self._open = False


def _unraisable(hook, redelivery: _Redelivery):
    """A ``sys.unraisablehook`` that has a Ctrl-C swallowed where Python cannot raise signalled
    again to the main thread (:class:`_Redelivery`), with no traceback; anything else goes to
    ``hook``."""
    def unraisable(info):
        if isinstance(info.exc_value, KeyboardInterrupt):
            redelivery.swallowed()
            return
        hook(info)
    return unraisable


def _forget_unhandled_interrupt() -> None:
    """Clear CPython's "unhandled KeyboardInterrupt" mark. A KeyboardInterrupt that ends a
    string ``exec`` (the code a dataclass or Numba generates and runs) is marked unhandled even
    when a caller catches it (``run_eval_code_obj``), and ``python -m patchassoc`` then ended
    by SIGINT (status -2) whatever status the command returned. Every string ``exec`` clears
    the mark when it starts, so an empty one clears it."""
    exec("", {})


class _Signals:
    """For the command's run: SIGTERM read as Ctrl-C (:func:`_terminated`), a Ctrl-C that a
    callback swallowed raised again (:func:`_unraisable`), and, with ``--quiet`` or ``--json``,
    no Python warning on stderr. Everything is restored on exit (``main`` may be called in a
    process that has its own handlers, e.g. the tests)."""

    def __init__(self) -> None:
        self.quiet = False

    def __enter__(self):
        import threading
        import warnings
        _SIGNAL["number"] = signal.SIGINT
        self._term = None
        if threading.current_thread() is threading.main_thread():
            self._term = signal.signal(signal.SIGTERM, _terminated)
        self._hook = sys.unraisablehook
        self.redelivery = _Redelivery()
        sys.unraisablehook = _unraisable(self._hook, self.redelivery)
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        return self

    def silence_warnings(self) -> None:
        import warnings
        warnings.simplefilter("ignore")

    def __exit__(self, *exc) -> None:
        self.redelivery.close()
        self._warnings.__exit__(*exc)
        sys.unraisablehook = self._hook
        if self._term is not None:
            signal.signal(signal.SIGTERM, self._term)


def _settle() -> None:
    """A point where a signal already pending is handled (any call is one)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``patchassoc`` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    begin(argv)                 # the command line and its start, for every provenance.json
    with _Signals() as signals:
        status = _main(argv, signals)
        try:     # a swallowed Ctrl-C signalled again just as the command ended: it has ended
            signals.redelivery.close()
            _settle()
        except KeyboardInterrupt:
            signals.redelivery.close()
    _forget_unhandled_interrupt()
    return status


def _main(argv: list[str], signals: _Signals) -> int:
    out = None
    mod = args = None
    dask = None
    created: list[Path] = []
    notices: list[str] = []
    try:
        parser, commands = build_parser(next((a for a in argv if not a.startswith("-")), ""))
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        # an old option name: one line each once the command has run, or folded into its
        # error line (a failing command says one line); none under --quiet
        notices = [] if args.quiet else deprecation_notices(args)
        argv = current_argv(args.command, argv)     # a resume hint shows the new names
        if args.quiet or args.json:
            signals.silence_warnings()
        mod = commands[args.command]
        if getattr(args, "config", None) is not None:
            config, _, args, path = _rerun(parser, mod, args, argv)
            # every field is given: a command reads none from its own defaults
            overrides, preset_name = config.to_dict(), str(path)
        else:
            config, overrides, preset_name = _resolve_config(
                args, getattr(mod, "DEFAULT_PRESET", "ref"))
        out = Path(args.out if args.out is not None else DEFAULT_OUT / args.command)
        check_inputs = getattr(mod, "check_inputs", None)
        if check_inputs is not None:     # cheap checks of the command's own inputs, first
            check_inputs(config, args)
        allocates = getattr(mod, "ALLOCATES", ())
        if callable(allocates):
            allocates = allocates(args)
        if allocates:                    # arithmetic on the sizes, before any array is made
            from patchassoc.cli.resources import check_memory
            check_memory(config, allocates, args.command)
        if _writes_out(mod, args):
            check_writable(out, created)
            # its own process: figures go to files (a caller's pyplot, in process, is left as
            # it is; with --no-figures nothing draws and matplotlib is not imported)
            drawing = not getattr(args, "no_figures", False)
            if drawing and "matplotlib.pyplot" not in sys.modules:
                import matplotlib
                matplotlib.use("Agg")
        if getattr(args, "dask", None) is not None:
            from patchassoc.simulations.runtime.executor import connect_dask
            dask = args.dask = connect_dask(args.dask, getattr(args, "dask_timeout", None))
        ctx = Context(config=config, seed=args.seed, out=out,
                      progress=not args.quiet,
                      json=args.json, args=args, overrides=overrides, preset_name=preset_name,
                      run_options=run_options(parser.command_parsers[args.command]))
        summary = mod.run(ctx)
    except (ValueError, RunError, OSError, MemoryError) as exc:
        # bad input (UsageError, any ValueError), a file that cannot be read (CorruptFile), an
        # operating-system error (with its path), an impossible size numpy cannot allocate
        if isinstance(exc, OSError):
            what = _os_error(exc)
        elif isinstance(exc, MemoryError):
            what = f"out of memory: {exc or 'allocation failed'}"
        else:
            what = str(exc)
        print(f"patchassoc: error: {what}" + "".join(
            f"; note: {line.removeprefix('patchassoc: ')}" for line in notices), file=sys.stderr)
        _remove_if_empty(created)
        return exit_status(exc)
    except BaseException as exc:  # Ctrl-C or SIGTERM, also when it reached a Numba kernel
        if not interrupted_by(exc):
            raise
        _remove_if_empty(created)
        if created and not any(folder.exists() for folder in created):
            line = (f"patchassoc: interrupted: nothing was written (--out {out} removed); "
                    f"{_resume_hint(argv)}")
        else:
            _record_provenance(mod, args, out, 128 + int(_SIGNAL["number"]))
            writes = mod is not None and args is not None and _writes_out(mod, args)
            line = _interrupted_line(exc, argv, out if writes else None)
        print(line, file=sys.stderr)
        return 128 + int(_SIGNAL["number"])
    finally:
        if dask is not None:
            dask.close()
    status = 0
    if isinstance(summary, dict) and summary.get("exit_status"):
        status = int(summary.pop("exit_status"))
        if str(summary.get("status", "")).startswith("interrupted"):
            # the run stopped on Ctrl-C (or SIGTERM) and kept what it recorded (said above)
            status = 128 + int(_SIGNAL["number"])
    _record_provenance(mod, args, out, status)
    for line in notices:
        print(line, file=sys.stderr, flush=True)
    printed = _print_summary(mod, args, summary)
    return printed or status
