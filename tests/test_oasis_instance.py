"""OASiS instances: validation names the field, files round-trip, derived quantities, utilities."""

from __future__ import annotations

import copy
import json
import math

import jsonschema
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.oasis import utilities

from optsched.cli import main
from optsched.errors import InvalidInstanceError
from optsched.online.oasis import load_instance
from optsched.online.oasis.generate import generate_instance
from optsched.online.oasis.instance import ceil_work, instance_schema
from optsched.utility import Constant, Linear, Sigmoid, Step, utility_table

BASE = {
    "horizon": 6,
    "slot_s": 3600.0,
    "resources": ["gpu", "cpu", "bandwidth"],
    "worker_servers": [{"name": "w0", "capacity": {"gpu": 4, "cpu": 32, "bandwidth": 25}}],
    "ps_servers": [{"name": "p0", "capacity": {"gpu": 0, "cpu": 16, "bandwidth": 25}}],
    "jobs": [
        {
            "name": "resnet",
            "arrival": 1,
            "epochs": 3,
            "chunks": 4,
            "minibatches": 10,
            "minibatch_s": 36.0,
            "gradient_mb": 100.0,
            "worker_demand": {"gpu": 1, "cpu": 4, "bandwidth": 2.0},
            "ps_demand": {"cpu": 2, "bandwidth": 8.0},
            "utility": {"kind": "sigmoid", "priority": 50, "steepness": 0.5, "target": 3},
        }
    ],
}


def mutate(path: str, value: object) -> dict:
    data = copy.deepcopy(BASE)
    node: object = data
    keys = path.replace("]", "").replace("[", ".").split(".")
    for key in keys[:-1]:
        node = node[int(key)] if key.isdigit() else node[key]  # type: ignore[index]
    last = keys[-1]
    if value is DELETE:
        del node[last]  # type: ignore[attr-defined]
    else:
        node[int(last) if last.isdigit() else last] = value  # type: ignore[index]
    return data


DELETE = object()

INVALID = [
    ("worker_servers[0].capacity.cpu", -1, "worker_servers[0].capacity.cpu", ">= 0"),
    ("jobs[0].worker_demand.gpux", 1, "jobs[0].worker_demand.gpux", "unknown resource"),
    ("jobs[0].arrival", 6, "jobs[0].arrival", "< horizon"),
    ("jobs[0].arrival", -1, "jobs[0].arrival", ">= 0"),
    (
        "jobs[0].worker_demand.bandwidth",
        9.0,
        "jobs[0].worker_demand.bandwidth",
        "exceeds the PS bandwidth",
    ),
    ("jobs[0].epochs", 0, "jobs[0].epochs", ">= 1"),
    ("jobs[0].chunks", 0, "jobs[0].chunks", ">= 1"),
    ("jobs[0].utility", {"kind": "sigmoid", "priority": 1}, "jobs[0].utility", "required"),
    ("jobs[0].utility", {"kind": "exponential", "value": 1}, "jobs[0].utility", "kind"),
    (
        "jobs[0].utility",
        {"kind": "step", "value": 1, "deadline": 2, "late_value": 5},
        "jobs[0].utility",
        "non-increasing",
    ),
    ("jobs[0].utility", {"kind": "linear", "value": -1, "slope": 0}, "jobs[0].utility", ">= 0"),
    ("jobs[0].ps_demand.bandwidth", 0.0, "jobs[0].ps_demand.bandwidth", "> 0"),
    ("jobs[0].minibatch_s", "fast", "jobs[0].minibatch_s", "number"),
    ("horizon", 0, "horizon", ">= 1"),
    ("slot_s", 0, "slot_s", "> 0"),
    ("resources", ["gpu", "cpu"], "resources", "bandwidth"),
    ("ps_servers[0].capacity.cpu", DELETE, "ps_servers[0].capacity.cpu", "required"),
    ("jobs[0].colour", "red", "jobs[0].colour", "not a known field"),
]


@pytest.mark.parametrize(("path", "value", "field", "text"), INVALID)
def test_invalid_instances_name_the_field(path: str, value: object, field: str, text: str) -> None:
    with pytest.raises(InvalidInstanceError) as info:
        load_instance(mutate(path, value))
    assert info.value.field.startswith(field), str(info.value)
    assert str(info.value).startswith(info.value.field)
    assert text in str(info.value)


@pytest.mark.parametrize(("path", "value", "field", "text"), INVALID[:6])
def test_cli_exits_2_naming_the_field(tmp_path, capsys, path, value, field, text) -> None:
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(mutate(path, value)))
    for args in (["validate", str(p), "--json"], ["oasis", "offline", str(p), "--json"]):
        assert main(args) == 2
        out = json.loads(capsys.readouterr().out)
        assert out["field"].startswith(field) and out["error"] == "InvalidInstanceError"


