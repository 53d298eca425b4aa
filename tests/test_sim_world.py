"""World model: cluster strings, throughput tables, the job table and its field-named errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from strategies.sim import job_frame, synthetic_table, synthetic_throughputs

from optsched import limits
from optsched.errors import InvalidInstanceError
from optsched.sim import (
    GENERIC,
    ClusterSpec,
    GpuType,
    Throughputs,
    World,
    job_type_for,
    load_gavel_cluster_specs,
    load_throughputs,
    parse_cluster,
)
from optsched.tolerances import TIME_TOL, within

_ROOT = Path(__file__).resolve().parents[1]
# ../shared from a clone's root (a worktree one level deeper looks one level further up)
SHARED = next(
    (p for p in (_ROOT.parent / "shared", _ROOT.parent.parent / "shared") if p.is_dir()),
    _ROOT.parent / "shared",
)
GAVEL = SHARED / "data" / "gavel"
needs_gavel = pytest.mark.skipif(
    not (GAVEL / "simulation_throughputs.json").exists(), reason="../shared/data/gavel is absent"
)


def test_parse_cluster() -> None:
    spec = parse_cluster("v100=32,p100=16:4,k80=24")
    assert spec.names == ("v100", "p100", "k80")
    assert spec.count("p100") == 16 and spec.type("p100").gpus_per_server == 4
    assert spec.type("v100").num_servers == 4
    assert spec.total_gpus == 72
    assert len(spec.to_cluster().servers) == 4 + 4 + 3


def test_last_server_holds_the_remainder() -> None:
    t = GpuType(name="x", count=10, gpus_per_server=4)
    assert [t.server_capacity(s) for s in range(t.num_servers)] == [4, 4, 2]


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("", "cluster"),
        ("v100", "cluster[0]"),
        ("v100=0", "cluster[0]"),
        ("v100=4,v100=8", "cluster"),
        ("v100=4,p100=x", "cluster[1]"),
        ("v100=4:0", "cluster[0]"),
    ],
)
def test_parse_cluster_errors_name_the_entry(text: str, field: str) -> None:
    with pytest.raises(InvalidInstanceError) as err:
        parse_cluster(text)
    assert err.value.field == field


def test_absurd_cluster_is_refused_before_allocating() -> None:
    with limits.override(max_array_cells=100), pytest.raises(InvalidInstanceError):
        parse_cluster("v100=1000")


def test_throughput_lookup_rules() -> None:
    tp = synthetic_throughputs()
    assert tp.rate("A", 2, "fast") == 4.0
    assert tp.rate("A", 2, "fast", consolidated=False) == pytest.approx(3.2)
    # 3 GPUs: the 2-GPU rate scaled linearly
    assert tp.rate("A", 3, "fast") == pytest.approx(4.0 * 3 / 2)
    assert tp.pair_rates("B", "B", 1, "fast") == pytest.approx((0.9, 0.9))
    assert tp.rate(GENERIC, 4, "slow") == pytest.approx(4 * 0.5)
    assert tp.generic_speed["fast"] == 1.0


def test_throughput_file_errors_are_field_named(tmp_path: Path) -> None:
    data = synthetic_table()
    data["fast"]["('A', 1)"]["null"] = -1.0
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidInstanceError) as err:
        load_throughputs(path, reference="fast")
    assert err.value.field == "fast.('A', 1).null"
    data = synthetic_table()
    data["fast"]["A-1"] = {"null": 1.0}
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidInstanceError) as err:
        load_throughputs(path, reference="fast")
    assert err.value.field == "fast.A-1"
    path.write_text(json.dumps(synthetic_table()))
    with pytest.raises(InvalidInstanceError) as err:
        load_throughputs(path, reference="v100")
    assert err.value.field == "reference"


@needs_gavel
def test_gavel_table_and_mapping() -> None:
    tp = load_throughputs(GAVEL / "simulation_throughputs.json")
    assert set(tp.gpu_types) == {"v100", "p100", "k80"}
    assert tp.rate("ResNet-50 (batch size 64)", 1, "v100") > tp.rate(
        "ResNet-50 (batch size 64)", 1, "k80"
    )
    assert job_type_for("resnet50", 64.0, tp) == "ResNet-50 (batch size 64)"
    assert job_type_for("resnet50", 100.0, tp) == "ResNet-50 (batch size 128)"
    assert job_type_for("bert", math.nan, tp).startswith("Transformer")
    assert job_type_for("deepspeech2", 32.0, tp).startswith("LM")
    assert job_type_for("A3C", math.nan, tp) == "A3C"
    assert job_type_for("mystery", 1.0, tp) == GENERIC
    assert 0 < tp.generic_speed["k80"] < tp.generic_speed["p100"] < 1.0
    specs = load_gavel_cluster_specs(GAVEL / "traces" / "cluster_specs.json")
    assert specs["philly"][0].count("v100") == 500


def _cluster() -> ClusterSpec:
    return parse_cluster("fast=4:2,slow=2:2")


@pytest.mark.parametrize(
    ("rows", "field", "row"),
    [
        ([{"job_id": "a"}, {"job_id": "a"}], "job_id", 2),
        ([{"arrival": 5.0}, {"arrival": 1.0}], "arrival", 2),
        ([{"arrival": -1.0}], "arrival", 1),
        ([{"num_gpus": 0}], "num_gpus", 1),
        ([{"num_gpus": 8}], "num_gpus", 1),
        ([{"weight": 0.0}], "weight", 1),
        ([{"duration": math.nan, "total_steps": math.nan}], "total_steps", 1),
        ([{"duration": -2.0}], "duration", 1),
        ([{"duration": math.inf}], "duration", 1),
    ],
)
def test_bad_job_rows_name_column_and_row(
    rows: list[dict[str, object]], field: str, row: int
) -> None:
    rows = [{"duration": 1.0, **r} for r in rows]
    with pytest.raises(InvalidInstanceError) as err:
        World.from_frame(job_frame(rows), _cluster(), synthetic_throughputs())
    assert err.value.field == field
    assert err.value.row == row


def test_missing_column_is_named() -> None:
    frame = job_frame([{"duration": 1.0}]).drop(columns=["weight"])
    with pytest.raises(InvalidInstanceError) as err:
        World.from_frame(frame, _cluster(), synthetic_throughputs())
    assert err.value.field == "weight"


def test_text_in_a_number_column_is_named() -> None:
    frame = job_frame([{"duration": 1.0}])
    frame["arrival"] = frame["arrival"].astype(object)
    frame.loc[0, "arrival"] = "soon"
    with pytest.raises(InvalidInstanceError) as err:
        World.from_frame(frame, _cluster(), synthetic_throughputs())
    assert (err.value.field, err.value.row) == ("arrival", 1)


def test_cluster_type_missing_from_the_table() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        World.from_frame(
            job_frame([{"duration": 1.0}]), parse_cluster("a100=4"), synthetic_throughputs()
        )
    assert err.value.field == "cluster"


def test_too_many_jobs_refused_before_reading() -> None:
    with limits.override(max_trace_rows=2), pytest.raises(InvalidInstanceError) as err:
        World.from_frame(job_frame([{"duration": 1.0}] * 3), _cluster(), synthetic_throughputs())
    assert err.value.field == "jobs"


def test_uniform_table_speeds() -> None:
    tp = Throughputs.uniform({"x": 2.0, "y": 1.0})
    world = World.from_frame(
        job_frame([{"duration": 6.0, "num_gpus": 2}]), parse_cluster("x=4,y=4"), tp
    )
    job = world.jobs[0]
    assert within(world.isolated_seconds(job, "x"), 6.0, TIME_TOL)
    assert within(world.isolated_seconds(job, "y"), 12.0, TIME_TOL)


def test_generated_worlds_are_seeded_and_valid() -> None:
    from optsched.sim import generate_instance, generate_job_table, simulate, validate
    from optsched.sim.policies import make_policy

    a = generate_job_table(30, seed=4, deadline_fraction=0.5)
    b = generate_job_table(30, seed=4, deadline_fraction=0.5)
    assert a.equals(b)
    assert a["arrival"].is_monotonic_increasing and a["deadline"].notna().any()
    world = generate_instance(30, "fast=4:2,slow=4:2", synthetic_throughputs(), seed=4)
    result = simulate(world, make_policy("tiresias-gittins-perf"))
    assert validate(world, result).ok and result.all_finished


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"n": 0}, "n"),
        ({"n": 5, "sigma": -1.0}, "sigma"),
        ({"n": 5, "deadline_fraction": 2.0}, "deadline_fraction"),
    ],
)
def test_generator_errors_are_field_named(kwargs: dict[str, float], field: str) -> None:
    from optsched.sim import generate_job_table

    with pytest.raises(InvalidInstanceError) as err:
        generate_job_table(seed=0, **kwargs)  # type: ignore[arg-type]
    assert err.value.field == field
