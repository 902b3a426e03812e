"""The API reference (issue 28): every module is in it, docstrings agree with their signatures,
and ``sphinx-build -W`` passes (so a malformed docstring or a broken cross-reference fails the
tests, and CI with them).

The build needs the ``docs`` extra (``pip install -e '.[test,docs]'``, the README's test
command); without it those tests skip and say so, except where ``PATCHASSOC_REQUIRE_DOCS=1`` is
set (CI, ``.ci/run``): there a missing docs extra fails them, so the build cannot be skipped
unseen.

The build executes the tutorial (myst-nb, docs/conf.py): the built page must show its outputs
and its figures.
"""
from __future__ import annotations

import configparser
import importlib
import importlib.util
import inspect
import os
import pkgutil
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


# -- every module has a page ------------------------------------------------------------------
def package_modules() -> set[str]:
    """Every module of the installed packages listed in setup.cfg, private ones excluded."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    packages = cfg["options"]["packages"].split()
    found = set(packages)
    for name in packages:
        for info in pkgutil.iter_modules(importlib.import_module(name).__path__):
            found.add(f"{name}.{info.name}")
    return {m for m in found if not any(part.startswith("_") for part in m.split("."))}


def autosummary_roots(pages: str) -> set[str]:
    """The packages listed under a recursive ``autosummary`` directive: autosummary writes a
    page for each of them and for every module under it."""
    roots = set()
    for block in re.findall(r"^\.\. autosummary::\n((?:[ \t]+.*\n|\n)+)", pages, flags=re.M):
        if ":recursive:" in block:
            roots |= {line.strip() for line in block.splitlines()
                      if line.strip() and not line.strip().startswith(":")}
    return roots


def documented_modules(pages: str, modules: set[str] | None = None) -> set[str]:
    """The modules with a page: an ``automodule`` directive, or under a recursive autosummary
    root (of ``modules``, default every module of the package)."""
    modules = package_modules() if modules is None else modules
    roots = autosummary_roots(pages)
    return set(re.findall(r"^\.\. automodule:: (\S+)$", pages, flags=re.M)) | {
        m for m in modules if any(m == r or m.startswith(r + ".") for r in roots)}


def reference_pages() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(DOCS.rglob("*.md"))
                     if "_build" not in p.parts)


def test_every_module_is_in_the_reference():
    missing = package_modules() - documented_modules(reference_pages())
    assert not missing, f"modules without an automodule directive in docs/: {sorted(missing)}"


def test_a_module_left_out_is_noticed():
    pages = reference_pages().replace(".. automodule:: patchassoc.cli.report\n", "")
    assert package_modules() - documented_modules(pages) == {"patchassoc.cli.report"}
    # a layer's root left out of its page's autosummary: every module under it is missing
    pages = reference_pages().replace("   patchassoc.simulations.analysis\n", "")
    assert package_modules() - documented_modules(pages) == {
        m for m in package_modules() if m.startswith("patchassoc.simulations.analysis")}


# -- docstrings agree with their signatures ----------------------------------------------------
def parameter_drift(obj) -> str | None:
    """Why the numpydoc ``Parameters`` section of ``obj`` disagrees with its signature, or None.

    Every documented name must be a parameter, and the entries (a grouped entry ``a, b`` by its
    first name) must follow the signature's order. Leaving a parameter out is allowed here: the
    public API's completeness is numpydoc's validation (PR01) in the Sphinx build."""
    from numpydoc.docscrape import NumpyDocString
    doc = inspect.getdoc(obj)
    if not doc or not re.search(r"^Parameters\n-{3,}$", doc, flags=re.M):
        return None
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    order = {name: k for k, name in enumerate(signature.parameters)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        entries = NumpyDocString(doc)["Parameters"]
    last = -1
    for entry in entries:
        names = [n.strip().lstrip("*") for n in entry.name.split(",") if n.strip()]
        unknown = [n for n in names if n not in order]
        if unknown:
            return f"documents {unknown}, not parameters of {list(order)}"
        if order[names[0]] < last:
            return f"documents {names[0]!r} out of the signature's order {list(order)}"
        last = order[names[0]]
    return None


def _public_callables():
    for module_name in sorted(package_modules()):
        module = importlib.import_module(module_name)
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module_name:
                continue
            if inspect.isclass(obj):
                yield f"{module_name}.{name}", obj
                for attr, member in vars(obj).items():
                    if inspect.isfunction(member) and not attr.startswith("_"):
                        yield f"{module_name}.{name}.{attr}", member
            elif callable(obj):
                yield f"{module_name}.{name}", getattr(obj, "py_func", obj)   # Numba: its source


def test_parameters_sections_follow_the_signatures():
    pytest.importorskip("numpydoc", reason="the docs extra: pip install -e '.[docs]'")
    checked, drifted = 0, []
    for name, obj in _public_callables():
        why = parameter_drift(obj)
        checked += inspect.getdoc(obj) is not None and "Parameters\n---" in inspect.getdoc(obj)
        if why:
            drifted.append(f"{name}: {why}")
    assert checked >= 40, checked          # the scan reaches the documented functions
    assert not drifted, "\n".join(drifted)


def test_a_drifted_docstring_is_noticed():
    pytest.importorskip("numpydoc", reason="the docs extra: pip install -e '.[docs]'")

    def renamed(config, steps):
        """Run.

        Parameters
        ----------
        config : Config
        n_steps : int
        """

    def swapped(config, steps):
        """Run.

        Parameters
        ----------
        steps : int
        config : Config
        """

    def grouped(x_train, y_train, x_test, y_test):
        """Fit.

        Parameters
        ----------
        x_train, x_test : arrays
        y_train, y_test : arrays
        """

    assert "n_steps" in parameter_drift(renamed)
    assert "order" in parameter_drift(swapped)
    assert parameter_drift(grouped) is None


# -- the Sphinx build ---------------------------------------------------------------------------
#: The modules the build imports, each with the requirement of the ``docs`` extra that installs it
#: (``sphinx-mathjax-offline`` ships MathJax for docs/_ext/mathjax_offline.py: a folder with
#: hyphens, found by that name).
BUILD_MODULES = {"sphinx": "sphinx", "numpydoc": "numpydoc", "myst_parser": "myst-parser",
                 "myst_nb": "myst-nb", "pydata_sphinx_theme": "pydata-sphinx-theme",
                 "sphinx-mathjax-offline": "sphinx-mathjax-offline"}


def requirement_groups() -> dict[str, set[str]]:
    """The project names setup.cfg requires: ``runtime`` (install_requires) and each extra."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")

    def names(text: str) -> set[str]:
        return {re.split(r"[<>=!~\[; ]", line.strip(), maxsplit=1)[0].lower()
                for line in text.split("\n") if line.strip()}
    groups = {"runtime": names(cfg["options"]["install_requires"])}
    groups.update({extra: names(text) for extra, text in cfg["options.extras_require"].items()})
    return groups


