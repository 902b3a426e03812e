"""The guard of the bench's ratios on constructed ``bench --json`` objects: each watched ratio is
read where it should be, the best of each side's runs is compared, a move beyond the declared
band is flagged the right way (a work count exactly), a ratio one side lacks is not a
regression, and compare_bench's exit status, report and baseline files say so. No timing is
measured here: every number is made up."""
from __future__ import annotations

import json
import math

import pytest

from patchassoc.benchmarks import guard
from patchassoc.benchmarks.compare_bench import main as compare_main


def bench(*, brute=0.010, exact=2e-5, brute_cpu=None, exact_cpu=None, count=0.3, pruned=0.1,
          step=0.004, read=0.002, serial=0.006, read1=0.004, in_cache=2.4, cpu=19.0,
          evaluations=858, jacobians=17, gradient=0.005, jacobian=0.68, flow=True) -> dict:
    """A bench --json object with the fields the guard reads (and a few it must not); the CPU
    times are the wall times unless given."""
    brute_cpu = brute if brute_cpu is None else brute_cpu
    exact_cpu = exact if exact_cpu is None else exact_cpu
    out = {
        "exact_vs_D": [{"L": 4, "C": 4, "D": 16, "seconds": 4e-5, "configurations": 680}],
        "exact_paper": [{"L": 8, "C": 8, "D": 64, "tol": tol, "seconds": pruned,
                         "count_seconds": count, "speedup_over_count": count / pruned}
                        for tol in (1e-6, 1e-8, 1e-10)],
        "bruteforce": {"D": 12, "bruteforce_seconds": brute, "exact_seconds": exact,
                       "speedup": brute / exact, "bruteforce_cpu_seconds": brute_cpu,
                       "exact_cpu_seconds": exact_cpu, "speedup_cpu": brute_cpu / exact_cpu,
                       "patterns": 39366, "configurations": 120},
        "sampled_step": {"seconds": step, "serial_seconds": serial, "read_seconds": read,
                         "ratio": step / read, "serial_ratio": serial / read,
                         "read_one_thread_seconds": read1,
                         "serial_ratio_one_thread": serial / read1,
                         "roofline": {"ratio": in_cache}},
        "load_average": 7.0,
    }
    if flow:
        out["sampled_flow"] = {
            "gradient_seconds": 2 * gradient, "jacobian_seconds": 2 * jacobian,
            "gradient_cpu_seconds": gradient, "jacobian_cpu_seconds": jacobian,
            "to_1e15": {"t_max": 1e15, "seconds": 2 * cpu, "cpu_seconds": cpu,
                        "evaluations": evaluations, "jacobians": jacobians,
                        "per_decade": [{"decade": "1e0-1e1", "seconds": 1.0}]}}
    return out


def status(rows, name):
    return next(r for r in rows if r["name"] == name)["status"]


def test_every_ratio_is_read_where_bench_writes_it():
    r = guard.ratios(bench(brute_cpu=0.005, exact_cpu=1.6e-5))
    assert r["exact_vs_bruteforce_D12"] == pytest.approx(0.010 / 2e-5)
    assert r["exact_vs_bruteforce_D12_cpu"] == pytest.approx(0.005 / 1.6e-5)
    assert r["paper_pruned_vs_count"] == pytest.approx(3.0)
    assert r["step_vs_read"] == pytest.approx(2.0)
    assert r["serial_step_vs_one_thread_read"] == pytest.approx(1.5)
    assert r["step_in_cache_vs_read"] == pytest.approx(2.4)
    # CPU seconds against the kernels' CPU seconds, not their wall seconds
    assert r["flow_overhead"] == pytest.approx(19.0 / (858 * 0.005 + 17 * 0.68))
    assert r["flow_cpu_per_decade_vs_gradient"] == pytest.approx(19.0 / 15 / 0.005)
    assert r["flow_evaluations_per_decade"] == pytest.approx(858 / 15)
    assert r["flow_jacobians_per_decade"] == pytest.approx(17 / 15)
    assert set(r) == set(guard.RATIOS)


def test_every_ratio_declares_its_direction_band_and_reason():
    for name, r in guard.RATIOS.items():
        assert r.name == name and r.better in ("higher", "lower")
        assert 0.0 <= r.band <= 3.0 and len(r.why) > 20 and r.what
    # every ratio with a band is moved across it below; the work counts have none
    counts = {n for n, r in guard.RATIOS.items() if r.band == 0.0}
    assert counts == {"flow_evaluations_per_decade", "flow_jacobians_per_decade"}
    assert set(DRIVERS) == set(guard.RATIOS) - counts


