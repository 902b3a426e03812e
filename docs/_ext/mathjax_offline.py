"""MathJax 3 from the build folder: the pages render their formulas with no network.

Sphinx's ``sphinx.ext.mathjax`` loads MathJax from a CDN when a page is opened; on a machine
with no network (a compute cluster, a laptop offline) every formula stays raw ``$...$``. This
extension copies MathJax 3.2.2, as the PyPI package ``sphinx-mathjax-offline`` ships it (the
docs extra installs it), into ``_static/mathjax`` of the build, and docs/conf.py points
``mathjax_path`` there. It copies the combined ``tex-chtml.js`` that the pages load and what
that file loads on demand (the TeX extensions, the CHTML fonts, the menu and its accessibility
parts), not the package's other combined builds.

The package's own Sphinx extension does the same copy but copies everything (24 MB) and does
not declare itself safe for parallel builds, which ``sphinx-build -W -j 2`` turns into an error.
"""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from sphinx.errors import ExtensionError

#: The distribution's import name (a folder with a hyphen: found, never imported).
PACKAGE = "sphinx-mathjax-offline"
#: The file the pages load (``mathjax_path`` in docs/conf.py, relative to ``_static``).
ENTRY = "tex-chtml.js"
#: What ``tex-chtml.js`` may load later: TeX extensions (autoload), fonts, the menu, a11y.
PARTS = (ENTRY, "input", "output/chtml", "output/chtml.js", "ui", "a11y", "sre", "adaptors")


def source() -> Path:
    """The ``static/mathjax`` folder of the installed package."""
    spec = importlib.util.find_spec(PACKAGE)
    folder = (Path(next(iter(spec.submodule_search_locations))) / "static" / "mathjax"
              if spec is not None and spec.submodule_search_locations else None)
    if folder is None or not (folder / ENTRY).is_file():
        raise ExtensionError(f"MathJax for offline pages not found: install the docs extra "
                             f"(pip install -e '.[docs]', which brings {PACKAGE})")
    return folder


def copy_mathjax(app, exc) -> None:
    if exc is not None or app.builder.format != "html":
        return
    src, dest = source(), Path(app.outdir) / "_static" / "mathjax"
    for part in PARTS:
        if (src / part).is_dir():
            shutil.copytree(src / part, dest / part, dirs_exist_ok=True)
        elif (src / part).is_file():
            (dest / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / part, dest / part)


def setup(app):
    source()              # fail at once, in one line, where MathJax is not installed
    app.connect("build-finished", copy_mathjax)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
