"""The figure check of the built docs (docs/check_figures.py) on small synthetic trees."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "check_figures.py"


def _load():
    spec = importlib.util.spec_from_file_location("check_figures", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_figures = _load()

PAGE = """Title
=====

.. plot::

   fig, ax = plt.subplots()

.. plot::
   :context: reset
   :nofigs:

   data = 1

.. plot::
   :context: close-figs
   :include-source: false

   ax.plot([data])
"""


def _tree(tmp_path: Path, images: list[str]) -> tuple[Path, Path]:
    source, build = tmp_path / "src", tmp_path / "build"
    (source / "guide").mkdir(parents=True)
    (source / "guide" / "page.rst").write_text(PAGE)
    (source / "plain.rst").write_text("No figures\n==========\n")
    (build / "guide").mkdir(parents=True)
    tags = "".join(f'<img src="../_images/{name}" />' for name in images)
    (build / "guide" / "page.html").write_text(f"<html><body>{tags}</body></html>")
    return source, build


def test_blocks_with_nofigs_are_not_expected_to_draw(tmp_path: Path) -> None:
    source, _ = _tree(tmp_path, [])
    assert check_figures.expected_figures(source / "guide" / "page.rst") == 2


def test_a_page_missing_figures_is_named(tmp_path: Path) -> None:
    source, build = _tree(tmp_path, ["page-1.png"])
    problems = check_figures.missing(source, build)
    assert len(problems) == 1 and "guide/page.html" in problems[0] and "1 figure" in problems[0]
    assert check_figures.main([str(source), str(build)]) == 1


def test_a_page_with_every_figure_passes(tmp_path: Path) -> None:
    source, build = _tree(tmp_path, ["page-1.png", "page-3.png", "other-1.png"])
    assert check_figures.missing(source, build) == []
    assert check_figures.main([str(source), str(build)]) == 0


#: Pages whose ``.. plot::`` blocks read nothing relative to the repository, cheap enough to
#: draw in the suite (about 16 s together). The comparison and simulator pages run whole
#: simulations on ``tests/data`` (about 40 s more); ``python docs/check_figures.py
#: --render-docs docs DIR`` measures every page.
CHEAP_PAGES = (
    "formulations/andreas.rst",
    "formulations/optimus.rst",
    "guide/anatomy.rst",
    "guide/pace.rst",
)


@pytest.mark.parametrize("page", CHEAP_PAGES)
def test_docs_figures_follow_the_style(page: str, tmp_path: Path) -> None:
    """The page's figures, drawn as the docs build draws them, break no rule of the style.

    The page is copied beside the real ``conf.py`` (its pre-code and rcParams) and run by
    ``render_docs``; warnings are errors in the suite, so a layout warning fails it too.
    """
    docs = SCRIPT.parent
    source = tmp_path / "docs"
    (source / page).parent.mkdir(parents=True)
    shutil.copy(docs / "conf.py", source / "conf.py")
    shutil.copy(docs / page, source / page)
    found = check_figures.render_docs(source, tmp_path / "out")
    assert found, f"{page} drew no figure"
    assert {name: ps for name, ps in found.items() if ps} == {}