def docs_extra() -> set[str]:
    """The project names the ``docs`` extra of setup.cfg requires."""
    return requirement_groups()["docs"]


def test_the_docs_extra_installs_what_the_build_imports():
    assert set(BUILD_MODULES.values()) <= docs_extra(), docs_extra()


def test_the_docs_build_without_torch_mocks_it(monkeypatch):
    """The README's docs command installs only the docs extra; the ViT engines import torch, and
    sphinx -W failed there with 20 warnings (their modules could not be imported). conf.py mocks
    torch where it is not installed, and only there."""
    import runpy
    monkeypatch.setattr(sys, "path", list(sys.path))          # conf.py adds docs/_ext to it
    monkeypatch.setenv("MPLBACKEND", os.environ.get("MPLBACKEND", "Agg"))
    find_spec = importlib.util.find_spec
    for installed, mocked in ((False, ["torch"]), (True, [])):
        monkeypatch.setattr(importlib.util, "find_spec",
                            lambda name, *a, _i=installed: (find_spec("math") if _i else None)
                            if name == "torch" else find_spec(name, *a))
        conf = runpy.run_path(str(DOCS / "conf.py"))
        assert conf["autodoc_mock_imports"] == mocked


def test_the_install_page_lists_what_setup_cfg_requires():
    """docs/install.md's table of requirements is setup.cfg's, group for group."""
    page = (DOCS / "install.md").read_text(encoding="utf-8")
    table = {m.group(1): {n.strip() for n in m.group(2).split(",")}
             for m in re.finditer(r"^\| `?([a-z]+)`? \| ([a-z0-9_, -]+) \|", page, flags=re.M)}
    table.pop("group", None)
    assert table == requirement_groups()