def test_a_ratio_that_a_run_lacks_is_missing_not_a_regression():
    old = bench(flow=False)                 # a tree from before the empirical-risk flow
    assert "flow_overhead" not in guard.ratios(old)
    rows = guard.compare([old], [bench()])
    assert status(rows, "flow_overhead") == "missing"
    assert guard.regressions(rows) == []


def test_issue_46s_regression_is_flagged_and_its_fix_is_not():
    """The exact engine 6 times slower per evaluation (issue 46): flagged the worse way; the
    same runs the other way round read as an improvement."""
    fixed, regressed = bench(exact=1.6e-5), bench(exact=1.0e-4)
    rows = guard.compare([fixed], [regressed])
    assert guard.regressions(rows) == ["exact_vs_bruteforce_D12",
                                       "exact_vs_bruteforce_D12_cpu"]
    # a tree whose bench has no CPU-time reading is still caught by the wall-clock ratio
    old = bench(exact=1.0e-4)
    del old["bruteforce"]["speedup_cpu"]
    rows = guard.compare([fixed], [old])
    assert guard.regressions(rows) == ["exact_vs_bruteforce_D12"]
    assert status(rows, "exact_vs_bruteforce_D12_cpu") == "missing"
    rows = guard.compare([regressed], [fixed])
    assert guard.regressions(rows) == []
    assert status(rows, "exact_vs_bruteforce_D12") == "improved"


#: ratio -> (a field of bench() that the ratio grows with, its value in bench())
DRIVERS = {"exact_vs_bruteforce_D12": ("brute", 0.010),
           "exact_vs_bruteforce_D12_cpu": ("brute_cpu", 0.010),
           "paper_pruned_vs_count": ("count", 0.3),
           "step_vs_read": ("step", 0.004),
           "serial_step_vs_one_thread_read": ("serial", 0.006),
           "step_in_cache_vs_read": ("in_cache", 2.4),
           "flow_overhead": ("cpu", 19.0),
           "flow_cpu_per_decade_vs_gradient": ("cpu", 19.0)}


@pytest.mark.parametrize("name", sorted(DRIVERS))
def test_a_move_beyond_the_band_is_flagged_the_way_it_went(name):
    field, value = DRIVERS[name]
    r = guard.RATIOS[name]
    up = (1.0 + r.band) * 1.2          # beyond the band, whatever the band
    grows, shrinks = bench(**{field: value * up}), bench(**{field: value / up})
    worse, better = (shrinks, grows) if r.better == "higher" else (grows, shrinks)
    assert status(guard.compare([bench()], [worse]), name) == "regression"
    assert status(guard.compare([bench()], [better]), name) == "improved"
    within = (1.0 + r.band) / 1.2 if r.band else 1.0
    assert status(guard.compare([bench()], [bench(**{field: value * within})]), name) == "ok"
    assert status(guard.compare([bench()], [bench(**{field: value / within})]), name) == "ok"


def test_the_best_of_each_sides_runs_is_compared():
    """One slow candidate run beside a good one is noise; the reference's best is its best."""
    slow = bench(exact=2e-4)         # the exact engine 10 x slower in this run
    assert guard.regressions(guard.compare([bench()], [slow])) == [
        "exact_vs_bruteforce_D12", "exact_vs_bruteforce_D12_cpu"]
    assert guard.regressions(guard.compare([bench()], [slow, bench()])) == []
    rows = guard.compare([slow, bench()], [bench()])
    assert status(rows, "exact_vs_bruteforce_D12") == "ok"


def test_a_work_count_is_compared_exactly():
    rows = guard.compare([bench()], [bench(evaluations=859)])
    assert guard.regressions(rows) == ["flow_evaluations_per_decade"]
    rows = guard.compare([bench()], [bench(jacobians=16)])
    assert status(rows, "flow_jacobians_per_decade") == "improved"
    assert guard.regressions(rows) == []


def test_render_names_the_regressions_in_its_last_line():
    rows = guard.compare([bench()], [bench(exact=1e-4)])
    text = guard.render(rows, "fixed", "15ba22a")
    assert "REGRESSION" in text
    assert text.splitlines()[-1] == ("guard: 2 regression(s) beyond the noise band: "
                                     "exact_vs_bruteforce_D12, exact_vs_bruteforce_D12_cpu")
    ok = guard.render(guard.compare([bench()], [bench()]))
    assert ok.splitlines()[-1].startswith("guard: no ratio moved")


