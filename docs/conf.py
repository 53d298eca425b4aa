"""Sphinx configuration for optsched.

The built site is self-contained: the theme, MathJax (scripts and fonts) and every figure are
files inside the build, so the pages read the same from a ``file://`` URL with no network.
``make docs`` checks that with ``docs/check_offline.py`` after building.
"""

from __future__ import annotations

import inspect
import sys
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Imported where used: docs/check_figures.py runs this file for its plot pre-code and
    # rcParams in the test suite, whose environment has no Sphinx or docutils.
    from docutils import nodes

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from optsched import __version__

DOCS = Path(__file__).resolve().parent

project = "optsched"
author = "the optsched developers"
copyright = "2026, the optsched developers"
version = release = __version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "sphinx.ext.intersphinx",
    "matplotlib.sphinxext.plot_directive",
]
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {
    "members": True,
    "show-inheritance": True,
    # pydantic's machinery on every file-format model (Frozen subclasses) is not their API
    "exclude-members": "model_config, model_fields, model_computed_fields, model_post_init",
}
nitpicky = False
# No inventories are fetched: the build reads nothing from the network.
intersphinx_mapping: dict[str, tuple[str, None]] = {}
templates_path: list[str] = []
exclude_patterns = ["_build", "check_offline.py"]
# "ref.python": a type named in a docstring (``jobs``, ``n_jobs``) matches attributes of several
# families' classes; Sphinx links the first, which is not worth failing the build over.
suppress_warnings = ["autodoc.import_object", "ref.python"]


# -- Math, offline ------------------------------------------------------------------------------
# MathJax 3.2.2 comes from the `sphinx-mathjax-offline` package (the `docs` extra), which ships it
# as package data. Its directory is added to the static files, so the build holds
# _static/mathjax/ (scripts, extensions and the CHTML woff fonts) and pages load it by a relative
# path. The package's own Sphinx hook is not used: copying through html_static_path keeps the
# build parallel-safe and fails loudly if the files are missing.
def _mathjax_static_dir() -> Path:
    try:
        dist = metadata.distribution("sphinx-mathjax-offline")
    except metadata.PackageNotFoundError:
        raise RuntimeError(
            "the docs need the `docs` extra (pip install -e '.[docs]'): sphinx-mathjax-offline "
            "is missing, and without it every formula would show as TeX source offline"
        ) from None
    static = Path(str(dist.locate_file("sphinx-mathjax-offline/static")))
    if not (static / "mathjax" / "tex-chtml.js").is_file():
        raise RuntimeError(f"sphinx-mathjax-offline has no MathJax under {static}")
    return static


# The MathJax directory joins the static files when Sphinx reads this configuration (the
# "config-inited" hook in setup below), not at import: docs/check_figures.py executes this file
# for its plot settings in environments without the docs extra.
html_static_path = ["_static"]
mathjax_path = "mathjax/tex-chtml.js"
mathjax3_config: dict[str, Any] = {
    # Number display equations only where the source labels them; the formulation pages
    # refer to constraints by name, not number.
    "tex": {"tags": "none"},
    # Keep the menu's speech and exploration off: they would fetch rule files, which a
    # browser refuses from a file:// page.
    "options": {"enableMenu": True, "menuOptions": {"settings": {"explorer": False}}},
}


# -- Figures built at build time ----------------------------------------------------------------
# Family pages draw with `.. plot::` (matplotlib's plot directive): the code runs during the
# build with the Agg backend and the PNG lands in the build, so figures never go stale and need
# no network. One format, at a resolution that stays sharp on high-density screens.
plot_formats = [("png", 120)]
plot_html_show_formats = False
plot_html_show_source_link = False
plot_include_source = False
plot_pre_code = "import numpy as np\nimport matplotlib.pyplot as plt\n"
# Inline figures of the pages use the library's one style (optsched.report.style): its fonts,
# and its colour-blind-safe cycle of colours with markers and dashes.
from optsched.report.style import rc_params  # noqa: E402

plot_rcparams = {
    **rc_params(),
    "figure.figsize": (7.0, 3.6),
    "figure.constrained_layout.use": True,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "savefig.bbox": "tight",
}
plot_apply_rcparams = True
plot_working_directory = str(DOCS.parent)


# -- Theme --------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"optsched {release}"
html_css_files = ["optsched.css"]
html_theme_options: dict[str, Any] = {
    "navigation_with_keys": True,
    "sidebar_hide_name": False,
    "top_of_page_buttons": [],
}
html_show_sourcelink = False
html_copy_source = False
pygments_style = "friendly"
pygments_dark_style = "monokai"


