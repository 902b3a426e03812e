"""The figures leave the user's matplotlib alone (issue 40).

Importing :mod:`patchassoc.figures` (and every figure module) chooses no backend and changes no
rc setting; the project's style holds only while its own figures are drawn
(:func:`patchassoc.figures.style.style`), and those figures are made without pyplot. Each check
runs in a fresh Python process, where the backend has not been chosen yet.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from patchassoc.figures import catalog, style


def run_python(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_importing_the_figures_keeps_the_backend():
    # the acceptance line, as written
    run_python("import matplotlib; matplotlib.use('svg'); import patchassoc.figures; "
               "assert matplotlib.get_backend() == 'svg'")


def test_importing_and_drawing_keep_the_backend_and_every_rc_setting(tmp_path):
    out = run_python(f"""
        import importlib, json, pkgutil, sys
        import matplotlib
        matplotlib.use("svg")
        matplotlib.rcParams["font.size"] = 17            # the user's own, non-default settings
        matplotlib.rcParams["axes.grid"] = False
        matplotlib.rcParams["lines.linewidth"] = 3.5
        matplotlib.rcParams["figure.dpi"] = 72
        before = matplotlib.rcParams.copy()

        import patchassoc.figures
        names = [m.name for m in pkgutil.iter_modules(patchassoc.figures.__path__)]
        for name in names:
            importlib.import_module(f"patchassoc.figures.{{name}}")
        imported = dict(matplotlib.rcParams) == dict(before)

        from patchassoc.figures import paper_fig3
        from patchassoc.simulations.studies.paper_settings import draw_point
        fig = paper_fig3.plot(draw_point(0))
        dpi = fig.dpi
        paths = paper_fig3.save(draw_point(0), {str(tmp_path)!r})
        changed = sorted(k for k in before if before[k] != matplotlib.rcParams[k])
        print(json.dumps(dict(modules=len(names), imported=imported, changed=changed,
                              backend=matplotlib.get_backend(), dpi=dpi,
                              pyplot="matplotlib.pyplot" in sys.modules,
                              paths=[str(p) for p in paths])))
        """)
    r = json.loads(out.strip().splitlines()[-1])
    assert r["modules"] >= 20
    assert r["imported"] and r["changed"] == []
    assert r["backend"] == "svg"
    assert r["dpi"] == style.RC["figure.dpi"]  # drawn in the project's style, not the user's
    assert not r["pyplot"]                     # no figure was handed to pyplot
    assert [p.rsplit(".", 1)[1] for p in r["paths"]] == ["png", "pdf"]
    assert (tmp_path / "paper_fig3.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_style_is_a_context_that_restores_the_rc_settings():
    import matplotlib
    with matplotlib.rc_context({"font.size": 17}):
        with style.style():
            assert matplotlib.rcParams["font.size"] == style.RC["font.size"]
        assert matplotlib.rcParams["font.size"] == 17


def test_every_drawer_and_figure_function_is_styled():
    """The catalogue's drawers call the figure modules' ``plot``/``save``; each of those enters
    the style itself, so a figure looks the same from a script as from the command line."""
    import importlib
    import pkgutil

    import patchassoc.figures
    unstyled = []
    for info in pkgutil.iter_modules(patchassoc.figures.__path__):
        mod = importlib.import_module(f"patchassoc.figures.{info.name}")
        for fname in ("plot", "save", "main", "plot_maps", "plot_frame", "render"):
            f = getattr(mod, fname, None)
            if f is not None and getattr(f, "__module__", None) == mod.__name__ and \
                    not hasattr(f, "__wrapped__"):
                unstyled.append(f"{info.name}.{fname}")
    assert not unstyled
    assert set(catalog.DRAWERS) >= {"train", "population", "flow", "scaling", "vit"}


def test_a_figure_is_not_registered_with_pyplot():
    plt = pytest.importorskip("matplotlib.pyplot")
    before = plt.get_fignums()
    fig, ax = style.new_figure(1, 2, figsize=(4, 2), sharey=True)
    assert plt.get_fignums() == before
    assert len(ax) == 2 and fig.get_figwidth() == 4


def test_drawing_through_the_package_keeps_every_rc_setting_in_this_process(tmp_path):
    """In the caller's own process (as in a notebook): the population figures, drawn and saved
    through the package, leave ``matplotlib.rcParams`` exactly as the caller set them."""
    import matplotlib

    from patchassoc import api
    from patchassoc.figures import catalog, population_dynamics

    with matplotlib.rc_context({"font.size": 17, "axes.grid": False, "lines.linewidth": 3.5}):
        before = dict(matplotlib.rcParams)
        result = api.population_descent("tiny", steps=30, records=5)
        population_dynamics.plot(result)
        paths = catalog.DRAWERS["population"](
            type("Outcome", (), {"products": {"result": result}})(), tmp_path)
        after = dict(matplotlib.rcParams)
    assert sorted(k for k in before if before[k] != after[k]) == []
    assert {p.name for p in paths} >= {"population_dynamics.png", "population_attention_maps.png"}


def test_saving_a_figure_in_a_process_with_a_set_backend_keeps_it_and_the_rc_settings():
    """The acceptance line with the user's rc settings: import, draw, save in a process whose
    backend is svg; the backend and every rc setting are as the user left them."""
    out = run_python("""
        import json, tempfile
        import matplotlib
        matplotlib.use("svg")
        matplotlib.rcParams["font.size"] = 13
        before = dict(matplotlib.rcParams)
        import patchassoc.figures
        from patchassoc import api
        from patchassoc.figures import population_dynamics
        assert matplotlib.get_backend() == "svg"
        population_dynamics.save(api.population_descent("tiny", steps=20, records=4),
                                 tempfile.mkdtemp())
        changed = sorted(k for k in before if before[k] != matplotlib.rcParams[k])
        print(json.dumps(dict(backend=matplotlib.get_backend(), changed=changed)))
        """)
    r = json.loads(out.strip().splitlines()[-1])
    assert r == {"backend": "svg", "changed": []}
