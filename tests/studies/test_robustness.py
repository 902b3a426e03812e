"""The robustness study's bookkeeping: the variants declared in the code are SPEC's, each is one
change applied through the configuration and the start, the sign rule, the uniform-start control
along the flow, the readings and the table built from constructed cells, resumption, and the
command. Whether a claim holds under a variant is an output, never asserted here."""
import json
import math
import re
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from patchassoc.cli.main import main
from patchassoc.simulations.engines.population.trajectory import initial_point
from patchassoc.simulations.runtime.results import read_json, write_json
from patchassoc.simulations.studies import claim1_grid, claim2_seeds
from patchassoc.simulations.studies import robustness as R
from patchassoc.simulations.studies.robustness import runs, tables, variants
from patchassoc.theory.config import preset

SPEC = Path(__file__).resolve().parents[2] / "docs" / "SPEC.md"


def _spec() -> str:
    text = SPEC.read_text()
    start = text.index("### Robustness to the choices the paper leaves open")
    return " ".join(text[start:].split())


def _between(text: str, a: str, b: str) -> str:
    i = text.index(a) + len(a)
    return text[i:text.index(b, i)]


# -- the declaration ------------------------------------------------------------------------------
def test_the_variants_in_the_code_are_the_ones_spec_declares():
    spec = _spec()
    by_group = {}
    for v in R.VARIANTS:
        by_group.setdefault(v.group, []).append(v)
    pairs = re.findall(r"\((\d+), ([\d.]+)\)", _between(spec, "activation (p, nu):", ";"))
    assert {(int(p), float(nu)) for p, nu in pairs} == {(v.p, v.nu)
                                                       for v in by_group["activation"]}
    etas = re.findall(r"eta_Q = (\d+)", _between(spec, "step-size ratio:", ";"))
    assert {float(x) for x in etas} == {v.eta_Q for v in by_group["step sizes"]}
    start = _between(spec, "start:", "feature-noise rate:")
    kappas = {float(x) for x in re.findall(r"kappa = ([\d.]+) x ln ln d", start)}
    assert "kappa = 0 (the control" in start
    assert {v.kappa_factor for v in by_group["start"] if v.kappa_factor != 1.0} == kappas | {0.0}
    assert {v.sign for v in by_group["start"] if v.sign} == {-1, 1}
    assert "alpha0 < 0; alpha0 > 0" in start
    qs = re.findall(r"q = min\(1, ([\d.]+) x ln d / D\)", _between(spec, "feature-noise rate:",
                                                                   "diagonal:"))
    assert {float(x) for x in qs} == {v.q_factor for v in by_group["noise rate"]}
    assert [v.diagonal for v in by_group["diagonal"]] == ["trained"]
    rows = re.search(r"(\d+) rows and the reference, (\d+) in all", spec)
    assert int(rows.group(1)) + 1 == int(rows.group(2)) == len(R.VARIANTS)
    ref = _between(spec, "**Reference**:", "- **Variants**")
    r = R.REFERENCE
    assert f"p = {r.p}, nu = {r.nu:g}" in ref and f"eta_Q = {r.eta_Q:g}" in ref
    assert "kappa = 1 x ln ln d" in ref and "q = min(1, 1 x ln d / D)" in ref
    assert r.kappa_factor == r.q_factor == 1.0 and r.diagonal == "fixed" and r.sign == 0
    assert [v for v in R.VARIANTS if v.control] == [R.CONTROL]
    assert R.CONTROL.kappa_factor == 0.0


