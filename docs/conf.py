"""Sphinx configuration of the patchassoc reference (issue 28).

Build: ``pip install -e '.[docs]' && sphinx-build -W --keep-going -b html docs docs/_build/html``.
Warnings are errors: a docstring that does not parse, a parameter list that drifts from its
signature (numpydoc validation, public API) or a broken cross-reference fails the build.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import patchassoc

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")

project = "patchassoc"
author = "the patchassoc developers"
copyright = "2026, the patchassoc developers"
release = version = patchassoc.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_nb",          # MyST Markdown (it loads myst_parser) and the executed tutorial
    "cli_help",
    "mathjax_offline",  # MathJax 3 copied into the build (docs/_ext/mathjax_offline.py)
]
# myst-nb reads every Markdown page: a page whose front matter declares a Jupyter kernel (the
# tutorial, a MyST text notebook) is executed; the others are plain MyST.
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
root_doc = "index"
# The API pages list each layer's root package; autosummary writes one page per module under it
# (recursive, from the package tree: a new module needs no edit of the docs) into api/generated,
# with the template of _templates/autosummary/module.rst (a package lists its modules, a module
# documents its members).
autosummary_generate = True
templates_path = ["_templates"]
# The ViT engines import torch, which comes with the `vit` and `test` extras. The README's docs
# command installs only the `docs` extra: there torch is mocked and the pages still build, with
# the ViT modules documented from their docstrings. Where torch is installed (CI's test command),
# the real modules are documented.
autodoc_mock_imports = [] if importlib.util.find_spec("torch") else ["torch"]
exclude_patterns = ["_build", "_ext", "**.ipynb_checkpoints", "tutorial.ipynb"]

# -- autodoc / numpydoc ---------------------------------------------------------------------
autodoc_member_order = "bysource"
# Every public name of a module is in the reference, with or without a docstring of its own
# (a helper like compare_folders, a method like to_dict), so a docstring can link to it.
autodoc_default_options = {"undoc-members": True}
autodoc_typehints = "none"          # numpydoc's Parameters section is the one description
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# Docstrings must agree with their signatures (the parameters documented are exactly the
# signature's, in order) and have the sections a user reads first.
# Checked on the public API (the functions of ``patchassoc`` and the Config they take); the
# rest of the reference renders its docstrings as they are (many internal functions are
# documented in prose), and tests/test_docs.py checks everywhere that a Parameters
# section names only, and in order, parameters the signature has.
numpydoc_validation_checks = {"PR01", "PR02", "PR03", "PR10", "RT01", "SS01", "GL08"}
# (autodoc names them as the user imports them: patchassoc.train, patchassoc.Config.replace.)
numpydoc_validation_exclude = {r"^(?!patchassoc\.(Config\.)?[A-Za-z_]+$)"}

# -- cross-references -----------------------------------------------------------------------
nitpicky = True
# Names of other projects (no intersphinx: the build runs offline).
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|scipy|pathlib|matplotlib|torch|dask|typing|collections|os|math|"
               r"argparse|json)\..*"),
    # private objects (a leading underscore) are not in the reference: a docstring may name
    # them for the reader of the source, the pages show the name as code
    (r"py:.*", r"(.*\.)?_[A-Za-z].*"),
]

# -- MyST -----------------------------------------------------------------------------------
# $...$ and $$...$$ are mathematics (SPEC, exact_engine, the tutorial), rendered by MathJax 3
# when the page is opened. MathJax is loaded from the build folder, never from a CDN: with no
# network the formulas would stay raw $...$ (mathjax_offline copies it to _static/mathjax).
mathjax_path = "mathjax/tex-chtml.js"
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

# -- the tutorial, executed (myst-nb) ----------------------------------------------------------
# docs/tutorial.md is a MyST text notebook (jupytext's md:myst format). Every build runs it in a
# fresh Jupyter kernel, offline, and the page shows what its cells print and draw. A cell that
# raises fails the build. It runs in a temporary folder (it writes patchassoc-out/ where it
# runs, never into docs/). The timeout is per cell: the first cell that calls the exact engine
# compiles its Numba kernels on a cold cache, which takes a minute or more on a loaded machine.
nb_execution_mode = "force"
nb_execution_in_temp = True
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_timeout = 900
nb_merge_streams = True

# -- HTML -----------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "patchassoc"
# What the pages looked like in headless Chromium (docs/check_pages.py, screenshots in
# _build/html/_screenshots) decided these settings:
# - the header: five page titles, the search field and the theme switch wrapped onto three
#   lines at 1280 px; the search is an icon beside the switch, and four titles before "More";
# - the left sidebar lists a section's pages: on a page with none (every page but the API
#   reference's) it was an empty "Section Navigation" column that narrowed the text to half the
#   window, cutting code cells and shrinking the gallery's figures; it is shown only there;
# - the gallery has no headings, so its right column held only "Show Source": it goes, and the
#   figures get the width;
# - the theme logged a console error on every first visit ("invalid theme mode"): the mode
#   starts as "auto" (the reader's system setting).
html_theme_options = {
    "navigation_depth": 2,
    "show_toc_level": 2,
    "header_links_before_dropdown": 4,
    "navbar_persistent": [],
    "navbar_end": ["search-button", "theme-switcher", "navbar-icon-links"],
    "secondary_sidebar_items": {"**": ["page-toc", "sourcelink"], "gallery": []},
}
html_sidebars = {"*": [], "api/**": ["sidebar-nav-bs"]}
html_context = {"default_mode": "auto"}
html_static_path = []


# -- docstrings as the maths writes them ------------------------------------------------------
# Docstrings write |x| for an absolute value or a norm; reST would read a substitution
# reference. Outside grid tables (lines starting with + or |) a bar is escaped before parsing.
def _escape_bars(app, what, name, obj, options, lines):
    for k, line in enumerate(lines):
        if "|" in line and not line.lstrip().startswith(("+", "|")):
            lines[k] = line.replace("|", r"\|")


def setup(app):
    app.connect("autodoc-process-docstring", _escape_bars, priority=400)
