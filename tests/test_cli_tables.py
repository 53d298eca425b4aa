"""Tables for terminals: every result on stdout within 100 columns, diagnostics on stderr.

Every table-printing command of the README tour (on the small inputs shipped in tests/data) is
run in-process with click's runner, stdout and stderr apart, once with ``COLUMNS`` unset and
once with ``COLUMNS=200``: each line of its stdout is at most 100 characters, whatever the
terminal claims, and nothing of the result reaches stderr. ``--wide`` prints every column on
one line. The listing commands (``solvers``, ``limits``, ``families``) print on stdout, so
``optsched solvers | grep highs`` finds it. Work a time limit left undone (the certified
bound's LPs) is said under the comparison table, not only in the JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from optsched.cli import cli
from optsched.report._text import TABLE_WIDTH, TextTable

DATA = Path(__file__).resolve().parent / "data" / "traces"
GAVEL = DATA / "gavel" / "physical_cluster_small_test.trace"
ELASTICFLOW = DATA / "elasticflow" / "cluster10_head40.csv"

#: The tour's table-printing commands, on small inputs; ``{name}`` is a file of the fixture.
COMMANDS: list[str] = [
    "families",
    "solvers",
    "limits",
    "schema --list",
    "validate {inst} {sched}",
    "oasis offline {inst}",
    "oasis online {inst}",
    "oasis check {inst}",
    "profile --list",
    "profile resnet50",
    "profile resnet50 --layers",
    "pace run resnet50 --workers 8 --bandwidth 10",
    "pace sweep resnet18 --bandwidths 1,10 --workers 4 -o {pace_sweep}",
    "oasis ratio --instances 1 --jobs 3 --horizon 4 --worker-servers 2 --ps-servers 2 -o {ratio}",
    "placement solve {placement} --objective servers",
    "placement compare {placement}",
    "tensorlights compare --generate",
    f"sim run {GAVEL} --cluster v100=4 --policy fifo",
    f"sim compare {GAVEL} --cluster v100=4,p100=4 --policies fifo,srtf,max-min-perf,"
    "tiresias-las --bound",
    f"sim compare {ELASTICFLOW} --cluster a100=16:8 --policies fifo,srtf,tiresias-las,elasticflow "
    "--offered-load 0.8 --bound",
    "sim sweep {jobs} --cluster v100=4 --policies fifo,srtf --scales 1,2 --n-jobs 1",
    f"trace info {ELASTICFLOW}",
    "sim policies",
]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The instances the commands read, written by the commands of the tour."""
    folder = tmp_path_factory.mktemp("tour")
    paths = {
        name: str(folder / file)
        for name, file in (
            ("inst", "inst.json"),
            ("sched", "sched.json"),
            ("placement", "placement.json"),
            ("jobs", "jobs.csv"),
            ("pace_sweep", "pace_sweep.csv"),
            ("ratio", "ratio"),
        )
    }
    runner = CliRunner()
    for line in (
        "oasis generate --jobs 6 --worker-servers 2 --ps-servers 2 --horizon 6 --seed 1 -o {inst}",
        "oasis offline {inst} --json -o {sched}",
        "placement generate --jobs 4 --servers 4 --seed 0 -o {placement}",
        f"trace convert {GAVEL} {{jobs}}",
    ):
        done = runner.invoke(cli, line.format(**paths).split())
        assert done.exit_code == 0, (line, done.output)
    yield paths


def _invoke(args: list[str], columns: str | None) -> Result:
    return CliRunner().invoke(cli, args, env={"COLUMNS": columns})


