"""One study, one meaning: the same numbers from every entry point of the simulator.

One study (a slice of a Gavel trace, a cluster, the trace's default throughput table, three
policies of which one has options, two seeds and two loads) runs through
:func:`optsched.sim.simulate` (on :func:`~optsched.sim.comparison.world_from_trace`),
:func:`optsched.sim.compare`, :func:`optsched.runs.sim_sweep.sweep`, the command line
(``sim run``, ``sim compare``, ``sim sweep``) and an experiment file (in Python and on the
command line); every entry point gives bit-identical run metrics (and, where it keeps them,
per-job JCTs) under one label per policy.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.runs.experiment import load_experiment, run_experiment
from optsched.runs.sim_sweep import sweep
from optsched.sim import compare, simulate
from optsched.sim.comparison import labelled_policies, world_from_trace
from optsched.sim.measure.metrics import job_metrics, run_metrics
from optsched.sim.policies import OrderPolicy, unregister_policy
from optsched.sim.policies.basic import SRTF

DATA = Path(__file__).resolve().parent / "data" / "traces" / "gavel"
SOURCE = DATA / "msr_seed0_0e4a51_head40.trace"
#: Every job of the shipped artifact trace arrives at 0 (Gavel's physical-cluster test).
ALL_AT_ZERO = DATA / "physical_cluster_small_test.trace"

CLUSTER = "v100=1,p100=1,k80=1"
SEEDS = (0, 1)
LOADS = (1.0, 2.0)
#: The run metrics every entry point reports (run_metrics); compared exactly.
METRICS = (
    "jct_mean",
    "jct_median",
    "jct_p95",
    "jct_p99",
    "weighted_jct_mean",
    "makespan",
    "gpu_hours",
    "finished",
    "unfinished",
)
#: The labels every entry point shows: srtf with aware=True names itself srtf-perf.
LABELS = {"fifo", "tiresias-las", "srtf-perf"}

PLUGIN = (
    "from optsched.sim.policies import register_policy\n"
    "from optsched.sim.policies.basic import SRTF\n"
    "register_policy('srtf-aware', lambda: SRTF(aware=True), replace=True)\n"
)

EXPERIMENT = f"""\
name = "one-study"
traces = ["study.trace"]
clusters = ["{CLUSTER}"]
policies = ["fifo", "tiresias-las", {{ name = "srtf", options = {{ aware = true }} }}]
seeds = [0, 1]
loads = [1.0, 2.0]
"""

Key = tuple[int, float, str]


@pytest.fixture
def study(tmp_path: Path) -> Iterator[Path]:
    """The study's folder: a 10-job slice of a Gavel trace, the plug-in and the experiment."""
    lines = SOURCE.read_text(encoding="utf-8").splitlines(keepends=True)[:10]
    (tmp_path / "study.trace").write_text("".join(lines), encoding="utf-8")
    (tmp_path / "srtf_aware.py").write_text(PLUGIN, encoding="utf-8")
    (tmp_path / "study.toml").write_text(EXPERIMENT, encoding="utf-8")
    yield tmp_path
    try:
        unregister_policy("srtf-aware")
    except InvalidInstanceError:
        pass  # the command line did not import the plug-in


def _policies() -> list[Any]:
    return ["fifo", "tiresias-las", SRTF(aware=True)]


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    payload: dict[str, Any] = json.loads(out)
    return payload


def _metrics(row: dict[str, Any]) -> dict[str, Any]:
    return {m: row[m] for m in METRICS}


def _by_api(trace: Path) -> tuple[dict[str, dict[Key, Any]], dict[Key, list[float]]]:
    """simulate and compare on the study's worlds: metrics and per-job JCTs."""
    got: dict[str, dict[Key, Any]] = {"simulate": {}, "compare": {}}
    jcts: dict[Key, list[float]] = {}
    for seed in SEEDS:
        for load in LOADS:
            world = world_from_trace(trace, CLUSTER, seed=seed, load=load)
            for policy in _policies():
                record = simulate(world, policy)
                jobs = job_metrics(record)
                key = (seed, load, record.policy)
                got["simulate"][key] = _metrics(run_metrics(record, jobs))
                jcts[key] = sorted(jobs["jct"].tolist())
            done = compare(world, _policies())
            for name, row in done.metrics.items():
                got["compare"][(seed, load, name)] = _metrics(row)
                assert (
                    sorted(job_metrics(done.runs[name])["jct"].tolist()) == jcts[(seed, load, name)]
                )
    return got, jcts


