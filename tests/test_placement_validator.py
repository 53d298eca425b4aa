"""The independent placement validator: hand-computed objectives, rejections, invariants."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched.errors import InvalidInstanceError, InvalidScheduleError
from optsched.placement import (
    Placement,
    PlacementInstance,
    check,
    generate_instance,
    validate,
)
from optsched.placement.solution import placement_schema
from optsched.placement.validator import CONSTRAINTS
from optsched.tolerances import CAPACITY_TOL

TOL = 1e-9

# Two racks: r0 = {s0, s1}, r1 = {s2}. Values below are worked out by hand in each test.
DATA = {
    "kind": "placement-instance",
    "comm_weight": 2.0,
    "cluster": {
        "servers": [
            {
                "name": "s0",
                "capacity": {"gpu": 2, "cpu": 8},
                "nic_bandwidth_gbps": 10,
                "nic_load_gbit": 1.0,
                "rack": "r0",
                "gpu_bandwidth_gbps": 16,
                "gpu_memory_gb": 16,
                "gpu_links": [{"a": 0, "b": 1, "bandwidth_gbps": 64}],
            },
            {
                "name": "s1",
                "capacity": {"gpu": 2, "cpu": 8},
                "nic_bandwidth_gbps": 10,
                "rack": "r0",
            },
            {
                "name": "s2",
                "capacity": {"gpu": 2, "cpu": 8},
                "nic_bandwidth_gbps": 20,
                "rack": "r1",
                "residents": ["cnn"],
            },
        ],
        "racks": [
            {"name": "r0", "uplink_bandwidth_gbps": 5},
            {"name": "r1", "uplink_bandwidth_gbps": 5, "uplink_load_gbit": 0.5},
        ],
    },
    "jobs": [
        {
            "name": "a",
            "type": "cnn",
            "weight": 2,
            "standalone_time_s": 1.0,
            "spread_penalty_s": 0.5,
            "tasks": [
                {"name": "w", "count": 2, "demand": {"gpu": 0.5, "cpu": 1}, "gpu_memory_gb": 10},
                {"name": "ps", "role": "ps", "demand": {"cpu": 2}},
            ],
            "communication": {"pattern": "ps", "volume_gbit": 2.0},
            "traffic": [{"src": "w0", "dst": "w1", "volume_gbit": 0.8}],
        },
        {
            "name": "b",
            "type": "rnn",
            "weight": 1,
            "standalone_time_s": 0.5,
            "tasks": [{"name": "r", "role": "rank", "count": 2, "demand": {"gpu": 0.5, "cpu": 3}}],
            "communication": {"pattern": "ring", "volume_gbit": 1.0},
        },
    ],
    "interference": [
        {"a": "a", "b": "b", "coefficient": 0.3},
        {"a": "b", "b": "a", "coefficient": 0.1},
    ],
    "type_interference": [{"a": "rnn", "b": "cnn", "coefficient": 0.05}],
}

SPLIT = {"a/w0": "s0", "a/w1": "s2", "a/ps": "s0", "b/r0": "s0", "b/r1": "s1"}
ATOMIC = {"a/w0": "s0", "a/w1": "s0", "a/ps": "s0", "b/r0": "s2", "b/r1": "s2"}


@pytest.fixture(scope="module")
def inst() -> PlacementInstance:
    return PlacementInstance.from_dict(DATA)


def test_split_placement_by_hand(inst):
    report = validate(inst, Placement(assignment=SPLIT))
    assert report.ok, report.violations
    obj = report.objectives
    assert obj["servers"] == 3
    # Crossing: w1<->ps 2+2, w0->w1 0.8, r0<->r1 1+1.
    assert abs(obj["traffic"] - 6.8) < TOL
    # r1 inbound: background 0.5 + ps->w1 2 + w0->w1 0.8 = 3.3 over 5 Gbit/s.
    assert abs(obj["max-load"] - 0.66) < TOL
    expected_loads = {
        "s0:out": 4.8, "s0:in": 4.0, "s1:out": 1.0, "s1:in": 1.0, "s2:out": 2.0, "s2:in": 2.8,
        "r0:out": 2.8, "r0:in": 2.0, "r1:out": 2.5, "r1:in": 3.3,
    }  # fmt: skip
    assert report.details["link_load"].keys() == expected_loads.keys()
    for key, value in expected_loads.items():
        assert abs(report.details["link_load"][key] - value) < TOL, key
    # a: 2 * (1 + 0.3 on s0 shared with b + 0.5 for a second server); b: 1 * (0.5 + 0.1 + 0.05).
    assert abs(obj["interference"] - (3.6 + 0.65)) < TOL
    assert obj["clwp"] is None  # job a is split
    assert obj["nlwp"] is None  # no GPUs given
    assert report.details["server_load"]["s0"] == {"gpu": 1.0, "cpu": 6.0}


def test_atomic_placement_by_hand(inst):
    report = validate(inst, Placement(assignment=ATOMIC))
    assert report.ok
    obj = report.objectives
    assert obj["servers"] == 2
    assert obj["traffic"] == 0.0
    # Only backgrounds: s0 NIC 1/10 and r1 uplink 0.5/5.
    assert abs(obj["max-load"] - 0.1) < TOL
    # b suffers y(rnn, cnn) = 0.05 from s2's cnn resident.
    assert abs(obj["interference"] - (2 * 1.0 + 1 * 0.55)) < TOL
    assert abs(obj["clwp"] - 0.05) < TOL


def test_gpu_assignment_by_hand(inst):
    gpus = {"a/w0": 0, "a/w1": 1, "b/r0": 0, "b/r1": 0}
    report = validate(inst, Placement(assignment=SPLIT | {"a/w1": "s0"}, gpus=gpus))
    assert report.ok, report.violations
    # GPU (s0, 0) hosts a/w0 and b/r0: 2 * 0.3 + 1 * (0.1 + 0.05).
    interference = 0.75
    # w<->ps via the host link 16: (4 + 4) / 16; w0->w1 over the 64 Gbit/s link; r0<->r1
    # between s0 and s1 over min(10, 10).
    comm = 8 / 16 + 0.8 / 64 + 2 / 10
    assert abs(report.objectives["nlwp"] - (interference + 2.0 * comm)) < TOL


@pytest.mark.parametrize(
    ("assignment", "gpus", "constraint", "needle"),
    [
        (
            {**ATOMIC, "b/r0": "s0", "b/r1": "s0"},
            None,
            "server_capacity",
            "cpu demand 10 exceeds capacity 8",
        ),
        (
            {k: v for k, v in ATOMIC.items() if k != "a/ps"},
            None,
            "task_assignment",
            "'a/ps' is not assigned",
        ),
        ({**ATOMIC, "z/q": "s0"}, None, "task_assignment", "unknown task 'z/q'"),
        ({**ATOMIC, "a/ps": "s9"}, None, "task_assignment", "unknown server 's9'"),
        (
            ATOMIC,
            {"a/w0": 0, "a/w1": 0, "b/r0": 0, "b/r1": 1},
            "gpu_memory",
            "GPU 0 of server 's0' needs 20",
        ),
        (ATOMIC, {"a/w0": 0, "a/w1": 1, "b/r0": 2, "b/r1": 1}, "gpu_assignment", "given GPU 2"),
        (
            ATOMIC,
            {"a/w0": 0, "a/w1": 1, "b/r0": 0},
            "gpu_assignment",
            "'b/r1' demands a GPU but has none",
        ),
        (
            ATOMIC,
            {"a/w0": 0, "a/w1": 1, "b/r0": 0, "b/r1": 1, "a/ps": 0},
            "gpu_assignment",
            "demands no GPU",
        ),
    ],
)
def test_broken_placements_are_rejected(inst, assignment, gpus, constraint, needle):
    placement = Placement(assignment=assignment, gpus=gpus)
    report = validate(inst, placement)
    assert not report.ok
    hits = [v for v in report.violations if needle in v.message]
    assert hits, report.violations
    assert hits[0].constraint == constraint
    assert constraint in CONSTRAINTS
    frame = report.to_frame()
    assert constraint in set(frame["constraint"])
    with pytest.raises(InvalidScheduleError):
        check(inst, placement)


def test_gpu_shared_more_than_once_is_rejected():
    data = json.loads(json.dumps(DATA))
    data["jobs"][1]["tasks"][0]["demand"]["gpu"] = 1.0
    inst = PlacementInstance.from_dict(data)
    gpus = {"a/w0": 0, "a/w1": 1, "b/r0": 0, "b/r1": 1}
    placement = Placement(assignment={**ATOMIC, "b/r0": "s0"}, gpus=gpus)
    report = validate(inst, placement)
    shared = [v for v in report.violations if "shared 1.5 > 1" in v.message]
    assert shared and shared[0].constraint == "gpu_share", report.violations
    assert shared[0].amount == pytest.approx(0.5)
    assert shared[0].where == {"server": "s0", "gpu": 0}


@settings(max_examples=30)
@given(st.integers(0, 10_000), st.data())
def test_capacity_verdict_matches_a_vectorised_check(seed, data):
    inst = generate_instance(4, n_servers=3, gpus=2, seed=seed)
    servers = data.draw(
        st.lists(st.integers(0, 2), min_size=len(inst.tasks), max_size=len(inst.tasks))
    )
    report = validate(inst, Placement.from_indices(inst, servers))
    load = np.zeros_like(inst.capacity)
    np.add.at(load, servers, inst.demand)
    fits = bool(np.all(load <= inst.capacity + CAPACITY_TOL * np.maximum(1.0, inst.capacity)))
    assert report.ok == fits
    # Servers used, computed another way.
    assert report.objectives["servers"] == len(set(servers))


@settings(max_examples=30)
@given(st.integers(0, 10_000), st.data())
def test_single_switch_traffic_equals_nic_loads(seed, data):
    # Without racks every crossing flow leaves exactly one NIC, so the outbound NIC loads sum
    # to the cross-server traffic (backgrounds are zero in generated instances).
    inst = generate_instance(3, n_servers=3, seed=seed)
    servers = data.draw(
        st.lists(st.integers(0, 2), min_size=len(inst.tasks), max_size=len(inst.tasks))
    )
    report = validate(inst, Placement.from_indices(inst, servers))
    outbound = sum(v for k, v in report.details["link_load"].items() if k.endswith(":out"))
    inbound = sum(v for k, v in report.details["link_load"].items() if k.endswith(":in"))
    assert abs(outbound - report.objectives["traffic"]) < 1e-9
    assert abs(inbound - report.objectives["traffic"]) < 1e-9


def test_placement_files_and_solver_reports_load(tmp_path, inst):
    placement = Placement(assignment=ATOMIC, method="hand")
    path = tmp_path / "p.json"
    placement.save(path)
    assert Placement.load(path) == placement
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"status": "optimal", "objective": 2.0, "assignment": ATOMIC}))
    assert Placement.load(report).assignment == ATOMIC
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"assignment": {"a/w0": 3}}))
    with pytest.raises(InvalidInstanceError) as info:
        Placement.load(bad)
    assert info.value.field == "assignment.a/w0"
    assert placement_schema()["title"] == "optsched placement"


def test_from_indices_rejects_out_of_range_servers(inst):
    with pytest.raises(ValueError, match="out of range"):
        Placement.from_indices(inst, [0, 0, 0, 0, -1])
    with pytest.raises(ValueError, match="one server per task"):
        Placement.from_indices(inst, [0, 0])
