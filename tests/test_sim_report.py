"""Sweep reports: self-contained HTML, Markdown, figures per section, table equal to to_frame."""

from __future__ import annotations

import base64
import json
import math
import re
from pathlib import Path

import pytest

from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.report.sweep import TABLE_COLUMNS, sweep_report
from optsched.runs.experiment import ExperimentResult, run_experiment
from optsched.runs.store import RunStore

EXPERIMENT = """\
name = "report-test"
traces = ["synthetic:6"]
clusters = ["v100=8,p100=8"]
policies = ["fifo", "srtf"]
seeds = [0, 1, 2]
loads = [1.0, 2.0]

[outputs]
store = "runs.sqlite"
"""

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("report")
    path = d / "exp.toml"
    path.write_text(EXPERIMENT, encoding="utf-8")
    run_experiment(path, backend="serial")
    return d / "runs.sqlite"


def _sections(html: str) -> dict[str, str]:
    parts = re.findall(r"<section><h2>(.*?)</h2>(.*?)</section>", html, flags=re.S)
    return dict(parts)


def test_html_is_self_contained_with_a_figure_per_section(store: Path) -> None:
    report = sweep_report(store)
    html = report.to_html()
    # nothing loaded from elsewhere: every src/href is an embedded data URI
    assert "http://" not in html and "https://" not in html
    for ref in re.findall(r'(?:src|href)="([^"]*)"', html):
        assert ref.startswith("data:image/png;base64,"), ref
    sections = _sections(html)
    assert list(sections) == [
        "Summary",
        "JCT CDFs",
        "Makespan",
        "Fairness",
        "Gap to the bound",
        "Experiment",
    ]
    for title, body in sections.items():
        if title == "Experiment":
            assert "report-test" in body and "<img" not in body
            continue
        images = re.findall(r'src="data:image/png;base64,([^"]+)"', body)
        assert images, f"section {title} has no figure"
        for data in images:
            assert base64.b64decode(data).startswith(PNG_MAGIC)
    # one JCT CDF per group (two loads), and a rho CDF per group besides the bars
    assert sections["JCT CDFs"].count("<img") == 2
    assert sections["Fairness"].count("<img") == 3


def test_the_experiment_file_and_hash_are_in_the_report(store: Path) -> None:
    report = sweep_report(store)
    import hashlib
    import html as html_module

    digest = hashlib.sha256(EXPERIMENT.encode()).hexdigest()
    page = report.to_html()
    assert digest in page
    assert html_module.escape(EXPERIMENT) in page
    assert "```toml\n" + EXPERIMENT.rstrip("\n") + "\n```" in report.to_markdown()