def test_the_declared_subgrid_seeds_ranges_and_previews():
    spec = _spec()
    assert "D <= 24 and d in {256, 1024}" in spec
    assert (variants.SUBGRID_MAX_D, variants.SUBGRID_DS) == (24, (256, 1024))
    pts = R.subgrid()
    n256, n1024, n = (int(x) for x in re.search(
        r"\((\d+) points at d = 256, (\d+) at d = 1024: (\d+)\)", spec).groups())
    assert (sum(d == 256 for *_, d in pts), sum(d == 1024 for *_, d in pts), len(pts)) == \
        (n256, n1024, n)
    assert all(L >= 3 and C >= 2 and L * C <= 24 and math.log(d) / (L * C) <= 0.5
               for L, C, d in pts)
    out2 = sum(2 * math.log(d) / (L * C) > 0.5 for L, C, d in pts)
    out05 = sum(0.5 * math.log(d) / (L * C) > 0.5 for L, C, d in pts)
    assert f"{out2} of the {n} with 2 x ln d / D" in spec and out05 == 0
    assert "k = 4..7 (d = 55, 148, 403, 1097)" in spec and variants.FAMILY_KS == (4, 5, 6, 7)
    assert f"{variants.N_SEEDS} seeds" in spec and claim2_seeds.HORIZON == 3000
    assert "horizon H = 3,000" in spec
    neg = re.search(r"< 0 \(seeds ([\d, ]+)\)", spec).group(1)
    pos = re.search(r"> 0 \(seeds ([\d, ]+)\)", spec).group(1)
    ref = preset("ref")
    assert R.signed_seeds(ref, -1) == [int(x) for x in neg.split(",")]
    assert R.signed_seeds(ref, 1) == [int(x) for x in pos.split(",")]
    rtol = re.search(r"agrees within ([\de.-]+) x", spec).group(1)
    assert float(rtol) == variants.LIMIT_RTOL
    stall = re.search(r"how many stall: alpha <= ([\de.-]+) at the horizon", spec).group(1)
    assert float(stall) == variants.STALL_ALPHA
    assert "(4, 4) at d = 256 and 1024" in spec and variants.MODES["preview"] == (256, 1024)
    assert "run (4, 4, 256) only" in spec and variants.MODES["quick"] == (256,)


# -- one change at a time --------------------------------------------------------------------------
def test_a_variant_changes_its_item_only_and_the_reference_is_bit_identical():
    base = preset("ref", L=3, C=5, d=1024, diagonal="fixed")
    assert R.REFERENCE.config(base) == base
    items = {"activation": {"p", "nu"}, "step sizes": {"eta_Q"}, "noise rate": {"q"},
             "diagonal": {"diagonal"}, "start": {"kappa"}}
    for v in R.VARIANTS[1:]:
        cfg = v.config(base)
        changed = {k for k, x in cfg.to_dict().items() if x != base.to_dict()[k]}
        assert changed <= items[v.group] and (changed or v.sign), v.name
        assert len(v.changes()) == (2 if (v.p, v.nu) == (3, 0.0) else 1), v.name
    q2 = R.by_tag("q2x").config(base)
    assert q2.q == min(1.0, 2 * math.log(1024) / 15)
    assert R.CONTROL.config(base).kappa == 0.0
    assert R.by_tag("kappa2x").config(base).kappa == 2 * math.log(math.log(1024))
    with pytest.raises(ValueError, match="unknown variant"):
        R.by_tag("nope")


def test_the_sign_rule_of_alpha0():
    neg, pos = R.by_tag("alpha0-neg"), R.by_tag("alpha0-pos")
    for a in (-2.5e-4, 3e-4):
        assert neg.start(a) == -abs(a) and pos.start(a) == abs(a) and R.REFERENCE.start(a) == a
    ref = preset("ref")
    for sign in (-1, 1):
        seeds = R.signed_seeds(ref, sign, 5)
        signs = {s: math.copysign(1.0, initial_point(ref, s)[0]) for s in range(seeds[-1] + 1)}
        assert all(signs[s] == sign for s in seeds)
        assert all(signs[s] != sign for s in range(seeds[-1]) if s not in seeds)
    assert R.signed_seeds(ref, 0, 5, first=3) == [3, 4, 5, 6, 7]
    # seed 0 starts below 0 at d = 256, above at d = 1024: the sign variants run the
    # reference's flow where they would not change its start, and the reference's seeds
    task = R.RobustnessTask(t_max=1e15)
    cn, cp = R.cells_of(neg, task), R.cells_of(pos, task)
    assert {c.variant for c in cn["points"] if c.d == 256} == {"ref"}
    assert {c.variant for c in cn["points"] if c.d == 1024} == {"alpha0-neg"}
    assert {c.variant for c in cp["points"] if c.d == 256} == {"alpha0-pos"}
    assert {c.variant for c in cp["points"] if c.d == 1024} == {"ref"}
    assert [(c.variant, c.seed) for c in cn["seeds"]] == [("ref", s) for s in (0, 2, 3, 4, 7)]
    assert [c.variant for c in R.cells_of(R.by_tag("etaQ5"), task)["seeds"]] == ["etaQ5"] * 5
    quick = R.cells_of(pos, task, "quick")
    assert [(c.L, c.C, c.d) for c in quick["points"]] == [(4, 4, 256)]
    assert quick["family"] == quick["seeds"] == []


