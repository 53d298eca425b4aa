"""Every figure type the library draws: compared with its baseline image, and measured.

The figures are :func:`gallery` of ``docs/check_figures.py`` (seeded inputs, the Agg renderer,
DejaVu Sans shipped with Matplotlib, :data:`DPI`), so the same code draws what a person looks
at (``python docs/check_figures.py --render DIR``) and what is tested here.

* **Image comparison**: each figure against ``tests/baseline_images/<name>.png`` with
  :func:`matplotlib.testing.compare.compare_images` (RMS of the pixel difference at most
  :data:`IMAGE_TOLERANCE`). Matplotlib's own comparison needs no extra package; pytest-mpl would
  add a plugin whose comparison runs only under ``--mpl``, so a plain ``pytest`` run would skip
  it silently. After a deliberate change of a figure, rewrite the baselines with
  ``OPTSCHED_REGENERATE_FIGURES=1 pytest tests/test_figures.py`` and look at them.
* **Structure** (a baseline cannot fool it): :func:`optsched.report.style.figure_problems`
  on each drawn figure: units on numeric axes, a label and a marker on every series, no error
  bar below 0, no legend over data, no two series hiding one another. Its own tests below
  show it catches each fault.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
BASELINES = Path(__file__).resolve().parent / "baseline_images"
#: Largest RMS pixel difference (0-255 scale) accepted against a baseline: anti-aliasing of
#: the same fonts differs by well under 1 between FreeType builds; a moved legend, a new line
#: or a changed colour is above 5.
IMAGE_TOLERANCE = 2.0
#: Set to rewrite the baselines from the current code (then look at them before committing).
REGENERATE = os.environ.get("OPTSCHED_REGENERATE_FIGURES") == "1"

pytestmark = pytest.mark.solver("highs")


def _load_check_figures() -> Any:
    spec = importlib.util.spec_from_file_location(
        "check_figures", ROOT / "docs" / "check_figures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_figures = _load_check_figures()
NAMES = list(check_figures.gallery())
DPI = check_figures.GALLERY_DPI


@pytest.fixture(scope="module")
def drawn() -> dict[str, Any]:
    """Each figure drawn once (the inputs are cached by check_figures)."""
    return {}


def _figure(drawn: dict[str, Any], name: str) -> Any:
    if name not in drawn:
        drawn[name] = check_figures.settled(check_figures.gallery()[name]())
    return drawn[name]


@pytest.mark.parametrize("name", NAMES)
def test_figure_matches_its_baseline(name: str, drawn: dict[str, Any], tmp_path: Path) -> None:
    from matplotlib.testing.compare import compare_images

    fig = _figure(drawn, name)
    expected = BASELINES / f"{name}.png"
    if REGENERATE:
        BASELINES.mkdir(exist_ok=True)
        fig.savefig(expected, dpi=DPI)
    actual = tmp_path / f"{name}.png"
    fig.savefig(actual, dpi=DPI)
    assert expected.is_file(), f"no baseline {expected.name}: regenerate and look at it"
    diff = compare_images(str(expected), str(actual), tol=IMAGE_TOLERANCE)
    assert diff is None, diff


@pytest.mark.parametrize("name", NAMES)
def test_figure_follows_the_style_rules(name: str, drawn: dict[str, Any]) -> None:
    from optsched.report.style import figure_problems

    assert figure_problems(_figure(drawn, name)) == []


def test_every_plotting_function_of_the_library_is_in_the_gallery() -> None:
    """A new ``plot_*`` function without a figure here fails (it would go unchecked)."""
    import ast

    drawn_by = (ROOT / "docs" / "check_figures.py").read_text(encoding="utf-8")
    for path in sorted((ROOT / "optsched" / "report").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("plot_"):
                assert f"{node.name}(" in drawn_by, f"{path.name}: {node.name} is not drawn"


# ------------------------------------------------------------------------------------------
# The figures' promises, on their data
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "metric", "scale"),
    [("sweep_bars_makespan", "makespan", 3600.0), ("sweep_bars_rho", "rho_max", 1.0)],
)
def test_sweep_error_bars_are_the_clipped_student_t_interval(
    name: str, metric: str, scale: float, drawn: dict[str, Any]
) -> None:
    """Bars: mean over seeds; whiskers from max(mean - h, 0) to mean + h (h: the t half-width)."""
    from matplotlib.container import ErrorbarContainer

    result = check_figures._sweep()
    summary = result.to_frame()
    ax = _figure(drawn, name).axes[0]
    assert "Student-t" in ax.get_legend().get_title().get_text()
    whiskers = []
    for container in ax.containers:
        if isinstance(container, ErrorbarContainer):
            for seg in container.lines[2][0].get_segments():
                whiskers.append((float(seg[0][1]), float(seg[1][1])))
    want = []
    for policy in result.policies:
        for _, row in summary[summary["policy"] == policy].iterrows():
            mean, half = row[f"{metric}_mean"] / scale, row[f"{metric}_ci"] / scale
            want.append((max(mean - half, 0.0), mean + half))
    assert len(whiskers) == len(want)
    assert np.allclose(sorted(whiskers), sorted(want))
    if metric == "rho_max":
        # the interval of three seeds reaches below 0 here: the clip is exercised
        assert (summary["rho_max_mean"] - summary["rho_max_ci"] < 0).any()


def test_jct_against_one_load_says_so_and_draws_no_load_axis(drawn: dict[str, Any]) -> None:
    ax = _figure(drawn, "sweep_jct_one_load").axes[0]
    assert "load 1" in ax.get_title() and "no load sweep" in ax.get_title()
    assert ax.get_xlabel() == ""
    # one point per policy, side by side
    xs = [float(c.lines[0].get_xdata()[0]) for c in ax.containers]
    assert xs == sorted(set(xs))


def test_policies_with_the_same_jcts_share_one_labelled_line(drawn: dict[str, Any]) -> None:
    labels = [ln.get_label() for ln in _figure(drawn, "harmony_jct_cdfs").axes[0].get_lines()]
    assert "harmony = copy" in labels and "copy" not in labels


def test_an_unproven_optimum_is_a_visible_labelled_band(drawn: dict[str, Any]) -> None:
    ax = _figure(drawn, "oasis_comparison_unproven").axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert "OPT lies in this band" in labels
    assert any(label.startswith("best offline schedule found") for label in labels)
    top = ax.get_ylim()[1]
    for line in ax.get_lines():  # every reference line inside the axes, none hidden
        assert 0 <= float(np.asarray(line.get_ydata())[0]) <= top


# ------------------------------------------------------------------------------------------
# The checker catches what it is for
# ------------------------------------------------------------------------------------------


def _axes() -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 3), layout="constrained")
    ax = fig.add_subplot()
    ax.set_xlabel("time (h)")
    ax.set_ylabel("jobs (count)")
    return fig, ax


def test_checker_finds_an_error_bar_below_zero() -> None:
    from optsched.report.style import figure_problems

    fig, ax = _axes()
    ax.bar([0, 1], [1.0, 2.0], yerr=[1.5, 0.5], label="a")
    assert any("below" in p or "< 0" in p for p in figure_problems(fig))


def test_checker_finds_a_missing_unit_label_and_marker() -> None:
    from optsched.report.style import figure_problems

    fig, ax = _axes()
    ax.set_ylabel("jobs")
    ax.plot([0, 1, 2], [0, 1, 2], marker="", label="a")
    ax.plot([0, 1, 2], [2, 1, 0], marker="o")
    problems = figure_problems(fig)
    assert any("names no unit" in p for p in problems)
    assert any("no marker" in p for p in problems)
    assert any("has no label" in p for p in problems)


def test_checker_finds_a_legend_over_data_and_a_hidden_series() -> None:
    from optsched.report.style import figure_problems

    fig, ax = _axes()
    x = np.linspace(0, 1, 50)
    ax.plot(x, x, marker="o", label="a")
    ax.plot(x, x, marker="s", label="b")
    ax.plot(x, 1 - x, marker="^", label="c")
    ax.legend(loc="center")
    problems = figure_problems(fig)
    assert any("legend covers" in p for p in problems)
    assert any("coincide" in p for p in problems)


def test_checker_finds_series_all_at_one_x_value() -> None:
    from optsched.report.style import figure_problems, place_legend, series

    fig, ax = _axes()
    for i in range(3):
        ax.errorbar([1.0], [float(i)], yerr=[[0.1], [0.1]], label=f"s{i}", **series(i))
    place_legend(ax)
    assert any("one x value 1" in p for p in figure_problems(fig))


def test_checker_passes_a_figure_drawn_by_the_rules() -> None:
    from optsched.report.style import figure_problems, place_legend, series

    fig, ax = _axes()
    x = np.linspace(0, 1, 50)
    for i in range(3):
        ax.plot(x, x**i, label=f"s{i}", **series(i))
    place_legend(ax)
    assert figure_problems(fig) == []


# ------------------------------------------------------------------------------------------
# The helpers
# ------------------------------------------------------------------------------------------


def test_clipped_errors_keep_the_lower_end_at_the_floor() -> None:
    from optsched.report.style import clipped_errors

    errors = clipped_errors([1.0, 5.0, np.nan], [3.0, 2.0, 1.0])
    assert np.allclose(errors[:, 0], [1.0, 3.0])  # down to 0, up by the half-width
    assert np.allclose(errors[:, 1], [2.0, 2.0])  # untouched when mean - h >= 0
    assert np.allclose(errors[:, 2], [0.0, 0.0])  # no mean: no bar


def test_merge_identical_joins_labels_in_first_seen_order() -> None:
    from optsched.report.style import merge_identical

    a, b = np.array([1.0, 2.0]), np.array([0.5, 1.0])
    merged = merge_identical([("x", a, b), ("y", a + 1, b), ("z", a.copy(), b.copy())])
    assert [m[0] for m in merged] == ["x = z", "y"]


def test_the_first_140_series_all_look_different() -> None:
    from optsched.report.style import series

    looks = [tuple(series(i).values()) for i in range(141)]
    assert len(set(looks[:140])) == 140
    assert looks[140] == looks[0]  # lcm(7, 10, 4): the cycle's length, as documented


def test_the_style_module_does_not_import_matplotlib() -> None:
    import subprocess
    import sys

    code = "import optsched.report.style, optsched.sim, sys; print('matplotlib' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    assert done.stdout.strip() == "False"
