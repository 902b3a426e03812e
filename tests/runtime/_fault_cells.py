"""A command of cheap cells for tests/runtime/test_faults.py: the real command line and the
real runtime (run_cells, the local pool) around cells that only wait, so that an interrupt can be
sent while a cell runs. Importable by the spawned pool processes (a module of the tests
package).

    python -c "from tests.runtime import _fault_cells as m; m.cli()" fault-cells --out DIR \
        --jobs J --hold SECONDS

Cells 0 and 1 return at once; every other cell opens a (disabled) progress bar, marks
``<out>/started-<i>`` (with its process id) and waits ``--hold`` seconds the way an engine loop
computes: catching Ctrl-C and returning what it has with an ``interrupted`` status.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from patchassoc.simulations.runtime.cells import fingerprint, run_cells
from patchassoc.simulations.runtime.progress import progress_bar

NAME = "fault-cells"
HELP = "cheap cells for the fault-injection tests"
N_CELLS = 6


@dataclass(frozen=True)
class Task:
    folder: str
    hold: float

    def fingerprint(self) -> str:
        return fingerprint({"protocol": "fault-cells-1"})


@dataclass(frozen=True)
class Cell:
    i: int

    @property
    def key(self) -> str:
        return f"cell-{self.i}"


def compute(task: Task, cell: Cell) -> dict:
    rec = {"i": cell.i, "value": cell.i ** 2, "status": "ok", "fingerprint": task.fingerprint()}
    if cell.i < 2 or task.hold <= 0:
        return rec
    progress_bar(total=1, desc="cell", enable=False).close()   # as the engines' bars do
    (Path(task.folder) / f"started-{cell.i}").write_text(str(os.getpid()))
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < task.hold:
            time.sleep(0.01)
    except KeyboardInterrupt:   # as the engine loops do: keep what was computed, say so
        return dict(rec, value=-1, status="interrupted at step 3")
    return rec


def sleepy(shared: dict, i: int, folder: str) -> int:
    """A Dask task that marks which process ran it, waits, and reads the shared object."""
    (Path(folder) / f"started-{i}-{os.getpid()}").touch()
    time.sleep(0.3)
    return shared["base"] + i * i


def matches(rec: dict, cell: Cell) -> bool:
    return rec.get("i") == cell.i


def add_arguments(parser) -> None:
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--hold", type=float, default=0.0)


def run(ctx) -> dict:
    task = Task(str(ctx.out), ctx.args.hold)
    out = run_cells(task, [Cell(i) for i in range(N_CELLS)], ctx.out / "cells", compute,
                    matches, jobs=ctx.args.jobs, progress=False, desc="fault cells")
    return {"computed": out["computed"], "reused": out["reused"],
            "values": [r["value"] for r in out["records"].values()]}


def cli() -> None:
    from patchassoc.cli import main as cli_main
    cli_main.COMMANDS = cli_main.COMMANDS + (sys.modules[__name__],)
    sys.exit(cli_main.main(sys.argv[1:]))
