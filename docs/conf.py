"""Sphinx configuration of agenttui's documentation site (docs/decisions.md, "The documentation site").

Build it, warnings as errors, as CI does:

    python -m sphinx -q -W --keep-going -E -b html docs docs/_build/html

Pages are Markdown (MyST-Parser). The reference is generated from the code at build time: the
commands from the click group (sphinx-click), the exit codes and every screen's keys from
``docs/_ext/agenttui_docs.py``, the library's API from its docstrings (autodoc).
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# The package from this checkout, installed or not; the local extension beside this file.
sys.path[:0] = [str(ROOT), str(DOCS / "_ext")]

project = "agenttui"
author = "agenttui's authors"
copyright = "agenttui's authors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx_click",
    "agenttui_docs",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# MyST: ``page.md#anchor`` links to headings (the pages link to each other's sections) and ``:::``
# fences for directives.
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

# No typographic quotes or dashes: help texts and docstrings name options such as ``--where`` in
# plain text, and ``--`` must not become an en dash there.
smartquotes = False

html_theme = "furo"
html_title = "agenttui"
html_show_sourcelink = False

# autodoc: each public package is documented through its ``__all__`` (``agenttui-api`` in
# docs/_ext), every name, documented or not; a class's members in source order; types in the text.
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}
