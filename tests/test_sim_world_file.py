"""The world document: exact round trips, its schema, and field-named refusals."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from strategies.sim import worlds

from optsched import limits
from optsched.errors import InvalidInstanceError
from optsched.sim import World, load_throughputs, parse_cluster, simulate
from optsched.sim.policies import make_policy

_ROOT = Path(__file__).resolve().parents[1]
SHARED = next(
    (p for p in (_ROOT.parent / "shared", _ROOT.parent.parent / "shared") if p.is_dir()),
    _ROOT.parent / "shared",
)
GAVEL_TABLE = SHARED / "data" / "gavel" / "simulation_throughputs.json"
ELASTICFLOW = SHARED / "data" / "elasticflow" / "cluster10.csv"


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@settings(max_examples=15)
@given(worlds())
def test_round_trip_is_exact_and_simulates_the_same(world: World) -> None:
    data = world.to_dict()
    jsonschema.validate(data, World.schema())
    again = World.from_dict(json.loads(json.dumps(data, allow_nan=False)))
    assert again == world
    for a, b in zip(again.jobs, world.jobs, strict=True):
        # every field, NaN deadlines included, bit for bit
        assert repr(a) == repr(b)
    assert again.throughputs.alone == world.throughputs.alone
    assert again.throughputs.pairs == world.throughputs.pairs
    r1 = simulate(world, make_policy("srtf"))
    r2 = simulate(again, make_policy("srtf"))
    assert r1.intervals == r2.intervals


def test_worlds_built_apart_compare_equal_and_differ_when_a_field_does() -> None:
    from optsched import sim

    a = sim.generate_instance(5, "v100=2", seed=3)
    b = sim.generate_instance(5, "v100=2", seed=3)
    assert a == b and a is not b
    assert a != sim.generate_instance(5, "v100=2", seed=4)
    assert a != World(a.cluster, a.throughputs, a.jobs, restore_s=1.0)


def test_elastic_gang_sizes_round_trip(tmp_path: Path) -> None:
    from optsched import sim

    world = sim.generate_instance(6, "v100=8", seed=5).elastic(min_gpus=1, max_factor=2.0)
    assert any(j.elastic for j in world.jobs)
    world.save(tmp_path / "w.json")
    again = World.load(tmp_path / "w.json")
    assert again == world
    assert [(j.min_gpus, j.max_gpus) for j in again.jobs] == [
        (j.min_gpus, j.max_gpus) for j in world.jobs
    ]
    # a document without the bounds is a rigid world
    data = world.to_dict()
    for job in data["jobs"]:
        del job["min_gpus"], job["max_gpus"]
    rigid = World.from_dict(data)
    assert all(j.min_gpus == j.num_gpus == j.max_gpus for j in rigid.jobs)


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_save_and_load_through_files(tmp_path: Path, suffix: str) -> None:
    from optsched import sim

    world = sim.generate_instance(6, "v100=4,p100=2", seed=2)
    path = tmp_path / f"world{suffix}"
    world.save(path)
    assert World.load(path) == world


@pytest.mark.skipif(not GAVEL_TABLE.is_file(), reason=f"{GAVEL_TABLE} is absent")
def test_a_gavel_table_round_trips_whole(tmp_path: Path) -> None:
    from optsched import sim

    table = load_throughputs(GAVEL_TABLE)
    base = sim.generate_instance(4, "v100=4", seed=1)
    world = World(parse_cluster("v100=4,p100=4,k80=4"), table, base.jobs, restore_s=5.0)
    world.save(tmp_path / "w.json")
    again = World.load(tmp_path / "w.json")
    assert again == world
    assert again.throughputs.generic_speed == table.generic_speed


@pytest.mark.skipif(not ELASTICFLOW.is_file(), reason=f"{ELASTICFLOW} is absent")
def test_a_real_trace_world_round_trips(tmp_path: Path) -> None:
    from optsched.traces import read_trace

    frame = read_trace(ELASTICFLOW).jobs
    world = World.from_frame(frame, parse_cluster("v100=64"))
    world.save(tmp_path / "w.json")
    assert World.load(tmp_path / "w.json") == world


def _doc() -> dict[str, Any]:
    from optsched import sim

    data: dict[str, Any] = sim.generate_instance(3, "v100=2", seed=1).to_dict()
    return data


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["jobs"][1].update(work=0), "jobs[1].work"),
        (lambda d: d["jobs"][2].update(arrival=-1.0), "jobs[2].arrival"),
        (lambda d: d["jobs"][0].update(num_gpus=True), "jobs[0].num_gpus"),
        (lambda d: d["jobs"][0].update(num_gpus=9), "jobs[0].num_gpus"),
        (lambda d: d["jobs"][1].update(index=0), "jobs[1].index"),
        (lambda d: d["jobs"][1].update(job_id=d["jobs"][0]["job_id"]), "jobs[1].job_id"),
        (lambda d: d["jobs"][1].update(job_type="ResNet-18"), "jobs[1].job_type"),
        (lambda d: d["jobs"][0].update(arrival=1e9), "jobs[1].arrival"),
        (lambda d: d["jobs"][0].update(colour="red"), "jobs[0].colour"),
        (lambda d: d["jobs"][0].update(min_gpus=d["jobs"][0]["num_gpus"] + 1), "jobs[0].min_gpus"),
        (lambda d: d["jobs"][0].update(max_gpus=0), "jobs[0].max_gpus"),
        (lambda d: d.update(restore_s=-2), "restore_s"),
        (lambda d: d.update(format="gavel"), "format"),
        (lambda d: d["throughputs"].update(reference="k80"), "throughputs.reference"),
        (lambda d: d["cluster"]["gpu_types"][0].update(name="p100"), "cluster"),
        (lambda d: d.pop("throughputs"), "throughputs"),
    ],
)
def test_bad_documents_name_the_field(tmp_path: Path, change: Any, field: str) -> None:
    data = _doc()
    change(data)
    path = _write(tmp_path / "bad.json", data)
    with pytest.raises(InvalidInstanceError) as info:
        World.load(path)
    assert info.value.field == field
    assert info.value.file == str(path)


def test_nan_and_duplicate_keys_are_refused_by_the_loader(tmp_path: Path) -> None:
    text = json.dumps(_doc()).replace('"restore_s": 0.0', '"restore_s": NaN')
    with pytest.raises(InvalidInstanceError):
        World.load(_write(tmp_path / "a.json", json.loads(text)))
    path = tmp_path / "b.json"
    path.write_text('{"format": "optsched.sim.world", "format": "x"}', encoding="utf-8")
    with pytest.raises(InvalidInstanceError):
        World.load(path)


def test_the_job_budget_refuses_before_building_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from optsched.sim.world import file as world_file

    path = tmp_path / "w.json"
    _write(path, _doc())

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a job record was built")

    monkeypatch.setattr(world_file.WorldFile, "from_dict", refuse)
    with limits.override(max_trace_rows=2), pytest.raises(InvalidInstanceError) as info:
        World.load(path)
    assert info.value.field == "jobs"
    assert "max_trace_rows" in str(info.value)


def test_schema_is_a_json_schema_with_the_job_fields() -> None:
    schema = World.schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    job = schema["$defs"]["JobRecord"]["properties"]
    for name in ("index", "job_id", "arrival", "num_gpus", "job_type", "work", "scale"):
        assert name in job
    for name in ("weight", "deadline", "model", "user"):
        assert name in job
    assert math.isnan(World.from_dict(_doc()).jobs[0].deadline)