def test_the_install_page_gives_the_readme_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    page = (DOCS / "install.md").read_text(encoding="utf-8")
    for marker in ("<!-- main-command -->", "<!-- test-command -->"):
        command = re.search(re.escape(marker) + r"\n```bash\n(.*?)\n```", readme, flags=re.S)
        assert command, marker
        assert f"```bash\n{command.group(1)}\n```" in page, marker


def _require_docs_extra():
    missing = [m for m in BUILD_MODULES if importlib.util.find_spec(m) is None]
    if not missing:
        return
    why = f"the docs extra is not installed ({', '.join(missing)}): pip install -e '.[test,docs]'"
    if os.environ.get("PATCHASSOC_REQUIRE_DOCS") == "1":
        pytest.fail(why + "; PATCHASSOC_REQUIRE_DOCS=1 says the build must run here")
    pytest.skip(why)


def test_a_missing_docs_extra_fails_where_the_build_is_required(monkeypatch):
    monkeypatch.setitem(BUILD_MODULES, "no_such_sphinx_extension", "no-such-sphinx-extension")
    monkeypatch.setenv("PATCHASSOC_REQUIRE_DOCS", "1")
    with pytest.raises(pytest.fail.Exception, match="must run here"):
        _require_docs_extra()
    monkeypatch.delenv("PATCHASSOC_REQUIRE_DOCS")
    with pytest.raises(pytest.skip.Exception, match="no_such_sphinx_extension"):
        _require_docs_extra()


def _sphinx(*args: str, cwd: Path = ROOT, pythonpath: Path | None = None):
    _require_docs_extra()
    env = {**os.environ, "MPLBACKEND": "Agg"}
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath),
                                                          env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "sphinx", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def built_docs(tmp_path_factory):
    """The build CI runs, made once for the tests that read it: (the finished process, the HTML
    folder). ``--keep-going`` writes every page even when a warning fails the build."""
    html = tmp_path_factory.mktemp("docs") / "html"
    return _sphinx("-W", "--keep-going", "-q", "-j", "2", "-b", "html", str(DOCS), str(html)), html


def test_reference_builds_with_warnings_as_errors(built_docs):
    """The build CI runs: every warning (a malformed docstring, a broken cross-reference, a
    public function whose docstring leaves out or misnames a parameter) is an error."""
    run, html = built_docs
    assert run.returncode == 0, run.stderr[-4000:]
    for page in ("index.html", "tutorial.html", "SPEC.html", "gallery.html", "cli.html",
                 "api/public.html", "api/engines.html"):
        assert (html / page).is_file(), page
    # autosummary wrote a page for every module under the layers' roots, members rendered
    roots = autosummary_roots(reference_pages())
    under = {m for m in package_modules() if any(m == r or m.startswith(r + ".") for r in roots)}
    assert "patchassoc.simulations.studies.registry" in under and len(under) > 100
    missing = [m for m in sorted(under) if not (html / "api" / "generated" / f"{m}.html").is_file()]
    assert not missing, missing
    registry = (html / "api" / "generated" / "patchassoc.simulations.studies.registry.html")
    assert 'id="patchassoc.simulations.studies.registry.collect_live"' in registry.read_text(
        encoding="utf-8")
    public = (html / "api" / "public.html").read_text(encoding="utf-8")
    assert 'id="patchassoc.population_flow"' in public     # the docstrings are rendered
    assert "patchassoc reproduce" in (html / "cli.html").read_text(encoding="utf-8")
    check_tutorial_page(html)
    # these pages are in the table of contents (the theme's navigation bar is built from it)
    index = (html / "index.html").read_text(encoding="utf-8")
    for page in ("install", "tutorial", "SPEC", "exact_engine", "gallery", "performance",
                 "changelog"):
        assert f'class="nav-link nav-internal" href="{page}.html"' in index, page
    # the mathematics is rendered (MyST dollarmath: MathJax spans, no $ left in the text)
    for page in ("SPEC.html", "exact_engine.html", "tutorial.html"):
        assert page_math(html / page) >= 20, page
    # ... by the MathJax of the build folder: no page loads anything from the network
    assert (html / "_static" / "mathjax" / "tex-chtml.js").stat().st_size > 500_000
    assert len(list((html / "_static/mathjax/output/chtml/fonts/woff-v2").glob("*.woff"))) >= 20
    for page in ("SPEC.html", "exact_engine.html", "tutorial.html"):
        assert 'src="_static/mathjax/tex-chtml.js' in (html / page).read_text(encoding="utf-8")
    assert not remote_loads(html), remote_loads(html)[:5]


