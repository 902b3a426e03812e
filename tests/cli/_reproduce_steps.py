"""Fake reproduction steps for tests/cli/test_main_reproduce.py, importable by the spawned
step processes (a module of the tests package, not a monkeypatched one)."""
import os
import time
from pathlib import Path

from patchassoc.simulations.studies.study import Outcome, Study


def _meet(out: Path, me: str, other: str, timeout: float = 60.0) -> bool:
    """Mark ``me`` as started and wait until ``other`` has started too (False on timeout)."""
    (out.parent / f"{me}.started").touch()
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if (out.parent / f"{other}.started").exists():
            return True
        time.sleep(0.05)
    return False


def _env() -> dict:
    import numba
    return {"PATCHASSOC_JOBS": os.environ.get("PATCHASSOC_JOBS"),
            "numba_threads": numba.get_num_threads(), "pid": os.getpid()}


def first(out, config, seed, quick, progress):
    print("first is running", flush=True)
    return Outcome({"saw_other_start": _meet(out, "first", "second"), "env": _env(),
                    "figures": []})


def second(out, config, seed, quick, progress):
    return Outcome({"saw_other_start": _meet(out, "second", "first"), "env": _env(),
                    "figures": []})


def reader(out, config, seed, quick, progress):
    return Outcome({"read": {n: (out.parent / n / "step.json").exists()
                             for n in ("first", "second")}, "env": _env(), "figures": []})


def crash(out, config, seed, quick, progress):
    os._exit(3)


def _stamp(out, hold: float) -> dict:
    start = time.time()
    time.sleep(hold)
    return Outcome({"start": start, "end": time.time(), "figures": []})


def stamp_a(out, config, seed, quick, progress):
    return _stamp(out, 1.5)


def stamp_b(out, config, seed, quick, progress):
    return _stamp(out, 0.1)


def stamp_c(out, config, seed, quick, progress):
    return _stamp(out, 1.5)


#: The studies of the side-by-side test: first and second overlap, reader reads them (and the
#: crashing one), crash dies.
SIDE_BY_SIDE = (Study("first", "waits for second", first, cost=3),
                Study("second", "waits for first", second, cost=2),
                Study("reader", "reads first", reader, inputs=("first", "second", "crash")),
                Study("crash", "dies", crash, cost=1))
#: The studies of the kernel-family test.
FAMILIES = (Study("stamp_a", "family k", stamp_a, cost=3, kernels=("k",)),
            Study("stamp_b", "family k too", stamp_b, cost=2, kernels=("k",)),
            Study("stamp_c", "family j", stamp_c, cost=1, kernels=("j",)))
