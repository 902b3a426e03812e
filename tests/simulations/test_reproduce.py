"""reproduce: a failed step is reported while the others run; finished steps are skipped on a
re-run; the report embeds the figures and is written from the saved summaries."""
import json

from patchassoc.simulations.cli import main
from patchassoc.simulations.commands import reproduce


def test_reproduce_skips_finished_steps_and_reports_failures(tmp_path, monkeypatch, capsys):
    calls = []

    def ok_step(out, config, seed, quick, progress):
        calls.append("ok")
        out.mkdir(parents=True, exist_ok=True)
        return {"value": 1.5, "figures": []}

    def bad_step(out, config, seed, quick, progress):
        calls.append("bad")
        raise RuntimeError("boom")

    import types
    fake = types.ModuleType("fake_steps")
    fake.reproduce_good = ok_step
    fake.reproduce_broken = bad_step
    monkeypatch.setitem(__import__("sys").modules, "fake_steps", fake)
    monkeypatch.setattr(reproduce, "STEPS", (("good", "fake_steps", "a step that works"),
                                             ("broken", "fake_steps", "a step that fails")))
    out = tmp_path / "repro"
    status = main(["reproduce", "--preset", "tiny", "--out", str(out), "--json", "--quiet"])
    assert status == 1
    summary = json.loads(capsys.readouterr().out)
    assert summary["failed"] == ["broken"]
    assert summary["steps"]["good"]["ok"] and summary["steps"]["good"]["summary"]["value"] == 1.5
    assert "RuntimeError: boom" in summary["steps"]["broken"]["error"]
    assert calls == ["ok", "bad"]
    report = (out / "report.md").read_text()
    assert "Steps that failed: `broken` (RuntimeError: boom)" in report
    # a re-run skips the finished step and retries the failed one
    calls.clear()
    assert main(["reproduce", "--preset", "tiny", "--out", str(out), "--json", "--quiet"]) == 1
    summary = json.loads(capsys.readouterr().out)
    assert calls == ["bad"] and summary["steps"]["good"]["skipped"] is True
    assert main(["reproduce", "--only", "nosuch", "--out", str(out)]) == 2
