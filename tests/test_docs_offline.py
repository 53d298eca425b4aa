"""The offline check of the built docs (docs/check_offline.py) on small synthetic sites.

``make docs`` runs the check on the real build; here it runs on trees written by the test, so
that each kind of external load is shown to be caught (and each legitimate local or inline one
to pass) without building the docs.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "check_offline.py"


def _load():
    spec = importlib.util.spec_from_file_location("check_offline", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_offline"] = module  # dataclasses look the module up while decorating
    spec.loader.exec_module(module)
    return module


check_offline = _load()

GOOD_PAGE = """<!DOCTYPE html>
<html><head>
<meta charset="utf-8">
<link rel="stylesheet" href="_static/site.css?v=1a2b">
<link rel="icon" href="_static/logo.png">
<link rel="canonical" href="https://example.org/docs/index.html">
<link rel="next" title="Next" href="guide/page.html">
<script src="_static/mathjax/tex-chtml.js"></script>
<script>window.MathJax = {tex: {inlineMath: [["\\\\(", "\\\\)"]]}};</script>
<style>
  /* url(https://cdn.example.org/commented-out.woff2) is a comment, not a load */
  body { background: url("_static/bg.png"); }
  .icon { background-image: url(data:image/png;base64,iVBORw0KGgo=); }
