"""Sphinx configuration for optsched."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from optsched import __version__

project = "optsched"
author = "optsched developers"
copyright = "2026, optsched developers"
version = release = __version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "sphinx.ext.intersphinx",
]
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
nitpicky = False
intersphinx_mapping: dict[str, tuple[str, None]] = {}
templates_path: list[str] = []
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path: list[str] = []
# The docs build offline (CI has no network): MathJax is loaded by the reader's browser.
suppress_warnings = ["autodoc.import_object"]
