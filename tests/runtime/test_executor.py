"""The executor: independent tasks give the same results in process, on a local pool and on
Dask; an exception in the callback stops the run with nothing unfinished handed on; the order of
the callbacks; the step scheduler's dependencies, kernel-family rule, logs, dead workers and
in-process mode."""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from patchassoc.simulations.runtime import executor
from patchassoc.simulations.runtime.executor import Shared, map_tasks
from patchassoc.simulations.runtime.scheduler import Step, run_steps


# -- module-level task functions (picklable for the pool and Dask) ------------------------------
def draw(base: dict, i: int) -> np.ndarray:
    """Numbers that depend only on the arguments: the shared base seed and the index."""
    rng = np.random.default_rng([base["seed"], i])
    return rng.standard_normal(5) * base["scale"] + i


def slow_square(folder: str, i: int, hold: float) -> int:
    (Path(folder) / f"started-{i}").touch()
    time.sleep(hold)
    return i * i


def gated(folder: str, i: int, hold: float) -> int:
    """Returns at once for i == 0, else once the gate file exists, ``hold`` seconds after."""
    if i:
        while not (Path(folder) / "gate").exists():
            time.sleep(0.01)
        time.sleep(hold)
    return i


BASE = {"seed": 11, "scale": 0.5}
CALLS = [(Shared("base"), i) for i in range(6)]


def _collect(**kw) -> dict:
    got = {}
    map_tasks(draw, CALLS, lambda i, r: got.__setitem__(i, r), shared={"base": BASE}, **kw)
    return got


def _same(a: dict, b: dict) -> bool:
    return sorted(a) == sorted(b) and all(
        a[k].tobytes() == b[k].tobytes() for k in a)   # bit for bit


# -- independent tasks --------------------------------------------------------------------------
def test_in_process_pool_and_dask_give_the_same_numbers():
    serial = _collect(jobs=1)
    assert sorted(serial) == list(range(6))
    assert _same(_collect(jobs=2), serial)
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        assert _same(_collect(dask=cluster.scheduler_address), serial)
        with distributed.Client(cluster) as client:       # a client the caller keeps
            assert _same(_collect(dask=client), serial)
            assert client.status == "running"


def test_in_process_callbacks_come_in_order_and_an_exception_stops_the_run():
    seen, calls = [], []

    def fn(i):
        calls.append(i)
        return i

    map_tasks(fn, [(i,) for i in range(5)], lambda i, r: seen.append((i, r)))
    assert seen == [(i, i) for i in range(5)]
    seen.clear(), calls.clear()

    def stop_at_2(i, r):
        if i == 2:
            raise KeyboardInterrupt
        seen.append(i)

    with pytest.raises(KeyboardInterrupt):
        map_tasks(fn, [(i,) for i in range(5)], stop_at_2)
    assert seen == [0, 1] and calls == [0, 1, 2]          # nothing after the interruption


def test_pool_exception_in_callback_cancels_the_rest_and_stores_nothing_more(tmp_path):
    stored = []

    class Stop(Exception):
        pass

    def store(i, r):
        stored.append((i, r))
        raise Stop

    n = 12
    calls = [(str(tmp_path), i, 0.3) for i in range(n)]
    with pytest.raises(Stop):
        map_tasks(slow_square, calls, store, jobs=2)
    assert len(stored) == 1 and stored[0][1] == stored[0][0] ** 2
    started = len(list(tmp_path.glob("started-*")))
    assert started < n                                  # unstarted tasks were cancelled
    time.sleep(0.5)                                     # the pool is shut down: no late starts
    assert len(list(tmp_path.glob("started-*"))) == started


def test_pool_hands_tasks_that_finish_together_in_submission_order(tmp_path):
    """Task 0 returns at once; 1 and 2 wait for a gate that the first callback opens, and 2
    finishes before 1; the callback then holds the coordinator until both are done, so they
    arrive together and are handed in submission order."""
    order = []

    def store(i, r):
        order.append(i)
        if i == 0:
            (tmp_path / "gate").touch()
            time.sleep(3.0)

    map_tasks(gated, [(str(tmp_path), 0, 0.0), (str(tmp_path), 1, 0.5),
                      (str(tmp_path), 2, 0.0)], store, jobs=3)
    assert order == [0, 1, 2]


def test_bad_jobs_and_no_tasks():
    with pytest.raises(ValueError, match="jobs"):
        map_tasks(draw, CALLS, lambda i, r: None, jobs=0)
    map_tasks(draw, [], lambda i, r: pytest.fail("no task, no result"), jobs=2)


def test_default_jobs_reads_the_environment(monkeypatch):
    monkeypatch.setenv("PATCHASSOC_JOBS", "3")
    assert executor.default_jobs() == 3
    monkeypatch.setenv("PATCHASSOC_JOBS", "0")
    with pytest.raises(ValueError, match="PATCHASSOC_JOBS"):
        executor.default_jobs()
    monkeypatch.delenv("PATCHASSOC_JOBS")
    assert executor.default_jobs() == len(os.sched_getaffinity(0))


