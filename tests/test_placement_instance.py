"""Placement instances: field-named validation, traffic, interference, files, generators."""

from __future__ import annotations

import copy
import json

import jsonschema
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched.errors import InvalidInstanceError
from optsched.placement import (
    PlacementInstance,
    bin_packing_instance,
    generate_instance,
)
from optsched.placement.instance import instance_schema

TOL = 1e-12

BASE = {
    "kind": "placement-instance",
    "cluster": {
        "servers": [
            {"name": "s0", "capacity": {"gpu": 4, "cpu": 16}, "residents": ["cnn"]},
            {"name": "s1", "capacity": {"gpu": 2, "cpu": 8}},
        ]
    },
    "jobs": [
        {
            "name": "a",
            "type": "cnn",
            "tasks": [
                {"name": "w", "role": "worker", "count": 3, "demand": {"gpu": 1, "cpu": 2}},
                {"name": "ps", "role": "ps", "count": 2, "demand": {"cpu": 4}},
            ],
            "communication": {"pattern": "ps", "volume_gbit": 1.0},
        },
        {
            "name": "b",
            "type": "rnn",
            "tasks": [{"name": "r", "role": "rank", "count": 4, "demand": {"gpu": 1}}],
            "communication": {"pattern": "ring", "volume_gbit": 2.0},
            "traffic": [{"src": "r0", "dst": "r2", "volume_gbit": 0.5}],
        },
    ],
    "interference": [{"a": "a", "b": "b", "coefficient": 0.3}],
    "type_interference": [
        {"a": "cnn", "b": "rnn", "coefficient": 0.1},
        {"a": "cnn", "b": "cnn", "coefficient": 0.2},
    ],
}


def _instance(data: dict | None = None) -> PlacementInstance:
    return PlacementInstance.from_dict(copy.deepcopy(BASE if data is None else data))


def test_tasks_are_expanded_with_ids():
    inst = _instance()
    assert [t.id for t in inst.tasks] == [
        "a/w0",
        "a/w1",
        "a/w2",
        "a/ps0",
        "a/ps1",
        "b/r0",
        "b/r1",
        "b/r2",
        "b/r3",
    ]
    assert inst.job_tasks == ((0, 1, 2, 3, 4), (5, 6, 7, 8))
    np.testing.assert_array_equal(inst.demand[0], [1, 2])
    np.testing.assert_array_equal(inst.demand[3], [0, 4])
    np.testing.assert_array_equal(inst.capacity, [[4, 16], [2, 8]])


def test_ps_pattern_volumes_by_hand():
    inst = _instance()
    flows = {
        (inst.tasks[s].id, inst.tasks[d].id): v for s, d, v in inst.flows if inst.tasks[s].job == 0
    }
    # 3 workers x 2 PSs, both directions, volume / P = 0.5 each.
    assert len(flows) == 12
    assert all(abs(v - 0.5) < TOL for v in flows.values())
    assert ("a/w1", "a/ps0") in flows and ("a/ps1", "a/w2") in flows


def test_ring_pattern_volumes_by_hand_plus_explicit_traffic():
    inst = _instance()
    flows = {
        (inst.tasks[s].name, inst.tasks[d].name): v
        for s, d, v in inst.flows
        if inst.tasks[s].job == 1
    }
    per_hop = 2 * 3 / 4 * 2.0  # 2 (n-1)/n * volume with n = 4
    assert set(flows) == {("r0", "r1"), ("r1", "r2"), ("r2", "r3"), ("r3", "r0"), ("r0", "r2")}
    assert abs(flows["r1", "r2"] - per_hop) < TOL
    assert abs(flows["r0", "r2"] - 0.5) < TOL


def test_explicit_traffic_adds_to_the_pattern():
    data = copy.deepcopy(BASE)
    data["jobs"][1]["traffic"] = [{"src": "r0", "dst": "r1", "volume_gbit": 1.0}]
    inst = _instance(data)
    volume = {(inst.tasks[s].name, inst.tasks[d].name): v for s, d, v in inst.flows}
    assert abs(volume["r0", "r1"] - (3.0 + 1.0)) < TOL


