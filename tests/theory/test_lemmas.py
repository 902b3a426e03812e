"""The proved lemmas (patchassoc.theory.lemmas) and the ``lemmas`` command.

The module fixture proves all 14 lemmas once (about 15 s of CPU); the other test files on the
lemmas (test_lemmas_*.py) prove single lemmas or use the algebra directly.

Every lemma must come out proved; the harness must refuse what it cannot prove (negative
controls), and the symbolic checks must be discriminating: the same machinery reports a
permutation outside G, or a missing relabelling, as not an identity (and a numeric evaluation
with concrete functions confirms those are really different).
"""
from __future__ import annotations

import argparse
import json
import types

import numpy as np
import pytest
import sympy as sp

from patchassoc.theory import lemmas
from patchassoc.theory.lemmas import _core, _symbolic as S
from patchassoc.theory.lemmas.symmetry import commutant_dimension

EXPECTED = [f"L{k}" for k in range(1, 15)]
RECORD_KEYS = {"name", "statement", "method", "proved", "seconds", "general", "scope",
               "controls"}


@pytest.fixture(scope="module")
def records():
    return {r.name: r for r in lemmas.prove_all()}


def test_every_lemma_is_proved(records):
    assert list(records) == EXPECTED
    for name, r in records.items():
        assert r.proved, (name, r.failures, r.error)
        assert r.checks >= 1
        assert r.failures == () and r.error is None
        assert r.seconds > 0
        assert RECORD_KEYS <= set(r.to_dict())
        assert r.controls >= 1, name          # every proof runs a negative control
        assert r.scope, name
    general = [name for name, r in records.items() if r.general]
    assert general == EXPECTED                # L4 too, since issue 48


def test_records_are_json_ready(records):
    blob = json.loads(json.dumps([r.to_dict() for r in records.values()]))
    assert [b["name"] for b in blob] == EXPECTED
    assert all(b["proved"] is True for b in blob)


def test_L3_dimensions(records):
    d = records["L3"].details
    assert set(d["dimension"].values()) == {3}
    assert d["degenerate_dimension"] == {"1x1": 1, "1x2": 2, "1x3": 2, "2x1": 2, "3x1": 2}
    assert d["orbitals"] == {"4x4": 3, "8x8": 3, "2x5": 3, "5x2": 3, "1x4": 2, "4x1": 2}


def test_commutant_dimension_direct():
    # L = C = 2 (blocks): 3; a 4-cycle-free structure with C = 1: 2
    assert commutant_dimension([[0, 1], [2, 3]])[0] == 3
    assert commutant_dimension([[0], [1], [2]])[0] == 2
    # without the generators (no symmetry at all) every D x D matrix is invariant
    assert commutant_dimension([[0]])[0] == 1


def test_L4_population_size(records):
    details = dict(records["L4"].details)
    assert details.pop("law_control_residual_2x2")          # its value: test_lemma_L4.py
    assert details == {"group_order": 8, "patterns": 36, "per_sample_generators_4x4": 15}


def test_prove_by_name_and_errors():
    r = lemmas.prove("l7")
    assert r.name == "L7" and r.proved
    with pytest.raises(ValueError, match="unknown lemma"):
        lemmas.prove("L15")
    with pytest.raises(ValueError, match="unknown lemma"):
        lemmas.prove_all(["L1", "nope"])


# -- the harness refuses what it cannot prove --------------------------------------------------
def test_is_zero_negative_and_positive():
    x, y = sp.symbols("x y")
    assert not _core.is_zero(x)
    assert not _core.is_zero(x - y)
    assert _core.is_zero((x + y) ** 2 - x ** 2 - 2 * x * y - y ** 2, "expand")
    assert not _core.is_zero((x + y) ** 2 - x ** 2 - y ** 2, "simplify")
    assert _core.is_zero(sp.sin(x) ** 2 + sp.cos(x) ** 2 - 1, "simplify")
    assert not _core.is_zero(sp.sin(x) ** 2 + sp.cos(x) ** 2 - 1, "expand")
    assert not _core.is_zero(sp.Matrix([[0, x]]))


def test_harness_failures():
    def make(body):
        return _core.lemma("LX", "test", "s", "m", registry=None)(body)

    def false_identity(proof):
        proof.zero(sp.Symbol("x") + 1, "x + 1 = 0")

    def no_check(proof):
        pass

    def crash(proof):
        raise RuntimeError("boom")

    def true_identity(proof):
        x = sp.Symbol("x")
        proof.equal((x + 1) ** 2, x ** 2 + 2 * x + 1, "square", up_to="expand")
        proof.exact(2 + 2 == 4, "arithmetic")

    r = make(false_identity)()
    assert not r.proved and r.failures == ("not shown to vanish: x + 1 = 0",)
    assert not make(no_check)().proved
    r = make(crash)()
    assert not r.proved and "boom" in r.error
    r = make(true_identity)()
    assert r.proved and r.checks == 2
    assert "LX" not in lemmas.LEMMAS


# -- the symbolic checks discriminate ----------------------------------------------------------
def _numeric(expr, symbols, rng):
    """Evaluate with concrete smooth functions (loss softplus, activation t^3 + t/10)."""
    concrete = {S.ell: lambda m: sp.log(1 + sp.exp(-m)), S.act: lambda t: t ** 3 + t / 10,
                S.ell_prime: lambda m: -1 / (1 + sp.exp(m)),
                S.act_prime: lambda t: 3 * t ** 2 + sp.Rational(1, 10)}
    e = expr
    for fn, impl in concrete.items():
        e = e.replace(fn, impl)
    values = {s: sp.Float(rng.uniform(0.1, 0.9)) for s in symbols}
    return float(e.xreplace(values).evalf())


