"""The third hardening campaign: each breach of its report, as a test that failed before its fix.

Experiment files that ran code while being read, options coerced instead of validated, absurd
time values accepted, reports and stores that crashed or carried raw HTML, refused
combinations that exited 1, and batch-size schedules without a bound. The subprocess tests run
the ``optsched`` command as a user does, where a breach would end the test process itself
(``os.abort``) or block it (``signal.pause``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from optsched import limits
from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.report.sweep import sweep_report
from optsched.runs.experiment import (
    Experiment,
    ExperimentResult,
    load_experiment,
    run_experiment,
)
from optsched.sim import parse_cluster, simulate
from optsched.sim.policies import make_policy, policy_names, unregister_policy
from optsched.sim.world.jobs import World
from optsched.sim.world.load import at_arrival_rate, at_offered_load

OPTSCHED = [str(Path(sys.executable).with_name("optsched"))]
if not Path(OPTSCHED[0]).exists():  # pragma: no cover - an install without the script
    OPTSCHED = [sys.executable, "-c", "from optsched.cli import main; main()"]

HEAD = 'name = "t"\ntraces = ["synthetic:6"]\nclusters = ["v100=4"]\n'

#: A module whose import leaves a file behind: any import of it is visible.
MARKER = "from pathlib import Path\nPath(__file__).with_name('IMPORTED').write_text('x')\n"

#: A plug-in that registers one policy when imported (the legitimate use).
PLUGIN = (
    "from optsched.sim.policies import FIFO, register_policy\n"
    "from pathlib import Path\n"
    "Path(__file__).with_name('IMPORTED').write_text('x')\n"
    "register_policy('round3-fifo', FIFO)\n"
)


def trace_text(arrivals: list[float], gpus: int = 1) -> str:
    """A normalized job table, one 1-GPU ResNet-18 job per arrival."""
    head = "job_id,arrival,num_gpus,model,total_steps,duration,batch_size,weight,deadline,user\n"
    rows = (f"j{i},{a!r},{gpus},ResNet-18,,100,32,1,,u\n" for i, a in enumerate(arrivals))
    return head + "".join(rows)


def write(tmp_path: Path, body: str, name: str = "exp.toml") -> Path:
    path = tmp_path / name
    path.write_text(HEAD + body, encoding="utf-8")
    return path


def run_cli(args: list[str], cwd: Path, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*OPTSCHED, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def marker_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``round3_marker`` importable from ``tmp_path`` (on ``sys.path``), never imported yet."""
    (tmp_path / "round3_marker.py").write_text(MARKER)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path / "IMPORTED"
    sys.modules.pop("round3_marker", None)


@pytest.fixture
def no_plugin_policy() -> Iterator[None]:
    yield
    if "round3-fifo" in policy_names():
        unregister_policy("round3-fifo")


# -- 1. reading an experiment file runs code ---------------------------------------------------


@pytest.mark.parametrize(
    ("policies", "field"),
    [
        ('["round3_marker:x"]', "policies[0]"),
        ('[{ name = "round3_marker:x" }]', "policies[0].name"),
    ],
)
def test_a_module_attr_policy_in_a_file_is_refused_and_never_imported(
    tmp_path: Path, marker_module: Path, policies: str, field: str
) -> None:
    path = write(tmp_path, f"policies = {policies}\n")
    with pytest.raises(InvalidInstanceError) as info:
        load_experiment(path)
    assert info.value.field == field and info.value.file == str(path)
    assert "run code" in info.value.message
    assert not marker_module.exists() and "round3_marker" not in sys.modules
    # the opt-in is for the `plugins` key only: it does not make a factory name acceptable
    with pytest.raises(InvalidInstanceError):
        load_experiment(path, allow_plugins=True)
    assert not marker_module.exists()


