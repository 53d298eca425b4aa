"""The build step that ships the documentation sources and the examples inside the wheel.

Everything else about the build is in ``pyproject.toml``. The docs and examples stay in
``docs/`` and ``examples/`` (one source of truth: the tests run those files, the README names
them); this step copies them, and the few files the docs read, into ``optsched/_docs/`` of the
wheel (the list is ``optsched/_docs_manifest.py``), so that ``optsched docs`` and
``optsched examples`` work for a user who installed only the wheel.

Sources rather than built HTML: the HTML would need Sphinx, its theme and MathJax in every wheel
build and would run every figure's code there (minutes); the sources are under 1 MB, and
``optsched docs`` builds them once per installed version into the user's cache when the
``docs`` extra is installed (``pip install 'optsched[docs]'``), offline.
"""

from __future__ import annotations

import runpy
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
MANIFEST = runpy.run_path(str(ROOT / "optsched" / "_docs_manifest.py"))


class BuildPyWithDocs(build_py):
    """``build_py``, then the docs tree copied into the built package.

    Not for an editable install: there the checkout is the tree.
    """

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "optsched" / MANIFEST["SHIPPED_DIR"]
        if target.exists():
            shutil.rmtree(target)
        ignore = shutil.ignore_patterns(*MANIFEST["EXCLUDED"])
        for tree in MANIFEST["TREES"]:
            # a missing tree or file fails the build: a wheel without them would break
            # `optsched docs` / `optsched examples` for every user
            shutil.copytree(ROOT / tree, target / tree, ignore=ignore)
        for name in MANIFEST["FILES"]:
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)


setup(cmdclass={"build_py": BuildPyWithDocs})