def test_a_baseline_holds_its_runs_best_and_spread():
    runs = [bench(exact=2e-5), bench(exact=2.5e-5)]
    rec = guard.baseline_record(runs, tree="abc", command="cmd", note="n")
    r = rec["ratios"]["exact_vs_bruteforce_D12"]
    assert r["best"] == pytest.approx(500.0) and r["spread"] == pytest.approx(0.25)
    assert rec["runs"] == runs and guard.runs_of(rec) == runs
    assert guard.runs_of(runs[0]) == [runs[0]]
    with pytest.raises(ValueError):
        guard.runs_of({"something": "else"})


def _write(path, obj):
    path.write_text(json.dumps(obj))
    return str(path)


def test_compare_bench_exit_status_and_report(tmp_path, capsys):
    base = _write(tmp_path / "baseline.json",
                  guard.baseline_record([bench(), bench(brute=0.009)], tree="fixed",
                                        command="cmd"))
    regressed = _write(tmp_path / "regressed.json", bench(exact=1e-4))
    same = _write(tmp_path / "same.json", bench())
    # informational by default: exit 0, the flag visible
    assert compare_main([base, regressed]) == 0
    out = capsys.readouterr().out
    assert "REGRESSION" in out and "guard: 2 regression(s)" in out
    # machine-readable: exit 1 and the report's list
    report = tmp_path / "report.json"
    assert compare_main([base, regressed, "--fail-on-regression", "--report", str(report)]) == 1
    assert json.loads(report.read_text())["regressions"] == ["exact_vs_bruteforce_D12",
                                                             "exact_vs_bruteforce_D12_cpu"]
    assert compare_main([base, same, "--fail-on-regression"]) == 0


def test_compare_bench_says_when_a_baseline_is_of_another_machine(tmp_path, capsys):
    rec = guard.baseline_record([bench()], tree="x", command="cmd")
    rec["machine"] = dict(rec["machine"], cpu="another CPU")
    base = _write(tmp_path / "other.json", rec)
    assert compare_main([base, _write(tmp_path / "run.json", bench())]) == 0
    assert "another CPU" in capsys.readouterr().out


def test_compare_bench_refuses_a_wrong_number_of_sides(tmp_path):
    with pytest.raises(SystemExit) as exc:
        compare_main([_write(tmp_path / "run.json", bench())])
    assert exc.value.code == 2


def test_no_quotient_of_nothing():
    assert guard._quotient(1.0, 0.0) is None and guard._quotient(None, 1.0) is None
    assert guard.best([None, math.nan], "higher") is None


def test_compare_bench_tells_timings_from_results():
    """Timings, however named (the reads by name, per-sample seconds, seconds after BLAS, the
    floor's spread), are compared as timings; a certified bound that moves is a result."""
    from patchassoc.benchmarks.compare_bench import compare
    old, new = bench(), bench(step=0.005)
    for run, k in ((old, 1.0), (new, 1.3)):
        run["sampled_step"].update(reads={"2d": 0.002 * k, "kernel": 0.0021 * k},
                                   seconds_after_blas=0.01 * k, floor_spread=4.0 * k)
        run["sampled_step"]["roofline"].update(step_per_sample=7e-7 * k,
                                               read_per_sample=3e-7 * k)
    cmp = compare([old], [new])
    assert cmp["results"] == []
    timed = {p for p, *_ in cmp["timings"]}
    assert {"sampled_step.reads.2d", "sampled_step.seconds_after_blas",
            "sampled_step.roofline.step_per_sample"} <= timed
    new["exact_paper"][1]["bound"] = 1.5991958593643135e-09
    old["exact_paper"][1]["bound"] = 1.5991958593643133e-09
    assert [p for p, *_ in compare([old], [new])["results"]] == [
        "exact_paper[L=8,C=8,D=64,tol=1e-08].bound"]


def test_a_side_is_an_absolute_executable_or_one_clear_error(tmp_path, monkeypatch):
    """bench runs from the temporary folder: a relative executable given by hand
    (``.venv/bin/patchassoc``) ran the old tree, then failed with a traceback on the new one."""
    from patchassoc.benchmarks import compare_bench
    exe = tmp_path / "bin" / "patchassoc"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    assert compare_bench.side("bin/patchassoc").exe == str(exe)
    for bad in ("bin/nothere", "no-such-command-here"):
        with pytest.raises(ValueError, match="not a patchassoc executable"):
            compare_bench.side(bad)
    (tmp_path / "plain").write_text("")
    with pytest.raises(ValueError, match="not a patchassoc executable"):
        compare_bench.side("./plain")