def remote_loads(html: Path) -> list[str]:
    """What the built pages would fetch from the network when opened: scripts, stylesheets,
    images and fonts with an http(s) address (a link a reader clicks is not a load)."""
    found = []
    for page in html.rglob("*.html"):
        text = page.read_text(encoding="utf-8", errors="replace")
        found += [f"{page.name}: {u}" for u in re.findall(
            r'<(?:script|img|link|source|iframe)\b[^>]*?(?:src|href)="((?:https?:)?//[^"]+)"',
            text)]
    for sheet in html.rglob("*.css"):
        text = sheet.read_text(encoding="utf-8", errors="replace")
        found += [f"{sheet.name}: {u}" for u in re.findall(
            r"(?:url\(|@import\s+)['\"]?((?:https?:)?//[^'\")\s]+)", text)]
    return found


def test_a_remote_load_is_noticed(tmp_path):
    (tmp_path / "a.html").write_text('<script src="https://cdn.example/mathjax.js"></script>'
                                     '<a href="https://example.org">a link</a>')
    (tmp_path / "b.css").write_text("@font-face { src: url(https://fonts.example/x.woff2) }")
    assert remote_loads(tmp_path) == ["a.html: https://cdn.example/mathjax.js",
                                      "b.css: https://fonts.example/x.woff2"]


def page_math(path: Path) -> int:
    """How many formulas (inline or display) a built page holds."""
    return len(re.findall(r'class="math(?: notranslate nohighlight)?"', path.read_text(
        encoding="utf-8")))


def check_tutorial_page(html: Path) -> None:
    """The built tutorial was executed: its cells' outputs and figures are on the page."""
    from tests.test_tutorial import FIGURES, NEEDLES
    page = (html / "tutorial.html").read_text(encoding="utf-8")
    outputs = re.findall(r'<div class="cell_output[^"]*"', page)
    assert len(outputs) >= 10, len(outputs)
    for needle in NEEDLES:
        assert needle in page, needle
    assert "Traceback" not in page
    figures = re.findall(r'<img [^>]*src="(_images/[^"]+\.png)"', page)
    assert len(figures) == FIGURES, figures
    for src in figures:
        assert (html / src).stat().st_size > 10_000, src     # a drawn figure, not a stub


@pytest.mark.parametrize("docstring, message", [
    ("See :func:`patchassoc.no_such_function`.", "patchassoc.no_such_function"),
    ("An ``unclosed literal.",
     "Inline literal start-string without end-string"),
])
def test_a_broken_docstring_fails_the_build(tmp_path, docstring, message):
    """The same configuration (docs/conf.py) on a one-page project whose module has a broken
    cross-reference or malformed reST: the build fails and names it."""
    (tmp_path / "src").mkdir()
    (tmp_path / "brokendoc.py").write_text(
        f'"""Module.\n\n{docstring}\n"""\n\n\ndef f():\n    """Nothing."""\n', encoding="utf-8")
    (tmp_path / "src" / "index.md").write_text(textwrap.dedent("""\
        # One page

        ```{eval-rst}
        .. automodule:: brokendoc
           :members:
        ```
        """), encoding="utf-8")
    run = _sphinx("-W", "--keep-going", "-q", "-c", str(DOCS), "-b", "html",
                  str(tmp_path / "src"), str(tmp_path / "html"), pythonpath=tmp_path)
    assert run.returncode != 0
    assert message in run.stderr, run.stderr[-2000:]


