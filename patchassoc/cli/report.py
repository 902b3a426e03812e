"""``report.md`` for a ``patchassoc reproduce`` folder.

The report is written from the saved step summaries only (nothing is recomputed): the claims
table, every figure embedded with a paragraph that reads it using the measured numbers, the
configuration, the package versions, the seed and the timings. Each step's readings are produced
by a function of its summary registered in :data:`READERS`; a step without a reader still gets
its figures listed.
"""
from __future__ import annotations

import importlib
import platform
import sys
from pathlib import Path
from typing import Callable

from patchassoc.simulations.runtime.results import atomic_write_text, read_json

__all__ = ["write_report", "package_versions", "READERS"]

PACKAGES = ("numpy", "scipy", "sympy", "numba", "matplotlib", "hypothesis", "tqdm", "torch",
            "sklearn", "dask")


def package_versions() -> dict[str, str]:
    """Versions of Python and of the packages the toolkit uses (those installed)."""
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for name in PACKAGES:
        mod = sys.modules.get(name)
        if mod is None:
            try:
                mod = importlib.import_module(name)
            except Exception:  # noqa: BLE001 - an optional package may be absent or broken
                continue
        out[name] = str(getattr(mod, "__version__", "?"))
    return out


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * float(x):.2f} %"


def _f(x, fmt=".3f") -> str:
    return "n/a" if x is None else format(float(x), fmt)


def _association_sentence(s: dict) -> str:
    """The paper's association metrics of a run summary, read from its numbers (SPEC section 3)."""
    if s.get("topc_rows") is None:
        return "The association metrics of SPEC section 3 were not recorded for this run."
    D, eps = s.get("D"), s.get("eps")
    verdict = ("so the run is associated" if s.get("associated") else
               "so the run is NOT associated")
    return (f"Paper Def. 2.2 (the C largest logits of row i are exactly its set) holds in "
            f"{s['topc_rows']} of {D} rows; the set-mate share (attention leaving patch i that "
            f"lands on its own set) goes from {_f(s.get('share_initial'))} to "
            f"{_f(s.get('share_mean'))} on average and {_f(s.get('share_min'))} at the worst "
            f"patch; association at eps = {_f(eps, 'g')} needs Def. 2.2 in every row and a share "
            f">= {_f(1 - eps, 'g') if eps is not None else 'n/a'}, {verdict}.")


def _train_reading(s: dict, label: str) -> dict[str, str]:
    rec = s.get("structure_recovery") or {}
    cfg = s.get("config", {})
    common = (f"{label}: d = {cfg.get('d')}, L = {cfg.get('L')} sets of C = {cfg.get('C')} "
              f"patches, N = {cfg.get('n_train')} training samples, {s.get('steps')} steps, "
              f"diagonal of Q {cfg.get('diagonal', 'trained')}.")
    assoc = _association_sentence(s)
    return {
        "attention_maps": (
            f"{common} Each column is the attention matrix A = softmax(Q) at one step; the top row "
            f"uses the natural patch order, the bottom row reorders patches so that each hidden "
            f"set is contiguous; each title gives the rows passing Def. 2.2 and the set-mate "
            f"share. Training starts from Q0 = kappa I. {assoc} The within-set mass, which also "
            f"counts A_ii and is only a description, goes from "
            f"{_f(s.get('within_mass_initial'))} to {_f(s.get('within_mass_mean'))}. The sets "
            f"read back from the final A match the true partition with adjusted Rand index "
            f"{_f(rec.get('ari_top_c'))} (top-C) and {_f(rec.get('ari_spectral'))} (spectral)."),
        "training_curves": (
            f"{common} Left: the training loss ends at {_f(s.get('train_loss'), '.2g')} and the "
            f"test error on a fresh sample at {_pct(s.get('test_error'))}. Middle: alpha = "
            f"<v, w*> ends at {_f(s.get('alpha'))} and the part of v orthogonal to the feature, "
            f"which can only fit noise, at {_f(s.get('v_perp_norm'))}. Right: {assoc} The "
            f"dotted lines are uniform attention's share (C-1)/(D-1) and the level 1 - eps; the "
            f"faint grey curve is the within-set mass."),
    }


def _locality_reading(s: dict) -> dict[str, str]:
    out = _train_reading(s, "Square-window sets on the patch grid")
    out["locality"] = (
        f"Each panel draws one query patch's attention row over the image's patch grid (star: the "
        f"query; box: its window). At the start the patch attends to itself. By the end, the "
        f"share of the attention leaving the query that lands inside its window is "
        f"{_f(s.get('share_mean'))} on average and {_f(s.get('share_min'))} at the worst patch "
        f"(uniform attention would give (C-1)/(D-1)), and Def. 2.2 holds in "
        f"{s.get('topc_rows', 'n/a')} of {s.get('D', 'n/a')} rows. The model was never told "
        f"which patches are neighbours.")
    return out


