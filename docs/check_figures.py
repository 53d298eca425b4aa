"""Check that every figure a docs page asks for was drawn into the built HTML.

matplotlib's ``.. plot::`` directive keeps only the figures pyplot knows about: a block whose
code draws on a :class:`~matplotlib.figure.Figure` made without pyplot builds without an error
or a warning, and the page silently shows no figure. This check counts, for every source page,
the ``.. plot::`` blocks that do not say ``:nofigs:`` and requires at least that many images of
the plot directive (``_images/<page>-<n>.png``) in the built page.

Usage: ``python docs/check_figures.py DOCS_SOURCE BUILD_HTML`` (``make docs`` runs it); exits 1
naming every page that misses figures.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_DIRECTIVE = re.compile(r"^\.\. plot::\s*$")
_OPTION = re.compile(r"^\s+:([a-z-]+):")


def expected_figures(source: Path) -> int:
    """``.. plot::`` blocks of an RST file that should draw (no ``:nofigs:`` option)."""
    lines = source.read_text(encoding="utf-8").splitlines()
    count = 0
    for k, line in enumerate(lines):
        if not _DIRECTIVE.match(line):
            continue
        nofigs = False
        for option in lines[k + 1 :]:
            m = _OPTION.match(option)
            if m is None:
                break  # options come first, right under the directive
            nofigs = nofigs or m.group(1) == "nofigs"
        count += not nofigs
    return count


def drawn_figures(page: Path, stem: str) -> int:
    """Images of the plot directive (``<stem>-<n>.png``) referenced by a built page."""
    if not page.is_file():
        return 0
    html = page.read_text(encoding="utf-8")
    return len(set(re.findall(rf'src="[^"]*_images/{re.escape(stem)}-\d+\.png"', html)))


def missing(source_root: Path, build_root: Path) -> list[str]:
    """One message per page with fewer figures in the build than its source asks for."""
    out = []
    for source in sorted(source_root.rglob("*.rst")):
        if "_build" in source.parts:
            continue
        want = expected_figures(source)
        if want == 0:
            continue
        rel = source.relative_to(source_root).with_suffix(".html")
        got = drawn_figures(build_root / rel, source.stem)
        if got < want:
            out.append(f"{rel}: {want} plot block(s) should draw, {got} figure(s) in the build")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    problems = missing(Path(argv[0]), Path(argv[1]))
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print("a plot block draws on a Figure pyplot does not know (use plt.subplots and ax=)")
        return 1
    print(f"every plot block of {argv[0]} drew its figure")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