@pytest.mark.parametrize("target", ["os:abort", "sys:exit", "signal:pause", "os:system"])
def test_a_file_naming_a_dangerous_callable_exits_2_naming_the_key(
    tmp_path: Path, target: str
) -> None:
    path = write(tmp_path, f'policies = ["{target}"]\n')
    done = run_cli(["sim", "sweep", str(path), "--backend", "serial", "--json"], tmp_path)
    assert done.returncode == 2, done.stderr
    payload = json.loads(done.stdout)
    assert payload["field"] == "policies[0]" and payload["file"] == str(path)
    assert "Traceback" not in done.stderr


def test_plugins_are_imported_only_with_the_opt_in(tmp_path: Path, no_plugin_policy: None) -> None:
    (tmp_path / "plug.py").write_text(PLUGIN)
    path = write(tmp_path, 'plugins = ["plug.py"]\npolicies = ["round3-fifo"]\n')
    with pytest.raises(InvalidInstanceError) as info:
        load_experiment(path)
    assert info.value.field == "plugins" and "--allow-plugins" in info.value.message
    assert not (tmp_path / "IMPORTED").exists()
    assert main(["sim", "sweep", str(path), "--backend", "serial", "--json"]) == 2
    assert not (tmp_path / "IMPORTED").exists()
    # opted in: imported (probed in a separate interpreter first, then here) and runnable
    result = run_experiment(path, backend="serial", allow_plugins=True)
    assert (tmp_path / "IMPORTED").exists()
    # labelled by the name the policy gives itself (FIFO's), as compare and sweep label it
    assert list(result.runs["policy"]) == ["fifo"] and bool(result.runs["valid"].all())
    assert result.policy_specs == {"fifo": "round3-fifo"}


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("import os\nos.abort()\n", "SIGABRT"),
        ("import sys\nsys.exit(0)\n", "exited with status 0"),
        ("import os\nos._exit(3)\n", "exited with status 3"),
        ("raise RuntimeError('boom')\n", "RuntimeError: boom"),
        ("import signal\nsignal.pause()\n", "did not finish importing within 3 s"),
    ],
    ids=["abort", "exit0", "os-exit", "raise", "hang"],
)
def test_a_plugin_that_ends_or_blocks_its_import_is_refused_naming_it(
    tmp_path: Path, body: str, words: str
) -> None:
    # run in a subprocess: before the guard, an abort ended the process that imported it
    (tmp_path / "plug.py").write_text(body)
    path = write(tmp_path, 'plugins = ["plug.py"]\npolicies = ["fifo"]\n')
    done = run_cli(
        ["sim", "sweep", str(path), "--allow-plugins", "--plugin-timeout", "3", "--json"],
        tmp_path,
    )
    assert done.returncode == 2, done.stderr
    payload = json.loads(done.stdout)
    assert payload["field"] == "plugins[0]" and words in payload["message"]
    assert "plug.py" in payload["message"]


def test_a_dotted_plugin_module_is_probed_before_its_package_is_imported(tmp_path: Path) -> None:
    # finding `pkg.mod` imports `pkg`: that too happens in the probe, not in the command
    (tmp_path / "round3pkg").mkdir()
    (tmp_path / "round3pkg" / "__init__.py").write_text("import os\nos.abort()\n")
    (tmp_path / "round3pkg" / "mod.py").write_text("")
    path = write(tmp_path, 'plugins = ["round3pkg.mod"]\npolicies = ["fifo"]\n')
    done = subprocess.run(
        [*OPTSCHED, "sim", "sweep", str(path), "--allow-plugins", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])},
    )
    assert done.returncode == 2, done.stderr
    payload = json.loads(done.stdout)
    assert payload["field"] == "plugins[0]" and "SIGABRT" in payload["message"]