def test_pair_coefficients_add_job_and_type_levels():
    inst = _instance()
    c = inst.pair_coefficients
    assert abs(c[0, 1] - (0.3 + 0.1)) < TOL  # kappa(a, b) + y(cnn, rnn)
    assert abs(c[1, 0] - 0.0) < TOL  # nothing given for (b, a) or (rnn, cnn)
    assert c[0, 0] == 0.0
    # Job a (cnn) suffers y(cnn, cnn) from the cnn resident of s0; job b has no such pair.
    np.testing.assert_allclose(inst.resident_costs, [[0.2, 0.0], [0.0, 0.0]])
    assert inst.has_interference


def test_with_interference_replaces_kappa_and_drops_the_diagonal():
    inst = _instance()
    matrix = np.array([[9.0, 0.25], [0.5, 9.0]])
    new = inst.with_interference(matrix)
    np.testing.assert_allclose(new.kappa, [[0.0, 0.25], [0.5, 0.0]])
    assert inst.kappa[0, 1] == 0.3  # the original is unchanged
    assert [(c.a, c.b) for c in new.interference] == [("a", "b"), ("b", "a")]


@pytest.mark.parametrize(
    ("matrix", "field"),
    [
        (np.zeros((3, 3)), "interference"),
        (np.array([[0.0, -1.0], [0.0, 0.0]]), "interference[0][1]"),
        (np.array([[0.0, np.nan], [0.0, 0.0]]), "interference[0][1]"),
    ],
)
def test_with_interference_rejects_bad_matrices(matrix, field):
    with pytest.raises(InvalidInstanceError) as info:
        _instance().with_interference(matrix)
    assert info.value.field == field


def test_with_type_interference_keeps_the_diagonal():
    new = _instance().with_type_interference(["cnn", "rnn"], [[0.4, 0.0], [0.7, 0.1]])
    assert new.type_kappa == {("cnn", "cnn"): 0.4, ("rnn", "cnn"): 0.7, ("rnn", "rnn"): 0.1}
    with pytest.raises(InvalidInstanceError) as info:
        _instance().with_type_interference(["cnn", "gan"], [[0, 0], [0, 0.1]])
    # The field indexes the coefficient list built from the matrix (only (gan, gan) is > 0).
    assert info.value.field == "type_interference[0].a"


def _mutated(path: list, value) -> dict:
    data = copy.deepcopy(BASE)
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (["jobs"], [], "jobs"),
        (["jobs", 0, "name"], "b", "jobs[1].name"),
        (["jobs", 0, "tasks", 0, "demand", "gpu"], 9, "jobs[0].tasks[0].demand.gpu"),
        (["jobs", 0, "tasks", 0, "demand", "gpu"], -1, "jobs[0].tasks[0].demand.gpu"),
        (["jobs", 0, "tasks", 0, "demand", "disk"], 1, "jobs[0].tasks[0].demand.disk"),
        (["jobs", 0, "tasks", 0, "count"], 0, "jobs[0].tasks[0].count"),
        (
            ["jobs", 0, "tasks", 1],
            {"name": "w1", "role": "ps", "demand": {"cpu": 4}},
            "jobs[0].tasks[1].name",
        ),
        (["jobs", 0, "tasks", 1, "role"], "worker", "jobs[0].communication.pattern"),
        (["jobs", 0, "tasks", 1, "role"], "boss", "jobs[0].tasks[1].role"),
        (["jobs", 0, "weight"], -2, "jobs[0].weight"),
        (["jobs", 0, "name"], "a/b", "jobs[0].name"),
        (["jobs", 1, "traffic", 0, "dst"], "r9", "jobs[1].traffic[0].dst"),
        (["jobs", 1, "traffic", 0, "dst"], "r0", "jobs[1].traffic[0].dst"),
        (["jobs", 1, "traffic", 0, "volume_gbit"], -1, "jobs[1].traffic[0].volume_gbit"),
        (["jobs", 1, "communication", "pattern"], "tree", "jobs[1].communication.pattern"),
        (["jobs", 1, "tasks"], KeyError, "jobs[1].tasks"),
        (["interference", 0, "b"], "zz", "interference[0].b"),
        (["interference", 0, "b"], "a", "interference[0].b"),
        (["interference", 0, "coefficient"], -0.1, "interference[0].coefficient"),
        (["type_interference", 0, "b"], "gan", "type_interference[0].b"),
        (["cluster", "servers", 0, "capacity", "gpu"], 2.5, "cluster.servers[0].capacity.gpu"),
        (["cluster", "servers"], [], "cluster.servers"),
        (["kind"], "oasis-instance", "kind"),
        (["colour"], "red", "colour"),
    ],
)
def test_invalid_instances_name_the_field(path, value, field):
    with pytest.raises(InvalidInstanceError) as info:
        _instance(_mutated(path, value))
    assert info.value.field == field
    assert str(info.value).startswith(field)


