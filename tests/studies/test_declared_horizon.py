"""Every step of ``reproduce`` that runs a flow runs it to the declared horizon when nothing else
is asked (issue 51). The constants test ties ``flow.T_MAX`` to SPEC's table (1e15); the studies
reach it through their own defaults (``t_max=None`` -> the declared horizon, a default
``t_max``, claim 7's ``FLOW_T_MAX``), which that test does not see: a default changed to 1e13
would make every run a preview, or read the flows at another time, and pass every other test.

Each step is started as ``reproduce`` starts it (its ``reproduce`` function, the declared,
non-quick mode) with its cell runner replaced by one that records the horizon it is given and
stops: nothing is computed, so each case takes milliseconds."""
from __future__ import annotations

import pytest

from patchassoc.simulations.engines.population import flow
from patchassoc.simulations.studies import claim2_flow, population_run
from patchassoc.simulations.studies.claim1_grid import grid_step
from patchassoc.simulations.studies.claim7_scaling import scaling_step
from patchassoc.simulations.studies.claim7_scaling import studies as scaling_studies
from patchassoc.simulations.studies.robustness import run as robustness_run
from patchassoc.theory.config import preset


class _Stop(Exception):
    """Raised by a replaced cell runner once it has recorded its horizon."""


def _recorder(got: dict, read):
    def fake(*args, **kwargs):
        got["t_max"] = read(args, kwargs)
        raise _Stop
    return fake


def _task(args, kwargs):
    return args[0].t_max


def _keyword(args, kwargs):
    return kwargs["t_max"]


# (the step's reproduce, the module whose runner is replaced, its name, how to read the horizon)
STEPS = {
    "grid (claim 1)": (grid_step.reproduce, grid_step, "run_grid", _task),
    "seeds (claim 2 at T)": (claim2_flow.reproduce, claim2_flow, "run_flow_seeds", _keyword),
    "robustness": (robustness_run.reproduce, robustness_run, "run_study", _task),
    "scaling (claim 7)": (scaling_step.reproduce, scaling_studies, "run_study_cells", _task),
    "flow": (population_run.reproduce_flow, population_run, "run_flow", _keyword),
    "sample_size": (claim2_flow._reproduce_sample_size, claim2_flow, "run_flow_seeds", _keyword),
}


@pytest.mark.parametrize("step", list(STEPS))
def test_reproduce_reads_every_flow_at_the_declared_horizon(step, monkeypatch, tmp_path):
    reproduce, module, runner, read = STEPS[step]
    got = {}
    monkeypatch.setattr(module, runner, _recorder(got, read))
    # claim 7's closed forms reach d = 1.2e6 before its cells start; they have no horizon
    monkeypatch.setattr(scaling_studies, "closed_forms", lambda family, ds: [])
    with pytest.raises(_Stop):
        reproduce(tmp_path / "out", preset("ref"), 0, False, False)
    assert got["t_max"] == flow.T_MAX



def test_the_public_api_runs_its_flow_to_the_declared_horizon_by_default(monkeypatch):
    """``patchassoc.population_flow``, the user's path to the flow, writes its default horizon
    as a number of its own: it must be the declared one."""
    import patchassoc

    got = {}
    monkeypatch.setattr(flow, "run_flow", _recorder(got, _keyword))
    with pytest.raises(_Stop):
        patchassoc.population_flow("tiny")
    assert got["t_max"] == flow.T_MAX

# -- a record read without its horizon --------------------------------------------------------
def test_a_claim1_point_whose_flow_does_not_state_its_horizon_has_not_reached_it():
    """No horizon is assumed for a flow record (the reading used to fall back on T_MAX): a point
    whose flow says 'ok' at t = 1e15 but not its horizon fails, as a flow that stopped early."""
    from patchassoc.simulations.studies import claim1_grid as cg
    from tests.studies.test_claim1_grid import _rec

    rec = _rec(4, 4, 256)
    assert cg.point_passed(rec)
    del rec["flow"]["t_max"]
    assert not cg.point_passed(rec) and cg._kind(rec) == "moving"
    s = cg.grid_summary([rec])
    assert s["flow_not_reached"] == [[4, 4, 256]] and not s["passed"]


def test_a_claim7_family_record_that_does_not_state_its_horizon_is_not_reached():
    from patchassoc.simulations.studies.robustness import tables
    from tests.studies.test_robustness import _family

    fam = _family()
    assert tables.claim7_reading(fam)["status"] == "pass"
    del fam[0]["t_max"]
    out = tables.claim7_reading(fam)
    assert out["status"] == "fail" and out["cause"]["code"] == "i"
    assert out["settled"][0] is False and out["error_over_bayes"][0] is None
