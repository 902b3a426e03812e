"""Claim 5's rule at its declared edges, in both places it is read (issue 51): the verdict
(:func:`~patchassoc.simulations.studies.claim5_transfer.pipeline.claim5`) and the cause of a FAIL
(:func:`~patchassoc.simulations.studies.claim5_transfer.pipeline.failure_cause`), which writes
the per-eps rule again. SPEC section 6, item 5: at every eps of the grid the ratio (or its lower
bound) is >= 4 and the 95 % CI lower end is > 2. Only the threshold and the all-quantifier are
tested here, not the protocol around them (issue 51: it is about to be reworked)."""
from __future__ import annotations

import numpy as np

from patchassoc.simulations.studies.claim5_transfer import protocol as P
from patchassoc.simulations.studies.claim5_transfer.pipeline import claim5, failure_cause


def _summary(ratios, lows):
    return {"by_eps": [{"eps": e, "ratio": r, "ratio_ci": [lo, 2 * r], "best_baseline": "joint",
                        "ratio_is_lower_bound": False, "pretrained_censored": False,
                        "fraction_pretrained_censored": 0.0}
                       for e, r, lo in zip(P.EPS_GRID, ratios, lows)],
            "preview_reasons": [], "n_upstream": 5, "n_downstream": 10}


def test_the_verdict_and_its_cause_read_the_same_edges_at_every_eps():
    """Ratio exactly 4 passes, one ulp below fails; CI low one ulp above 2 passes, exactly 2
    fails: the verdict fails at those two eps and the cause names exactly them."""
    n = len(P.EPS_GRID)
    ratios, lows = [5.0] * n, [2.5] * n
    ratios[0] = P.RATIO_MIN
    ratios[1] = float(np.nextafter(P.RATIO_MIN, 0.0))
    lows[2] = float(np.nextafter(P.CI_LOW_MIN, 3.0))
    lows[3] = P.CI_LOW_MIN
    s = _summary(ratios, lows)
    c = claim5(s)
    assert c["measured"]["failing_eps"] == [P.EPS_GRID[1], P.EPS_GRID[3]]
    assert [x["passed"] for x in c["measured"]["per_eps"]] == [True, False, True, False] + \
        [True] * (n - 4)
    assert c["status"] == "fail" and not c["passed"] and not c["rule_holds"]
    code, why = failure_cause(s)
    named = ", ".join(f"{100 * e:g} %" for e in (P.EPS_GRID[1], P.EPS_GRID[3]))
    assert code == "ii" and why.startswith(f"at eps = {named} the reading is finished")
    # at the edges that pass, nothing fails and no cause is named
    s = _summary([P.RATIO_MIN] * n, [float(np.nextafter(P.CI_LOW_MIN, 3.0))] * n)
    assert claim5(s)["status"] == "pass" and failure_cause(s) is None

