"""Sphinx configuration of the patchassoc reference (issue 28).

Build: ``pip install -e '.[docs]' && sphinx-build -W --keep-going -b html docs docs/_build/html``.
Warnings are errors: a docstring that does not parse, a parameter list that drifts from its
signature (numpydoc validation, public API) or a broken cross-reference fails the build.
"""
from __future__ import annotations

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
    "myst_parser",
    "cli_help",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# The API pages list each layer's root package; autosummary writes one page per module under it
# (recursive, from the package tree: a new module needs no edit of the docs) into api/generated,
# with the template of _templates/autosummary/module.rst (a package lists its modules, a module
# documents its members).
autosummary_generate = True
templates_path = ["_templates"]
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
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

# -- HTML -----------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "patchassoc"
html_theme_options = {"navigation_depth": 2, "show_toc_level": 2}
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