def _drop_local_contents(app: Any, doctree: nodes.document) -> None:
    """Remove ``.. contents::`` blocks: Furo shows every page's contents in its own sidebar.

    (Furo marks an in-page table of contents with an error banner, since it duplicates the
    "On this page" panel; dropping the block keeps pages written for any theme readable.)
    """
    from docutils import nodes

    for topic in list(doctree.findall(nodes.topic)):
        if "contents" in topic["classes"]:
            topic.parent.remove(topic)


def _drop_inherited_type_docstrings(
    app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """Drop a data member's docstring when it is only its type's (``dict``, ``tuple`` ...).

    A constant re-exported by a package ``__init__`` (``POLICIES = {...}``) has no ``#:``
    comment there, so autodoc falls back to ``type(obj).__doc__``: the builtin's own help,
    which is not about the constant and is not valid reStructuredText.
    """
    if what not in ("data", "attribute") or not lines:
        return
    own = inspect.getdoc(type(obj))
    if own and "\n".join(lines).strip() == inspect.cleandoc(own).strip():
        lines.clear()


def _is_model(obj: Any) -> bool:
    from pydantic import BaseModel

    return inspect.isclass(obj) and issubclass(obj, BaseModel) and obj is not BaseModel


def _model_signature(
    app: Any, what: str, name: str, obj: Any, options: Any, signature: Any, annotation: Any
) -> tuple[str, Any] | None:
    """A file-format model's constructor shows as ``(**fields)``, its fields listed once below.

    pydantic gives each model a signature of every field with its full ``Annotated`` metadata;
    with ``autodoc_typehints = "description"`` they would show twice (in the signature and as
    a parameter list of constraint objects). The recorded annotations are dropped too, and
    :func:`_model_fields` lists the fields with their type, default and description.
    """
    if what != "class" or not _is_model(obj):
        return None
    app.env.temp_data.get("annotations", {}).pop(name, None)
    return "(**fields)", annotation


def _type_name(tp: Any) -> str:
    """A type as written in code, without ``Annotated`` constraint metadata."""
    import types
    import typing

    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is typing.Literal:
        return "Literal[" + ", ".join(repr(a) for a in args) + "]"
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(_type_name(a) for a in args)}]" if args else name
    if tp is type(None):
        return "None"
    if tp is Ellipsis:
        return "..."
    return str(getattr(tp, "__name__", tp))


def _model_fields(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """Append a "Fields" list (name, type, default, description) to a model's docstring."""
    if what != "class" or not _is_model(obj) or not obj.model_fields:
        return
    # a docstring that documents its fields itself (napoleon has turned its Parameters and
    # Attributes sections into these) keeps its own list: no second one
    if any(ln.lstrip().startswith((":param", ".. attribute::", ":ivar")) for ln in lines):
        return
    # ... and so does a model whose fields carry ``#:`` comments (autodoc lists them as members)
    from sphinx.errors import PycodeError
    from sphinx.pycode import ModuleAnalyzer

    try:
        documented = ModuleAnalyzer.for_module(obj.__module__).find_attr_docs()
    except PycodeError:  # no source to analyse: list the fields
        documented = {}
    if any((obj.__qualname__, f) in documented for f in obj.model_fields):
        return
    from pydantic_core import PydanticUndefined

    lines += ["", ".. rubric:: Fields", ""]
    for field_name, info in obj.model_fields.items():
        shown = _type_name(info.annotation)
        if info.default is not PydanticUndefined:
            default = f", default ``{info.default!r}``"
        elif info.default_factory is not None:
            default = ", optional"
        else:
            default = ", required"
        text = info.description or ""
        lines.append(f"* ``{field_name}`` (``{shown}``{default}){': ' + text if text else ''}")
    lines.append("")


def _add_mathjax_static(app: Any, config: Any) -> None:
    config.html_static_path.append(str(_mathjax_static_dir()))


def setup(app: Any) -> dict[str, Any]:
    # MathJax on every page, not only on pages with formulas: the sidebar's table of contents
    # shows titles holding math (e.g. "Feeding \kappa into placement") on every page.
    app.set_html_assets_policy("always")
    app.connect("config-inited", _add_mathjax_static)
    app.connect("doctree-read", _drop_local_contents)
    app.connect("autodoc-process-docstring", _drop_inherited_type_docstrings)
    app.connect("autodoc-process-docstring", _model_fields)
    # after sphinx.ext.autodoc.typehints records the annotations (priority 500)
    app.connect("autodoc-process-signature", _model_signature, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