</style>
</head><body>
<a href="https://example.org/paper.pdf">the paper</a>
<a href="#section">here</a>
<img src="_images/fig%20one.png" srcset="_images/fig%20one.png 1x, _images/fig2x.png 2x">
<div style="background: url('_static/bg.png')"></div>
<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">
<p>A formula: <span class="math notranslate nohighlight">\\(x_{ij} \\le 1\\)</span></p>
</body></html>
"""

GOOD_CSS = """@import "fonts.css";
@font-face { font-family: X; src: url(fonts/x.woff2) format("woff2"); }
"""


def _site(tmp_path: Path) -> Path:
    root = tmp_path / "html"
    (root / "_static" / "mathjax").mkdir(parents=True)
    (root / "_static" / "fonts").mkdir()
    (root / "_images").mkdir()
    (root / "guide").mkdir()
    (root / "index.html").write_text(GOOD_PAGE, encoding="utf-8")
    (root / "guide" / "page.html").write_text(
        '<html><head><link rel="stylesheet" href="../_static/site.css"></head>'
        '<body><img src="../_images/fig2x.png"></body></html>',
        encoding="utf-8",
    )
    (root / "_static" / "site.css").write_text(GOOD_CSS, encoding="utf-8")
    (root / "_static" / "fonts.css").write_text("body { font-family: serif; }", encoding="utf-8")
    for name in ("mathjax/tex-chtml.js", "logo.png", "bg.png", "fonts/x.woff2"):
        (root / "_static" / name).write_bytes(b"x")
    for name in ("fig one.png", "fig2x.png"):
        (root / "_images" / name).write_bytes(b"x")
    return root


def test_a_self_contained_site_passes(tmp_path):
    root = _site(tmp_path)
    problems, counts = check_offline.check_tree(root)
    assert problems == []
    assert counts == {"pages": 2, "stylesheets": 2}
    assert check_offline.main([str(root)]) == 0


# Each case adds one offending reference to the good site and names what must be reported.
BAD_HTML = [
    (
        '<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"></script>',
        "<script src>",
    ),
    ('<script async src="//cdn.example.org/katex.min.js"></script>', "<script src>"),
    (
        '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">',
        "<link rel=stylesheet>",
    ),
    ('<link rel="preload" as="font" href="http://example.org/f.woff2">', "<link rel=preload>"),
    (
        '<link rel="shortcut icon" href="https://example.org/favicon.ico">',
        "<link rel=shortcut icon>",
    ),
    ('<img src="https://example.org/plot.png">', "<img src>"),
    (
        '<img src="_images/fig2x.png" srcset="_images/fig2x.png 1x, https://example.org/b.png 2x">',
        "<img srcset>",
    ),
    ('<iframe src="https://example.org/embed"></iframe>', "<iframe src>"),
    ('<object data="http://example.org/fig.svg"></object>', "<object data>"),
    ('<div style="background:url(https://example.org/bg.png)"></div>', "<div style> url()"),
    ("<style>@import url('https://example.org/theme.css');</style>", "<style> @import"),
    ('<style>@import "https://example.org/theme.css";</style>', "<style> @import"),
    (
        "<style>@font-face{font-family:M;src:url(https://example.org/m.woff2)}</style>",
        "<style> url()",
    ),
    (
        "<script>window.MathJax={loader:{paths:{mathjax:'https://cdn.example.org/mathjax/es5/'}}}"
        "</script>",
        "inline <script>",
    ),
    ('<script src="../../outside.js"></script>', "<script src>"),
    ('<script src="/_static/root-relative.js"></script>', "<script src>"),
    ('<link rel="stylesheet" href="_static/missing.css">', "<link rel=stylesheet>"),
    ('<img src="file:///etc/passwd">', "<img src>"),
]


@pytest.mark.parametrize(("snippet", "what"), BAD_HTML)
def test_each_external_load_in_a_page_is_reported(tmp_path, snippet, what):
    root = _site(tmp_path)
    page = root / "index.html"
    text = page.read_text(encoding="utf-8").replace("</body>", f"\n{snippet}\n</body>")
    page.write_text(text, encoding="utf-8")
    problems, _ = check_offline.check_tree(root)
    assert len(problems) == 1, problems
    (problem,) = problems
    assert problem.what == what
    assert problem.file == (root / "index.html").resolve()
    assert problem.line == text.splitlines().index(snippet) + 1
    assert problem.url in snippet
    assert check_offline.main([str(root)]) == 1


BAD_CSS = [
    ('@import url("https://example.org/theme.css");', "@import"),
    ("@import '//example.org/theme.css';", "@import"),
    ("@font-face { src: url(https://example.org/font.woff2) format('woff2'); }", "url()"),
    ("body { background: url( 'http://example.org/bg.png' ); }", "url()"),
    ("body { background: url(../../../escape.png); }", "url()"),
    ("body { background: url(gone.png); }", "url()"),
]


@pytest.mark.parametrize(("rule", "kind"), BAD_CSS)
def test_each_external_load_in_a_stylesheet_is_reported(tmp_path, rule, kind):
    root = _site(tmp_path)
    sheet = root / "_static" / "site.css"
    sheet.write_text(GOOD_CSS + "\n" + rule + "\n", encoding="utf-8")
    problems, _ = check_offline.check_tree(root)
    assert len(problems) == 1, problems
    (problem,) = problems
    assert problem.what == f"css {kind}"
    assert problem.file == sheet.resolve()
    assert problem.line == 4
    assert problem.url in rule
    assert str(problem).startswith(f"{sheet.resolve()}:4: css {kind} ")


def test_hyperlinks_and_navigation_links_are_not_loads(tmp_path):
    root = tmp_path / "html"
    root.mkdir()
    (root / "index.html").write_text(
        '<html><head><link rel="search" href="https://example.org/search">'
        '<link rel="alternate" href="https://example.org/feed.xml"></head>'
        '<body><a href="https://example.org/"><img src="data:image/png;base64,AA=="></a>'
        "<script>var s = 'see https://example.org/docs for details';</script></body></html>",
        encoding="utf-8",
    )
    assert check_offline.check_tree(root)[0] == []


def test_bad_arguments_exit_2(tmp_path, capsys):
    assert check_offline.main([]) == 2
    assert check_offline.main([str(tmp_path / "absent")]) == 2
    assert check_offline.main([str(tmp_path)]) == 2  # a directory with no page is no build
    err = capsys.readouterr().err
    assert "usage" in err and "not a directory" in err and "no .html file" in err


def _math_page(root: Path, head: str) -> Path:
    page = root / "guide" / "math.html"
    page.write_text(
        f"<html><head>{head}</head><body>\n<p>text</p>\n"
        '<div class="math notranslate nohighlight">\\[x \\le 1\\]</div>\n</body></html>',
        encoding="utf-8",
    )
    return page


def test_a_page_with_formulas_must_load_a_local_math_renderer(tmp_path):
    root = _site(tmp_path)
    page = _math_page(root, "")
    problems, _ = check_offline.check_tree(root)
    assert [(p.file, p.line, p.what) for p in problems] == [(page.resolve(), 3, "formula")]
    assert "TeX source" in str(problems[0])
    assert check_offline.main([str(root)]) == 1


@pytest.mark.parametrize(
    "renderer",
    [
        "../_static/mathjax/tex-chtml.js",
        "../_static/mathjax/tex-chtml.js?v=3.2.2",
        "../_static/katex.min.js",
    ],
)
def test_a_local_renderer_satisfies_the_formula_check(tmp_path, renderer):
    root = _site(tmp_path)
    (root / "_static" / "katex.min.js").write_bytes(b"x")
    _math_page(root, f'<script defer src="{renderer}"></script>')
    assert check_offline.check_tree(root)[0] == []


def test_a_remote_renderer_does_not_count(tmp_path):
    root = _site(tmp_path)
    url = "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"
    _math_page(root, f'<script src="{url}"></script>')
    problems, _ = check_offline.check_tree(root)
    assert sorted(p.what for p in problems) == ["<script src>", "formula"]
