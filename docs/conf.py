"""Sphinx configuration of the documentation site (``bash scripts/docs.sh`` builds it).

Sphinx with MyST rather than MkDocs: the package's docstrings are written with Sphinx's
cross-reference roles (``:class:``, ``:func:``, ``:meth:``) and reST literals, which autodoc
renders and links as written; MyST reads the Markdown pages in ``docs/`` unchanged, and
MyST-NB executes the tutorial notebooks during the build (an error in a cell fails it).
"""

from __future__ import annotations

import os

project = "mesa-dilemmas"
author = "mesa-dilemmas maintainers"
copyright = "2026, mesa-dilemmas maintainers"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.viewcode",
]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
html_theme = "furo"
html_title = "mesa-dilemmas"

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
suppress_warnings = [
    "myst.header",  # pages start below h1 in places (tables of findings)
    # two games each define a Player (or Villager) class of their own, and type hints name
    # them unqualified: Sphinx links the first match and says so; every other warning fails
    "ref.python",
]

autosummary_generate = True
autosummary_imported_members = False
# a name is documented where it is defined, not again where a package re-exports it
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"

# the tutorials run top to bottom during the build, on rule players and the embedded model
nb_execution_mode = os.environ.get("DOCS_NB_EXECUTION", "force")
nb_execution_timeout = 900
nb_execution_raise_on_error = True
nb_execution_show_tb = True