# -- the pages in a browser ---------------------------------------------------------------------
def _check_pages():
    """docs/check_pages.py, the browser check (a script beside the pages, not a package)."""
    spec = importlib.util.spec_from_file_location("check_pages", DOCS / "check_pages.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("check_pages", module)
    spec.loader.exec_module(module)
    return module


def _require_browser(check_pages):
    why = check_pages.unavailable()
    if why is None:
        return
    if os.environ.get("PATCHASSOC_REQUIRE_BROWSER") == "1":
        pytest.fail(why + "; PATCHASSOC_REQUIRE_BROWSER=1 says the browser check must run here")
    pytest.skip(f"the browser check needs Chromium and Playwright: {why}")


def test_raw_math_and_missing_targets_are_found(tmp_path):
    """The checker's two text rules, without a browser."""
    cp = _check_pages()
    assert cp.raw_math("typeset text, no source left") == []
    assert [m.strip() for m in cp.raw_math("the risk $R(Q)$ and \\(x\\) here")] == [
        "the risk $R(Q)$ and \\(x\\) here"] * 3
    (tmp_path / "a.html").write_text('<h2 id="kept">x</h2>')
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "index.html").write_text("")
    base = tmp_path.resolve().as_uri()
    urls = [f"{base}/a.html#kept", f"{base}/a.html#gone", f"{base}/b.png", f"{base}/api/",
            f"{base}/../outside.html", "https://example.org/x", "mailto:x@example.org"]
    assert cp.missing_targets(urls, tmp_path, {}) == [
        f"{base}/../outside.html leads out of the build",
        f"{base}/a.html#gone: no #gone on a.html",
        f"{base}/b.png is missing"]


@pytest.mark.browser
def test_the_checker_fails_on_what_a_reader_trips_over(tmp_path):
    """A page with a raw formula, a broken image, a console error, a request to the network and
    a link to a missing page: each is reported, in one line, and a clean page is clean."""
    cp = _check_pages()
    _require_browser(cp)
    (tmp_path / "index.html").write_text("<!doctype html><html><body><main><p>clean</p>"
                                         "<pre>$ shell prompt</pre></main></body></html>")
    (tmp_path / "bad.html").write_text(
        "<!doctype html><html><body><main>"
        "<p>the risk $R(Q)$ stays raw</p>"
        "<img src='_images/none.png'>"
        "<a href='missing.html'>a page that is not there</a>"
        "<img src='https://cdn.example/logo.png'>"
        "<script>console.error('boom')</script>"
        "</main></body></html>")
    clean, bad = cp.check_pages(tmp_path, ["index.html", "bad.html"])
    assert clean.problems == [] and clean.screenshot.stat().st_size > 1000
    text = "\n".join(bad.problems)
    for needle in ("raw math in the text: ...the risk $R(Q)$", "broken image:",
                   "none.png", "console error: boom", "missing.html is missing",
                   "requested from the network: https://cdn.example/logo.png"):
        assert needle in text, (needle, bad.problems)
    assert bad.screenshot == tmp_path / "_screenshots" / "bad.png"


@pytest.mark.browser
def test_the_built_pages_in_a_browser_with_the_network_off(built_docs):
    """The index, SPEC, the gallery, the tutorial, the API index and the claims open in headless
    Chromium with the network off: every formula typeset by the build's own MathJax, every image
    loaded, no console error, no request off the machine, no link into the build that is
    missing; a screenshot of each page in _build/html/_screenshots."""
    cp = _check_pages()
    _require_browser(cp)
    _, html = built_docs
    assert (html / "index.html").is_file(), "the build wrote no index.html"
    reports = {r.page: r for r in cp.check_pages(html)}
    problems = [f"{r.page}: {p}" for r in reports.values() for p in r.problems]
    assert not problems, "\n".join(problems)
    assert set(reports) == set(cp.PAGES)
    assert reports["SPEC.html"].formulas >= 200          # 149 lines of LaTeX, typeset
    assert reports["tutorial.html"].formulas >= 20
    assert reports["gallery.html"].images >= 20
    assert reports["tutorial.html"].images >= 3
    for r in reports.values():
        assert r.screenshot.stat().st_size > 20_000, r.page    # a drawn page, not a blank
