"""One simulator API: the same argument names and types across simulate, compare, sweep, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.runs.sim_sweep import sweep
from optsched.sim import compare, parse_cluster
from optsched.sim.comparison import world_from_trace
from optsched.sim.world.sources import gavel_throughputs

TRACE = (
    Path(__file__).resolve().parent
    / "data"
    / "traces"
    / "gavel"
    / "physical_cluster_small_test.trace"
)


def test_cluster_and_throughputs_as_text_or_objects_give_the_same_runs() -> None:
    text = sweep([str(TRACE)], "v100=2,k80=2", "fifo", throughputs="gavel", backend="serial")
    objs = sweep(
        [str(TRACE)],
        parse_cluster("v100=2,k80=2"),
        ["fifo"],
        throughputs=gavel_throughputs(),
        backend="serial",
    )
    assert text["jct_mean"].tolist() == objs["jct_mean"].tolist()
    assert objs["throughputs"].tolist() == ["gavel"]
    by_compare = compare(TRACE, "fifo", cluster=parse_cluster("v100=2,k80=2"))
    assert by_compare.metrics["fifo"]["jct_mean"] == text["jct_mean"].iloc[0]
    with pytest.raises(InvalidInstanceError) as err:
        sweep([str(TRACE)], 8, ["fifo"], backend="serial")
    assert err.value.field == "cluster"


def test_round_seconds_policy_means_each_policys_own() -> None:
    world = world_from_trace(TRACE, "v100=2,k80=2")
    a = compare(world, ["fifo", "max-min"], round_seconds="policy")
    b = compare(world, ["fifo", "max-min"])
    assert a.to_dict()["policies"] == b.to_dict()["policies"]


def test_compare_takes_restore_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["sim", "compare", str(TRACE), "--cluster", "v100=2,k80=2", "--policies", "srtf"]
    assert main([*base, "--json"]) == 0
    free = json.loads(capsys.readouterr().out)["policies"][0]
    assert main([*base, "--restore-seconds", "600", "--json"]) == 0
    costly = json.loads(capsys.readouterr().out)["policies"][0]
    # a preempting policy pays the restore cost: never earlier, here strictly later
    assert costly["jct_mean"] >= free["jct_mean"]
    world = world_from_trace(TRACE, "v100=2,k80=2")
    paid = compare(world, "srtf", restore_s=600.0)
    assert paid.world.restore_s == 600.0
    assert paid.metrics["srtf"]["jct_mean"] == pytest.approx(costly["jct_mean"])


def test_plots_take_unit_words_and_name_a_wrong_unit() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from optsched.report.sim import plot_jct_cdf, time_scale

    assert time_scale("hours") == (3600.0, "h") and time_scale("min") == (60.0, "min")
    runs = {"fifo": compare(TRACE, "fifo", cluster="v100=2,k80=2").runs["fifo"]}
    fig, ax = plt.subplots()
    plot_jct_cdf(runs, unit="hours", ax=ax)
    assert ax.get_xlabel() == "JCT (h)"
    with pytest.raises(InvalidInstanceError) as err:
        plot_jct_cdf(runs, unit="days", ax=ax)
    assert err.value.field == "unit"
    plt.close(fig)


def test_a_frame_where_a_world_belongs_is_named_not_printed() -> None:
    world = world_from_trace(TRACE, "v100=2,k80=2")
    from optsched.sim import simulate

    frame = world_from_trace(TRACE, "v100=2,k80=2")  # a World: fine
    assert simulate(frame, "fifo").all_finished
    from optsched.traces import read_trace

    jobs = read_trace(TRACE).jobs
    with pytest.raises(InvalidInstanceError) as err:
        simulate(jobs, "fifo")  # type: ignore[arg-type]
    assert err.value.field == "world" and "DataFrame" in err.value.message
    assert "job_id" not in err.value.message  # the type is named, not the table printed
    assert world.throughputs.source == "gavel"
    html = compare(world, "fifo")._repr_html_()
    assert "throughputs=gavel" in html and "<table" in html
    record = simulate(world, "fifo")._repr_html_()
    assert "<th>throughputs</th><td>gavel</td>" in record


def test_round_seconds_means_the_same_in_simulate_compare_and_sweep() -> None:
    from strategies.sim import one_gpu_world

    from optsched.sim import simulate
    from optsched.sim.comparison import compare
    from optsched.sim.policies import make_policy

    world = one_gpu_world([3.0, 1.0, 2.0], [0.0, 0.5, 1.0])
    for value in (None, "policy", 7.0):
        alone = simulate(world, make_policy("srtf"), round_seconds=value)
        side = compare(world, ["srtf"], round_seconds=value).runs["srtf"]
        assert side.completion == alone.completion, value
        assert side.round_seconds == alone.round_seconds, value
    # the event-driven and round-based runs differ here, so the test can tell them apart
    assert (
        simulate(world, make_policy("srtf"), round_seconds=None).completion
        != simulate(world, make_policy("srtf"), round_seconds=7.0).completion
    )


def test_a_sweep_store_spells_round_seconds_unambiguously(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import optsched.sim.engine.core as engine
    from optsched.runs.sim_sweep import run_one

    seen: list[object] = []
    real = engine.simulate

    def spy(world, policy, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(kwargs.get("round_seconds", "absent"))
        return real(world, policy, **kwargs)

    monkeypatch.setattr(engine, "simulate", spy)
    params = {"trace": "synthetic:4", "cluster_scale": 1.0, "seed": 0, "load": 1.0}
    config = {"cluster": "v100=8", "restore_s": 0.0, "throughputs": "uniform", "reference": "v100"}
    # "event-driven" is None in the API; a null from older stores meant each policy's own
    for stored, expected in ((None, "policy"), ("event-driven", None), (60.0, 60.0)):
        seen.clear()
        run_one({**params, "policy": "fifo"}, {**config, "round_seconds": stored})
        assert seen == [expected], stored


def test_one_load_on_run_and_compare_is_the_sweeps(
    tmp_path,
    capsys,  # type: ignore[no-untyped-def]
) -> None:
    import json

    from optsched.cli import main

    header = "job_id,arrival,num_gpus,model,total_steps,duration,batch_size,weight,deadline,user\n"
    trace = tmp_path / "t.csv"
    rows = [(0, 3.0), (2, 1.0), (4, 2.0), (9, 4.0)]
    trace.write_text(header + "".join(f"j{k},{a},1,,,{d},,1,,u\n" for k, (a, d) in enumerate(rows)))
    base = [str(trace), "--cluster", "g=1", "--json"]
    assert main(["sim", "run", *base, "--policy", "fifo", "--load", "2"]) == 0
    run = json.loads(capsys.readouterr().out)["metrics"]
    assert main(["sim", "compare", *base, "--policies", "fifo", "--load", "2"]) == 0
    cmp = json.loads(capsys.readouterr().out)["policies"][0]
    args = ["sim", "sweep", *base, "--policies", "fifo", "--loads", "2", "--backend", "serial"]
    assert main(args) == 0
    swp = json.loads(capsys.readouterr().out)["rows"][0]
    assert run["jct_mean"] == cmp["jct_mean"] == swp["jct_mean"]
    # the load changes the answer here (queueing), so the three agreeing means something
    assert main(["sim", "run", *base, "--policy", "fifo"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["jct_mean"] != run["jct_mean"]