def _phases_sentence(s: dict) -> str:
    ph = s.get("phases") or {}
    if ph.get("t_alpha") is None:
        return "The phase times are not available for this run."
    ts = ph.get("t_share")
    if ph.get("alpha_first") is None:
        order = "the share did not move, so the order of the phases is undefined"
    elif ph["alpha_first"]:
        order = "alpha comes first, as in the paper's proof"
    else:
        order = "the share moves first, which is NOT the order of the paper's proof"
    return (f"Phases (shaded): alpha reaches half its final value {_f(ph.get('alpha_final'))} "
            f"at step t_alpha = {ph['t_alpha']}, and the share covers half its way from "
            f"{_f(ph.get('share_start'))} to {_f(ph.get('share_final'))} at step t_share = "
            f"{ts if ts is not None else 'n/a'}: {order}. Before t_alpha no attention weight "
            f"moved by more than {_f(ph.get('attention_change_before_t_alpha'), '.2g')} (by the "
            f"end: {_f(ph.get('attention_change_total'), '.2g')}).")


def _population_reading(s: dict) -> dict[str, str]:
    conv = s.get("convergence") or {}
    cfg = s.get("config", {})
    ratio = s.get("error_over_bayes")
    fixed = s.get("diagonal") == "fixed"
    row_sum = (f"With the diagonal fixed, the row sum a + (C-1)b + (D-C)c is not conserved "
               f"(each step adds eta_Q (dR/da)/D); it moved by {_f(s.get('row_sum_drift'), '.2g')}"
               f" (relative)." if fixed else
               f"The row sum a + (C-1)b + (D-C)c, conserved in exact arithmetic, drifted by "
               f"{_f(s.get('row_sum_drift'), '.1e')} (relative).")
    out = {
        "population_attention_maps": (
            f"The exact population dynamics (no sampling: the expectation is a finite sum over "
            f"multisets of noise-set states) for d = {cfg.get('d')}, L = {cfg.get('L')}, "
            f"C = {cfg.get('C')}, diagonal {cfg.get('diagonal', 'trained')}. Because the "
            f"structure group maps the risk to itself, a G-invariant start stays G-invariant, so "
            f"the whole D x D attention is rebuilt from three logits (a, b, c). After "
            f"{s.get('steps')} steps: {_association_sentence(s)}"),
        "population_dynamics": (
            f"The population coordinates against the step (final a - c = {_f(s.get('gap_ac'))}, "
            f"b - c = {_f(s.get('gap_bc'))}). {_phases_sentence(s)} {row_sum} The population "
            f"error ends at {_pct(s.get('error'))}, {_f(ratio, '.3f')} times the exact Bayes "
            f"error {_pct(s.get('bayes_error'))}."),
    }
    if conv:
        out.update(_convergence_reading(conv))
    return out


def _slope_phrase(fit: dict | None) -> str:
    """A fitted log-log slope with its interval, and what the interval decides about -1/2."""
    if not fit or fit.get("slope") is None:
        return "not available"
    lo, hi = fit.get("ci_low"), fit.get("ci_high")
    text = f"{_f(fit['slope'])}"
    if lo is None or hi is None:
        return text
    text += f" (95 % CI {_f(lo)} to {_f(hi)}"
    if lo <= -0.5 <= hi:
        return text + ": consistent with N^(-1/2))"
    if hi < 0:
        return text + (": falls with N, faster than N^(-1/2))" if hi < -0.5 else
                       ": falls with N, but slower than N^(-1/2))")
    return text + ": no decrease with N is resolved)"


def _convergence_reading(conv: dict) -> dict[str, str]:
    """The convergence figure's reading, decided by its fitted slopes (claim 2, reported)."""
    slopes = conv.get("slopes") or {}
    total = slopes.get("total") or {"slope": conv.get("slope"),
                                    "ci_low": (conv.get("slope_ci") or [None, None])[0],
                                    "ci_high": (conv.get("slope_ci") or [None, None])[1]}
    parts = [f"{name.replace('_', ' ')} {_slope_phrase(slopes.get(name))}"
             for name in ("alpha", "Q_invariant", "Q_residual", "v_perp") if name in slopes]
    Ns = conv.get("Ns") or []
    return {"population_convergence": (
        f"Distance between sampled-data trajectories (N samples, full v and D x D Q, no symmetry "
        f"assumed) and the exact population trajectory, against N on log-log axes, "
        f"{len(conv.get('seeds', []))} seeds per N, N from {Ns[0] if Ns else '?'} to "
        f"{Ns[-1] if Ns else '?'}. The slope of the whole parameter's distance is "
        f"{_slope_phrase(total)}; the CLT reference is -1/2. By component: "
        + "; ".join(parts) + ".")}


