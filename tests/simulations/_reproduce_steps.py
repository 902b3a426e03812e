"""Fake reproduction steps for tests/simulations/test_reproduce.py, importable by the spawned
step processes (a module of the tests package, not a monkeypatched one)."""
import os
import time
from pathlib import Path


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


def reproduce_first(out, config, seed, quick, progress):
    print("first is running", flush=True)
    return {"saw_other_start": _meet(out, "first", "second"), "env": _env(), "figures": []}


def reproduce_second(out, config, seed, quick, progress):
    return {"saw_other_start": _meet(out, "second", "first"), "env": _env(), "figures": []}


def reproduce_reader(out, config, seed, quick, progress):
    return {"read": {n: (out.parent / n / "step.json").exists() for n in ("first", "second")},
            "env": _env(), "figures": []}


def reproduce_crash(out, config, seed, quick, progress):
    os._exit(3)


def _stamp(out, hold: float) -> dict:
    start = time.time()
    time.sleep(hold)
    return {"start": start, "end": time.time(), "figures": []}


def reproduce_stamp_a(out, config, seed, quick, progress):
    return _stamp(out, 1.5)


def reproduce_stamp_b(out, config, seed, quick, progress):
    return _stamp(out, 0.1)


def reproduce_stamp_c(out, config, seed, quick, progress):
    return _stamp(out, 1.5)