def test_permutation_outside_G_is_not_a_symmetry():
    sets = [[0, 1], [2, 3]]
    D = 4
    A = S.symbol_matrix("A", D)
    n = sp.symbols(f"n0:{D}")
    h = S.risk_integrand(S.model_terms(A, sets, n))
    rng = np.random.default_rng(0)
    symbols = sorted(h.free_symbols, key=str)
    inside = (1, 0, 2, 3)
    outside = (0, 2, 1, 3)            # mixes the two sets
    for pi, invariant in ((inside, True), (outside, False)):
        d = h.xreplace({**S.conjugation_sub(A, pi), **S.patch_sub(n, pi)}) - h
        assert _core.is_zero(d, "expand") is invariant
        if not invariant:
            assert abs(_numeric(d, symbols, rng)) > 1e-6


def test_uniform_point_needs_the_relabelling():
    sets = [[0, 1], [2, 3]]
    D = 4
    n = sp.symbols(f"n0:{D}")
    GA = S.grad_A_integrand(S.model_terms(sp.ones(D, D) / D, sets, n), D)
    d = GA[0, 1] - GA[0, 0]
    assert not _core.is_zero(d, "expand")
    rng = np.random.default_rng(1)
    assert abs(_numeric(d, sorted(d.free_symbols, key=str), rng)) > 1e-9


def test_symbolic_softmax_matches_numpy():
    from patchassoc.theory.model import softmax_rows
    rng = np.random.default_rng(2)
    Qn = rng.normal(size=(3, 3))
    Q = S.symbol_matrix("Q", 3)
    A = S.softmax(Q).xreplace({Q[i, j]: sp.Float(Qn[i, j]) for i in range(3) for j in range(3)})
    assert np.allclose(np.array(A.evalf(), dtype=float), softmax_rows(Qn), rtol=1e-12)


def test_group_convention_matches_structure():
    # S.permute_matrix uses the convention of Structure.random_symmetry
    from patchassoc.theory.structure import blocks
    st = blocks(2, 2)
    pi = st.random_symmetry(np.random.default_rng(3))
    Qn = np.arange(16.0).reshape(4, 4)
    Pi = np.zeros((4, 4))
    Pi[pi, np.arange(4)] = 1.0
    M = S.permute_matrix(sp.Matrix(Qn), [int(k) for k in pi])
    assert np.array_equal(np.array(M, dtype=float), Pi @ Qn @ Pi.T)
    assert tuple(int(k) for k in pi) in set(S.group_elements(S.sets_of(st)))


# -- the command -------------------------------------------------------------------------------
def test_command_run_render_and_json(tmp_path, records):
    """Two lemmas on a pool of two processes: in order, and the same records as proved in this
    process (the module's fixture), but for the seconds."""
    from patchassoc.cli import main_lemmas as cmd
    ctx = types.SimpleNamespace(args=argparse.Namespace(lemmas=["L5", "L1"], no_write=False,
                                                        jobs=2),
                                out=tmp_path, log=lambda msg: None)
    summary = cmd.run(ctx)
    assert summary["all_proved"] is True and "exit_status" not in summary
    assert [r["name"] for r in summary["lemmas"]] == ["L1", "L5"]
    for r in summary["lemmas"]:
        here = records[r["name"]].to_dict()
        assert {**r, "seconds": 0} == {**here, "seconds": 0}
    saved = json.loads((tmp_path / "lemmas.json").read_text())
    assert saved["all_proved"] is True and saved["n_lemmas"] == 2
    text = cmd.render(summary)
    assert "L1" in text and "L5" in text and "2/2 proved" in text


def test_command_reports_failure(tmp_path, monkeypatch):
    from patchassoc.cli import main_lemmas as cmd

    def fails(proof):
        proof.zero(sp.Symbol("x"), "x = 0")

    fake = _core.lemma("L1", "broken", "s", "m", registry=None)(fails)
    monkeypatch.setitem(lemmas.LEMMAS, "L1", fake)
    ctx = types.SimpleNamespace(args=argparse.Namespace(lemmas=["L1"], no_write=True, jobs=None),
                                out=tmp_path, log=lambda msg: None)
    summary = cmd.run(ctx)
    assert summary["all_proved"] is False and summary["exit_status"] == 1
    assert "L1 not proved" in cmd.render(summary)


def test_reproduce_step(tmp_path, records, monkeypatch):
    from patchassoc.simulations.studies import claim4_lemmas
    from patchassoc.theory.config import preset

    def cached(name):  # the module fixture already ran every proof
        return records[name]

    monkeypatch.setattr(claim4_lemmas, "prove_lemma", cached)
    summary = claim4_lemmas.STUDY.run(tmp_path, preset("tiny"), 0, True, False).summary
    assert summary["all_proved"] is True and summary["figures"] == []
    saved = json.loads((tmp_path / "lemmas.json").read_text())
    assert saved["n_proved"] == 14 and saved["n_general"] == 14
    assert saved["instance_only"] == []
    # and claim 4 reads the saved summary as a pass: all 14 proved in general
    from patchassoc.simulations.studies.claim4_lemmas import claim4
    out = claim4(saved)
    assert out["passed"] and out["measured"] == "14/14 proved in general (symbolic sizes)"
    assert "cause" not in out
