"""Packed (space-sharing) allocation LPs: the class-level HiGHS matrices against the job-level
cvxpy twin (one variable per pair of jobs, a conic solver), a brute-force grid on a tiny round,
the relaxation order packed >= unpacked, the independent validator, and the instance format."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import assume, given, settings
from strategies.allocation import packed_rounds

from optsched.allocation.gavel import (
    PACKED_POLICIES,
    POLICIES,
    Allocation,
    AllocationInstance,
    AllocationJob,
    PairThroughput,
    generate_instance,
    packed_objective_value,
    solve,
    validate,
)
from optsched.allocation.gavel.packed import _pattern_cross, _pattern_self
from optsched.allocation.gavel.twin import solve_twin
from optsched.errors import InvalidInstanceError
from optsched.tolerances import OPTIMALITY_GAP, leq, within

pytestmark = pytest.mark.solver("highs")

#: The conic twin's accuracy (see tests/test_allocation.py).
TWIN_TOL = 1e-4


@pytest.mark.parametrize("policy", sorted(PACKED_POLICIES))
@settings(max_examples=12)
@given(inst=packed_rounds())
def test_class_lp_equals_the_job_level_twin(policy: str, inst: AllocationInstance) -> None:
    objective = PACKED_POLICIES[policy]
    # With no steps there is nothing to optimise (the LP returns 0).
    assume(objective not in ("makespan", "ftf") or (inst.steps > 0).any())
    res = solve(inst, policy)
    assert res.optimal
    report = validate(inst, res.solution, policy)
    assert report.ok, report.violations
    assert within(report.objective, res.objective, OPTIMALITY_GAP)
    twin, _ = solve_twin(inst, policy)
    assert within(res.objective, twin, TWIN_TOL)
    if objective in ("max-min", "max-sum-throughput"):
        assert leq(twin, res.objective, OPTIMALITY_GAP)
    else:
        assert leq(res.objective, twin, OPTIMALITY_GAP)


@settings(max_examples=15)
@given(inst=packed_rounds(max_jobs=8))
def test_packing_never_hurts_max_min_or_max_sum(inst: AllocationInstance) -> None:
    """The packed polytope contains the unpacked one (no pair rows): its optimum is no worse;
    without a pair table both are the same LP."""
    for objective in ("max-min", "max-sum-throughput"):
        packed = solve(inst, f"{objective}-packed").objective
        plain = solve(inst, f"{objective}-perf").objective
        assert leq(plain, packed, OPTIMALITY_GAP)
        bare = AllocationInstance(gpu_types=inst.gpu_types, capacity=inst.capacity, jobs=inst.jobs)
        assert within(solve(bare, f"{objective}-packed").objective, plain, OPTIMALITY_GAP)


def _two_jobs(fa: float, fb: float) -> AllocationInstance:
    return AllocationInstance(
        gpu_types=("v100",),
        capacity=(1,),
        jobs=[
            AllocationJob(
                job_id="a", throughput_steps_per_s=(4.0,), job_type="A", steps_remaining=100.0
            ),
            AllocationJob(
                job_id="b",
                throughput_steps_per_s=(2.0,),
                job_type="B",
                steps_remaining=60.0,
                time_since_start_s=10.0,
            ),
        ],
        pair_throughputs=[PairThroughput(job_types=("A", "B"), normalized=((fa, fb),))],
    )


@pytest.mark.parametrize("policy", sorted(PACKED_POLICIES))
def test_no_grid_point_beats_the_packed_lp(policy: str) -> None:
    """Two jobs, one GPU, a pair row: every (x_a, x_b, y) on a 0.05 grid is no better."""
    inst = _two_jobs(0.7, 0.6)
    objective = PACKED_POLICIES[policy]
    res = solve(inst, policy)
    maximise = objective in ("max-min", "max-sum-throughput")
    grid = np.round(np.arange(0, 1.0001, 0.05), 10)
    best = -np.inf if maximise else np.inf
    for xa, xb, y in itertools.product(grid, repeat=3):
        if xa + y > 1 or xb + y > 1 or xa + xb + y > 1:
            continue
        alloc = Allocation(
            ("a", "b"),
            ("v100",),
            np.array([[xa], [xb]]),
            pairs=np.array([[0, 1]]),
            pair_fractions=np.array([[y]]),
        )
        value = packed_objective_value(inst, alloc, objective)
        best = max(best, value) if maximise else min(best, value)
        if maximise:
            assert leq(value, res.objective, OPTIMALITY_GAP)
        else:
            assert leq(res.objective, value, OPTIMALITY_GAP)
    # and the grid comes close to it (the LP's optimum is attained, not just bounded)
    assert within(best, res.objective, 0.1)


def test_max_min_closed_form_for_one_pair() -> None:
    """Two unit-speed jobs on one GPU (normalised share = throughput): time slicing gives 1/2
    each; with fa >= fb the best mix shares for t and runs b alone for 1 - t, fa t = 1 - (1 -
    fb) t, so the optimum is max(1/2, fa / (1 + fa - fb))."""
    for fa, fb in [(0.7, 0.6), (0.4, 0.45), (1.0, 1.0)]:
        inst = AllocationInstance(
            gpu_types=("v100",),
            capacity=(1,),
            jobs=[
                AllocationJob(job_id="a", throughput_steps_per_s=(1.0,), job_type="A"),
                AllocationJob(job_id="b", throughput_steps_per_s=(1.0,), job_type="B"),
            ],
            pair_throughputs=[PairThroughput(job_types=("A", "B"), normalized=((fa, fb),))],
        )
        res = solve(inst, "max-min-packed")
        hi, lo = max(fa, fb), min(fa, fb)
        assert within(res.objective, max(0.5, hi / (1 + hi - lo)), OPTIMALITY_GAP)


def test_classes_expand_to_feasible_job_pairs() -> None:
    """Odd and even classes paired with themselves and each other: the job-level allocation
    the class LP expands to is valid and has the LP's (and the twin's) objective."""
    jobs = [
        AllocationJob(job_id=f"a{i}", throughput_steps_per_s=(2.0, 1.0), job_type="A")
        for i in range(5)
    ]
    jobs += [
        AllocationJob(job_id=f"b{i}", throughput_steps_per_s=(3.0, 1.0), job_type="B")
        for i in range(4)
    ]
    inst = AllocationInstance(
        gpu_types=("v100", "k80"),
        capacity=(2, 1),
        jobs=jobs,
        pair_throughputs=[
            PairThroughput(job_types=("A", "A"), normalized=((0.8, 0.8), (0.9, 0.9))),
            PairThroughput(job_types=("B", "A"), normalized=((0.6, 0.9), (0.0, 0.0))),
            PairThroughput(job_types=("B", "B"), normalized=((0.7, 0.7), (0.8, 0.8))),
        ],
    )
    for policy in ("max-min-packed", "max-sum-throughput-packed"):
        res = solve(inst, policy)
        report = validate(inst, res.solution, policy)
        assert report.ok, report.violations
        assert res.solution.n_pairs > 0
        twin, _ = solve_twin(inst, policy)
        assert within(res.objective, twin, TWIN_TOL)


@pytest.mark.parametrize(("na", "nb"), [(1, 1), (2, 3), (5, 4), (7, 2), (3, 3)])
def test_pair_patterns_give_every_job_its_share(na: int, nb: int) -> None:
    cells = _pattern_cross(na, nb)
    assert len(cells) <= na + nb - 1
    rows, cols = np.zeros(na), np.zeros(nb)
    for i, j, w in cells:
        rows[i] += w
        cols[j] += w
    assert np.allclose(rows, 1 / na) and np.allclose(cols, 1 / nb)
    for n in (na + 1, nb + 2):
        per = np.zeros(n)
        for i, j, w in _pattern_self(n):
            assert i != j
            per[i] += w
            per[j] += w
        assert np.allclose(per, 2 / n) and within(sum(w for *_, w in _pattern_self(n)), 1, 1e-12)


def test_validator_names_each_broken_pair_constraint() -> None:
    inst = AllocationInstance(
        gpu_types=("g", "h"),
        capacity=(1, 1),
        jobs=[
            AllocationJob(job_id="x", throughput_steps_per_s=(1.0, 1.0), job_type="A"),
            AllocationJob(job_id="y", throughput_steps_per_s=(1.0, 1.0), job_type="B"),
            AllocationJob(
                job_id="z", throughput_steps_per_s=(1.0, 1.0), job_type="B", scale_factor=1
            ),
            AllocationJob(job_id="w", throughput_steps_per_s=(1.0, 1.0)),
        ],
        pair_throughputs=[PairThroughput(job_types=("A", "B"), normalized=((0.5, 0.5), (0, 0)))],
    )

    def names(pairs: list[list[int]], y: list[list[float]], x: float = 0.0) -> set[str]:
        fr = np.zeros((4, 2))
        fr[0, 0] = x
        alloc = Allocation(
            ("x", "y", "z", "w"), ("g", "h"), fr, pairs=np.array(pairs), pair_fractions=np.array(y)
        )
        return {v.constraint for v in validate(inst, alloc).violations}

    # a pair on one GPU for the whole round: the GPU counted once, each job's time once
    assert names([[0, 1]], [[1.0, 0.0]]) == set()
    assert names([[0, 1]], [[0.0, 0.5]]) == {"pair_fits"}  # factor 0 on h
    assert names([[1, 2]], [[0.5, 0.0]]) == {"pair_fits"}  # B with B: not in the table
    assert names([[0, 3]], [[0.5, 0.0]]) == {"pair_fits"}  # w has no class
    assert names([[0, 1]], [[0.6, 0.0]], x=0.6) == {"job_time", "type_capacity"}
    assert names([[0, 1], [0, 2]], [[0.6, 0.0], [0.6, 0.0]]) == {"job_time", "type_capacity"}
    assert names([[0, 1]], [[-0.2, 0.0]]) == {"nonnegative"}
    assert names([[0, 9]], [[0.1, 0.0]]) == {"shape"}


@pytest.mark.parametrize(
    ("pairs", "field"),
    [
        ([{"job_types": ["A", "B"], "normalized": [[0.5, 0.5], [1, 1]]}], "pair_throughputs[0]"),
        (
            [
                {"job_types": ["A", "B"], "normalized": [[0.5, 0.5]]},
                {"job_types": ["B", "A"], "normalized": [[0.5, 0.5]]},
            ],
            "pair_throughputs[1].job_types",
        ),
        ([{"job_types": ["A", "A"], "normalized": [[0.5, 0.6]]}], "pair_throughputs[0]"),
        ([{"job_types": ["A", "B"], "normalized": [[-1, 0.6]]}], "pair_throughputs[0]"),
        ([{"job_types": ["A", "B"], "normalized": [["x", 0.6]]}], "pair_throughputs[0]"),
    ],
)
def test_bad_pair_tables_name_the_field(pairs: list[dict], field: str) -> None:
    data = {
        "gpu_types": ["v100"],
        "capacity": [2],
        "jobs": [{"job_id": "a", "throughput_steps_per_s": [1.0], "job_type": "A"}],
        "pair_throughputs": pairs,
    }
    with pytest.raises(InvalidInstanceError) as err:
        AllocationInstance.from_dict(data)
    assert err.value.field.startswith(field), err.value.field


def test_round_trip_and_old_files(tmp_path) -> None:
    inst = generate_instance(6, seed=7, job_types=3)
    assert inst.pair_throughputs
    inst.save(tmp_path / "round.json")
    assert AllocationInstance.load(tmp_path / "round.json") == inst
    old = {
        "gpu_types": ["v100"],
        "capacity": [1],
        "jobs": [{"job_id": "a", "throughput_steps_per_s": [1]}],
    }
    plain = AllocationInstance.from_dict(old)
    assert plain.pair_throughputs == () and plain.jobs[0].job_type is None
    assert "pair_throughputs" in AllocationInstance.schema()["properties"]


def test_packed_names_are_registered_and_the_unpacked_solver_refuses_them() -> None:
    from optsched.allocation.gavel.lp import solve_lp_policy

    assert set(PACKED_POLICIES) <= set(POLICIES)
    with pytest.raises(InvalidInstanceError) as err:
        solve_lp_policy(generate_instance(3, seed=0), "max-min-packed")
    assert err.value.field == "policy"


def test_frame_and_dict_list_pair_rows() -> None:
    inst = _two_jobs(0.9, 0.9)
    res = solve(inst, "max-sum-throughput-packed")
    frame = res.solution.to_frame()
    shared = frame[frame["partner"] != ""]
    assert set(shared["job"]) == {"a", "b"}
    assert res.solution.to_dict()["pairs"][0]["jobs"] == ["a", "b"]
