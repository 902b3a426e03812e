"""reproduce: a failed step is reported while the others run; finished steps are skipped on a
re-run; the report embeds the figures and is written from the saved summaries."""
import json

from patchassoc.cli.main import main
from patchassoc.cli import main_reproduce as reproduce
from patchassoc.simulations.studies.study import Outcome, Study

from . import _reproduce_steps


def test_reproduce_skips_finished_steps_and_reports_failures(tmp_path, monkeypatch, capsys):
    calls = []

    def ok_step(out, config, seed, quick, progress):
        calls.append("ok")
        out.mkdir(parents=True, exist_ok=True)
        return Outcome({"value": 1.5, "figures": []})

    def bad_step(out, config, seed, quick, progress):
        calls.append("bad")
        raise RuntimeError("boom")

    monkeypatch.setattr(reproduce, "studies", lambda: (
        Study("good", "a step that works", ok_step), Study("broken", "a step that fails", bad_step)))
    out = tmp_path / "repro"
    status = main(["reproduce", "--preset", "tiny", "--out", str(out), "--json", "--quiet",
                   "--jobs", "1"])
    assert status == 1
    summary = json.loads(capsys.readouterr().out)
    assert summary["failed"] == ["broken"]
    assert summary["steps"]["good"]["ok"] and summary["steps"]["good"]["summary"]["value"] == 1.5
    assert "RuntimeError: boom" in summary["steps"]["broken"]["error"]
    assert calls == ["ok", "bad"]
    report = (out / "report.md").read_text()
    assert "Steps that failed: `broken` (RuntimeError: boom)" in report
    # provenance (issue 40): the command's folder, and the step that succeeded, not the other
    top = json.loads((out / "provenance.json").read_text())
    assert top["exit_status"] == 1 and top["argv"][:2] == ["patchassoc", "reproduce"]
    step = json.loads((out / "good" / "provenance.json").read_text())
    assert step["exit_status"] == 0 and step["command_line"] == top["command_line"]
    assert step["started"] >= top["started"] and step["ended"] <= top["ended"]
    assert not (out / "broken" / "provenance.json").exists()
    # a re-run skips the finished step and retries the failed one
    calls.clear()
    assert main(["reproduce", "--preset", "tiny", "--out", str(out), "--json", "--quiet",
                 "--jobs", "1"]) == 1
    summary = json.loads(capsys.readouterr().out)
    assert calls == ["bad"] and summary["steps"]["good"]["skipped"] is True
    assert main(["reproduce", "--only", "nosuch", "--out", str(out)]) == 2
    assert main(["reproduce", "--jobs", "0", "--out", str(out)]) == 2


def test_steps_run_side_by_side_after_what_they_read(tmp_path, monkeypatch, capsys):
    """Two independent steps overlap (each waits for the other to start: run one after the
    other, they would time out and fail); a step that reads another starts after it finished;
    a crashed step process is a failed step, the others still run."""
    monkeypatch.setattr(reproduce, "studies", lambda: _reproduce_steps.SIDE_BY_SIDE)
    # crash starts in the worker of first or second when it is done; reader starts last, alone
    out = tmp_path / "repro"
    status = main(["reproduce", "--preset", "tiny", "--out", str(out), "--json", "--quiet",
                   "--jobs", "2"])
    summary = json.loads(capsys.readouterr().out)
    assert status == 1 and summary["failed"] == ["crash"]
    assert "exited with code 3" in summary["steps"]["crash"]["error"]
    steps = summary["steps"]
    assert steps["first"]["summary"]["saw_other_start"] is True
    assert steps["second"]["summary"]["saw_other_start"] is True
    assert steps["reader"]["summary"]["read"] == {"first": True, "second": True}
    # each side-by-side step ran on one core, and its output went to its log; the last step
    # to start, alone, got both cores, in one of the two workers (kept for several steps)
    env = {k: steps[k]["summary"]["env"] for k in ("first", "second", "reader")}
    assert {k: (e["PATCHASSOC_JOBS"], e["numba_threads"]) for k, e in env.items()} == \
        {"first": ("1", 1), "second": ("1", 1), "reader": ("2", 2)}
    assert env["first"]["pid"] != env["second"]["pid"]
    assert env["reader"]["pid"] in (env["first"]["pid"], env["second"]["pid"])
    assert "first is running" in (out / "first" / "step.log").read_text()
    # a step run in a spawned worker records the command that started it (issue 40)
    cmd = json.loads((out / "provenance.json").read_text())["command_line"]
    assert json.loads((out / "first" / "provenance.json").read_text())["command_line"] == cmd
    assert list(summary["order"]) == ["first", "second", "reader", "crash"]


def test_steps_that_compile_the_same_kernels_do_not_start_side_by_side(tmp_path, monkeypatch,
                                                                        capsys):
    """Two steps of one kernel family: the second starts after the first finished (they would
    each compile the kernels); a step of another family runs beside the first."""
    monkeypatch.setattr(reproduce, "studies", lambda: _reproduce_steps.FAMILIES)
    out = tmp_path / "repro"
    assert main(["reproduce", "--preset", "tiny", "--out", str(out), "--json", "--quiet",
                 "--jobs", "2"]) == 0
    steps = json.loads(capsys.readouterr().out)["steps"]
    a, b, c = (steps[k]["summary"] for k in ("stamp_a", "stamp_b", "stamp_c"))
    assert b["start"] >= a["end"]                      # same family: one after the other
    assert c["start"] < a["end"] and a["start"] < c["end"]   # other family: side by side


def test_budget_readings_reach_the_steps_that_declare_the_option(tmp_path, monkeypatch, capsys):
    """``--budget-readings`` is passed to the steps whose Study declares the option, is part of
    their work (another value recomputes them) and is not passed to the others."""
    seen = []

    def opt_step(out, config, seed, quick, progress, budget_readings=False):
        seen.append(("opt", budget_readings))
        return Outcome({"figures": []})

    def plain_step(out, config, seed, quick, progress):
        seen.append(("plain", None))
        return Outcome({"figures": []})

    monkeypatch.setattr(reproduce, "studies", lambda: (
        Study("opt", "a step with the option", opt_step, options=("budget_readings",)),
        Study("plain", "a step without", plain_step)))
    out = tmp_path / "repro"
    args = ["reproduce", "--preset", "tiny", "--out", str(out), "--json", "--quiet", "--jobs", "1"]
    assert main(args) == 0
    assert seen == [("opt", False), ("plain", None)]
    seen.clear()
    assert main(args + ["--budget-readings"]) == 0
    capsys.readouterr()
    assert seen == [("opt", True)]           # recomputed for the other option; plain reused
    rec = json.loads((out / "opt" / "step.json").read_text())
    assert rec["work"]["options"] == {"budget_readings": True}