# -- steps --------------------------------------------------------------------------------------
def stamp(folder: Path, hold: float, progress: bool) -> dict:
    """A step: sleeps ``hold`` seconds; when, where and with how many threads it ran."""
    import numba
    start = time.time()
    print(f"{folder.name} is running", flush=True)
    time.sleep(hold)
    return {"start": start, "end": time.time(), "pid": os.getpid(),
            "jobs": os.environ.get("PATCHASSOC_JOBS"), "threads": numba.get_num_threads()}


def crash(folder: Path, hold: float, progress: bool) -> dict:
    os._exit(3)


def failing(folder: Path, hold: float, progress: bool) -> dict:
    raise RuntimeError("step broke")


def _step(name, fn=stamp, after=(), cost=0.0, kernels=()):
    return Step(name, fn, f"{name} step", tuple(after), cost, tuple(kernels))


def _overlap(a: dict, b: dict) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


def test_steps_wait_for_what_they_read_and_a_dead_worker_is_a_failed_step(tmp_path):
    steps = [_step("a", cost=5), _step("b", cost=1), _step("reader", after=("a", "b", "gone")),
             _step("crash", fn=crash, cost=0.5), _step("bad", fn=failing, cost=0.2)]
    recs = run_steps(steps, tmp_path, (0.8,), jobs=2, progress=False, log=False)
    assert set(recs) == {"a", "b", "reader", "crash", "bad"}
    s = {n: recs[n]["summary"] for n in ("a", "b", "reader")}
    assert _overlap(s["a"], s["b"])                                    # side by side
    assert s["reader"]["start"] >= max(s["a"]["end"], s["b"]["end"])   # after what it reads
    assert not recs["crash"]["ok"] and "exited with code 3" in recs["crash"]["error"]
    assert not recs["bad"]["ok"] and recs["bad"]["error"] == "RuntimeError: step broke"
    assert "RuntimeError: step broke" in (tmp_path / "bad" / "step.log").read_text()
    assert "a is running" in (tmp_path / "a" / "step.log").read_text()
    assert (tmp_path / "a" / "step.json").exists() and not (tmp_path / "bad" / "step.json").exists()
    assert s["a"]["pid"] != os.getpid() and s["a"]["pid"] != s["b"]["pid"]
    assert (s["a"]["jobs"], s["a"]["threads"]) == ("1", 1)


def test_one_kernel_family_never_starts_twice_cold_and_the_longest_chain_first(tmp_path):
    steps = [_step("k1", cost=3, kernels=("k",)), _step("k2", cost=2, kernels=("k",)),
             _step("j", cost=1, kernels=("j",)), _step("tail", after=("j",), cost=10)]
    recs = run_steps(steps, tmp_path, (0.8,), jobs=2, progress=False, log=False)
    s = {n: r["summary"] for n, r in recs.items()}
    # j leads the longest chain (1 + 10) and starts with k1 (3 > 2); k2 waits for k1's kernels
    assert _overlap(s["k1"], s["j"])
    assert s["k2"]["start"] >= s["k1"]["end"]
    assert s["tail"]["start"] >= s["j"]["end"]


def test_a_finished_family_is_warm_and_finished_steps_count_as_done(tmp_path):
    steps = [_step("before", kernels=("k",)), _step("k1", after=("before",), kernels=("k",)),
             _step("k2", kernels=("k",))]
    recs = run_steps(steps, tmp_path, (0.8,), jobs=2, done={"before"}, progress=False,
                     log=False)
    assert set(recs) == {"k1", "k2"}
    assert _overlap(recs["k1"]["summary"], recs["k2"]["summary"])
    # the last step to start, alone, gets both cores
    lone = run_steps([_step("x", cost=2), _step("y", after=("x",))], tmp_path / "lone",
                     (0.0,), jobs=2, progress=False, log=False)
    assert (lone["y"]["summary"]["jobs"], lone["y"]["summary"]["threads"]) == ("2", 2)


def test_one_job_runs_the_steps_in_order_in_this_process(tmp_path, capsys):
    steps = [_step("first"), _step("second", fn=failing), _step("third")]
    recs = run_steps(steps, tmp_path, (0.0,), jobs=1, progress=False, log=True)
    assert list(recs) == ["first", "second", "third"]
    assert recs["first"]["summary"]["pid"] == os.getpid()
    assert recs["first"]["summary"]["end"] <= recs["third"]["summary"]["start"]
    err = capsys.readouterr().err
    assert "[reproduce] first: first step ..." in err
    assert "[reproduce] second: FAILED: RuntimeError: step broke" in err
