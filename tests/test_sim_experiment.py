"""Experiment files: validation with typed errors naming file and key, runs, stored provenance."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.runs.experiment import (
    DEFAULT_THROUGHPUTS_RULE,
    KIND,
    Experiment,
    ExperimentResult,
    PolicySpec,
    experiment_schema,
    load_experiment,
    make_experiment_policy,
    run_experiment,
    summarize,
)
from optsched.runs.store import RunStore

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples" / "experiments").glob("*.toml"))
TINY = Path(__file__).resolve().parents[1] / "examples" / "experiments" / "tiny.toml"

SMALL = """\
name = "small"
traces = ["synthetic:6"]
clusters = ["v100=8,p100=8"]
policies = ["fifo", { name = "fifo", label = "fifo-bf", options = { backfill = true } }]
seeds = [0, 1]
loads = [1.0]

[outputs]
store = "out/runs.sqlite"
"""


def write(tmp_path: Path, text: str, name: str = "exp.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_there_are_example_experiments() -> None:
    assert TINY in EXAMPLES and len(EXAMPLES) >= 2


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_validates_and_round_trips(path: Path, tmp_path: Path) -> None:
    loaded = load_experiment(path)
    assert loaded.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    again = tmp_path / "again.toml"
    loaded.experiment.save(again)
    assert load_experiment(again).experiment == loaded.experiment
    for name in [loaded.experiment.throughputs, *loaded.experiment.traces]:
        if name and not name.startswith("synthetic:"):
            assert Path(loaded.resolve(name)).is_file(), name


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (("[outputs]\nstore", "[outputs]\nstor"), "outputs.stor"),
        (('name = "small"', 'name = "small"\nseed = [1]'), "seed"),
        (("backfill = true", "bogus = 1"), "policies[1].options.bogus"),
        (('"fifo", {', '"nope", {'), "policies[0].name"),
        (("seeds = [0, 1]", "seeds = [0, -1]"), "seeds[1]"),
        (("seeds = [0, 1]", "seeds = [1, 1]"), "seeds"),
        (("loads = [1.0]", "loads = [0.0]"), "loads[0]"),
        # a policy is labelled by the name it gives itself: fifo with backfill is fifo-backfill
        (
            ('"fifo", { name = "fifo", label = "fifo-bf", ', '"fifo-backfill", { name = "fifo", '),
            "policies[1].label",
        ),
        (('"fifo", {', '{ name = "fifo", label = "fifo-bf" }, {'), "policies"),
        (('"v100=8,p100=8"', '"v100=x"'), "clusters"),
        (("[outputs]", "[steady_state]\nstart = 4\nend = 2\n\n[outputs]"), "steady_state.end"),
        (("[outputs]", "[steady_state]\nfirst = 1\n\n[outputs]"), "steady_state.first"),
        (('traces = ["synthetic:6"]\n', ""), "traces"),
    ],
)
def test_a_bad_key_is_a_typed_error_naming_file_and_key(
    tmp_path: Path, edit: tuple[str, str], field: str
) -> None:
    assert edit[0] in SMALL
    path = write(tmp_path, SMALL.replace(edit[0], edit[1]))
    with pytest.raises(InvalidInstanceError) as info:
        load_experiment(path)
    assert info.value.field == field
    assert info.value.file == str(path)


def test_a_file_that_is_not_toml_is_refused_naming_it(tmp_path: Path) -> None:
    path = write(tmp_path, "name = \n")
    with pytest.raises(InvalidInstanceError) as info:
        load_experiment(path)
    assert info.value.file == str(path)


def test_policy_options_reach_the_constructor_and_unsafe_rebuilds_are_refused() -> None:
    policy = make_experiment_policy(PolicySpec(name="fifo", options={"backfill": True}))
    assert policy.name == "fifo-backfill" and policy.work_conserving
    allox = make_experiment_policy(PolicySpec(name="allox", options={"alpha": 0.5}))
    assert allox.alpha == 0.5
    # fifo-backfill's backfill flag is no attribute: a rebuild would silently drop it
    with pytest.raises(InvalidInstanceError) as info:
        make_experiment_policy(PolicySpec(name="fifo-backfill", options={"aware": True}))
    assert info.value.field == "policies.options"
    with pytest.raises(InvalidInstanceError) as info:
        make_experiment_policy(PolicySpec(name="allox", options={"alpha": 2.0}), field="p[0]")
    assert info.value.field == "p[0].options.alpha"


def test_the_schema_is_the_models_and_listed_by_the_cli(
    capsys: pytest.CaptureFixture[str],
) -> None:
    schema = experiment_schema()
    assert {"traces", "clusters", "policies", "seeds", "loads", "outputs"} <= set(
        schema["properties"]
    )
    assert schema["additionalProperties"] is False
    assert main(["schema", "sim-experiment"]) == 0
    assert json.loads(capsys.readouterr().out) == schema
    assert main(["schema", "--list"]) == 0
    assert "sim-experiment" in capsys.readouterr().out.split()


def test_a_run_stores_its_file_and_hash_and_resumes_only_with_the_same_file(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, SMALL)
    result = run_experiment(path, backend="serial")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert result.sha256 == digest and result.text == SMALL
    assert len(result.runs) == 4 and result.runs["valid"].all()
    assert set(result.runs["policy"]) == {"fifo", "fifo-bf"}
    store_path = tmp_path / "out" / "runs.sqlite"
    with RunStore.open_existing(store_path, kind=KIND) as store:
        assert store.config["experiment_sha256"] == digest
        text = store.get_meta("experiment.toml")
        assert text is not None
        assert hashlib.sha256(text.encode()).hexdigest() == digest
        assert len(store) == 4
    # the stored text alone reproduces the runs
    replay = write(tmp_path / "out", text, "replayed.toml")
    again = run_experiment(replay, store=tmp_path / "fresh.sqlite", backend="serial")
    pd.testing.assert_frame_equal(again.runs, result.runs)
    # reading the store back gives the same runs and summary
    back = ExperimentResult.from_store(store_path)
    pd.testing.assert_frame_equal(back.runs, result.runs)
    pd.testing.assert_frame_equal(back.to_frame(), result.to_frame())
    assert back.jcts == result.jcts and back.sha256 == digest
    # a changed file is refused on the same store, naming the hash
    write(tmp_path, SMALL.replace("seeds = [0, 1]", "seeds = [0, 1, 2]"))
    with pytest.raises(InvalidInstanceError) as info:
        run_experiment(path, backend="serial")
    assert info.value.field == "config.experiment_sha256"


def test_a_store_made_under_the_old_throughput_default_is_refused_on_resume(
    tmp_path: Path,
) -> None:
    """Without a ``throughputs`` key the table follows the traces' content; a store whose
    config predates that rule (chosen by file format) must not resume into a mix of tables."""
    path = write(tmp_path, SMALL)
    run_experiment(path, backend="serial")
    store_path = tmp_path / "out" / "runs.sqlite"
    with RunStore.open_existing(store_path, kind=KIND) as store:
        config = dict(store.config)
    assert config["default_throughputs"] == DEFAULT_THROUGHPUTS_RULE
    del config["default_throughputs"]  # as a store written before the rule
    old = tmp_path / "old.sqlite"
    with RunStore(old, kind=KIND, config=config):
        pass
    with pytest.raises(InvalidInstanceError) as info:
        run_experiment(path, store=old, backend="serial")
    assert info.value.field == "config.default_throughputs"


def test_the_runs_match_a_plain_sweep_and_respect_the_bound(tmp_path: Path) -> None:
    from optsched.runs.sim_sweep import sweep

    result = run_experiment(write(tmp_path, SMALL.replace("[outputs]\n", "[x]\n").split("[x]")[0]))
    plain = sweep(["synthetic:6"], "v100=8,p100=8", ["fifo"], seeds=[0, 1], backend="serial")
    mine = result.runs[result.runs["policy"] == "fifo"].reset_index(drop=True)
    assert mine["jct_mean"].tolist() == pytest.approx(plain["jct_mean"].tolist())
    assert mine["makespan"].tolist() == pytest.approx(plain["makespan"].tolist())
    # no policy beats every job running alone at its best rate
    assert (result.runs["jct_mean"] >= result.runs["jct_bound"] * (1 - 1e-9)).all()
    assert (result.runs["gap_jct_bound"] >= -1e-9).all()
    for key, jcts in result.jcts.items():
        row = result.runs[(result.runs["seed"] == key[3]) & (result.runs["policy"] == key[5])]
        assert sum(jcts) / len(jcts) == pytest.approx(float(row["jct_mean"].iloc[0]))


def test_summary_mean_and_t_interval() -> None:
    runs = pd.DataFrame(
        {
            "trace": "t",
            "cluster": "c",
            "cluster_scale": 1.0,
            "load": 1.0,
            "policy": ["a", "a", "a", "b"],
            "seed": [0, 1, 2, 0],
            "jct_mean": [1.0, 2.0, 3.0, 5.0],
            "valid": True,
        }
    )
    table = summarize(runs, ["b", "a"])
    assert table["policy"].tolist() == ["b", "a"]
    a = table[table["policy"] == "a"].iloc[0]
    assert a["seeds"] == 3 and a["jct_mean_mean"] == pytest.approx(2.0)
    # t_{0.975, 2} = 4.302653 ; s = 1 ; n = 3
    assert a["jct_mean_ci"] == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    assert math.isnan(table[table["policy"] == "b"].iloc[0]["jct_mean_ci"])


def test_cli_runs_an_experiment_file_for_run_compare_and_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, SMALL)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    payloads = []
    for command in ("sweep", "run", "compare"):
        assert main(["sim", command, str(path), "--backend", "serial", "--json"]) == 0
        payloads.append(json.loads(capsys.readouterr().out))
    assert all(p["sha256"] == digest and p["experiment_toml"] == SMALL for p in payloads)
    assert payloads[0]["summary"] == payloads[1]["summary"] == payloads[2]["summary"]
    assert payloads[0]["runs"] == 4
    # a trace argument keeps the command's own behaviour (--cluster still required)
    assert main(["sim", "run", "some.trace"]) == 2
    assert "--cluster" in capsys.readouterr().err


def test_cli_names_the_file_and_key_of_a_bad_experiment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, SMALL.replace("[outputs]\nstore", "[outputs]\nstor"))
    assert main(["sim", "sweep", str(path), "--json"]) == 2
    error = json.loads(capsys.readouterr().out)
    assert error["field"] == "outputs.stor" and error["file"] == str(path)


def test_the_tiny_example_runs_end_to_end(tmp_path: Path) -> None:
    copy = tmp_path / "tiny.toml"
    shutil.copy(TINY, copy)
    assert main(["sim", "sweep", str(copy), "--backend", "serial"]) == 0
    assert (tmp_path / "runs" / "tiny.sqlite").is_file()
    html = (tmp_path / "runs" / "tiny-report" / "report.html").read_text(encoding="utf-8")
    assert "tiny" in html and "<img" in html
    experiment = Experiment.load(copy)
    back = ExperimentResult.from_store(tmp_path / "runs" / "tiny.sqlite")
    assert (
        len(back.runs)
        == 3 * 2 * 3
        == (len(experiment.policies) * len(experiment.loads) * len(experiment.seeds))
    )


def test_a_plain_sweep_store_reads_back(tmp_path: Path) -> None:
    from optsched.runs.sim_sweep import sweep

    sweep(
        ["synthetic:5"],
        "v100=8,p100=8",
        ["fifo", "srtf"],
        seeds=[0, 1],
        store=tmp_path / "s",
        backend="serial",
    )
    back = ExperimentResult.from_store(tmp_path / "s")
    assert len(back.runs) == 4 and not back.jcts and not back.text
    assert set(back.runs["cluster"]) == {"v100=8,p100=8"}
    assert len(back.to_frame()) == 2


def test_an_experiment_built_in_code_runs_as_its_toml(tmp_path: Path) -> None:
    from optsched.runs.experiment import ExperimentFile

    experiment = Experiment(
        name="in-code", traces=["synthetic:5"], clusters=["v100=8"], policies=["fifo"]
    )
    result = run_experiment(experiment, backend="serial")
    as_file = ExperimentFile.from_experiment(experiment)
    assert result.text == as_file.text and result.sha256 == as_file.sha256
    path = write(tmp_path, result.text)
    assert load_experiment(path).experiment == experiment
    pd.testing.assert_frame_equal(run_experiment(path, backend="serial").runs, result.runs)
    with pytest.raises(InvalidInstanceError) as info:
        run_experiment(
            Experiment(name="x", traces=["synthetic:5"], clusters=["v100=8"], policies=["no"]),
            backend="serial",
        )
    assert info.value.field == "policies[0].name"


def test_a_steady_state_window_counts_only_its_jobs(tmp_path: Path) -> None:
    text = SMALL.replace("[outputs]", "[steady_state]\nstart = 1\nend = 4\n\n[outputs]")
    windowed = run_experiment(write(tmp_path, text, "w.toml"), store=tmp_path / "w")
    whole = run_experiment(write(tmp_path, SMALL), store=tmp_path / "a")
    assert (windowed.runs["jobs"] == 3).all() and (whole.runs["jobs"] == 6).all()
    for key, jcts in windowed.jcts.items():
        assert len(jcts) == 3
        assert set(jcts) <= set(whole.jcts[key])
        row = windowed.runs[
            (windowed.runs["seed"] == key[3]) & (windowed.runs["policy"] == key[5])
        ].iloc[0]
        assert sum(jcts) / 3 == pytest.approx(row["jct_mean"])
    # the same simulation: utilization is a whole-run figure
    assert windowed.runs["utilization_mean"].tolist() == pytest.approx(
        whole.runs["utilization_mean"].tolist()
    )
    # a window past the trace is refused naming the key
    late = SMALL.replace("[outputs]", "[steady_state]\nstart = 9\n\n[outputs]")
    with pytest.raises(InvalidInstanceError) as info:
        run_experiment(write(tmp_path, late, "late.toml"), backend="serial")
    assert info.value.field == "steady_state.window"


def test_certified_bounds_lie_below_every_policy(tmp_path: Path) -> None:
    from optsched.sim.optimum.bounds import bound

    text = SMALL.replace("[outputs]", "bounds = true\n\n[outputs]")
    text = text.replace('"fifo", {', '"fifo", "srtf", {')
    result = run_experiment(write(tmp_path, text), backend="serial")
    runs = result.runs
    assert (runs["gap_weighted-jct"] >= -1e-9).all() and (runs["gap_makespan"] >= -1e-9).all()
    # the bound is the world's: the same for every policy of a seed, and bound()'s own value
    for _, part in runs.groupby("seed"):
        assert part["bound_weighted-jct"].nunique() == 1
    from optsched.runs.sim_sweep import _job_frame
    from optsched.sim import Throughputs, World, parse_cluster

    spec = parse_cluster("v100=8,p100=8")
    world = World.from_frame(
        _job_frame("synthetic:6", 1, 1.0), spec, Throughputs.uniform(spec.names)
    )
    want = bound(world, "makespan", methods=("isolated", "aggregated")).value
    got = runs[runs["seed"] == 1]["bound_makespan"].iloc[0]
    assert got == pytest.approx(want)
    # total weighted JCT / bound - 1, from the run's own weighted mean (unit weights here)
    row = runs[(runs["seed"] == 1) & (runs["policy"] == "srtf")].iloc[0]
    total = row["weighted_jct_mean"] * row["jobs"]
    assert row["gap_weighted-jct"] == pytest.approx(total / row["bound_weighted-jct"] - 1)
    # bounds are on the whole trace: not with a window
    both = text.replace("[outputs]", "[steady_state]\nstart = 1\n\n[outputs]")
    with pytest.raises(InvalidInstanceError) as info:
        load_experiment(write(tmp_path, both, "both.toml"))
    assert info.value.field == "bounds"