def _solutions_paragraph(t: dict) -> str:
    rows = {r.get("name"): r for r in t.get("rows", [])}
    parts = []
    for name, r in rows.items():
        parts.append(f"{name}: error {_pct(r.get('error'))}"
                     f"{', associated' if r.get('associated') else ''}"
                     f"{', generalizes' if r.get('generalizes') == 'yes' else ''}")
    gd = t.get("gd", {})
    D = (t.get("problem") or {}).get("D")
    gd_text = "; ".join(
        f"{k}: Def. 2.2 in {v.get('topc_rows')} of {D} rows, share min {_f(v.get('share_min'))}"
        f" ({'associated' if v.get('associated') else 'not associated'} at eps "
        f"{_f(v.get('eps'), 'g')}), nearest construction {v.get('nearest')}"
        + (f", error with v_perp (Monte Carlo) {_pct((v.get('full') or {}).get('error'))} "
           f"[{_pct((v.get('full') or {}).get('error_low'))}, "
           f"{_pct((v.get('full') or {}).get('error_high'))}]" if v.get("full") else "")
        for k, v in gd.items())
    disjoint = ", ".join(t.get("disjoint") or []) or "none"
    controls = t.get("controls") or []
    bad = [c["name"] for c in controls if not c.get("ok")]
    ctl_text = (f" Controls ({', '.join(c['name'] for c in controls)}): "
                + ("every one fails association." if not bad else
                   f"{', '.join(bad)} ASSOCIATE, which fails claim 3.")) if controls else ""
    prob = t.get("problem", {})
    return (f"Configuration L = {prob.get('L')}, C = {prob.get('C')}, q = {_f(prob.get('q'))}: "
            f"risk and zero-one error of explicit solutions against the attention sharpness "
            f"lambda (Q = lambda x pattern), each certified (exact multiset sum, brute force "
            f"over all noise patterns, or Monte Carlo with a 95 % interval, as labelled in "
            f"solutions.json), against the exact Bayes error {_pct(t.get('bayes_error'))} and "
            f"the generalization threshold {_pct(t.get('generalization_threshold'))}. At the "
            f"largest lambda: " + "; ".join(parts) + ". Association is the paper's (Def. 2.2 "
            f"in every row and the set-mate share). Generalizing without patch association: "
            f"{', '.join(t.get('generalizing_without_association') or []) or 'none'}; top-C "
            f"disjoint from the own set in every row: {disjoint} (shifted blocks is a row "
            f"permutation of block-uniform and computes the same f). "
            f"Gradient descent: {gd_text or 'n/a'}.{ctl_text}")


def _solutions_reading(s: dict) -> dict[str, str]:
    return {f"solutions_lambda_{label}": _solutions_paragraph(t)
            for label, t in (s.get("configs") or {}).items()}


def _vit_reading(s: dict) -> dict[str, str]:
    # read from the numbers by the vit command itself (controls, shuffled-patch experiment)
    from patchassoc.cli.main_vit import figure_readings

    return figure_readings(s)


def _transfer_reading(s: dict) -> dict[str, str]:
    st = s.get("setting") or {}
    rows = s.get("by_eps") or []
    claim = s.get("claim5") or {}

    def ratio_text(r):
        ci = r.get("ratio_ci") or [None, None]
        return (f"{100 * r['eps']:g} %: {'>= ' if r.get('ratio_is_lower_bound') else ''}"
                f"{_f(r.get('ratio'), '.1f')} [{_f(ci[0], '.1f')}, {_f(ci[1], '.1f')}] "
                f"vs {r.get('best_baseline')}")
    verdict = {"pass": "passes", "fail": "fails", "preview": "is not decided (a preview)"}.get(
        claim.get("status"), "n/a")
    return {"transfer": (
        f"Transfer (pre-registered in SPEC section 6, item 5) to a downstream task with the same "
        f"sets and a new feature orthogonal to w*; its noise sigma sqrt(d) = "
        f"{_f(st.get('sigma_sqrt_d'), '.3f')} is set by the declared rule (the block-uniform "
        f"attention's error floor is half the smallest target), q = {_f(st.get('q'), '.3f')}. "
        f"{s.get('n_upstream')} upstream (pretraining) seeds x {s.get('n_downstream')} "
        f"downstream seeds. Right: mean test error (on {st.get('n_test')} fresh samples per "
        f"cell) after retraining v from a small start, against N, with hierarchical-bootstrap "
        f"95 % bands; the grey band is the declared eps range. Left: the ratio N_eps(best "
        f"baseline) / N_eps(pretrained) against eps with its 95 % CI (upstream seeds resampled, "
        f"then downstream seeds within each; grey dots: single upstream seeds; triangles: lower "
        f"bounds where every baseline is censored at the largest N). Ratio [CI] by eps: "
        f"{'; '.join(ratio_text(r) for r in rows)}. By the declared rule (ratio >= 4 and CI "
        f"lower end > 2 at every eps) claim 5 {verdict}: {claim.get('detail', '')}.")}