def _width(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


@pytest.mark.solver("highs")
@pytest.mark.parametrize("columns", [None, "200"], ids=["COLUMNS-unset", "COLUMNS-200"])
@pytest.mark.parametrize("command", COMMANDS)
def test_every_table_fits_100_columns_on_stdout(
    files: dict[str, str], command: str, columns: str | None
) -> None:
    done = _invoke(command.format(**files).split(), columns)
    assert done.exit_code == 0, done.output
    assert done.stdout.strip(), f"{command}: no result on stdout"
    assert _width(done.stdout) <= TABLE_WIDTH, done.stdout


@pytest.mark.parametrize("command", ["solvers", "limits", "families"])
def test_listings_go_to_stdout(command: str) -> None:
    done = _invoke([command], None)
    assert done.exit_code == 0 and done.stderr == ""
    # what `optsched solvers | grep highs` sees
    grep = {"solvers": "highs", "limits": "OPTSCHED_MAX_FILE_BYTES", "families": "oasis"}
    assert any(grep[command] in line for line in done.stdout.splitlines())


@pytest.mark.solver("highs")
def test_wide_prints_every_column_on_one_line(files: dict[str, str]) -> None:
    args = f"sim compare {GAVEL} --cluster v100=4,p100=4 --policies fifo,srtf --bound".split()
    narrow = _invoke(args, None)
    wide = _invoke([*args, "--wide"], None)
    assert narrow.exit_code == wide.exit_code == 0
    assert "(part 1 of 2)" in narrow.stdout and "part 1" not in wide.stdout
    # one header line holds every column side by side
    head = next(line for line in wide.stdout.splitlines() if "policy" in line)
    for column in ("JCT mean", "GPU-hours", "certified gap makespan (%)", "valid"):
        assert column in head
    assert _width(wide.stdout) > TABLE_WIDTH
    # the same rows either way: each policy's first cell
    assert narrow.stdout.count("│ fifo ") == 2 * wide.stdout.count("│ fifo ")


def test_a_split_table_keeps_every_cell_and_repeats_the_row_name() -> None:
    table = TextTable("t", notes=["a note " * 30])
    table.add_column("policy", justify="left", wrap=True)
    for k in range(12):
        table.add_column(f"metric number {k} (h)")
    name = "a-policy-name-longer-than-the-text-cap-of-thirty-two-characters"
    table.add_row(name, *(f"{1000 + k}.25" for k in range(12)))
    lines = table.render_lines(TABLE_WIDTH)
    assert _width("\n".join(lines)) <= TABLE_WIDTH
    text = "\n".join(lines)
    parts = text.count("(part ")
    assert parts >= 2
    for k in range(12):
        assert f"{1000 + k}.25" in text  # never cut
    # the long name is folded, not cut, in every part: its pieces are the first cells
    first_cells = "".join(line.split("│")[1].strip() for line in lines if line.startswith("│"))
    assert first_cells.count(name) == parts
    assert "a note a note" in text
    wide = table.render_lines(None)
    assert sum("1011.25" in line for line in wide) == 1 and _width("\n".join(wide)) > 100


@pytest.mark.solver("highs")
def test_work_skipped_for_lack_of_time_is_said_under_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # no time left for any LP, decided by the bound's own clock (not by the machine's speed)
    from optsched.sim.optimum import bounds

    monkeypatch.setattr(bounds._Run, "left", lambda self: 0.0)
    args = f"sim compare {GAVEL} --cluster v100=4 --policies fifo --bound --time-limit 60"
    done = _invoke(args.split(), None)
    assert done.exit_code == 0, done.output
    assert "skipped for weighted-jct: interval-lp: skipped, no time left" in done.stdout
    assert "out of time: a weaker relaxation" in done.stdout
    as_json = json.loads(_invoke([*args.split(), "--json"], None).stdout)
    assert "interval-lp: skipped, no time left" in as_json["bounds"]["weighted-jct"]["notes"]


@pytest.mark.solver("highs")
def test_simulator_json_names_its_units(files: dict[str, str]) -> None:
    done = _invoke(f"sim run {GAVEL} --cluster v100=4 --policy fifo --json".split(), None)
    payload = json.loads(done.stdout)
    units = payload["units"]
    assert units["jct_mean"] == units["makespan"] == "s" and units["gpu_hours"] == "GPU-h"
    assert set(payload["metrics"]) - {"policy", "status", "truncated"} <= set(units)
    done = _invoke(
        f"sim compare {GAVEL} --cluster v100=4 --policies fifo --bound --json".split(), None
    )
    units = json.loads(done.stdout)["units"]
    assert units["bounds.*.value"].startswith("s") and "bound_gap_*" in units


def test_sweep_json_with_an_output_file_prints_one_line(
    files: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "rows.csv"
    args = f"sim sweep {files['jobs']} --cluster v100=4 --policies fifo,srtf --n-jobs 1 --json"
    done = _invoke([*args.split(), "-o", str(out)], None)
    assert done.exit_code == 0 and len(done.stdout.strip().splitlines()) == 1
    line = json.loads(done.stdout)
    assert line == {
        "output": str(out),
        "written": "csv",
        "runs": 2,
        "policies": ["fifo", "srtf"],
        "valid": True,
        "unfinished": 0,
    }
    assert len(out.read_text().splitlines()) == 1 + 2  # the rows are in the file
    whole = json.loads(_invoke(args.split(), None).stdout)
    assert whole["runs"] == 2 and len(whole["rows"]) == 2 and whole["units"]["jct_mean"] == "s"
