"""The documentation and the examples of the installed optsched, offline.

The wheel carries the documentation's sources and the examples (``optsched/_docs/``, copied
there at build time from the repository's ``docs/`` and ``examples/``; see
:mod:`optsched._docs_manifest`). :func:`build_html` builds the HTML of the installed version once
into the user's cache directory (Sphinx and the theme come with the ``docs`` extra,
``pip install 'optsched[docs]'``) and :func:`write_examples` writes the examples out, so that
every command of the README works for a user who installed only the wheel. In a source checkout
the repository is the tree.

Command line: ``optsched docs [PAGE]`` and ``optsched examples [DIR]``, or
``python -m optsched.docs [PAGE] [--print-path] [--no-open] [--rebuild]``.

Examples
--------
>>> from optsched.docs import page_source
>>> page_source("glossary").as_posix().endswith("docs/guide/glossary.rst")
True
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from optsched import _docs_manifest
from optsched._version import __version__
from optsched.errors import InvalidInstanceError, MissingExtraError, OptschedError

__all__ = [
    "DOCS_EXTRA",
    "build_html",
    "cache_dir",
    "default_html_dir",
    "examples_dir",
    "html_page",
    "missing_build_modules",
    "page_source",
    "pages",
    "source_root",
    "write_examples",
]

#: How to install what building the HTML needs.
DOCS_EXTRA = "pip install 'optsched[docs]'"
#: The distributions the docs build needs (the ``docs`` extra; docs/conf.py): Sphinx, the theme,
#: and MathJax as package data. Looked up as distributions, not modules: the MathJax one is a
#: directory with a hyphen, not an importable name.
_BUILD_DISTRIBUTIONS = ("sphinx", "furo", "sphinx-mathjax-offline")


def source_root() -> Path:
    """The tree holding ``docs/`` and ``examples/``: the wheel's copy, or the source checkout.

    Raises
    ------
    OptschedError
        Neither is there (an install made without the build step that copies them).
    """
    package = Path(__file__).resolve().parent
    for root in (package / _docs_manifest.SHIPPED_DIR, package.parent):
        if (root / "docs" / "conf.py").is_file() and (root / "examples").is_dir():
            return root
    raise OptschedError(
        f"the documentation sources are not installed (no {package / _docs_manifest.SHIPPED_DIR}"
        "): install optsched from its wheel or a source checkout"
    )


def examples_dir() -> Path:
    """The directory of the installed examples (the repository's ``examples/``)."""
    return source_root() / "examples"


def pages() -> list[str]:
    """Every documentation page, as its path under ``docs/`` without ``.rst`` (sorted)."""
    docs = source_root() / "docs"
    return sorted(
        p.relative_to(docs).with_suffix("").as_posix()
        for p in docs.rglob("*.rst")
        if "_build" not in p.parts
    )


def _page_name(page: str) -> str:
    """``page`` as a page path: exact (``guide/glossary``) or a unique last part (``glossary``)."""
    known = pages()
    wanted = page.strip().removesuffix(".rst").removesuffix(".html").strip("/")
    if wanted in known:
        return wanted
    matches = [p for p in known if p.rsplit("/", 1)[-1] == wanted]
    if len(matches) == 1:
        return matches[0]
    hint = f"one of {matches}" if matches else f"pages: {', '.join(known)}"
    raise InvalidInstanceError("page", f"no page {page!r}; {hint}")


def page_source(page: str = "index") -> Path:
    """The reStructuredText source of ``page`` (readable as text without building)."""
    return source_root() / "docs" / f"{_page_name(page)}.rst"


def cache_dir() -> Path:
    r"""Where built documentation is kept: ``$OPTSCHED_CACHE_DIR``, else the user's cache.

    That is ``$XDG_CACHE_HOME/optsched`` (default ``~/.cache/optsched``), or
    ``%LOCALAPPDATA%\optsched`` on Windows.
    """
    if os.environ.get("OPTSCHED_CACHE_DIR"):
        return Path(os.environ["OPTSCHED_CACHE_DIR"])
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "optsched"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "optsched"


def _sources_digest(root: Path) -> str:
    """SHA-256 (12 hex digits) of every source the build reads: edits in a checkout rebuild."""
    digest = hashlib.sha256()
    trees = [root / t for t in _docs_manifest.TREES]
    files = [p for t in trees for p in t.rglob("*") if p.is_file()]
    files += [root / f for f in _docs_manifest.FILES if (root / f).is_file()]
    for path in sorted(files):
        if set(path.relative_to(root).parts) & set(_docs_manifest.EXCLUDED):
            continue
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def default_html_dir() -> Path:
    """Where :func:`build_html` keeps this version's HTML by default (built or not yet)."""
    return cache_dir() / "docs" / f"{__version__}-{_sources_digest(source_root())}" / "html"


def missing_build_modules() -> list[str]:
    """The distributions of the ``docs`` extra that are not installed (empty: can build)."""
    from importlib import metadata

    missing = []
    for name in _BUILD_DISTRIBUTIONS:
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    return missing


def build_html(out: str | Path | None = None, *, rebuild: bool = False) -> Path:
    """Build the HTML documentation of the installed version; return its directory.

    The build runs Sphinx in a separate interpreter on :func:`source_root`'s ``docs/``
    (autodoc imports this optsched; each figure's code runs once), into ``out`` or, by default,
    ``cache_dir()/docs/<version>-<digest of the sources>/html``. A build already there is
    reused unless ``rebuild``; a build is written next to its place and renamed into it at the
    end, so an interrupted one is never taken for complete. It needs no network.

    Raises
    ------
    MissingExtraError
        Sphinx, the theme or MathJax is not installed (the message says how to install them).
    OptschedError
        Sphinx failed (its last output lines are in the message).
    """
    root = source_root()
    target = default_html_dir() if out is None else Path(out)
    if (target / "index.html").is_file() and not rebuild:
        return target
    missing = missing_build_modules()
    if missing:
        raise MissingExtraError(
            f"building the HTML docs needs {', '.join(missing)}: {DOCS_EXTRA} (meanwhile the "
            f"pages are readable as text under {root / 'docs'})"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "sphinx",
                "-q",
                "-b",
                "html",
                "-d",
                str(work / "doctrees"),
                str(root / "docs"),
                str(work / "html"),
            ],
            cwd=root,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        if done.returncode != 0 or not (work / "html" / "index.html").is_file():
            tail = "\n".join((done.stderr or done.stdout).splitlines()[-15:])
            raise OptschedError(f"sphinx-build exited {done.returncode}:\n{tail}")
        if target.exists():
            shutil.rmtree(target)
        (work / "html").rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def html_page(page: str = "index", *, out: str | Path | None = None, rebuild: bool = False) -> Path:
    """The built HTML file of ``page`` (built first when needed, see :func:`build_html`)."""
    name = _page_name(page)
    return build_html(out, rebuild=rebuild) / f"{name}.html"


def write_examples(dest: str | Path = "examples", *, force: bool = False) -> list[Path]:
    """Write the examples (the repository's ``examples/``) into ``dest``; return those written.

    A file already there with the same content is left alone; one with other content is
    refused unless ``force`` (it may hold the user's edits). Nothing is written when any file
    is refused.

    Raises
    ------
    InvalidInstanceError
        Naming ``dest``: it is a file, or would overwrite differing files without ``force``.
    """
    source = examples_dir()
    target = Path(dest)
    if target.exists() and not target.is_dir():
        raise InvalidInstanceError("dest", f"{target} exists and is not a directory")
    files = sorted(
        p
        for p in source.rglob("*")
        if p.is_file() and not set(p.relative_to(source).parts) & set(_docs_manifest.EXCLUDED)
    )
    plan = [(p, target / p.relative_to(source)) for p in files]
    clash = [
        d for s, d in plan if d.exists() and (not d.is_file() or d.read_bytes() != s.read_bytes())
    ]
    if clash and not force:
        raise InvalidInstanceError(
            "dest",
            f"{len(clash)} file(s) in {target} differ from the examples ({clash[0]}, ...): "
            "pass --force (force=True) to overwrite them, or choose another directory",
        )
    written = []
    for src, dst in plan:
        if dst.is_file() and dst.read_bytes() == src.read_bytes():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        written.append(dst)
    return written


def main(argv: list[str] | None = None) -> int:
    """``python -m optsched.docs``: ``optsched docs`` without the command line's package."""
    import argparse
    import webbrowser

    parser = argparse.ArgumentParser(
        prog="python -m optsched.docs",
        description="Build (once, when needed) and open or print the HTML of a page of the "
        "installed optsched's documentation, offline.",
    )
    parser.add_argument("page", nargs="?", default="index", help="e.g. glossary, api/sim")
    parser.add_argument("--print-path", action="store_true", help="print the file, open nothing")
    parser.add_argument("--no-open", action="store_true", help="build, open no browser")
    parser.add_argument("--rebuild", action="store_true", help="build again even if built")
    parser.add_argument("--no-build", action="store_true", help="never build (else: source)")
    args = parser.parse_args(argv)
    try:
        if args.no_build and not (default_html_dir() / "index.html").is_file():
            raise MissingExtraError(f"not built yet (run: python -m optsched.docs {args.page})")
        path = html_page(args.page, rebuild=args.rebuild)
    except MissingExtraError as exc:
        print(f"optsched docs: {exc}", file=sys.stderr)
        print(page_source(args.page))
        return 0
    except OptschedError as exc:
        print(f"optsched docs: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, InvalidInstanceError) else 1
    if args.print_path or args.no_open or not webbrowser.open(path.as_uri()):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