def _paper_figures_reading(s: dict) -> dict[str, str]:
    out = _train_reading(s, "The paper's Fig. 4 setting (preset paper-fig4)")
    p = s.get("picture") or {}
    cfg = s.get("config", {})
    pt = s.get("fig3") or {}
    if p.get("shows_picture"):
        verdict = "the paper's picture appears in this run"
    else:
        verdict = "the paper's picture does NOT appear in this run"
    out["paper_fig4"] = (
        f"The paper's Fig. 4 setting: D = {cfg.get('D')} patches in L = {cfg.get('L')} sets of "
        f"C = {cfg.get('C')}, diagonal of Q {cfg.get('diagonal')}, noise {cfg.get('noise')}, "
        f"d = {cfg.get('d')}, q = {_f(cfg.get('q'), 'g')}, N = {cfg.get('n_train')} (d, q and "
        f"the step sizes are this toolkit's choice: the paper's were not recovered). cos(v, w*) "
        f"first reaches 0.99 at recorded step {p.get('t_cos') if p.get('t_cos') is not None else 'never'}; the test error is "
        f"{_pct(p.get('plateau_error'))} there and stays within a factor 1.25 of it until step "
        f"{p.get('plateau_until') if p.get('plateau_until') is not None else 'never'}; Def. 2.2 first holds in every row at step "
        f"{p.get('t_topc') if p.get('t_topc') is not None else 'never'} (associated at eps = 0.25 first at step "
        f"{p.get('t_assoc') if p.get('t_assoc') is not None else 'never'}), and the test error ends at "
        f"{_pct(p.get('final_error'))} (cos(v, w*) {_f(p.get('cos_final'))}). Cos first, "
        f"plateau, then a drop to at most 0.75 x the plateau once Def. 2.2 holds: {verdict}. "
        f"{_association_sentence(s)} The paper reports its drop near 10^4 steps; the time scale "
        f"depends on the step sizes, which differ here.")
    if pt:
        out["paper_fig3"] = (
            f"One draw (seed {pt.get('seed')}, y = {pt.get('y')}) of the structured distribution "
            f"on a 6 x 6 patch grid of nine 2 x 2 sets, q = {_f(pt.get('q'))}: the boxed signal "
            f"set carries y w* in all four patches, {sum(1 for v in pt.get('s', []) if v) - 4} "
            f"other patches carry a stray +-w*, the rest noise only.")
    return out


#: step name -> function(summary) -> {figure stem: paragraph}
READERS: dict[str, Callable[[dict], dict[str, str]]] = {
    "train": lambda s: _train_reading(s, "Sampled-data gradient descent with free logits Q"),
    "train_gram": lambda s: _train_reading(
        s, "Sampled-data gradient descent with positional encodings, Q = P P^T"),
    "locality": _locality_reading,
    "population": _population_reading,
    "convergence": _convergence_reading,
    "paper_figures": _paper_figures_reading,
    "solutions": _solutions_reading,
    "vit": _vit_reading,
    "transfer": _transfer_reading,
    "grid": lambda s: importlib.import_module(
        "patchassoc.cli.main_grid").figure_readings(s),
    "seeds": lambda s: importlib.import_module(
        "patchassoc.cli.main_seeds").figure_readings(s),
    "scaling": lambda s: importlib.import_module(
        "patchassoc.cli.main_scaling").figure_readings(s),
}


def register_reader(step: str, reader: Callable[[dict], dict[str, str]]) -> None:
    """Add the figure readings of a reproduction step."""
    READERS[step] = reader