# -- the control along the flow ---------------------------------------------------------------------
@pytest.mark.parametrize("diagonal", ["fixed", "trained"])
def test_the_uniform_start_stays_uniform_along_the_flow(diagonal):
    """kappa = 0 is uniform attention, a fixed point of the population dynamics of Q (Lemma
    L10): a, b, c stay exactly 0 at every record to the horizon while alpha moves, the limit
    class is a tie and the point fails claim 1's test, as a control must."""
    ctl = variants.Variant("control", "kappa0", "start", kappa_factor=0.0, diagonal=diagonal,
                           control=True)
    cfg = ctl.config(preset("ref", L=3, C=4, d=256, diagonal="fixed"))
    assert cfg.kappa == 0.0 and cfg.diagonal == diagonal
    tr, *_ = runs._flow(cfg, ctl, 0, 1e15)
    assert tr.status == "ok" and tr.t[-1] == 1e15
    assert np.all(tr.a == 0.0) and np.all(tr.b == 0.0) and np.all(tr.c == 0.0)
    assert abs(tr.alpha[-1] - tr.alpha[0]) > 1.0
    rec = runs.flow_cell(cfg, ctl, 0, 1e15)
    assert rec["attention_move"] == 0.0 and rec["limit_class"] == "tie"
    assert not rec["passed"] and rec["horizon"]["topc_rows"] == 0
    # the reference from the same point associates: the control is not vacuous
    ref = runs.flow_cell(R.REFERENCE.config(cfg.replace(diagonal="fixed")), R.REFERENCE, 0, 1e15)
    assert ref["limit_class"] == "association" and ref["attention_move"] > 1.0


# -- readings from constructed cells ---------------------------------------------------------------
BAYES = 1e-4


def _point(L, C, d, *, cls="association", eob=1.0, t_error=100.0, alpha=1.25, move=20.0,
           alpha0=1e-4, change=0.0):
    """A point record as :func:`runs.flow_cell` writes it, built by hand."""
    horizon = {"t": 1e15, "topc_rows": L * C if cls == "association" else 0, "D": L * C,
               "topc": cls == "association", "error": eob * BAYES, "bound": 0.0,
               "error_over_bayes": eob, "share": 0.99, "alpha": alpha}
    test = claim1_grid.point_verdict(horizon, cls, BAYES, True)
    cens = eob > 1.3
    times = {k: {"time": None if cens else t_error, "censored": cens, "horizon": 1e15}
             for k in ("def22", "share", "error", "all")}
    return {"L": L, "C": C, "d": d, "D": L * C, "q": 0.3, "in_regime": True,
            "variant_in_regime": True, "bayes_error": BAYES, "passed": test["passed"],
            "verdict": test, "limit_class": cls,
            "limit": {"class": cls, "slope_bc": 1.0, "alpha_change": change},
            "times": times, "horizon": horizon,
            "trend": {"error_over_bayes_from": eob, "error_over_bayes_to": eob},
            "flow": {"status": "ok", "reached": True, "t_max": 1e15, "t_reached": 1e15,
                     "cpu_seconds": 0.1}, "budget": None,
            "alpha0": alpha0, "attention_move": move}


def _points(fail=0, **kw):
    pts = R.subgrid()
    return [_point(L, C, d, **(kw if i < fail or not fail else {}))
            for i, (L, C, d) in enumerate(pts[::-1])]   # the reference point comes first


def _family(exponents=(3.0, 3.2, 3.4), control_exponent=0.1, settled=True, move=20.0,
            limit="association"):
    ds = [55, 148, 403, 1097]
    errs, ctl, bay = [1e-3], [0.3], [0.9e-3]
    for i, s in enumerate(exponents):
        errs.append(errs[-1] * (ds[i] / ds[i + 1]) ** s)
        ctl.append(ctl[-1] * (ds[i] / ds[i + 1]) ** control_exponent)
        bay.append(bay[-1] * (ds[i] / ds[i + 1]) ** (s + 0.1 * i))
    return [{"d": d, "bayes": b, "sign_of_sum": c, "error_high": e, "reached": True,
             "settled": settled, "limit": limit, "status": "ok", "tol": 1e-3 * b,
             "t_max": 1e15, "t_reached": 1e15,
             "trend": {"error_from": e, "error_to": e}, "horizon": {"alpha": 1.2},
             "alpha0": 1e-4, "attention_move": move}
            for d, e, c, b in zip(ds, errs, ctl, bay)]