def test_one_study_gives_the_same_numbers_from_every_entry_point(
    study: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(study)
    trace = study / "study.trace"
    got, jcts = _by_api(trace)

    frame = sweep([str(trace)], CLUSTER, _policies(), seeds=SEEDS, loads=LOADS, backend="serial")
    got["sweep"] = {
        (int(r["seed"]), float(r["load"]), str(r["policy"])): _metrics(r)
        for r in frame.to_dict(orient="records")
    }
    assert set(frame["throughputs"]) == {"gavel"}  # the trace's own table, by its content
    assert frame.attrs["notes"] == []  # the arrivals differ: every seed and load counts

    result = run_experiment(study / "study.toml", backend="serial")
    got["experiment"] = {
        (int(r["seed"]), float(r["load"]), str(r["policy"])): _metrics(r)
        for r in result.runs.to_dict(orient="records")
    }
    for key, values in result.jcts.items():
        assert values == jcts[(key[3], key[4], key[5])]
    assert result.policy_specs == {"fifo": "fifo", "tiresias-las": "tiresias-las",
                                   "srtf-perf": "srtf"}  # fmt: skip

    plug = ["--plugin", str(study / "srtf_aware.py")]
    cli_policies = "fifo,tiresias-las,srtf-aware"
    got["sim run"], got["sim compare"] = {}, {}
    for load in LOADS:
        for name in cli_policies.split(","):
            args = ["sim", "run", str(trace), "--cluster", CLUSTER, "--policy", name]
            done = _cli([*args, *plug, "--load", f"{load:g}"], capsys)
            got["sim run"][(0, load, done["policy"])] = _metrics(done["metrics"])
        args = ["sim", "compare", str(trace), "--cluster", CLUSTER, "--policies", cli_policies]
        done = _cli([*args, *plug, "--load", f"{load:g}"], capsys)
        assert done["policy_specs"]["srtf-perf"] == "srtf-aware"
        for row in done["policies"]:
            got["sim compare"][(0, load, row["policy"])] = _metrics(row)
    args = ["sim", "sweep", str(trace), "--cluster", CLUSTER, "--policies", cli_policies]
    args += [*plug, "--seeds", "0,1", "--loads", "1,2", "--backend", "serial"]
    done = _cli(args, capsys)
    got["sim sweep"] = {(r["seed"], r["load"], r["policy"]): _metrics(r) for r in done["rows"]}
    done = _cli(["sim", "sweep", str(study / "study.toml"), "--backend", "serial"], capsys)
    got["sim sweep study.toml"] = {
        (r["seed"], r["load"], r["policy"]): _metrics(r) for r in done["rows"]
    }

    reference = got["simulate"]
    assert {k[2] for k in reference} == LABELS and len(reference) == 12
    for entry, rows in got.items():
        assert {k[2] for k in rows} == LABELS, entry  # one label per policy everywhere
        for key, values in rows.items():
            assert values == reference[key], (entry, key)  # bit-identical, not close
        if entry not in ("sim run", "sim compare"):  # these two have no seed: seed 0 only
            assert set(rows) == set(reference), entry
    # the two loads and the two seeds both change the runs of this trace
    assert reference[(0, 1.0, "tiresias-las")] != reference[(0, 2.0, "tiresias-las")]
    assert reference[(0, 1.0, "tiresias-las")] != reference[(1, 1.0, "tiresias-las")]


def test_a_gavel_trace_and_its_converted_csv_give_the_same_jcts(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace, csv = study / "study.trace", study / "study.csv"
    assert main(["trace", "convert", str(trace), str(csv)]) == 0
    capsys.readouterr()
    for seed, load in ((0, 1.0), (1, 2.0)):
        a = simulate(world_from_trace(trace, CLUSTER, seed=seed, load=load), "srtf")
        b = simulate(world_from_trace(csv, CLUSTER, seed=seed, load=load), "srtf")
        assert a.world.throughputs.source == b.world.throughputs.source == "gavel"
        assert job_metrics(a)["jct"].tolist() == job_metrics(b)["jct"].tolist()


# -- knobs that change nothing -----------------------------------------------------------------


def test_a_seed_and_load_sweep_over_arrivals_all_at_zero_says_it_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = str(ALL_AT_ZERO)
    frame = sweep([trace], "v100=2,p100=2,k80=2", "fifo,srtf", seeds=SEEDS, loads=LOADS,
                  backend="serial")  # fmt: skip
    metrics = frame.drop(columns=["seed", "load"]).groupby("policy").nunique()
    assert (metrics[list(METRICS)] == 1).all().all()  # the rows are identical: a no-op
    notes = frame.attrs["notes"]
    assert len(notes) == 2
    assert "loads (1, 2) give identical runs" in notes[0]
    assert "seeds (0, 1) give identical runs" in notes[1]
    assert "no policy's random stream" in notes[1]
    # on the command line: on stderr beside the table, and in the JSON
    args = ["sim", "sweep", trace, "--cluster", "v100=2,p100=2,k80=2", "--policies", "fifo"]
    args += ["--seeds", "0,1", "--loads", "1,2", "--backend", "serial"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "note: " in err and "give identical runs" in err
    done = _cli(args, capsys)
    assert done["notes"] == notes
    # an experiment file says it too
    (tmp_path / "zero.toml").write_text(
        f'name = "zero"\ntraces = ["{trace}"]\nclusters = ["v100=2,p100=2,k80=2"]\n'
        'policies = ["fifo"]\nseeds = [0, 1]\nloads = [1.0, 2.0]\n',
        encoding="utf-8",
    )
    result = run_experiment(tmp_path / "zero.toml", backend="serial")
    assert [n.split(": ", 1)[1] for n in result.notes] == [n.split(": ", 1)[1] for n in notes]
    done = _cli(["sim", "sweep", str(tmp_path / "zero.toml"), "--backend", "serial"], capsys)
    assert done["notes"] == result.notes


def test_equal_gaps_make_only_the_seed_a_no_op(tmp_path: Path) -> None:
    head = "job_id,arrival,num_gpus,duration\n"
    (tmp_path / "even.csv").write_text(
        head + "".join(f"j{i},{60 * i},1,{100 + 50 * i}\n" for i in range(5)), encoding="utf-8"
    )
    frame = sweep([str(tmp_path / "even.csv")], "v100=1", "fifo", seeds=SEEDS, loads=LOADS,
                  backend="serial")  # fmt: skip
    (note,) = frame.attrs["notes"]
    assert "gaps between arrivals are all 60 s, so the seeds (0, 1)" in note
    assert frame.groupby("seed")["jct_mean"].apply(tuple).nunique() == 1
    assert frame.groupby("load")["jct_mean"].apply(tuple).nunique() == 2
    # a study that varies neither knob has nothing to say; nor has a synthetic table's seed
    assert (
        sweep([str(tmp_path / "even.csv")], "v100=1", "fifo", backend="serial").attrs["notes"] == []
    )
    assert (
        sweep(["synthetic:5"], "v100=8", "fifo", seeds=SEEDS, backend="serial").attrs["notes"] == []
    )


# -- labels ------------------------------------------------------------------------------------


class SmallestGangFastest(OrderPolicy):
    """A plug-in policy whose class names itself."""

    base_name = "smallest-gang"

    def key(self, state: Any, s: Any) -> tuple[float, ...]:
        return (float(s.job.num_gpus),)


class Unnamed(OrderPolicy):
    """A plug-in policy that gives itself no name (it keeps the Policy base class's)."""

    def __init__(self) -> None:
        super().__init__()
        self.name = "policy"  # the Policy base class's name: no name of its own

    def key(self, state: Any, s: Any) -> tuple[float, ...]:
        return (float(s.job.num_gpus),)


def test_a_module_attr_policy_is_labelled_by_its_name_everywhere(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = str(study / "study.trace")
    spec = f"{__name__}:SmallestGangFastest"
    made = labelled_policies(f"fifo,{spec}")
    assert [(p.name, s) for p, s in made] == [("fifo", "fifo"), ("smallest-gang", spec)]
    # a sweep of a module:attr policy runs it (it was made again by its name, and refused)
    args = ["sim", "sweep", trace, "--cluster", CLUSTER, "--policies", f"fifo,{spec}"]
    done = _cli([*args, "--backend", "serial"], capsys)
    assert {r["policy"] for r in done["rows"]} == {"fifo", "smallest-gang"}
    assert done["policy_specs"] == {"fifo": "fifo", "smallest-gang": spec}
    done = _cli(["sim", "compare", trace, "--cluster", CLUSTER, "--policies", spec], capsys)
    assert [r["policy"] for r in done["policies"]] == ["smallest-gang"]
    assert done["policy_specs"] == {"smallest-gang": spec}
    # only a policy whose class gives no name is labelled by its spec
    unnamed = f"{__name__}:Unnamed"
    assert [p.name for p, _ in labelled_policies([unnamed])] == [unnamed]


def test_two_policies_with_one_name_are_refused_naming_both(study: Path) -> None:
    trace = str(study / "study.trace")
    with pytest.raises(InvalidInstanceError) as info:
        compare(trace, [SRTF(aware=True), "srtf-perf"], cluster=CLUSTER)
    assert info.value.field == "policies" and "srtf-perf" in info.value.message
    assert "basic:SRTF" in info.value.message  # the object's spec, beside the registry name
    with pytest.raises(InvalidInstanceError) as info:
        sweep([trace], CLUSTER, ["srtf-perf", SRTF(aware=True)], backend="serial")
    assert info.value.field == "policies"
    # an experiment labels srtf with aware = true as srtf-perf: beside srtf-perf, refused
    (study / "twice.toml").write_text(
        EXPERIMENT.replace('["fifo", "tiresias-las", ', '["srtf-perf", '), encoding="utf-8"
    )
    with pytest.raises(InvalidInstanceError) as info:
        load_experiment(study / "twice.toml")
    assert info.value.field == "policies[1].label" and "'srtf-perf'" in info.value.message
    # a label given tells them apart
    (study / "apart.toml").write_text(
        EXPERIMENT.replace('["fifo", "tiresias-las", ', '["srtf-perf", ').replace(
            'name = "srtf",', 'name = "srtf", label = "srtf-aware",'
        ),
        encoding="utf-8",
    )
    loaded = load_experiment(study / "apart.toml")
    assert [s.shown for s in loaded.experiment.policy_specs] == ["srtf-perf", "srtf-aware"]


# -- sim sweep's --cluster ---------------------------------------------------------------------


def test_sweep_cluster_is_required_for_traces_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sim", "sweep", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    cluster = text[text.index("--cluster") : text.index("--policies")]
    assert "[required]" not in cluster and "experiment file" in cluster
    # a trace without --cluster: refused naming the flag (exit 2), not run
    payload = json.loads(_out(main(["sim", "sweep", "synthetic:3", "--json"]), capsys))
    assert payload["field"] == "--cluster" and "clusters" in payload["message"]
    # an experiment file gives its own; one that does not is refused naming `clusters`
    (tmp_path / "exp.toml").write_text(
        'name = "x"\ntraces = ["synthetic:3"]\nclusters = ["v100=8"]\npolicies = ["fifo"]\n',
        encoding="utf-8",
    )
    done = _cli(["sim", "sweep", str(tmp_path / "exp.toml"), "--backend", "serial"], capsys)
    assert done["runs"] == 1
    (tmp_path / "none.toml").write_text(
        'name = "x"\ntraces = ["synthetic:3"]\npolicies = ["fifo"]\n', encoding="utf-8"
    )
    payload = json.loads(
        _out(main(["sim", "sweep", str(tmp_path / "none.toml"), "--json"]), capsys)
    )
    assert payload["field"] == "clusters"


def _out(code: int, capsys: pytest.CaptureFixture[str]) -> str:
    assert code == 2
    return capsys.readouterr().out


# -- inputs people write -----------------------------------------------------------------------

SCHEMA_FIXTURES = sorted((DATA.parent / "schema").glob("*.csv"))


def test_the_row_schema_requires_the_minimal_columns_and_states_the_defaults() -> None:
    import jsonschema

    from optsched.traces.schema import DEFAULTS, REQUIRED, row_schema

    schema = row_schema()
    validator = jsonschema.Draft202012Validator(schema)
    validator.check_schema(schema)
    assert schema["required"] == list(REQUIRED) == ["job_id", "arrival", "num_gpus"]
    for name, value in DEFAULTS.items():
        stated = schema["properties"][name]["default"]
        assert stated == value or (stated is None and value != value), name
        assert "optional" in schema["properties"][name]["description"]
    row = {"job_id": "a", "arrival": 0.0, "num_gpus": 1}
    assert validator.is_valid({**row, "duration": 5.0})
    assert validator.is_valid({**row, "total_steps": 100.0, "duration": None})
    assert not validator.is_valid(row)  # no work
    assert not validator.is_valid({**row, "total_steps": None, "duration": None})


@pytest.mark.parametrize("path", SCHEMA_FIXTURES, ids=lambda p: p.name)
def test_every_csv_reader_states_the_defaults_it_applied(path: Path) -> None:
    from optsched.traces import read_trace
    from optsched.traces.schema import DEFAULTS

    trace = read_trace(path)
    stated = trace.meta.get("defaults", {})
    assert stated, "every one of these formats lacks some normalized column"
    assert any("columns not in the file" in n for n in trace.meta["notes"])
    for name, value in stated.items():
        column = trace.jobs[name].tolist()
        want = DEFAULTS[name]
        assert value == want or (value is None and want != want), name  # NaN stated as None
        # checked on the table itself: every row holds the stated default
        assert all(v == want or (v != v and want != want) for v in column), name


def test_a_store_labelled_by_registry_names_is_refused_on_resume(
    study: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from optsched.runs.experiment import KIND, ExperimentResult
    from optsched.runs.store import RunStore

    loaded = load_experiment(study / "study.toml")
    # the config a store made before had: the same file, no labels (srtf-perf was "srtf")
    before = {"experiment_sha256": loaded.sha256, "spec": loaded.experiment.to_dict()}
    from optsched.runs.experiment import DEFAULT_THROUGHPUTS_RULE

    before["default_throughputs"] = DEFAULT_THROUGHPUTS_RULE  # the same rule: labels differ
    with RunStore(study / "old.sqlite", kind=KIND, config=before):
        pass
    with pytest.raises(InvalidInstanceError) as info:
        run_experiment(loaded, store=study / "old.sqlite", backend="serial")
    assert info.value.field == "config.labels"
    # a new store keeps the labels, and reads back in the file's order
    one = loaded.experiment.model_copy(update={"seeds": [0], "loads": [1.0]})
    monkeypatch.chdir(study)  # an experiment built in code resolves its traces here
    done = run_experiment(one, store=study / "new.sqlite", backend="serial")
    back = ExperimentResult.from_store(study / "new.sqlite")
    assert back.policies == done.policies == ["fifo", "tiresias-las", "srtf-perf"]


@pytest.mark.parametrize("bad", [[], "", "fifo,,srtf", [3], 5, ["nope"]], ids=repr)
def test_labelled_policies_refuses_as_as_policies_does(bad: Any) -> None:
    from optsched.sim.policies import as_policies

    with pytest.raises(InvalidInstanceError) as mine:
        labelled_policies(bad)
    with pytest.raises(InvalidInstanceError) as theirs:
        as_policies(bad)
    assert (mine.value.field, mine.value.message) == (theirs.value.field, theirs.value.message)
    # any iterable, a generator too
    assert [p.name for p, _ in labelled_policies(n for n in ("fifo", "srtf"))] == ["fifo", "srtf"]


def test_sim_run_labels_an_unnamed_plug_in_by_its_spec(
    study: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = f"{__name__}:Unnamed"
    args = ["sim", "run", str(study / "study.trace"), "--cluster", CLUSTER, "--policy", spec]
    done = _cli(args, capsys)
    assert done["policy"] == done["policy_spec"] == spec
    named = _cli([*args[:-1], f"{__name__}:SmallestGangFastest"], capsys)
    assert named["policy"] == "smallest-gang"