def _markdown_table(text: str) -> list[dict[str, str]]:
    lines = [ln for ln in text.split("## Summary", 1)[1].splitlines() if ln.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return [
        dict(zip(head, [c.strip() for c in ln.strip("|").split("|")], strict=True))
        for ln in lines[2:]
    ]


#: Seconds per unit of the report's time columns (one unit per table, named in the header).
_UNIT_SECONDS = {"s": 1.0, "min": 60.0, "h": 3600.0}


def _header(row: dict[str, str], title: str) -> tuple[str, float]:
    """The row's header for ``title`` (its ``(s)`` replaced by the table's unit) and scale."""
    if not title.endswith("(s)"):
        return title, 1.0
    for unit, scale in _UNIT_SECONDS.items():
        if title.replace("(s)", f"({unit})") in row:
            return title.replace("(s)", f"({unit})"), scale
    raise AssertionError(f"no column for {title}: {list(row)}")


def _matches(cell: str, mean: float, ci: float, scale: float = 1.0) -> bool:
    """Whether ``mean [low, high]`` (in seconds / ``scale``) is what the cell shows: the
    95% interval ``mean ± ci`` clipped at 0, fixed decimals, no exponent, each number within
    half a unit of its last decimal."""
    assert "e+" not in cell and "e-" not in cell, cell
    head, _, tail = cell.partition(" [")
    if not math.isfinite(mean):
        return head == "-"
    decimals = len(head.partition(".")[2])
    half = 0.5 * 10.0**-decimals + 1e-12
    ok = abs(float(head) - mean / scale) <= half
    if math.isfinite(ci):
        assert tail.endswith("]"), cell
        low, high = (s.strip() for s in tail[:-1].split(","))
        assert not low.startswith("-"), f"a negative lower end: {cell}"
        for shown, want in ((low, max(mean - ci, 0.0)), (high, mean + ci)):
            ok = ok and len(shown.partition(".")[2]) == decimals
            ok = ok and abs(float(shown) - want / scale) <= half
    return ok and (bool(tail) == math.isfinite(ci))


def test_to_frame_matches_the_report_table(store: Path) -> None:
    result = ExperimentResult.from_store(store)
    report = sweep_report(result)
    frame = result.to_frame()
    assert report.to_frame().equals(frame)
    rows = _markdown_table(report.to_markdown())
    assert len(rows) == len(frame) == 2 * 2
    for row, (_, want) in zip(rows, frame.iterrows(), strict=True):
        assert row["policy"] == want["policy"] and float(row["load"]) == want["load"]
        for metric, title in TABLE_COLUMNS:
            if f"{metric}_mean" not in frame.columns:  # certified gaps: only with `bounds`
                assert title not in row
                continue
            header, scale = _header(row, title)
            cell = row[header]
            assert _matches(cell, want[f"{metric}_mean"], want[f"{metric}_ci"], scale), cell
    # and the frame's numbers are the runs' own: mean over the seeds
    runs = result.runs
    fifo = runs[(runs["policy"] == "fifo") & (runs["load"] == 1.0)]["jct_mean"]
    got = frame[(frame["policy"] == "fifo") & (frame["load"] == 1.0)]["jct_mean_mean"]
    assert float(got.iloc[0]) == pytest.approx(float(fifo.mean()))
    # the HTML shows the same cells
    html = report.to_html()
    for row in rows:
        header, _ = _header(row, "mean JCT (s)")
        assert f"<td>{row[header]}</td>" in html


def test_write_and_the_cli_report(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rep"
    assert main(["sim", "report", str(store), "-o", str(out), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["sections"][0] == "Summary" and len(payload["summary"]) == 4
    md = (out / "report.md").read_text(encoding="utf-8")
    for ref in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md):
        assert (out / ref).read_bytes().startswith(PNG_MAGIC)
    assert (out / "report.html").read_text(encoding="utf-8") == sweep_report(store).to_html()
    # default directory: beside the store
    assert main(["sim", "report", str(store)]) == 0
    assert (store.parent / "runs-report" / "report.html").is_file()


def test_repr_html(store: Path) -> None:
    result = ExperimentResult.from_store(store)
    assert "<table" in result._repr_html_() and "report-test" in result._repr_html_()
    shown = sweep_report(result)._repr_html_()
    assert "<table" in shown and "data:image/png;base64," in shown


def test_a_plain_sweep_store_reports_without_cdfs(tmp_path: Path) -> None:
    from optsched.runs.sim_sweep import sweep

    sweep(["synthetic:4"], "v100=8", ["fifo"], seeds=[0, 1], store=tmp_path, backend="serial")
    report = sweep_report(tmp_path)
    titles = [s.title for s in report.sections]
    assert "Experiment" not in titles and "Gap to the bound" not in titles
    cdf = next(s for s in report.sections if s.title == "JCT CDFs")
    assert not cdf.figures and "no per-job" in cdf.text


def test_reading_a_missing_or_foreign_store_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInstanceError) as info:
        sweep_report(tmp_path / "none.sqlite")
    assert info.value.field == "<file>"
    with RunStore(tmp_path / "other.sqlite", kind="oasis-ratio", config={}) as other:
        other.put("k", {"x": 1})
    with pytest.raises(InvalidInstanceError) as info:
        sweep_report(tmp_path / "other.sqlite")
    assert info.value.field == "kind"


def test_store_metadata_round_trips_and_guards_its_own_names(tmp_path: Path) -> None:
    with RunStore(tmp_path, kind="k", config={"a": 1}) as store:
        store.set_meta("note", "text ü")
        assert store.get_meta("note") == "text ü" and store.get_meta("absent") is None
        with pytest.raises(InvalidInstanceError):
            store.set_meta("config", "{}")
    with RunStore.open_existing(tmp_path) as again:
        assert again.kind == "k" and again.config == {"a": 1}
        assert again.get_meta("note") == "text ü"
    with pytest.raises(InvalidInstanceError) as info:
        RunStore.open_existing(tmp_path, kind="other")
    assert info.value.field == "kind"


def test_a_tampered_experiment_text_is_refused(store: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy.sqlite"
    shutil.copy(store, copy)
    with RunStore.open_existing(copy) as opened:
        opened.set_meta("experiment.toml", EXPERIMENT.replace("srtf", "sjf"))
    with pytest.raises(InvalidInstanceError) as info:
        ExperimentResult.from_store(copy)
    assert info.value.field == "experiment.toml"


def test_the_public_plots_draw_one_line_per_policy(store: Path) -> None:
    import numpy as np
    from matplotlib.figure import Figure

    from optsched.report.sweep import plot_jct_vs_load, plot_sweep_bars, plot_sweep_cdf

    result = ExperimentResult.from_store(store)
    fig = Figure()
    ax = fig.add_subplot()
    assert plot_sweep_cdf(result, kind="jct", load=2.0, ax=ax) is fig
    lines = ax.get_lines()
    # at load 2 the two policies finish every job at the same time: one line, both names
    # (drawn twice, the second would hide the first)
    assert [ln.get_label() for ln in lines] == ["fifo = srtf"]
    # every job finished: each line climbs to 1 over the pooled jobs of the three seeds
    runs = result.runs[(result.runs["load"] == 2.0) & (result.runs["policy"] == "fifo")]
    pooled = sorted(
        j for key, v in result.jcts.items() if key[4] == 2.0 and key[5] == "fifo" for j in v
    )
    x, y = lines[0].get_data()
    assert len(x) == int(runs["jobs"].sum()) == len(pooled)
    assert np.allclose(np.asarray(x) * 3600.0, pooled) and y[-1] == pytest.approx(1.0)
    fig = plot_jct_vs_load(result)
    (axes,) = fig.axes
    bars = axes.containers  # one errorbar per policy
    assert [c.get_label() for c in bars] == ["fifo", "srtf"]
    summary = result.to_frame()
    want = summary[summary["policy"] == "srtf"]["jct_mean_mean"].to_numpy() / 3600.0
    assert np.allclose(bars[1].lines[0].get_ydata(), want)
    fig = plot_sweep_bars(result, "makespan")
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert np.allclose(sorted(heights), sorted(summary["makespan_mean"]))
    with pytest.raises(KeyError):
        plot_sweep_cdf(result, load=7.0)


def test_certified_gaps_get_their_figures(tmp_path: Path) -> None:
    path = tmp_path / "b.toml"
    path.write_text(EXPERIMENT.replace("[outputs]", "bounds = true\n\n[outputs]"), "utf-8")
    result = run_experiment(path, backend="serial")
    report = sweep_report(result)
    gap = next(s for s in report.sections if s.title == "Gap to the bound")
    assert len(gap.figures) == 3
    rows = _markdown_table(report.to_markdown())
    frame = result.to_frame()
    for row, (_, want) in zip(rows, frame.iterrows(), strict=True):
        cell = row["gap makespan"]
        assert _matches(cell, want["gap_makespan_mean"], want["gap_makespan_ci"]), cell
