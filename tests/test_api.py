"""The public API of ``patchassoc/__init__.py``: it delegates to the engines with the right
arguments, draws what ``train`` draws, validates its input with clear ``ValueError`` messages,
and ``import patchassoc`` imports no engine."""
import doctest
import inspect
import json
import subprocess
import sys

import numpy as np
import pytest

import patchassoc
import patchassoc.api
from patchassoc.simulations.engines import sampled_kernels as kernels
from patchassoc.simulations.engines.population.exact import evaluate
from patchassoc.theory.structure import Structure

#: One softmax and one ratio of 4-entry sums: a few ulps of the result (all terms positive).
SOFTMAX_REL = 1e-14

TINY = patchassoc.preset("tiny", steps=0, n_train=200, n_test=100, records=1)


def test_public_names_exist_and_are_documented_in_numpydoc():
    for name in patchassoc.__all__:
        assert hasattr(patchassoc, name), name
        obj = getattr(patchassoc, name)
        if callable(obj) and name != "Config":
            doc = inspect.getdoc(obj)
            assert doc and "Parameters\n----------" in doc, name
            assert "Returns\n-------" in doc, name
            assert "SPEC" in doc, name


def test_docstring_examples_run():
    result = doctest.testmod(patchassoc.api, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 5 and result.failed == 0


def test_import_is_cheap_it_loads_no_engine():
    code = ("import sys, json, patchassoc; print(json.dumps([m for m in "
            "('numba', 'sympy', 'torch', 'matplotlib', 'scipy') if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert json.loads(out) == []


def test_preset_and_config():
    cfg = patchassoc.preset("tiny", steps=50)
    assert isinstance(cfg, patchassoc.Config)
    assert (cfg.L, cfg.C, cfg.D, cfg.steps) == (2, 4, 8, 50)
    with pytest.raises(ValueError, match="unknown preset 'huge'"):
        patchassoc.preset("huge")
    with pytest.raises(ValueError, match="name must be a preset name"):
        patchassoc.preset(3)
    with pytest.raises(ValueError, match="unknown config field"):
        patchassoc.preset("tiny", wat=1)


def test_sample_draws_the_training_sample_of_train():
    res = patchassoc.train(TINY, seed=3)
    data, structure, w_star = patchassoc.sample(TINY, seed=3)
    assert data.X.shape == (TINY.n_train, TINY.D, TINY.d)
    assert data.y.shape == (TINY.n_train,)
    assert np.array_equal(structure.sets, res.structure.sets)
    assert np.array_equal(w_star, res.w_star)
    # steps=0: the run's v and theta are v0 and Q0, and its step-0 training loss is the loss
    # of exactly this sample (same kernel, same data => the same bits).
    A0 = kernels.softmax_rows(res.trajectory.theta)
    loss = kernels.loss_and_grad(data.X, data.y, res.trajectory.v, A0, TINY.p, TINY.nu)["loss"]
    assert loss == res.trajectory.train_loss[0]


def test_sample_with_given_sets_and_size():
    sets = np.array([[7, 6, 5, 4], [0, 1, 2, 3]])
    data, structure, _ = patchassoc.sample("tiny", n=5, seed=0, structure=sets)
    assert data.X.shape == (5, 8, 32)
    assert np.array_equal(structure.sets, np.sort(sets, axis=1))
    # every image's signal set is constant (= y) on one of the given sets
    for s, y, l in zip(data.s, data.y, data.lstar):
        assert np.all(s[structure.sets[l]] == y)


def test_sample_draws_the_distribution_the_config_names():
    cfg = patchassoc.preset("ref", data="gaussian-cnn", structure="windows")
    data, structure, W = patchassoc.sample(cfg, n=6, seed=2)
    assert W.shape == (cfg.C, cfg.d)                   # the CNN filter, not a feature vector
    assert not data.s.any() and np.all(data.lstar == -1)  # no feature, no signal set
    pre = np.einsum("nlcd,cd->nl", data.X[:, structure.sets, :], W)
    assert np.array_equal(data.y, np.where((pre ** 3).sum(axis=1) >= 0, 1.0, -1.0))


@pytest.mark.parametrize("kwargs,needle", [
    (dict(config=3), "config must be a patchassoc.Config or a preset name"),
    (dict(config="huge"), "unknown preset 'huge'"),
    (dict(n=0), "n must be an integer >= 1"),
    (dict(n=2.5), "n must be an integer >= 1"),
    (dict(seed=-1), "seed must be an integer >= 0"),
    (dict(seed=True), "seed must be an integer >= 0"),
    (dict(structure=[[0, 1], [2, 3]]), "structure has L=2, C=2; the config has L=2, C=4"),
    (dict(structure=[[0, 1, 2, 3], [4, 5, 6, 6]]), "partition"),
    (dict(n=10**7), "GiB"),
])
def test_sample_refuses_bad_input(kwargs, needle):
    kwargs = {"config": "tiny", "n": 4, **kwargs}
    with pytest.raises(ValueError, match=needle):
        patchassoc.sample(**kwargs)


def test_train_runs_and_refuses_bad_input():
    res = patchassoc.train(TINY.replace(steps=3, records=2), seed=1,
                           structure=Structure(np.arange(8).reshape(2, 4)))
    s = res.summary()
    assert s["steps"] == 3 and s["status"] == "ok"
    assert np.array_equal(res.structure.sets, np.arange(8).reshape(2, 4))
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        patchassoc.train(TINY, seed=-2)
    with pytest.raises(ValueError, match="config must be"):
        patchassoc.train({"d": 32})
    with pytest.raises(ValueError, match="progress must be True or False"):
        patchassoc.train(TINY, progress="yes")
    with pytest.raises(ValueError, match="structure has L=4, C=2"):
        patchassoc.train(TINY, structure=np.arange(8).reshape(4, 2))


def test_population_eval_passes_the_config_problem_to_the_engine():
    cfg = patchassoc.preset("tiny", q=0.3, p=3, nu=0.0)
    ev = patchassoc.population_eval(0.7, 2.0, 1.0, -0.5, cfg)
    ref = evaluate(2, 4, 0.3, 3, 0.0, 0.7, 2.0, 1.0, -0.5)
    assert (ev.risk, ev.error, ev.grad, ev.configurations) == \
        (ref.risk, ref.error, ref.grad, ref.configurations)
    assert ev.complete and ev.bound == 0.0
    trunc = patchassoc.population_eval(0.7, 2.0, 1.0, -0.5, cfg, tol=1e-3)
    assert trunc.bound <= 1e-3
    # uniform attention (a = b = c) is a fixed point: the attention gradient is exactly 0
    flat = patchassoc.population_eval(1.5, 0.2, 0.2, 0.2, "ref")
    assert (flat.grad["a"], flat.grad["b"], flat.grad["c"]) == (0.0, 0.0, 0.0)
    assert flat.grad["alpha"] != 0.0


@pytest.mark.parametrize("args,kwargs,needle", [
    (("x", 1, 1, 1), {}, "alpha must be a real number"),
    ((1, None, 1, 1), {}, "a must be a real number"),
    ((1, 1, float("nan"), 1), {}, "b must be finite"),
    ((1, 1, 1, float("inf")), {}, "c must be finite"),
    ((True, 1, 1, 1), {}, "alpha must be a real number"),
    ((1, 1, 1, 1), {"tol": 0}, "tol must be > 0"),
    ((1, 1, 1, 1), {"tol": "small"}, "tol must be a real number"),
    ((1, 1, 1, 1), {"max_configurations": 0}, "max_configurations must be an integer >= 1"),
    ((1, 1, 1, 1), {"config": None}, "config must be"),
    ((1, 3, 2.5, 0), {"config": "paper", "max_configurations": 1000}, "configurations"),
])
def test_population_eval_refuses_bad_input(args, kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        patchassoc.population_eval(*args, **kwargs)


def test_population_descent_and_bayes_error():
    cfg = patchassoc.preset("tiny")
    res = patchassoc.population_descent(cfg, seed=0, steps=20, records=3)
    s = res.summary()
    assert s["steps"] == 20 and s["status"] == "ok"
    assert res.trajectory.steps.tolist() == [0, 1, 20]  # step 0, then log-spaced 1 .. 20
    assert s["bayes_error"] == patchassoc.bayes_error(cfg)
    # L = 2: one noise set; the Bayes rule errs only when it is constant with the wrong sign
    # and then guesses (ties 1/2): error = (q/2)^C / 2.
    assert patchassoc.bayes_error(cfg) == 0.5 * (cfg.q / 2) ** cfg.C
    with pytest.raises(ValueError, match="steps must be an integer >= 0"):
        patchassoc.population_descent(cfg, steps=-1)
    with pytest.raises(ValueError, match="records must be an integer >= 1"):
        patchassoc.population_descent(cfg, records=0)
    with pytest.raises(ValueError, match="tol must be > 0"):
        patchassoc.population_descent(cfg, tol=-1.0)
    with pytest.raises(ValueError, match="config must be"):
        patchassoc.bayes_error(4)


def test_association_on_matrices():
    sets = [[0, 2], [1, 3]]
    B = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [1, 0, 1, 0], [0, 1, 0, 1]], dtype=float)
    good = patchassoc.association(10.0 * B, sets)
    assert good.topc_rows == 4 and good.associated
    # off the diagonal, row i has its set-mate at logit 10 and two others at 0
    assert good.share_min == pytest.approx(1 / (1 + 2 * np.exp(-10.0)), rel=SOFTMAX_REL)
    ident = patchassoc.association(10.0 * np.eye(4), sets)
    assert ident.topc_rows == 0 and not ident.associated and ident.mass_min > 0.99
    att = patchassoc.association(B / 2, sets, kind="attention", eps=0.0)
    assert att.associated and att.share_min == 1.0
    with pytest.raises(ValueError, match="kind must be one of"):
        patchassoc.association(B, sets, kind="weights")
    with pytest.raises(ValueError, match="rows must sum to 1"):
        patchassoc.association(B, sets, kind="attention")
    with pytest.raises(ValueError, match="but the matrix is 4 x 4"):
        patchassoc.association(B, [[0, 1, 2]])
    with pytest.raises(ValueError, match="eps must be a number in"):
        patchassoc.association(B, sets, eps=2)


def test_prove_lemmas():
    (rec,) = patchassoc.prove_lemmas("l1")
    assert rec.name == "L1" and rec.proved and rec.checks >= 1
    with pytest.raises(ValueError, match="unknown lemma"):
        patchassoc.prove_lemmas(["L99"])
    with pytest.raises(ValueError, match="names is empty"):
        patchassoc.prove_lemmas([])
    with pytest.raises(ValueError, match="lemma names must be strings"):
        patchassoc.prove_lemmas([1])
    with pytest.raises(ValueError, match="names must be a lemma name"):
        patchassoc.prove_lemmas(3)


def test_check_reads_a_folder_and_never_counts_missing_results(tmp_path):
    out = patchassoc.check(tmp_path)
    assert [c["id"] for c in out["claims"]][:6] == ["1", "2", "3", "4", "5", "6"]
    assert all(c["status"] == "not run" and not c["passed"] for c in out["claims"])
    assert out["all_passed"] is False and out["exit_status"] == 1
    with pytest.raises(ValueError, match="is not a folder"):
        patchassoc.check(tmp_path / "missing")
    with pytest.raises(ValueError, match="from_dir must be a path"):
        patchassoc.check(3)
    with pytest.raises(ValueError, match="train must be True or False"):
        patchassoc.check(tmp_path, train=1)


def test_population_flow_reads_the_horizon_and_refuses_bad_input():
    cfg = patchassoc.preset("ref", L=2, C=2, d=64, diagonal="fixed")
    res = patchassoc.population_flow(cfg, seed=0, t_max=1e4, per_decade=5)
    s = res.summary()
    assert s["horizon"]["t"] == 1e4 and s["records"] == 1 + 4 * 5 + 1
    assert s["limit"]["class"] in ("association", "other sets", "converged", "tie", "undecided")
    for bad in ({"t_max": 0.0}, {"t_max": float("nan")}, {"per_decade": 0}, {"seed": -1}):
        with pytest.raises(ValueError):
            patchassoc.population_flow(cfg, **bad)
    with pytest.raises(ValueError, match="logits"):
        patchassoc.population_flow(patchassoc.preset("ref", param="gram"), t_max=10)