def test_duplicate_pairs_are_rejected():
    data = copy.deepcopy(BASE)
    data["interference"].append({"a": "a", "b": "b", "coefficient": 0.1})
    with pytest.raises(InvalidInstanceError) as info:
        _instance(data)
    assert info.value.field == "interference[1]"


def test_task_fitting_no_single_server_is_rejected():
    data = copy.deepcopy(BASE)
    # 3 GPUs fit s0 only, 10 CPUs fit s0 only, but s0 has 16 CPUs and 4 GPUs: fits. Make the
    # vector fit no server while each entry fits some server.
    data["cluster"]["servers"][0]["capacity"] = {"gpu": 1, "cpu": 16}
    data["cluster"]["servers"][1]["capacity"] = {"gpu": 4, "cpu": 2}
    data["jobs"][0]["tasks"][0]["demand"] = {"gpu": 2, "cpu": 8}
    with pytest.raises(InvalidInstanceError) as info:
        _instance(data)
    assert info.value.field == "jobs[0].tasks[0].demand"


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_save_and_load_round_trip(tmp_path, suffix):
    inst = generate_instance(4, n_servers=3, racks=2, seed=5)
    path = tmp_path / f"inst{suffix}"
    inst.save(path)
    again = PlacementInstance.load(path)
    assert again == inst
    assert again.flows == inst.flows


def test_load_reports_file_problems(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InvalidInstanceError) as info:
        PlacementInstance.load(bad)
    assert info.value.field == "<file>"
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({**BASE, "jobs": [{"name": "x"}]}))
    with pytest.raises(InvalidInstanceError) as info:
        PlacementInstance.load(wrong)
    assert info.value.field == "jobs[0].tasks"


def test_schema_accepts_generated_files_and_rejects_a_bad_one():
    schema = instance_schema()
    jsonschema.validate(generate_instance(3, seed=1).to_dict(), schema)
    jsonschema.validate(BASE, schema)
    bad = _mutated(["jobs", 0, "tasks", 0, "count"], 0)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


@settings(max_examples=15)
@given(st.integers(1, 8), st.integers(1, 5), st.integers(1, 3), st.integers(0, 10_000))
def test_generators_are_seeded_and_valid(n_jobs, n_servers, racks, seed):
    a = generate_instance(n_jobs, n_servers=n_servers, racks=racks, seed=seed)
    b = generate_instance(n_jobs, n_servers=n_servers, racks=racks, seed=seed)
    assert a == b
    assert len(a.jobs) == n_jobs
    # Every generated flow is inside one job, and every PS job has both directions.
    for src, dst, volume in a.flows:
        assert a.tasks[src].job == a.tasks[dst].job and volume > 0
    c = bin_packing_instance(20, seed=seed)
    assert c == bin_packing_instance(20, seed=seed)
    assert all(20 <= v <= 100 for v in c.demand[:, 0])


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: bin_packing_instance(0), "n_tasks"),
        (lambda: bin_packing_instance(5, low=50, high=10), "low"),
        (lambda: generate_instance(0), "n_jobs"),
        (lambda: generate_instance(2, max_workers=0), "max_workers"),
    ],
)
def test_generators_reject_bad_sizes(call, field):
    with pytest.raises(InvalidInstanceError) as info:
        call()
    assert info.value.field == field


@settings(max_examples=15)
@given(
    st.integers(1, 10),
    st.sampled_from([2, 4, 8]),
    st.sampled_from([0.5, 0.9, 1.0]),
    st.integers(0, 999),
)
def test_fill_picks_the_fewest_servers_within_the_fill(n_jobs, gpus, fill, seed):
    inst = generate_instance(n_jobs, gpus=gpus, max_workers=6, fill=fill, seed=seed)
    workers = inst.demand[:, 0].sum()
    servers = len(inst.servers)
    assert workers <= fill * gpus * servers + 1e-9
    assert servers == 1 or workers > fill * gpus * (servers - 1)


def test_fill_out_of_range_is_rejected():
    with pytest.raises(InvalidInstanceError) as info:
        generate_instance(2, fill=1.5)
    assert info.value.field == "fill"
