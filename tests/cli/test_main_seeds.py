"""``patchassoc seeds``: what its text output says, read from the summary's numbers (the claim's
verdict on a run is an output, never asserted here)."""
from patchassoc.cli.main_seeds import render
from patchassoc.simulations.studies.claim2_seeds import compute
from patchassoc.theory.config import preset


def test_render_gives_the_horizon_verdict_the_budget_reading_and_each_seeds_times(tmp_path):
    cfg = preset("ref", d=16, n_train=100, n_test=100, steps=4)
    s = compute(cfg, tmp_path, n_seeds=2, control=False, horizon=16)
    lines = render(s).splitlines()
    assert lines[0].startswith("claim 2 over 2 seeds (diagonal fixed) at the horizon H = 16 "
                               "steps") and lines[0].endswith("PREVIEW (no verdict)")
    b = s["budget"]
    assert lines[1] == (f"  beside it, the old rule at step 4: a reading within the old budget, "
                        f"not the verdict: {b['n_passed']}/2 pass, Wilson 95 % "
                        f"[{b['wilson'][0]:.3f}, {b['wilson'][1]:.3f}]")
    for x in s["times"]:
        line = next(ln for ln in lines if ln.startswith(f"  seed {x['seed']}:"))
        for key, word in (("def22", "Def. 2.2"), ("share", "share"), ("error", "error"),
                          ("all", "the rule")):
            t = "censored" if x[key] is None else f"{x[key]:.0f}"
            assert f"{word} {t}" in line
    # a failing seed gives the claim a cause (kept aside: a preview), printed on its own line
    assert any(ln.startswith("  cause (") for ln in lines) == bool(s["failing"])