def test_the_plugin_option_of_the_command_line_is_guarded_too(tmp_path: Path) -> None:
    (tmp_path / "plug.py").write_text("import sys\nsys.exit(0)\n")
    done = run_cli(["sim", "policies", "--plugin", str(tmp_path / "plug.py"), "--json"], tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert json.loads(done.stdout)["field"] == "--plugin"


@pytest.mark.parametrize(
    ("outputs", "field"),
    [
        ('csv = "/tmp/elsewhere.csv"', "outputs.csv"),
        ('report = "../up"', "outputs.report"),
        ('store = "a/../../b.sqlite"', "outputs.store"),
        ('store = "~/b.sqlite"', "outputs.store"),
    ],
)
def test_outputs_named_by_the_file_stay_in_its_folder(
    tmp_path: Path, outputs: str, field: str
) -> None:
    path = write(tmp_path, f'policies = ["fifo"]\n[outputs]\n{outputs}\n')
    with pytest.raises(InvalidInstanceError) as info:
        load_experiment(path)
    assert info.value.field == field


def test_an_output_through_a_link_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    inside = tmp_path / "exp"
    inside.mkdir()
    (inside / "out").symlink_to(tmp_path)
    path = write(inside, 'policies = ["fifo"]\n[outputs]\ncsv = "out/runs.csv"\n')
    from optsched.runs.experiment import resolve_output

    loaded = load_experiment(path)
    with pytest.raises(InvalidInstanceError) as info:
        resolve_output(loaded, "out/runs.csv", "outputs.csv")
    assert info.value.field == "outputs.csv"
    assert main(["sim", "sweep", str(path), "--backend", "serial", "--json"]) == 2
    assert not (tmp_path / "runs.csv").exists()
    # the command line may write anywhere
    target = tmp_path / "elsewhere" / "runs.csv"
    args = ["sim", "sweep", str(path), "--backend", "serial", "--csv", str(target)]
    assert main(args) == 0 and target.is_file()


# -- 2. a silently wrong option ----------------------------------------------------------------


@pytest.mark.parametrize("value", ['"no"', '"false"', "0", '"true"'])
def test_a_boolean_option_is_not_coerced(tmp_path: Path, value: str) -> None:
    path = write(
        tmp_path, f'policies = [{{ name = "fifo", options = {{ backfill = {value} }} }}]\n'
    )
    with pytest.raises(InvalidInstanceError) as info:
        load_experiment(path)
    assert info.value.field == "policies[0].options.backfill"
    assert "bool" in info.value.message


def test_typed_options_still_reach_the_constructor(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'policies = [{ name = "fifo", options = { backfill = true } }, '
        '{ name = "allox", options = { alpha = 1 } }]\n',
    )
    loaded = load_experiment(path)
    from optsched.runs.experiment import make_experiment_policy

    fifo, allox = (make_experiment_policy(s) for s in loaded.experiment.policy_specs)
    assert fifo.name == "fifo-backfill" and allox.alpha == 1.0


# -- 3. absurd time values ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("round_seconds = 1e300", "round_seconds"),
        ("round_seconds = 1e-300", "round_seconds"),
        ("loads = [1e-300]", "loads[0]"),
        ("loads = [1.0, 1e300]", "loads[1]"),
        ("restore_s = 1e300", "restore_s"),
        (
            'policies = [{ name = "chronus", options = { lease_s = 1e300 } }]',
            "policies[0].options.lease_s",
        ),
    ],
)
def test_absurd_times_in_a_file_are_refused_before_any_run(
    tmp_path: Path, body: str, field: str
) -> None:
    text = body if body.startswith("policies") else 'policies = ["fifo"]\n' + body
    path = write(tmp_path, text + "\n")
    with pytest.raises(InvalidInstanceError) as info:
        load_experiment(path)
    assert info.value.field == field
    assert "within" in info.value.message


def _world(arrivals: tuple[float, ...] = (0.0, 30.0, 60.0, 90.0), gpus: str = "v100=2") -> World:
    import io

    frame = pd.read_csv(io.StringIO(trace_text(list(arrivals))))
    return World.from_frame(frame, parse_cluster(gpus))