def _seed(seed, passed=True, alpha=1.7):
    t = 500.0 if passed else None
    return {"seed": seed, "passed": passed, "horizon": 3000, "curve": {"steps": [0, 500, 3000]},
            "times": {c: {"time": t, "censored": not passed} for c in
                      ("def22", "share", "error", "all")},
            "failing": [] if passed else ["share"], "moving": None if passed else True,
            "trend": {"share": 0.0 if passed else 0.01, "error": 0.0, "def22": 0.0},
            "share_min": 0.8 if passed else 0.7, "test_error": 0.002, "topc_rows": 16,
            "bayes_error": 0.001, "error_threshold": 0.003, "budget_reading": None,
            "invariance": {"z": 40.0, "fraction": 0.9}, "alpha": alpha, "alpha0": -1e-4,
            "seconds": 1.0, "cpu_seconds": 1.0}


def _rows(**override):
    ref_pts = _points()
    rows = []
    for v in R.VARIANTS:
        pts, fam, seeds = override.get(v.tag, (None, None, None))
        if v.control and pts is None:
            pts = _points(fail=41, cls="tie", eob=20.0, move=0.0)
            fam = _family(exponents=(0.1, 0.1, 0.1), move=0.0, limit="tie")
        rows.append(R.variant_reading(v, pts or ref_pts, fam or _family(),
                                      seeds or [_seed(s) for s in range(5)], ref_pts))
    return rows


def test_claim7_reading_by_its_rule_with_its_controls_and_causes():
    ok = tables.claim7_reading(_family())
    assert ok["status"] == "pass" and ok["exponents"] == pytest.approx([3.0, 3.2, 3.4])
    assert ok["rise"] == pytest.approx(0.4) and ok["cause"] is None
    flat = tables.claim7_reading(_family(exponents=(3.0, 3.1, 3.2)))   # rise 0.2 < 0.25
    assert flat["status"] == "fail" and flat["cause"]["code"] == "ii"
    moving = tables.claim7_reading(_family(exponents=(3.0, 2.9, 3.4), settled=False))
    assert moving["cause"]["code"] == "i" and "d = 55" in moving["cause"]["why"]
    assert not ok["tests"]["identity"]["passed"] and not ok["tests"]["uniform"]["passed"]
    fam = _family()
    for r, s in zip(fam, (0.3, 0.3 * 0.5, 0.3 * 0.2, 0.3 * 0.05)):
        r["sign_of_sum"] = s                                              # a control that passes
    assert tables.claim7_reading(fam)["cause"]["code"] == "iii"
    fam = _family()
    fam[-1].update(reached=False, reason="beyond the cap")
    miss = tables.claim7_reading(fam)        # a missing point fails, cause (i), saying why
    assert miss["status"] == "fail" and miss["reasons"] == []
    assert miss["cause"]["code"] == "i" and "d = 1097" in miss["cause"]["why"]
    assert "beyond the cap" in miss["cause"]["why"]
    short = tables.claim7_reading(_family()[:3])       # fewer points than declared: no verdict
    assert short["status"] == "no verdict" and "3 of the 4" in short["reasons"][0]


def test_the_table_and_its_reading_are_built_from_the_numbers():
    rows = _rows()
    tab = R.table(rows)
    assert len(tab["rows"]) == len(R.VARIANTS) and len(tab["columns"]) == 4
    ref = tab["rows"][0]["cells"]
    assert ref[0]["verdict"] == "PASS" and ref[0]["key"].startswith("41/41 pass")
    assert ref[2]["verdict"] == "5/5" and ref[3]["verdict"] == "PASS"
    assert ref[1]["verdict"] == "not run"            # claim 2's flows (issue 49): none here
    ctl = next(r for r in tab["rows"] if r["control"])["cells"]
    assert ctl[0]["verdict"] == ctl[3]["verdict"] == "control: fails, as it must"
    text = R.headline(rows)
    assert "Claim 1 holds for every variant (13 rows besides the control)." in text
    assert "Claim 7 holds for every variant" in text
    assert "stays uniform (largest move of a, b, c along its flows: 0)" in text
    assert "the ratio changes the path, not the limit" in text
    assert "the sign of alpha0 and the diagonal change the path, not the limit" in text
    # a variant that fails claim 1 at a limit: named with its cause; a stalled start is named
    bad = _points(fail=41, cls="converged", eob=27.0, alpha=1e-8, alpha0=-2e-4, move=0.5)
    rows = _rows(**{"p3-nu0": (bad, None, [_seed(s, passed=s != 0, alpha=1e-9 if s == 0
                                                 else 1.7) for s in range(5)])})
    text = R.headline(rows)
    assert re.search(r"Claim 1 fails for p = 3, nu = 0 \(cause \(ii\) converged to a point "
                     r"that fails: .*\); it holds for the 12 other rows", text)
    assert "p = 3, nu = 0: 41 of 41 points stall" in text and "1 of 5 seeds stall" in text
    assert "from 4/5 to 5/5 over the variants; p = 3, nu = 0 4/5" in text
    row = next(r for r in R.table(rows)["rows"] if r["tag"] == "p3-nu0")
    assert row["cells"][0]["verdict"] == "FAIL (ii)"
    # a limit that moves with the step-size ratio is said so
    moved = _points(alpha=1.3)
    text = R.headline(_rows(etaQ5=(moved, None, None)))
    assert "0 of 41 points for eta_Q = 5" in text and "the ratio changes the limit too" in text
    # a control that associates makes the table untrustworthy, in words
    rows = _rows(kappa0=(_points(), _family(), None))
    assert "does NOT behave as it must" in R.headline(rows)
    assert next(r for r in R.table(rows)["rows"] if r["control"])["cells"][0]["verdict"] \
        .startswith("CONTROL WRONG")


