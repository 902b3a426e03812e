"""The exact engine's threaded path and its pruning by probability (SPEC section 5).

- Threaded vs serial: ``parallel_min_configurations=0`` forces the threaded kernel on problems
  far below its default threshold; every returned number must equal the serial kernel's bit for
  bit (the tasks write their own rows, summed in task order), with 1 or 2 Numba threads. A
  reduction that depended on the thread schedule (e.g. a shared accumulator, or summing the
  rows in completion order) breaks these tests.
- Pruning: the pruned evaluation must stay within its certified bounds of the complete one, and
  those bounds must cover the probability it actually omitted. Pruning that forgot to count
  what it skipped (or a subtree bound that was too small) breaks them, as does a threshold that
  prunes nothing (then it enumerates as many configurations as the truncation by count).
"""
import numba
import numpy as np
import pytest

from patchassoc.simulations.engines.population import count_configurations, evaluate
from patchassoc.simulations.engines.population.exact import evaluate_gram, plan
from patchassoc.simulations.engines.population.exact._search import _enumerate_parallel

from tests.reference_population import PROBABILITY_ABS
from tests.tolerances import GRAD_ROUNDING_REL

NEVER = 10 ** 12  # a threshold no test problem reaches: the serial kernel

# (L, C, q, tol, prune, point (alpha, a, b, c)): complete, truncated and pruned enumerations,
# with one to three odometer levels below the task prefixes, and a trained-like attention
PROBLEMS = [
    (3, 4, 0.3, None, False, (1.25, 3.3, 3.2, -0.9)),
    (5, 3, 0.25, None, False, (0.7, 0.5, 0.2, 0.1)),
    (4, 6, 0.2, 1e-7, False, (2.0, 3.0, 2.5, -0.5)),
    (6, 4, 0.3, 1e-6, True, (1.2, 2.0, 1.0, 0.0)),
    (5, 5, 0.2, 1e-8, True, (-0.8, 1.0, 1.5, 0.2)),
    (2, 6, 0.4, None, False, (1.0, 0.3, 0.1, -0.2)),
]


def _numbers(ev):
    return ([ev.risk, ev.error, ev.probability, ev.omitted_probability, ev.configurations]
            + [ev.grad[k] for k in sorted(ev.grad)] + list(ev.grad_values)
            + [ev.bounds[k] for k in sorted(ev.bounds)])


@pytest.mark.parametrize("L,C,q,tol,prune,point", PROBLEMS)
def test_threaded_and_serial_kernels_agree_bit_for_bit(L, C, q, tol, prune, point):
    serial = evaluate(L, C, q, 5, 0.03, *point, tol=tol, prune=prune,
                      parallel_min_configurations=NEVER)
    threaded = evaluate(L, C, q, 5, 0.03, *point, tol=tol, prune=prune,
                        parallel_min_configurations=0)
    assert _enumerate_parallel.signatures  # the threaded kernel did run
    assert _numbers(threaded) == _numbers(serial)
    assert serial.configurations > 0 and serial.risk > 0.0


@pytest.mark.parametrize("L,C,q,tol,prune,point", PROBLEMS[2:5])
def test_threaded_result_does_not_depend_on_the_thread_count(L, C, q, tol, prune, point):
    before = numba.get_num_threads()
    results = []
    try:
        for n in sorted({1, numba.config.NUMBA_NUM_THREADS}):
            numba.set_num_threads(n)
            results.append(_numbers(evaluate(L, C, q, 5, 0.03, *point, tol=tol, prune=prune,
                                             parallel_min_configurations=0)))
    finally:
        numba.set_num_threads(before)
    assert all(r == results[0] for r in results)


def test_gram_form_threaded_equals_serial():
    args = (5, 4, 0.3, 5, 0.03, 1.1, 1.5, 0.4, -0.1)
    s = evaluate_gram(*args, tol=1e-6, prune=True, parallel_min_configurations=NEVER)
    t = evaluate_gram(*args, tol=1e-6, prune=True, parallel_min_configurations=0)
    assert _numbers(t) == _numbers(s)


@pytest.mark.parametrize("L,C,q,tol,point", [(6, 4, 0.3, 1e-6, (1.2, 2.0, 1.0, 0.0)),
                                             (5, 5, 0.2, 1e-8, (-0.8, 1.0, 1.5, 0.2)),
                                             (7, 3, 0.3, 1e-5, (1.6, 2.5, 2.4, -0.3))])
def test_pruned_evaluation_is_certified(L, C, q, tol, point):
    full = evaluate(L, C, q, 5, 0.03, *point)
    by_count = evaluate(L, C, q, 5, 0.03, *point, tol=tol)
    pruned = evaluate(L, C, q, 5, 0.03, *point, tol=tol, prune=True)
    pl = plan(L, C, q, 5, 0.03, *point, tol=tol, prune=True)
    assert pl.theta > 0.0 and pruned.bound <= tol
    # it pruned: fewer configurations than the truncation by count, at a deeper k
    assert pruned.configurations < by_count.configurations
    assert pruned.configurations < count_configurations(L, C, pruned.k)
    # the truncation only drops nonnegative terms of the risk and the error
    assert 0.0 <= full.risk - pruned.risk <= pruned.bounds["risk"]
    assert 0.0 <= full.error - pruned.error <= pruned.bounds["error"] + PROBABILITY_ABS
    for k in ("alpha", "a", "b", "c"):
        scale = max(abs(full.grad[k]), abs(pruned.grad[k]))
        assert abs(full.grad[k] - pruned.grad[k]) <= (pruned.bounds[k]
                                                     + GRAD_ROUNDING_REL * scale)
    # the reported omitted probability covers what was not enumerated
    assert 1.0 - pruned.probability <= pruned.omitted_probability + PROBABILITY_ABS
    assert not pruned.complete


def test_pruning_is_off_by_default_and_without_tol():
    point = (1.2, 2.0, 1.0, 0.0)
    ev = evaluate(6, 4, 0.3, 5, 0.03, *point, tol=1e-6)
    assert ev.configurations == count_configurations(6, 4, ev.k)
    full = evaluate(6, 4, 0.3, 5, 0.03, *point, prune=True)  # no tol: complete
    assert full.complete and full.bound == 0.0
    assert full.configurations == count_configurations(6, 4)
    assert abs(full.probability - 1.0) <= PROBABILITY_ABS
    assert np.isfinite(full.risk)