def _claims_table(claims: list[dict]) -> list[str]:
    lines = ["| claim | measured | threshold | pass |", "|---|---|---|---|"]
    for c in claims:
        mark = {"pass": "PASS", "preview": "preview (reduced run: no verdict)",
                "not run": "not run"}.get(c.get("status"), "**FAIL**")
        reason = f" ({c['reason']})" if c.get("reason") and not c.get("passed") else ""
        lines.append(f"| {c.get('claim', '?')} | {c.get('measured', '')}{reason} | "
                     f"{c.get('threshold', '')} | {mark} |")
        for ctl in (c.get("values") or {}).get("controls") or []:
            state = "associates: **the claim fails**" if ctl.get("associated") else \
                "fails association (as it must)"
            lines.append(f"| &nbsp;&nbsp;control: {ctl.get('label', ctl.get('name'))} | Def. 2.2 "
                         f"{ctl.get('topc_rows')}/{ctl.get('D')} rows, share min "
                         f"{_f(ctl.get('share_min'))} | must fail association | {state} |")
    return lines


def write_report(folder: str | Path) -> Path:
    """Write ``folder``/report.md from the reproduction's saved summaries."""
    folder = Path(folder)
    meta = read_json(folder / "reproduce.json")
    # JSON objects are written with sorted keys: restore the order the steps ran in
    order = meta.get("order") or list(meta["steps"])
    steps: dict = {n: meta["steps"][n] for n in order if n in meta["steps"]}
    steps.update({n: r for n, r in meta["steps"].items() if n not in steps})
    lines = ["# patchassoc reproduction report", "",
             "Verification of *Vision Transformers provably learn spatial structure* (Jelassi, "
             "Sander, Li; NeurIPS 2022) by exact computation and simulation. Every number below "
             "was measured by this run; the commands and the configuration are at the end.", ""]
    claims = (steps.get("check", {}).get("summary") or {}).get("claims")
    lines += ["## Claims", ""]
    if claims:
        lines += _claims_table(claims)
        passed = sum(bool(c.get("passed")) for c in claims)
        preview = sum(c.get("status") == "preview" for c in claims)
        lines += ["", f"{passed} of {len(claims)} claims pass"
                  + (f"; {preview} {'is a preview' if preview == 1 else 'are previews'} of a "
                     f"reduced run and decide{'s' if preview == 1 else ''} nothing." if preview
                     else ".")]
    else:
        lines.append("The claims check did not run in this reproduction.")
    failed = [n for n, r in steps.items() if not r.get("ok")]
    if failed:
        lines += ["", "Steps that failed: " + ", ".join(
            f"`{n}` ({steps[n].get('error', 'see its folder')})" for n in failed) + "."]
    lines += ["", "## Figures", ""]
    for name, rec in steps.items():
        summary = rec.get("summary") or {}
        figures = [Path(p) for p in summary.get("figures", []) if str(p).endswith(".png")]
        if not figures:
            continue
        readings = READERS.get(name, lambda s: {})(summary)
        lines += [f"### {name}", ""]
        for fig in figures:
            try:
                rel = fig.resolve().relative_to(folder.resolve())
            except ValueError:
                rel = fig
            lines += [f"![{fig.stem}]({rel.as_posix()})", ""]
            text = readings.get(fig.stem)
            if text:
                lines += [text, ""]
    lines += ["## Run", "", f"- command: `patchassoc reproduce{' --quick' if meta.get('quick') else ''}"
              f" --seed {meta.get('seed', 0)}`", f"- seed: {meta.get('seed', 0)}",
              f"- total time: {meta.get('seconds', 0):.1f} s wall, "
              f"{meta.get('cpu_seconds', 0):.0f} CPU-s, steps on {meta.get('jobs', 1)} "
              f"process(es) side by side", "",
              "| step | status | seconds (wall) | CPU-seconds |", "|---|---|---|---|"]
    for name, rec in steps.items():
        state = "ok" if rec.get("ok") else "FAILED"
        if rec.get("skipped"):
            state += " (from an earlier run)"
        lines.append(f"| {name} | {state} | {rec.get('seconds', 0):.1f} | "
                     f"{rec.get('cpu_seconds', 0):.1f} |")
    config = meta.get("config") or {}
    if config:
        lines += ["", "Configuration (resolved):", "", "```json"]
        import json
        lines += [json.dumps(config, indent=2, sort_keys=True), "```"]
    lines += ["", "Package versions:", ""]
    lines += [f"- {k}: {v}" for k, v in package_versions().items()]
    return atomic_write_text(folder / "report.md", "\n".join(lines) + "\n")