def test_same_limit_reads_the_class_and_alpha_within_the_declared_slack():
    a = _point(3, 4, 256, alpha=1.2250)
    assert variants.same_limit(_point(3, 4, 256, alpha=1.2251), a)          # within 1e-3
    assert not variants.same_limit(_point(3, 4, 256, alpha=1.24), a)
    assert variants.same_limit(_point(3, 4, 256, alpha=1.24, change=0.02), a)  # still moving
    assert not variants.same_limit(_point(3, 4, 256, cls="tie", alpha=1.2250), a)


# -- resumption ------------------------------------------------------------------------------------
def test_the_cells_resume_and_a_changed_variant_is_recomputed(tmp_path):
    task = R.RobustnessTask(folder=str(tmp_path), t_max=1e15)
    cells = [R.RobustnessCell("point", "ref", 4, 4, 256), R.RobustnessCell("point", "q2x", 4, 4, 256),
             R.RobustnessCell("seed", "ref", seed=3)]
    calls = []

    def fake(task, cell):
        calls.append(cell.key)
        return {"key": cell.key, "kind": cell.kind, "variant": asdict(R.by_tag(cell.variant)),
                "fingerprint": task.fingerprint(), "status": "ok"}

    first = R.run_study(task, cells, tmp_path, compute=fake)
    assert sorted(first["computed"]) == sorted(c.key for c in cells) and first["reused"] == []
    again = R.run_study(task, cells, tmp_path, compute=fake)
    assert again["computed"] == [] and len(again["reused"]) == 3 and len(calls) == 3
    # a stored cell of another variant definition, or another task, is recomputed
    path = tmp_path / f"{cells[1].key}.json"
    rec = read_json(path)
    rec["variant"]["q_factor"] = 3.0
    write_json(path, rec)
    third = R.run_study(task, cells, tmp_path, compute=fake)
    assert third["computed"] == [cells[1].key]
    other = R.RobustnessTask(folder=str(tmp_path), t_max=1e12)
    assert len(R.run_study(other, cells, tmp_path, compute=fake)["computed"]) == 3


# -- the command -----------------------------------------------------------------------------------
def test_robustness_quick_json_check_from_and_bad_input(tmp_path, capsys):
    """The quick preview (claim 1's reference point for every row) prints one JSON object with
    every declared variant; ``check --from`` a reproduction folder prints its table."""
    out = tmp_path / "repro" / "robustness"
    assert main(["robustness", "--quick", "--json", "--quiet", "--out", str(out)]) == 0
    s = json.loads(capsys.readouterr().out)
    assert [v["tag"] for v in s["variants"]] == [v.tag for v in R.VARIANTS]
    assert s["preview"] and all(v["claim1"]["status"] == "preview" for v in s["variants"])
    assert all(v["claim7"]["status"] == v["claim2"]["status"] == "not run"
               for v in s["variants"])
    ref = s["variants"][0]["claim1"]
    assert ref["n_points"] == 1 and ref["points"][0]["limit_class"] == "association"
    ctl = next(v for v in s["variants"] if v["control"])["claim1"]
    assert ctl["attention_move_max"] == 0.0 and ctl["classes"] == {"tie": 1}
    assert (out / "robustness_table.png").exists() and (out / "robustness.json").exists()
    assert main(["check", "--from", str(tmp_path / "repro")]) == 1     # the claims: not run
    text = capsys.readouterr().out
    assert "Robustness: one change at a time" in text and "PREVIEW" in text
    assert "kappa = 0 (control)" in text
    assert main(["robustness", "--jobs", "0", "--out", str(tmp_path / "x")]) == 2
    assert "argument --jobs: expected a positive integer, got '0'" in capsys.readouterr().err