@pytest.mark.parametrize("value", [1e-300, 1e300, 1e-4])
def test_absurd_loads_are_refused_naming_the_load(value: float) -> None:
    world = _world()
    for scale in (at_arrival_rate, at_offered_load):
        with pytest.raises(InvalidInstanceError) as info:
            scale(world, value)
        assert info.value.field == "load"


def test_a_load_that_moves_arrivals_past_a_traces_range_is_refused() -> None:
    world = _world((0.0, 1e10), "v100=1")
    with pytest.raises(InvalidInstanceError) as info:
        at_arrival_rate(world, 1e-3)
    assert info.value.field == "load" and "1e+12" in info.value.message


@pytest.mark.parametrize("value", [1e300, 1e-300])
def test_an_absurd_round_is_refused_before_the_run(value: float) -> None:
    with pytest.raises(InvalidInstanceError) as info:
        simulate(_world(), make_policy("fifo"), round_seconds=value)
    assert info.value.field == "round_seconds"


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--offered-load", "1e-300"),
        ("--load", "1e-300"),
        ("--round-seconds", "1e300"),
        ("--restore-seconds", "1e300"),
    ],
)
def test_absurd_time_options_exit_2_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(trace_text([0.0, 30.0, 60.0, 90.0]))
    args = ["sim", "run", str(trace), "--cluster", "v100=2", "--policy", "fifo", flag, value]
    assert main([*args, "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["field"] == flag
    args = ["sim", "compare", str(trace), "--cluster", "v100=2", "--policies", "fifo", flag, value]
    assert main([*args, "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["field"] == flag


def test_the_ranges_are_the_closed_list_of_the_limits_page() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "guide" / "limits.rst").read_text()
    for name, r in limits.RANGES.items():
        assert f"``{name}``" in page, name
        assert f"{r.low:g}" in page and f"{r.high:g}" in page, name


# -- 7. sim report on input it accepted --------------------------------------------------------


def test_a_report_of_a_store_without_a_finished_run(tmp_path: Path) -> None:
    (tmp_path / "big.csv").write_text(trace_text([0.0], gpus=8))
    path = tmp_path / "exp.toml"
    path.write_text(
        'name = "z"\ntraces = ["big.csv"]\nclusters = ["v100=4"]\npolicies = ["fifo"]\n'
    )
    store = tmp_path / "z.sqlite"
    assert main(["sim", "sweep", str(path), "--backend", "serial", "--store", str(store)]) == 2
    assert store.is_file()
    assert main(["sim", "report", str(store), "-o", str(tmp_path / "rep")]) == 0
    assert "no finished run" in (tmp_path / "rep" / "report.md").read_text()


def _result_with(
    tmp_path: Path, name: str, label: str, trace: str | None = None
) -> ExperimentResult:
    traces = ["synthetic:6"]
    if trace is not None:
        (tmp_path / trace).write_text(trace_text([0.0, 30.0, 60.0, 90.0]))
        traces = [trace]
    experiment = Experiment.from_dict(
        {
            "name": name,
            "traces": traces,
            "clusters": ["v100=8"],
            "policies": [{"name": "fifo", "label": label}],
        }
    )
    from optsched.runs.experiment import ExperimentFile

    loaded = ExperimentFile.from_experiment(experiment, base=tmp_path)
    return run_experiment(loaded, backend="serial")


@pytest.mark.parametrize(
    ("label", "trace"),
    [("$\\bad{$", None), ("a $x^$ b", None), ("fifo", "t$\\bad{$.csv")],
    ids=["label", "label-2", "trace"],
)
def test_figures_draw_labels_and_trace_names_with_dollars_literally(
    tmp_path: Path, label: str, trace: str | None
) -> None:
    result = _result_with(tmp_path, "math", label, trace)
    paths = sweep_report(result).write(tmp_path / "rep")
    assert paths["html"].is_file() and list((tmp_path / "rep" / "figures").glob("*.png"))


# -- 8. store contents trusted once the checksum matches ---------------------------------------


def _rewrite(store: Path, edit: str) -> None:
    """Rewrite the store's record (or config) and give it a checksum that matches."""
    with sqlite3.connect(store) as db:
        meta = dict(db.execute("SELECT name, value FROM meta").fetchall())
        key, text = db.execute("SELECT key, record FROM runs").fetchone()
        record = json.loads(text)
        if edit == "config":
            config = json.loads(meta["config"])
            del config["spec"]
            db.execute("UPDATE meta SET value = ? WHERE name = 'config'", (json.dumps(config),))
            return
        new = {
            "deep": "[" * 100_000 + "]" * 100_000,
            "number": "42",
            "null": "null",
            "string": json.dumps({**record, "jct_mean": "abc"}),
            "nested": json.dumps({**record, "makespan": {"a": [1]}}),
            "no-key": json.dumps({k: v for k, v in record.items() if k != "policy"}),
            "bool-seed": json.dumps({**record, "seed": True}),
        }[edit]
        digest = hashlib.sha256(f"{meta['kind']}\0{key}\0{new}".encode()).hexdigest()
        db.execute("UPDATE runs SET record = ?, checksum = ?", (new, digest))


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        ("deep", r"runs\[.*\]$"),
        ("number", r"runs\[.*\]$"),
        ("null", r"runs\[.*\]$"),
        ("string", r"runs\[.*\]\.jct_mean$"),
        ("nested", r"runs\[.*\]\.makespan$"),
        ("no-key", r"runs\[.*\]\.policy$"),
        ("bool-seed", r"runs\[.*\]\.seed$"),
        ("config", r"config\.spec$"),
    ],
)
def test_a_store_rewritten_with_valid_checksums_is_refused_naming_store_and_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: str, field: str
) -> None:
    path = write(tmp_path, 'policies = ["fifo"]\n')
    store = tmp_path / "s.sqlite"
    run_experiment(path, backend="serial", store=store)
    _rewrite(store, edit)
    with pytest.raises(InvalidInstanceError) as info:
        ExperimentResult.from_store(store)
    assert re.match(field, info.value.field), info.value.field
    assert info.value.file == str(store)
    assert main(["sim", "report", str(store), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["file"] == str(store)


# -- 9. HTML outside report.html ---------------------------------------------------------------


def _outside_fences(markdown: str) -> str:
    return re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?^\1$", "", markdown)


def test_markdown_and_notebook_html_escape_names_and_labels(tmp_path: Path) -> None:
    name, label = "<script>alert(1)</script>", "<img src=x onerror=alert(1)>|```"
    result = _result_with(tmp_path, name, label)
    markdown = sweep_report(result).to_markdown()
    shown = _outside_fences(markdown)
    assert "<script" not in shown and "<img" not in shown
    assert "&lt;script&gt;" in shown and "&lt;img" in shown
    for html in (result._repr_html_(), sweep_report(result)._repr_html_()):
        assert "<script" not in html and "<img src=x" not in html
    # the experiment text's own fence cannot be closed by a ``` in it
    text = "name = '```'\n<script>\n"
    fenced = sweep_report(
        ExperimentResult(runs=pd.DataFrame(), name="x", text=text, sha256="0")
    ).to_markdown()
    assert "<script>" not in _outside_fences(fenced)


# -- 10. exit 1 for refused combinations -------------------------------------------------------


def test_a_report_path_naming_a_file_exits_2_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "taken").write_text("x")
    path = write(tmp_path, 'policies = ["fifo"]\n[outputs]\nreport = "taken"\nstore = "s.sqlite"\n')
    assert main(["sim", "sweep", str(path), "--backend", "serial", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["field"] == "outputs.report"
    assert not (tmp_path / "s.sqlite").exists()


@pytest.mark.parametrize("command", ["run", "compare"])
def test_gavels_mechanism_with_a_policy_it_cannot_run_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(trace_text([0.0]))
    flag = "--policy" if command == "run" else "--policies"
    args = ["sim", command, str(trace), "--cluster", "v100=2", flag, "optimus"]
    assert main([*args, "--mechanism", "gavel", "--json"]) == 2
    payload = json.loads(capsys.readouterr().out)
    assert payload["field"] == "--mechanism" and "optimus" in payload["message"]


# -- 11. unbounded batch-size schedules --------------------------------------------------------


def test_a_dynamic_job_of_absurd_length_is_refused_before_its_schedule_is_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fields = ["ResNet-50 (batch size 32)", "python3 main.py", "wd", "--steps", "1",
              "1000000000000000", "1", "accordion", "1", "-1", "3600.0", "0.0"]  # fmt: skip
    trace = tmp_path / "dyn.trace"
    trace.write_text("\t".join(fields) + "\n")
    args = ["sim", "run", str(trace), "--cluster", "v100=4", "--policy", "max-min-perf"]
    with limits.override(max_schedule_epochs=100_000):
        assert main([*args, "--json"]) == 2
    payload = json.loads(capsys.readouterr().out)
    assert payload["field"] == "total_steps" and "max_schedule_epochs" in payload["message"]


# -- 5. hostile names through every writer -------------------------------------------------------

HOSTILE = "[/x] [bold]<script>alert(1)</script> $\\bad{$ |`"


def test_hostile_names_pass_through_every_writer_as_text(tmp_path: Path) -> None:
    """Console (rich markup), Markdown, HTML, notebook HTML and figures, one hostile name each."""
    from optsched.report.sim import plot_jct_cdf

    trace = tmp_path / f"{HOSTILE.replace('/', '_')}.csv"
    trace.write_text(trace_text([0.0, 30.0, 60.0, 90.0]))
    body = (
        f"name = {json.dumps(HOSTILE)}\ntraces = [{json.dumps(trace.name)}]\n"
        f'clusters = ["v100=4"]\npolicies = [{{ name = "fifo", label = {json.dumps(HOSTILE)} }}]\n'
    )
    path = tmp_path / "exp.toml"
    path.write_text(body)
    report = tmp_path / "rep"
    args = ["sim", "sweep", str(path), "--backend", "serial", "--report", str(report)]
    assert main(args) == 0  # the console summary prints the label as text
    markdown = _outside_fences((report / "report.md").read_text())
    assert "<script" not in markdown and "[bold]" in markdown
    assert "<script>" not in (report / "report.html").read_text()
    # sim run's console table and a figure titled by a policy whose name is data
    assert main(["sim", "run", str(trace), "--cluster", "v100=4", "--policy", "fifo"]) == 0
    result = simulate(_world(), make_policy("fifo"))
    result.policy = HOSTILE
    fig = plot_jct_cdf([result])
    fig.savefig(tmp_path / "cdf.png")


def test_a_store_naming_code_imports_nothing_when_read(tmp_path: Path, marker_module: Path) -> None:
    """The experiment a store holds is data too: a factory or plug-in in it is never imported."""
    path = write(tmp_path, 'policies = ["fifo"]\n')
    store = tmp_path / "s.sqlite"
    run_experiment(path, backend="serial", store=store)
    with sqlite3.connect(store) as db:
        config = json.loads(
            db.execute("SELECT value FROM meta WHERE name = 'config'").fetchone()[0]
        )
        config["spec"]["policies"] = ["round3_marker:x"]
        config["spec"]["plugins"] = ["round3_marker"]
        db.execute("UPDATE meta SET value = ? WHERE name = 'config'", (json.dumps(config),))
    with pytest.raises(InvalidInstanceError) as info:
        ExperimentResult.from_store(store)
    assert info.value.field.startswith("config.spec.policies") and info.value.file == str(store)
    assert not marker_module.exists() and "round3_marker" not in sys.modules
