"""Check that a built HTML site loads nothing from outside itself.

The documentation must read the same with no network (formulas included): every script,
stylesheet, font, image or frame a page loads must be a file inside the build directory. This
script walks every ``.html`` and ``.css`` file under the build directory and reports each
resource reference that

* is absolute (``https://...``, ``http://...``, protocol-relative ``//host/...``, ``file:``,
  ``ftp:``) — anything with a scheme other than ``data:`` and ``blob:`` loads from elsewhere;
* is relative but resolves outside the build directory (``../../outside.js``);
* is relative and inside the build, but the file does not exist (a missing asset is as
  unreadable offline as a remote one);

and each page that holds formulas (an element of class ``math``, as Sphinx writes them) but
loads no math renderer (MathJax's ``tex-*.js``/``mml-*.js``/``MathJax.js`` or KaTeX's
``katex*.js``) from the build: its formulas would show as TeX source.

What counts as a resource load (hyperlinks such as ``<a href>`` and ``<link rel="next">`` do
not load anything and are not checked):

* HTML: ``src`` of ``script``, ``img``, ``iframe``, ``embed``, ``source``, ``track``,
  ``audio``, ``video``, ``input``; ``srcset`` of ``img``/``source``; ``poster`` of ``video``;
  ``data`` of ``object``; ``href`` of ``link`` whose ``rel`` loads something (stylesheet, icon,
  preload, modulepreload, prefetch, preconnect, dns-prefetch, manifest, mask-icon,
  apple-touch-icon); ``url(...)`` and ``@import`` in ``<style>`` blocks and ``style``
  attributes; absolute ``http(s)`` URLs of scripts, stylesheets or fonts written inside inline
  ``<script>`` blocks (a MathJax or KaTeX configuration pointing at a CDN).
* CSS files: every ``@import`` and ``url(...)``, resolved relative to the CSS file.

Usage::

    python docs/check_offline.py docs/_build/html

Exit status 0 when every reference stays inside the build, 1 otherwise (each problem is printed
as ``file:line: what``), 2 for a bad argument. It uses the standard library only, so the test
suite runs it without the docs extras.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

__all__ = ["Problem", "check_css", "check_html", "check_tree", "main"]

#: ``rel`` values of ``<link>`` that make the browser fetch the ``href``.
LOADING_RELS = frozenset(
    {
        "stylesheet",
        "icon",
        "shortcut",
        "apple-touch-icon",
        "apple-touch-icon-precomposed",
        "mask-icon",
        "preload",
        "modulepreload",
        "prefetch",
        "preconnect",
        "dns-prefetch",
        "manifest",
    }
)

#: ``(tag, attribute)`` pairs whose value is one URL the browser loads.
SRC_ATTRS = frozenset(
    {
        ("script", "src"),
        ("img", "src"),
        ("iframe", "src"),
        ("frame", "src"),
        ("embed", "src"),
        ("source", "src"),
        ("track", "src"),
        ("audio", "src"),
        ("video", "src"),
        ("video", "poster"),
        ("input", "src"),
        ("object", "data"),
        ("image", "href"),  # SVG <image href=...>
        ("use", "href"),  # SVG <use href="sprite.svg#id">
    }
)

#: Schemes that carry their content inline rather than loading it.
INLINE_SCHEMES = frozenset({"data", "blob", "about", "javascript"})

#: Script file names of a math renderer (MathJax 2/3/4 components, KaTeX).
_MATH_RENDERER = re.compile(
    r"^(?:(?:tex|mml)-(?:chtml|svg|mml)[\w.-]*|MathJax|katex(?:\.min)?|startup)\.js$"
)
_CSS_URL = re.compile(r"""url\(\s*(?P<q>['"]?)(?P<url>[^'")]*?)(?P=q)\s*\)""", re.IGNORECASE)
_CSS_IMPORT = re.compile(
    r"""@import\s+(?:url\(\s*)?(?P<q>['"]?)(?P<url>[^'")\s;]*)(?P=q)""", re.IGNORECASE
)
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
#: An absolute URL of a script, stylesheet or font inside inline JavaScript.
_JS_REMOTE = re.compile(
    r"""(?P<url>(?:https?:)?//[A-Za-z0-9.-]+\.[A-Za-z]{2,}/[^\s'"`)]*"""
    r"""(?:\.m?js|\.css|\.woff2?|\.ttf|\.otf|\.eot|/)(?:\?[^\s'"`)]*)?)(?=['"`])"""
)


@dataclass(frozen=True)
class Problem:
    """One reference that does not stay inside the build."""

    file: Path
    line: int
    what: str
    url: str
    reason: str

    def __str__(self) -> str:
        url = f" {self.url!r}" if self.url else ""
        return f"{self.file}:{self.line}: {self.what}{url}: {self.reason}"


def _classify(url: str, base: Path, root: Path) -> str | None:
    """Why ``url`` (referenced from a file in directory ``base``) escapes ``root``, or None."""
    url = url.strip()
    if not url or url.startswith("#"):
        return None
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in INLINE_SCHEMES:
        return None
    if scheme or url.startswith("//"):
        return "loads from outside the build (absolute URL)"
    if not parts.path:
        return None  # a query or fragment on the page itself
    path = unquote(parts.path)
    if path.startswith("/"):
        return "absolute path: resolves against the server root, not the build"
    target = (base / PurePosixPath(path)).resolve()
    try:
        target.relative_to(root)
    except ValueError:
        return "resolves outside the build directory"
    if not target.exists():
        return "missing from the build"
    return None


def check_css(
    text: str, *, file: Path, base: Path, root: Path, first_line: int = 1, what: str = "css"
) -> list[Problem]:
    """Problems in CSS ``text`` (a file, a ``<style>`` block or a ``style`` attribute).

    Parameters
    ----------
    text : str
        The CSS.
    file : Path
        Where it was found (for the report).
    base : Path
        Directory relative URLs resolve against.
    root : Path
        The build directory.
    first_line : int
        Line of ``file`` on which ``text`` starts.
    what : str
        What is being checked, for the report.
    """
    problems = []
    # Blank out comments but keep their newlines, so line numbers stay right.
    clean = _CSS_COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    seen: set[int] = set()
    for pattern, kind in ((_CSS_IMPORT, "@import"), (_CSS_URL, "url()")):
        for match in pattern.finditer(clean):
            if match.start("url") in seen:
                continue  # @import url(...) is reported once
            seen.add(match.start("url"))
            reason = _classify(match.group("url"), base, root)
            if reason:
                line = first_line + clean.count("\n", 0, match.start())
                problems.append(
                    Problem(file, line, f"{what} {kind}", match.group("url").strip(), reason)
                )
    return problems


class _PageParser(HTMLParser):
    def __init__(self, file: Path, root: Path) -> None:
        super().__init__(convert_charrefs=True)
        self.file, self.root, self.base = file, root, file.parent
        self.problems: list[Problem] = []
        self._block: str | None = None  # "style" or "script" while inside an inline one
        self._block_line = 0
        self._block_text: list[str] = []
        self.math_line = 0  # first line with a formula (0: none)
        self.has_renderer = False

    def _check(self, url: str, what: str) -> None:
        reason = _classify(url, self.base, self.root)
        if reason:
            self.problems.append(Problem(self.file, self.getpos()[0], what, url.strip(), reason))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name.lower(): (value or "") for name, value in attrs}
        if not self.math_line and "math" in values.get("class", "").split():
            self.math_line = self.getpos()[0]
        if tag == "script" and values.get("src"):
            name = PurePosixPath(urlsplit(values["src"]).path).name
            if (
                _MATH_RENDERER.match(name)
                and _classify(values["src"], self.base, self.root) is None
            ):
                self.has_renderer = True
        if tag == "base" and "href" in values:
            self._check(values["href"], "<base href>")
        for name, value in values.items():
            if (tag, name) in SRC_ATTRS:
                self._check(value, f"<{tag} {name}>")
            elif name in ("srcset", "imagesrcset"):
                for candidate in value.split(","):
                    url = candidate.strip().split(" ")[0]
                    if url:
                        self._check(url, f"<{tag} {name}>")
            elif name == "style" and value:
                self.problems += check_css(
                    value,
                    file=self.file,
                    base=self.base,
                    root=self.root,
                    first_line=self.getpos()[0],
                    what=f"<{tag} style>",
                )
            elif name in ("href", "xlink:href") and tag == "link":
                rels = set(values.get("rel", "").lower().split())
                if rels & LOADING_RELS:
                    self._check(value, f"<link rel={values.get('rel', '')}>")
        if tag == "style" or (tag == "script" and "src" not in values):
            self._block, self._block_line, self._block_text = tag, self.getpos()[0], []

    def handle_data(self, data: str) -> None:
        if self._block is not None:
            self._block_text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if self._block is None or tag != self._block:
            return
        text = "".join(self._block_text)
        if tag == "style":
            self.problems += check_css(
                text,
                file=self.file,
                base=self.base,
                root=self.root,
                first_line=self._block_line,
                what="<style>",
            )
        else:
            for match in _JS_REMOTE.finditer(text):
                line = self._block_line + text.count("\n", 0, match.start())
                self.problems.append(
                    Problem(
                        self.file,
                        line,
                        "inline <script>",
                        match.group("url"),
                        "loads from outside the build (absolute URL in a script)",
                    )
                )
        self._block = None


def check_html(file: Path, root: Path) -> list[Problem]:
    """Problems of one HTML page of the build rooted at ``root``."""
    parser = _PageParser(file, root)
    parser.feed(file.read_text(encoding="utf-8", errors="replace"))
    parser.close()
    if parser.math_line and not parser.has_renderer:
        parser.problems.append(
            Problem(
                file,
                parser.math_line,
                "formula",
                "",
                "the page holds math but loads no math renderer from the build (it would "
                "show as TeX source)",
            )
        )
    return parser.problems


def _files(root: Path, suffix: str) -> Iterator[Path]:
    # rglob over a finished build: its size is bounded by the build itself.
    yield from sorted(p for p in root.rglob(f"*{suffix}") if p.is_file())


def check_tree(root: Path) -> tuple[list[Problem], dict[str, int]]:
    """Check every ``.html`` and ``.css`` file under ``root``.

    Returns
    -------
    problems : list of Problem
    counts : dict
        How many pages and stylesheets were checked.
    """
    root = root.resolve()
    problems: list[Problem] = []
    counts = {"pages": 0, "stylesheets": 0}
    for page in _files(root, ".html"):
        counts["pages"] += 1
        problems += check_html(page, root)
    for sheet in _files(root, ".css"):
        counts["stylesheets"] += 1
        problems += check_css(
            sheet.read_text(encoding="utf-8", errors="replace"),
            file=sheet,
            base=sheet.parent,
            root=root,
        )
    return problems, counts


def main(argv: Iterable[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: check_offline.py BUILD_DIR", file=sys.stderr)
        return 2
    root = Path(args[0])
    if not root.is_dir():
        print(f"check_offline.py: {root} is not a directory", file=sys.stderr)
        return 2
    problems, counts = check_tree(root)
    if counts["pages"] == 0:
        print(f"check_offline.py: no .html file under {root}", file=sys.stderr)
        return 2
    for problem in problems:
        print(problem, file=sys.stderr)
    verdict = f"{len(problems)} reference(s) outside the build" if problems else "all inside it"
    print(
        f"checked {counts['pages']} pages and {counts['stylesheets']} stylesheets under "
        f"{root}: {verdict}",
        file=sys.stderr,
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