# -- a flow that stopped early is never read at its horizon (issue 35) ---------------------------
def test_a_forced_solver_failure_at_d55_fails_claim7_with_cause_i(monkeypatch, tmp_path):
    from tests.engines.population.test_flow import _failing_solver

    assert tables.claim7_reading(_family())["status"] == "pass"        # the control
    _failing_solver(monkeypatch, after=120)
    task = runs.RobustnessTask(folder=str(tmp_path), t_max=1e15)
    rec = runs.compute_cell(task, runs.RobustnessCell("family", "ref", d=55))
    assert rec["status"].startswith("solver failed") and not rec["reached"]
    assert not rec["settled"] and rec["limit"] == "undetermined"
    fam = _family()
    fam[0] = dict(rec, sign_of_sum=fam[0]["sign_of_sum"])
    out = tables.claim7_reading(fam)
    assert out["status"] == "fail" and out["cause"]["code"] == "i"
    assert "d = 55" in out["cause"]["why"] and "solver failed" in out["cause"]["why"]


def test_family_records_that_stopped_at_3e8_do_not_pass():
    fam = _family()
    for r in fam:
        r.update(status="stopped at t = 3e+08", t_reached=3e8)
    out = tables.claim7_reading(fam)
    assert out["status"] == "fail" and out["cause"]["code"] == "i"
    assert out["error_over_bayes"] == [None] * 4


def test_claim1_points_whose_flows_stopped_early_fail_with_cause_i():
    pts = _points()
    for r in pts:
        r["flow"].update(status="stopped at t = 3e+08", t_reached=3e8)
    out = tables.claim1_reading(pts)
    assert out["status"] == "fail" and out["n_passed"] == 0
    assert out["cause"]["code"] == "i"


# -- claim 1's reading at its declared edges (issue 51) ----------------------------------------
def test_a_q_variant_is_counted_on_the_reference_regime_at_its_own_q():
    """SPEC: the sub-grid is chosen at the reference's q, the same 41 points for every variant;
    with q = 2 x ln d / D, 36 of them have the variant's q > 0.5 and are counted beside it. A
    variant whose 41 points pass, at q values outside the regime, passes on 41 points."""
    q2 = variants.by_tag("q2x")
    pts = []
    for L, C, d in R.subgrid():
        q = q2.config(preset("ref", L=L, C=C, d=d, diagonal="fixed")).q
        pts.append(dict(_point(L, C, d), q=q, in_regime=True,
                        variant_in_regime=claim1_grid.in_regime(L, q)))
    assert sum(p["q"] > 0.5 for p in pts) == 36
    out = tables.claim1_reading(pts)
    assert (out["n_points"], out["n_passed"], out["status"]) == (41, 41, "pass")
    assert out["variant_out_of_regime"] == 36 and out["failures_out_of_regime"] == 0


def test_a_variant_whose_reference_point_fails_fails_claim1_at_any_fraction():
    """SPEC: a variant passes when >= 90 % of the 41 points pass *and* the reference point
    (4, 4, 256) passes. 40 of 41 pass (97.6 %) but the reference point is at a tie: the reading,
    its cell and the headline all say FAIL, with cause (ii), the reference point among the
    failing limits."""
    pts = _points()
    k = next(i for i, r in enumerate(pts) if (r["L"], r["C"], r["d"]) == variants.REFERENCE_POINT)
    pts[k] = _point(*variants.REFERENCE_POINT, cls="tie", eob=20.0)
    out = tables.claim1_reading(pts)
    assert (out["n_points"], out["n_passed"], out["reference_passed"]) == (41, 40, False)
    assert out["fraction"] >= claim1_grid.PASS_FRACTION
    assert out["status"] == "fail" and out["passed"] is False
    assert out["cause"]["code"] == "ii" and "the reference point among them" in out["cause"]["why"]
    rows = _rows(etaQ5=(pts, None, None))
    row = next(r for r in R.table(rows)["rows"] if r["tag"] == "etaQ5")
    assert row["cells"][0]["verdict"] == "FAIL (ii)"
    assert "Claim 1 fails for eta_Q = 5 (cause (ii)" in R.headline(rows)