def test_unreadable_and_malformed_files(tmp_path) -> None:
    with pytest.raises(InvalidInstanceError, match="cannot read"):
        load_instance(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InvalidInstanceError, match="not valid"):
        load_instance(bad)
    with pytest.raises(InvalidInstanceError, match="must be an object"):
        load_instance([1, 2])  # type: ignore[arg-type]


def test_duplicate_names_are_rejected() -> None:
    data = copy.deepcopy(BASE)
    data["jobs"].append(copy.deepcopy(data["jobs"][0]))
    with pytest.raises(InvalidInstanceError, match=r"jobs\[1\].name"):
        load_instance(data)


def test_derived_work_matches_hand_computation() -> None:
    inst = load_instance(BASE)
    # One minibatch: 36 s compute + 2 * 100 MB * 8 / 2 Gbit/s = 36 + 0.8 s; 10 per chunk.
    per_chunk = 10 * (36.0 + 2 * 100 * 8 / 2000.0) / 3600.0
    assert inst.jobs[0].work_per_chunk(3600.0) == pytest.approx(per_chunk)
    assert inst.total_work[0] == pytest.approx(3 * 4 * per_chunk)
    assert inst.jobs[0].chunk_epochs == 12
    assert inst.max_workers(0, 0) == 4  # min(N = 4, 4 GPUs, 32/4 CPUs, 25/2 Gbit/s)
    assert inst.max_ps(0, 0) == 3  # floor(25 / 8)


def test_ceil_work_is_float_safe() -> None:
    assert ceil_work(3 * 0.1) == 1 and ceil_work(0.1 + 0.2 - 0.3) == 0
    assert ceil_work(2.0000001) == 3 and ceil_work(7 * (1 / 7) * 3) == 3


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_round_trip(tmp_path, suffix: str) -> None:
    inst = generate_instance(7, 3, 2, 12, seed=11)
    path = tmp_path / f"inst{suffix}"
    inst.save(path)
    assert load_instance(path) == inst


def test_generator_is_reproducible_and_valid() -> None:
    a = generate_instance(20, 4, 4, 30, seed=3)
    b = generate_instance(20, 4, 4, 30, seed=3)
    c = generate_instance(20, 4, 4, 30, seed=4)
    assert a == b and a != c
    assert list(a.arrivals) == sorted(a.arrivals)
    assert all(j.b <= j.B for j in a.jobs)
    with pytest.raises(InvalidInstanceError, match="scale"):
        generate_instance(2, scale=0.0)
    with pytest.raises(InvalidInstanceError, match="worker_servers"):
        generate_instance(2, worker_servers=0)


def test_schema_matches_files(capsys) -> None:
    assert main(["schema", "oasis-instance"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema == instance_schema()
    jsonschema.validate(generate_instance(4, seed=0).to_dict(), schema)
    jsonschema.validate(BASE, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(mutate("jobs[0].epochs", 0), schema)
    assert main(["schema", "--list"]) == 0
    assert "oasis-schedule" in capsys.readouterr().out


def test_version(capsys) -> None:
    from optsched import __version__

    assert main(["--version"]) == 0
    assert __version__ in capsys.readouterr().out


# ----- utilities ------------------------------------------------------------------------


@given(utilities(), st.lists(st.integers(1, 60), min_size=2, max_size=10))
def test_utilities_are_nonnegative_and_nonincreasing(spec: dict, durations: list[int]) -> None:
    inst_data = mutate("jobs[0].utility", spec)
    f = load_instance(inst_data).jobs[0].utility
    d = np.sort(np.asarray(durations, dtype=float))
    values = f.evaluate(d)
    assert np.all(values >= 0)
    assert np.all(np.diff(values) <= 1e-12)
    assert values[0] <= f.max_value + 1e-12


def test_utility_formulas() -> None:
    s = Sigmoid(priority=10, steepness=1, target=3)
    assert s(3) == pytest.approx(5.0)
    assert s(1) == pytest.approx(10 / (1 + math.exp(-2)))
    assert Linear(value=10, slope=2)(4) == pytest.approx(4.0)
    assert Linear(value=10, slope=2)(99) == 0.0
    assert Step(value=7, deadline=2, late_value=1)(2) == 7 and Step(value=7, deadline=2)(3) == 0
    assert Constant(value=3)(1000) == 3
    table = utility_table(Linear(value=10, slope=1), arrival=2, horizon=5)
    # completion at end of slot t -> duration t + 1 - 2
    assert list(table) == [0.0, 0.0, 10.0, 9.0, 8.0]
