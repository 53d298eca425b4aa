"""Every validator is its formulation page's constraints, one named function each.

For every family:

* ``CONSTRAINTS`` maps each constraint name to the function of that name, and the names are
  exactly those of the constraint table of the family's formulation page (the list-table with
  ``:class: constraints``, column headed "validator ..." or "checked by ...");
* ``validate(instance, solution)``: the second parameter is named ``solution``;
* a valid solution passes, and for every name of ``CONSTRAINTS`` a solution broken by hand from
  the valid one (so that it breaks that constraint alone) is reported with exactly that name.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from optsched.results import Report

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "formulations"

#: Family package -> (validator module, formulation page).
FAMILIES = {
    "allocation.gavel": ("optsched.allocation.gavel.validate", "allocation.rst"),
    "allocation.optimus": ("optsched.allocation.optimus.validate", "optimus.rst"),
    "allocation.chronus": ("optsched.allocation.chronus.validate", "chronus.rst"),
    "allocation.andreas": ("optsched.allocation.andreas.validate", "andreas.rst"),
    "online.oasis": ("optsched.online.oasis.schedule", "oasis_offline.rst"),
    "online.aonline": ("optsched.online.aonline.schedule", "aonline.rst"),
    "placement": ("optsched.placement.validator", "placement.rst"),
    "comm.tensorlights": ("optsched.comm.tensorlights.validator", "tensorlights.rst"),
    "comm.pace": ("optsched.comm.pace.validator", "pace.rst"),
    "sim": ("optsched.sim.measure.validate", "sim_exact.rst"),
    "goodput.sia_ilp": ("optsched.goodput.sia_ilp", "sia_ilp.rst"),
}

#: Constraints a family's ``validate`` checks before its module's ``CONSTRAINTS``.
EXTRA = {"comm.pace": {"instance"}}


# -- the formulation pages' constraint tables ------------------------------------------------

_NAME = re.compile(r"``([a-z][a-z0-9_]*)``")


def _list_tables(text: str) -> list[list[list[str]]]:
    """Every ``list-table`` with ``:class: constraints``, as rows of cell texts."""
    tables = []
    lines = text.splitlines()
    for k, line in enumerate(lines):
        if not line.startswith(".. list-table::"):
            continue
        options, body = [], []
        j = k + 1
        while j < len(lines) and (not lines[j].strip() or lines[j].startswith("   ")):
            body.append(lines[j])
            j += 1
        options = [b.strip() for b in body if b.strip().startswith(":")]
        if ":class: constraints" not in options:
            continue
        rows: list[list[str]] = []
        for b in body:
            if b.startswith("   * - "):
                rows.append([b[len("   * - ") :]])
            elif b.startswith("     - "):
                rows[-1].append(b[len("     - ") :])
            elif b.startswith("       ") and rows:
                rows[-1][-1] += " " + b.strip()
        tables.append(rows)
    return tables


def documented_names(page: str) -> set[str]:
    """The constraint names of a page: the ``literals`` of its constraint tables' validator
    column."""
    tables = _list_tables((DOCS / page).read_text(encoding="utf-8"))
    assert tables, f"{page} has no list-table with :class: constraints"
    names: set[str] = set()
    for rows in tables:
        header = [cell.lower() for cell in rows[0]]
        (col,) = [i for i, h in enumerate(header) if h.startswith(("validator", "checked by"))]
        for row in rows[1:]:
            names |= set(_NAME.findall(row[col]))
    return names


def test_the_table_parser_reads_cells_and_continuations():
    text = (
        "Intro\n\n.. list-table:: T\n   :header-rows: 1\n   :class: constraints\n\n"
        "   * - constraint\n     - validator check\n"
        "   * - x >= 0\n     - ``nonneg`` and\n       ``other_name``\n"
        "   * - y\n     - ``mod.func`` (not a name)\n\n"
        ".. list-table:: U\n   :header-rows: 1\n\n   * - a\n     - validator\n"
        "   * - b\n     - ``hidden``\n"
    )
    (rows,) = _list_tables(text)
    assert rows[1] == ["x >= 0", "``nonneg`` and ``other_name``"]
    assert set(_NAME.findall(rows[1][1])) == {"nonneg", "other_name"}
    assert _NAME.findall(rows[2][1]) == []


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_constraints_are_named_functions_listed_on_the_formulation_page(family):
    module_name, page = FAMILIES[family]
    module = importlib.import_module(module_name)
    constraints: Mapping[str, Callable[..., Any]] = module.CONSTRAINTS
    for name, function in constraints.items():
        assert function.__name__ == name, (family, name, function.__name__)
        assert getattr(module, name) is function
        assert function.__doc__ and f"``{name}``" in function.__doc__, (family, name)
    assert set(constraints) | EXTRA.get(family, set()) == documented_names(page)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_validate_takes_instance_and_solution(family):
    package = importlib.import_module(f"optsched.{family}")
    params = list(inspect.signature(package.validate).parameters)
    assert params[:2] == ["instance", "solution"], (family, params)


# -- each constraint, broken alone -----------------------------------------------------------


def _names(report: Report) -> set[str]:
    return {v.constraint for v in report.violations}


def _check_each(
    validate: Callable[..., Report],
    constraints: Mapping[str, Any],
    instance: Any,
    valid: Any,
    broken: Mapping[str, Any],
    **options: Any,
) -> None:
    """The valid solution passes; each broken one is reported under its constraint alone."""
    assert set(broken) == set(constraints), set(constraints) ^ set(broken)
    report = validate(instance, valid, **options)
    assert report.ok, report.violations
    for name, solution in broken.items():
        found = validate(instance, solution, **options)
        assert _names(found) == {name}, (name, found.violations)
        assert not found.ok


def test_gavel_each_constraint():
    from optsched.allocation.gavel import (
        Allocation,
        AllocationInstance,
        AllocationJob,
        PairThroughput,
        validate,
    )
    from optsched.allocation.gavel.validate import CONSTRAINTS

    inst = AllocationInstance(
        gpu_types=("v100", "k80"),
        capacity=(2, 1),
        jobs=(
            AllocationJob(
                job_id="a",
                throughput_steps_per_s=(1.0, 1.0),
                job_type="x",
                steps_remaining=100.0,
                time_to_deadline_s=200.0,
            ),
            # b cannot run on the k80: no throughput there, and its gang of 2 does not fit.
            AllocationJob(
                job_id="b", throughput_steps_per_s=(1.0, 0.0), scale_factor=2, job_type="x"
            ),
        ),
        pair_throughputs=(PairThroughput(job_types=("x", "x"), normalized=((0.5, 0.5),) * 2),),
    )

    def alloc(x: list[list[float]], pairs=None, y=None, ids=("a", "b")) -> Allocation:
        extra = {}
        if pairs is not None:
            extra = {"pairs": np.array(pairs), "pair_fractions": np.array(y, dtype=float)}
        return Allocation(ids, inst.gpu_types, np.array(x, dtype=float), **extra)

    valid = alloc([[0.5, 0.5], [0.5, 0.0]])
    broken = {
        "shape": alloc([[0.5, 0.5], [0.5, 0.0]], ids=("b", "a")),
        "nonnegative": alloc([[0.5, 0.5], [0.5, -0.1]]),
        "job_time": alloc([[0.7, 0.5], [0.5, 0.0]]),  # 1.2 of the round
        "type_capacity": alloc([[0.5, 0.5], [0.8, 0.0]]),  # 0.5 + 2 * 0.8 > 2 V100s
        "gang_fits": alloc([[0.5, 0.5], [0.5, 0.1]]),
        # a and b have different gang sizes: they may not share.
        "pair_fits": alloc([[0.4, 0.4], [0.5, 0.0]], pairs=[[0, 1]], y=[[0.1, 0.0]]),
        # a needs 100 / 200 steps/s by its deadline; 0.4 is too slow.
        "slo": alloc([[0.2, 0.2], [0.5, 0.0]]),
    }
    _check_each(validate, CONSTRAINTS, inst, valid, broken, objective="min-cost-slo-perf")
    # Without a deadline policy the slo rows are not the allocation's to meet.
    assert validate(inst, broken["slo"]).ok


def test_optimus_each_constraint():
    from optsched.allocation.optimus import (
        OptimusAllocation,
        OptimusInstance,
        OptimusJob,
        validate,
    )
    from optsched.allocation.optimus.validate import CONSTRAINTS

    def job(name: str) -> OptimusJob:
        return OptimusJob(
            job_id=name,
            remaining_steps=1000.0,
            theta=(0.1, 0.05, 0.0, 0.0),
            worker_demand=(1.0, 2.0),
            ps_demand=(0.0, 1.0),
            max_workers=3,
            max_ps=2,
        )

    inst = OptimusInstance(
        resources=("gpu", "cpu"), capacity=(4.0, 10.0), jobs=[job("a"), job("b")]
    )
    valid = OptimusAllocation(("a", "b"), (1, 1), (1, 1))
    broken = {
        "shape": OptimusAllocation(("b", "a"), (1, 1), (1, 1)),
        "integral": OptimusAllocation(("a", "b"), (1.5, 1), (1, 1)),  # type: ignore[arg-type]
        "ps_range": OptimusAllocation(("a", "b"), (0, 1), (1, 1)),
        "worker_range": OptimusAllocation(("a", "b"), (1, 1), (0, 1)),
        # cpu: PSs 2 + 2, workers 2 * 3 + 2 * 1: 12 > 10 (each count within its range).
        "capacity": OptimusAllocation(("a", "b"), (2, 2), (3, 1)),
    }
    _check_each(validate, CONSTRAINTS, inst, valid, broken)


def test_chronus_each_constraint():
    from optsched.allocation.chronus import (
        BestEffortJob,
        LeaseInstance,
        LeasePlan,
        SLOJob,
        validate,
    )
    from optsched.allocation.chronus.validate import CONSTRAINTS

    inst = LeaseInstance(
        gpu_types=("v100", "k80"),
        capacity=((3, 2), (3, 2)),
        slo_jobs=(
            SLOJob(job_id="a", gang=2, remaining=10, speed=(5, 0), deadline=1, guaranteed=True),
            SLOJob(job_id="b", gang=1, remaining=3, speed=(3, 0), deadline=0),
        ),
        best_effort=(
            BestEffortJob(job_id="c", gang=1, remaining=4, speed=(2, 1)),
            BestEffortJob(job_id="d", gang=2, remaining=4, speed=(1, 1)),
        ),
    )
    a = (("a", 0, "v100"), ("a", 1, "v100"))
    rest = (("b", 0, "v100"), ("c", 0, "k80"), ("c", 1, "k80"))
    valid = LeasePlan(("a", "b"), a + rest)
    broken = {
        "admission": LeasePlan(("a", "b", "c"), a + rest),  # c is best-effort
        "keep_guaranteed": LeasePlan(("b",), rest),
        "known_job": LeasePlan(("a", "b"), (*a, *rest, ("x", 0, "k80"))),
        "known_type": LeasePlan(("a", "b"), (*a, *rest, ("d", 0, "h100"))),
        "lease_range": LeasePlan(("a", "b"), (*a, *rest, ("d", 2, "k80"))),
        "one_type_per_lease": LeasePlan(("a", "b"), (*a, *rest, ("c", 1, "v100"))),
        "runs_on_type": LeasePlan(("a", "b"), (*a, *rest, ("b", 1, "k80"))),
        "admitted_only": LeasePlan(("a",), a + rest),
        "capacity": LeasePlan(("a", "b"), (*a, *rest, ("d", 1, "v100"))),  # 2 + 2 > 3 V100s
        "finish_by_deadline": LeasePlan(("a", "b"), a[:1] + rest),  # 5 of a's 10 steps
    }
    _check_each(validate, CONSTRAINTS, inst, valid, broken)


def test_andreas_each_constraint():
    from optsched.allocation.andreas import AndreasPlan, Assignment, generate_instance, validate
    from optsched.allocation.andreas.validate import CONSTRAINTS

    inst = generate_instance(3, nodes=1, gpus_per_server=4, seed=0)
    a, b, c = (j.job_id for j in inst.jobs)
    valid = AndreasPlan((Assignment(a, "v100", 4, (0,)),), (b, c))
    broken = {
        "unknown_job": AndreasPlan(valid.assignments, (b, c, "ghost")),
        "duplicate_job": AndreasPlan(valid.assignments, (a, b, c)),
        "missing_job": AndreasPlan(valid.assignments, (b,)),
        "unknown_config": AndreasPlan((Assignment(a, "v100", 3, (0,)),), (b, c)),
        "nodes_per_config": AndreasPlan((Assignment(a, "v100", 4, (0, 0)),), (b, c)),
        "node_index": AndreasPlan((Assignment(a, "v100", 4, (5,)),), (b, c)),
        "node_capacity": AndreasPlan(
            (Assignment(a, "v100", 4, (0,)), Assignment(b, "v100", 1, (0,))), (c,)
        ),
    }
    _check_each(validate, CONSTRAINTS, inst, valid, broken)


def test_aonline_each_constraint():
    from optsched.online.aonline import (
        AonlineInstance,
        AonlineJob,
        AonlineSchedule,
        GpuPool,
        Run,
        validate,
    )
    from optsched.online.aonline.schedule import CONSTRAINTS

    inst = AonlineInstance(
        pools=(
            GpuPool(name="a", count=4, gpus_per_server=2),
            GpuPool(name="b", count=2, gpus_per_server=2),
        ),
        jobs=(
            AonlineJob(arrival=1, gpus=2, work=2, rates={"a": 1}),
            AonlineJob(gpus=1, work=2, rates={"a": 2}),
        ),
    )
    first = Run(slot=0, job=1, pool="a", servers=((0, 1),))
    second = Run(slot=2, job=0, pool="a", servers=((1, 2),))
    runs = (first, Run(slot=1, job=0, pool="a", servers=((0, 2),)), second)
    valid = AonlineSchedule(runs=runs)

    def plus(*extra: Run) -> AonlineSchedule:
        return AonlineSchedule(runs=(*runs, *extra))

    broken = {
        "unknown_job": plus(Run(slot=3, job=5, pool="a", servers=((0, 2),))),
        "unknown_pool": plus(Run(slot=3, job=0, pool="z", servers=((0, 2),))),
        "unknown_server": plus(Run(slot=3, job=0, pool="a", servers=((7, 2),))),
        "arrival": AonlineSchedule(
            runs=(first, Run(slot=0, job=0, pool="a", servers=((1, 2),)), second)
        ),
        "gang_size": AonlineSchedule(
            runs=(first, Run(slot=1, job=0, pool="a", servers=((0, 1),)), second)
        ),
        "one_run": plus(Run(slot=1, job=0, pool="a", servers=((1, 2),))),
        "no_rate": plus(Run(slot=3, job=0, pool="b", servers=((0, 2),))),
        "server_capacity": plus(Run(slot=1, job=1, pool="a", servers=((0, 1),))),
        "work": AonlineSchedule(runs=runs[:2]),
    }
    _check_each(validate, CONSTRAINTS, inst, valid, broken)


def test_placement_each_constraint():
    from optsched.placement import Placement, PlacementInstance, validate
    from optsched.placement.validator import CONSTRAINTS

    inst = PlacementInstance.from_dict(
        {
            "kind": "placement-instance",
            "cluster": {
                "servers": [
                    {"name": "s0", "capacity": {"gpu": 2, "cpu": 8}, "gpu_memory_gb": 16},
                    {"name": "s1", "capacity": {"gpu": 2, "cpu": 8}},
                ],
            },
            "jobs": [
                {
                    "name": "a",
                    "tasks": [
                        {
                            "name": "w",
                            "count": 2,
                            "demand": {"gpu": 0.5, "cpu": 1},
                            "gpu_memory_gb": 10,
                        },
                        {"name": "ps", "role": "ps", "demand": {"cpu": 2}},
                    ],
                },
                {
                    "name": "b",
                    "tasks": [{"name": "r", "count": 2, "demand": {"gpu": 0.5, "cpu": 3}}],
                },
            ],
        }
    )
    where = {"a/w0": "s0", "a/w1": "s0", "a/ps": "s0", "b/r0": "s1", "b/r1": "s1"}
    gpus = {"a/w0": 0, "a/w1": 1, "b/r0": 0, "b/r1": 1}
    valid = Placement(assignment=where, gpus=gpus)
    three_on_s1 = {**where, "a/w1": "s1"}  # cpu 1 + 3 + 3 = 7 of 8, GPU 1.5 of 2
    broken = {
        "task_assignment": Placement(
            assignment={k: v for k, v in where.items() if k != "a/ps"}, gpus=gpus
        ),
        "server_capacity": Placement(assignment={**where, "b/r0": "s0", "b/r1": "s0"}),
        "gpu_assignment": Placement(assignment=where, gpus={**gpus, "b/r1": 2}),
        # 0.5 + 0.5 + 0.5 of GPU 0 of s1 (which has no memory limit).
        "gpu_share": Placement(
            assignment=three_on_s1, gpus={"a/w0": 0, "a/w1": 0, "b/r0": 0, "b/r1": 0}
        ),
        # 10 + 10 GB on GPU 0 of s0 (16 GB), at a share of 0.5 + 0.5.
        "gpu_memory": Placement(assignment=where, gpus={**gpus, "a/w1": 0}),
    }
    _check_each(validate, CONSTRAINTS, inst, valid, broken)


def test_oasis_each_constraint():
    from optsched.online.oasis import OasisInstance, build_schedule, validate
    from optsched.online.oasis.schedule import CONSTRAINTS

    def job(arrival: int, seconds: float) -> dict[str, Any]:
        # N = 2 chunks of one epoch, one minibatch of ``seconds``: 2 * seconds worker-slots.
        return {
            "arrival": arrival,
            "epochs": 1,
            "chunks": 2,
            "minibatches": 1,
            "minibatch_s": seconds,
            "gradient_mb": 0.0,
            "worker_demand": {"gpu": 1.0, "bandwidth": 1.0},  # b = 1
            "ps_demand": {"bandwidth": 2.0},  # B = 2: one PS serves two workers
            "utility": {"kind": "linear", "value": 10, "slope": 1},
        }

    inst = OasisInstance.from_dict(
        {
            "horizon": 5,
            "slot_s": 1.0,
            "resources": ["gpu", "bandwidth"],
            "worker_servers": [{"capacity": {"gpu": 3, "bandwidth": 10}}],
            "ps_servers": [{"capacity": {"gpu": 0, "bandwidth": 4}}],
            "jobs": [job(1, 2.0), job(0, 0.5), job(0, 0.5)],
        }
    )
    j0 = ([(1, 0, 2), (2, 0, 2)], [(1, 0, 1), (2, 0, 1)])  # 4 worker-slots, done at 3
    j1 = ([(0, 0, 1)], [(0, 0, 1)])  # 1 worker-slot, done at 1
    valid = build_schedule(inst, [j0, j1, None])  # job 2 is rejected

    def job_copy(i: int, **changes: Any) -> Any:
        jobs = list(valid.jobs)
        jobs[i] = jobs[i].model_copy(update=changes)
        return valid.model_copy(update={"jobs": tuple(jobs)})

    broken = {
        "schedule_shape": valid.model_copy(update={"jobs": valid.jobs[:2]}),
        "rejected_idle": job_copy(2, workers=((0, 0, 1),)),
        "before_arrival": build_schedule(
            inst, [([(0, 0, 1), *j0[0]], [(0, 0, 1), *j0[1]]), j1, None]
        ),
        "work_requirement": build_schedule(inst, [([(1, 0, 2), (2, 0, 1)], j0[1]), j1, None]),
        "worker_cap": build_schedule(
            inst, [([(1, 0, 3), (2, 0, 2)], [(1, 0, 2), (2, 0, 1)]), j1, None]
        ),
        # slot 1: 2 + 2 GPUs of 3.
        "worker_capacity": build_schedule(inst, [j0, ([(1, 0, 2)], [(1, 0, 1)]), None]),
        # slot 1: (2 + 1) PSs of 2 Gbit/s on a 4 Gbit/s PS server.
        "ps_capacity": build_schedule(
            inst, [(j0[0], [(1, 0, 2), (2, 0, 1)]), ([(1, 0, 1)], [(1, 0, 1)]), None]
        ),
        "ps_bandwidth": build_schedule(inst, [(j0[0], [(1, 0, 1)]), j1, None]),
        "ps_count": build_schedule(inst, [j0, ([(0, 0, 1)], [(0, 0, 2)]), None]),
        "completion": job_copy(0, completion=4),
        "utility": job_copy(0, utility=valid.jobs[0].utility + 1.0),
    }
    _check_each(validate, CONSTRAINTS, inst, valid, broken)


def test_tensorlights_each_constraint():
    from strategies.tensorlights import job, make

    from optsched.comm.tensorlights import simulate, validate
    from optsched.comm.tensorlights.validator import CONSTRAINTS

    # Two hosts; job 1 has a shard on each, the others on host 0 only.
    inst = make(
        [1.0, 2.0],
        [job(2.0, 2, 1.0, 3, hosts=(0,)), job(3.0, 1, 0.5, 2, hosts=(0, 1)), job(1.0, 1, 0, 2)],
    )
    res = simulate(inst, "rotate", rotation_period=0.7)
    trace = res.trace
    assert trace is not None
    times, dt = trace.times, np.diff(trace.times)
    mid = 0.5 * (times[:-1] + times[1:])

    def traced(**changes: Any) -> Any:
        return dataclasses.replace(res, trace=dataclasses.replace(trace, **changes))

    def times_of(**changes: Any) -> Any:
        return dataclasses.replace(res, **changes)

    def sending(job: int, host: int, segment: int, rate: float) -> Any:
        """Job ``job`` also sends at ``rate`` on ``host`` in ``segment``, host totals kept."""
        job_rate, used = trace.job_rate.copy(), trace.used.copy()
        job_rate[segment, job, host] += rate
        used[segment, host] += rate
        return traced(job_rate=job_rate, used=used)

    def first(mask: np.ndarray) -> int:
        return int(np.nonzero(mask & (dt > 0))[0][0])

    host1_idle = trace.used[:, 1] == 0
    # Job 1's first broadcast runs to 3.4; its shard on host 1 finishes at 1.25, then host 1 idles.
    end_1 = res.iteration_end[1, 0]
    shard_done = res.flow_finish[0, 3]
    assert shard_done < end_1
    changed = {
        "flow_finish": res.flow_finish.copy(),
        "late_shard": res.flow_finish.copy(),
        "starts": res.comm_start.copy(),
        "completion": res.completion.copy(),
        "times": times.copy(),
        "rate": trace.job_rate.copy(),
        "used": trace.used.copy(),
    }
    changed["flow_finish"][0, 0:2] -= 0.1  # job 0's iteration 0 ends after its last flow
    changed["late_shard"][0, 3] = end_1  # host 1's shard unfinished while host 1 idles
    changed["starts"][0, 2] = np.nan  # job 0's last broadcast has no start
    changed["completion"][2] += 1.0  # job 2 reports a late completion
    changed["times"][2], changed["times"][3] = times[3], times[2]  # time runs backwards
    changed["rate"][0, 0, 0] = np.nan  # not a rate
    changed["used"][0, 0] += 0.5  # not the sum of the jobs' rates
    broken = {
        "shape": times_of(iteration_end=res.iteration_end[:, :1], comm_start=res.comm_start[:, :1]),
        "trace": times_of(trace=None),
        "trace_times": traced(times=changed["times"]),
        "rate_sign": traced(job_rate=changed["rate"]),
        # Job 0 sends a little from host 1 (no shard of it there) while host 1 is idle.
        "wrong_host": sending(0, 1, first((trace.job_rate[:, 0, 0] > 0) & host1_idle), 1e-3),
        # 1e-6 of B over the NIC: beyond CAPACITY_TOL, its bytes within TIME_TOL.
        "nic_capacity": sending(0, 0, first(trace.job_rate[:, 0, 0] > 0), 1e-6),
        "host_total": traced(used=changed["used"]),
        "compute_phase": times_of(comm_start=changed["starts"]),
        # Job 1 sends on idle host 1 between its broadcasts, or extra bytes inside one.
        "idle_sending": sending(
            1, 1, first((mid > end_1) & (mid < res.comm_start[1, 1]) & host1_idle), 0.1
        ),
        "broadcast_bytes": sending(
            1, 1, first((mid > shard_done) & (mid < end_1) & host1_idle), 0.1
        ),
        "flow_finish": times_of(flow_finish=changed["flow_finish"]),
        "work_conservation": times_of(flow_finish=changed["late_shard"]),
        "completion": times_of(completion=changed["completion"]),
    }
    _check_each(validate, CONSTRAINTS, inst, res, broken)


def test_pace_each_constraint():
    from optsched.comm.pace import generate_instance, validate
    from optsched.comm.pace.policies import FIFO
    from optsched.comm.pace.validator import CONSTRAINTS

    inst = generate_instance(seed=1, layers=4)
    # FIFO: atomic calls of whole tensors, one after another: segment k is call k of tensor 6 - k.
    valid = FIFO().run(inst.dag, inst.cost)
    trace, plan = valid.trace, valid.plan
    assert validate(inst, valid).ok and not plan.preemptive and plan.fuse_limit <= 0
    assert list(trace.piece_call) == [6, 5, 4, 3, 2, 1, 0]

    def run(trace_changes: dict[str, Any], plan_changes: dict[str, Any] | None = None) -> Any:
        return dataclasses.replace(
            valid,
            trace=dataclasses.replace(trace, **trace_changes),
            plan=dataclasses.replace(plan, **(plan_changes or {})),
        )

    def segments(*rows: tuple[int, float, float]) -> dict[str, Any]:
        """Segments replaced by ``rows`` (call, start, end), and the completions they imply."""
        seg = trace.segments.copy()
        done = trace.tensor_completion.copy()
        keep = [r for r in seg if int(r[0]) not in {c for c, _, _ in rows}]
        new = np.array(sorted([*map(tuple, keep), *rows], key=lambda r: r[1]), dtype=float)
        for c in {c for c, _, _ in rows}:
            done[6 - c] = max(e for cc, _, e in rows if cc == c)
        return {"segments": new, "tensor_completion": done}

    (c0, s0, e0), (c1, s1, e1), (c2, s2, e2) = (tuple(r) for r in trace.segments[:3])
    c0, c1, c2 = int(c0), int(c1), int(c2)
    stream = {"early_f1": trace.stream.copy(), "early_f0": trace.stream.copy()}
    stream["early_f1"][1] -= 0.5  # F1 starts while F0 runs (F1's parameters long arrived)
    stream["early_f0"][0] -= 0.5  # F0 starts before its parameters arrive
    short_last = trace.stream.copy()
    short_last[-1, 1] -= 0.5
    nan = trace.segments.copy()
    nan[0, 2] = np.nan
    heavier = plan.member_bytes.copy()
    heavier[0] *= 1 + 1e-7  # beyond WORK_TOL on the tensor, within TIME_TOL on the call
    preemptive = dataclasses.replace(valid, plan=dataclasses.replace(plan, preemptive=True))
    other = generate_instance(seed=2, layers=3).dag
    cases = {
        "instance": (inst, valid, dataclasses.replace(valid, dag=other)),
        "finite": (inst, valid, run({"segments": nan})),
        "tensor_bytes": (inst, valid, run({}, {"member_bytes": heavier})),
        "unsent": (inst, valid, run({"piece_call": np.append(trace.piece_call, -1)})),
        "release": (inst, valid, run(segments((c0, s0 - 0.1, e0 - 0.1)))),
        "channel_capacity": (inst, valid, run(segments((c1, s1 - 0.05, e1 - 0.05)))),
        # A negative segment after a longer one: the call's time and end are unchanged.
        "segment": (
            inst,
            preemptive,
            dataclasses.replace(
                preemptive,
                trace=dataclasses.replace(
                    trace, **segments((c2, s2, e2 + 1.0), (c2, e2 + 1.0, e2))
                ),
            ),
        ),
        "call_time": (inst, valid, run(segments((c0, s0, e0 - 0.05)))),
        "atomic_call": (inst, valid, run(segments((c2, s2, 5.0), (c2, 5.5, e2 + 0.5)))),
        # A second piece in call 0 (a piece without members: no bytes move).
        "fusion": (inst, valid, run({"piece_call": np.append(trace.piece_call, c0)})),
        "completion": (
            inst,
            valid,
            run({"tensor_completion": trace.tensor_completion + np.eye(7)[6] * 0.01}),
        ),
        "stream_capacity": (inst, valid, run({"stream": stream["early_f1"]})),
        "op_duration": (inst, valid, run({"stream": short_last})),
        "forward_after_allreduce": (inst, valid, run({"stream": stream["early_f0"]})),
        "iteration_time": (inst, valid, run({"iteration_time": trace.iteration_time + 1.0})),
    }
    # With optimizer updates: U0 waits for tensor 0's all-reduce; start it earlier.
    # (A fresh copy: the instance caches its DAG.)
    updates = generate_instance(seed=1, layers=4).model_copy(update={"update_ms_per_mb": 0.5})
    with_updates = FIFO().run(updates.dag, updates.cost)
    assert updates.dag.stream_ops[0] == ("U", 0)
    early_u0 = with_updates.trace.stream.copy()
    early_u0[0] -= 0.5
    cases["update_after_allreduce"] = (
        updates,
        with_updates,
        dataclasses.replace(
            with_updates, trace=dataclasses.replace(with_updates.trace, stream=early_u0)
        ),
    )
    assert set(cases) == {"instance", *CONSTRAINTS}
    for name, (instance, good, bad) in cases.items():
        assert validate(instance, good).ok, (name, validate(instance, good).violations)
        found = validate(instance, bad)
        assert _names(found) == {name}, (name, found.violations)


def test_sim_each_constraint():
    from strategies.sim import job_frame, synthetic_table

    from optsched.sim import SimResult, World, parse_cluster, validate
    from optsched.sim.measure.record import add_interval, empty_intervals
    from optsched.sim.measure.validate import CONSTRAINTS
    from optsched.sim.world.throughputs import throughputs_from_dict

    table = synthetic_table()
    for key in ("slow", "slow_unconsolidated"):
        table[key]["('B', 2)"]["null"] = 0.0  # B cannot run on slow
    rows = [
        {"job_id": "a", "model": "A", "num_gpus": 2, "total_steps": 40.0},
        {"job_id": "b", "model": "B", "num_gpus": 2, "total_steps": 60.0, "arrival": 2.0},
    ]
    world = World.from_frame(
        job_frame(rows),
        parse_cluster("fast=4:2,slow=2:2"),
        throughputs_from_dict(table, reference="fast"),
    )
    # on fast a runs at 1 x 2 x 2 = 4 steps/s (10 s), b at 1.5 x 2 x 2 = 6 (10 s); sharing with
    # b, a runs at the pair rate 0.6 x 4 = 2.4
    nan = float("nan")

    def record(segments, completion=(10.0, 12.0), first=(0.0, 2.0), end=12.0, claims=False):
        intervals = empty_intervals()
        for job, gt, server, start, stop, *shared in segments:
            add_interval(intervals, job, gt, ((server, 2),), start, stop, *shared)
        return SimResult(
            world=world,
            policy="hand",
            round_seconds=None,
            intervals=intervals,
            completion=list(completion),
            first_start=list(first),
            end_time=end,
            extra={"work_conserving": claims},
        )

    a = ("a", "fast", 0, 0.0, 10.0)
    b = ("b", "fast", 1, 2.0, 12.0)
    valid = record([a, b], claims=True)
    gang = empty_intervals()
    add_interval(gang, "a", "fast", ((0, 1),), 0.0, 5.0)  # half of a's gang
    add_interval(gang, "b", "fast", ((1, 2),), 2.0, 12.0)
    broken = {
        "interval_shape": record([a, b, ("a", "tpu", 0, 0.0, 1.0)]),
        "gang_whole": SimResult(world, "hand", None, gang, [nan, 12.0], [nan, 2.0], 12.0),
        "first_start": record([a, b], first=(0.0, 3.0)),
        # b's two runs overlap in [6, 7] (a never runs); b's work is done at 7 + 24 / 6 = 11
        "job_overlap": record(
            [("b", "fast", 1, 2.0, 7.0), ("b", "fast", 0, 6.0, 11.0)],
            completion=(nan, 11.0),
            first=(nan, 2.0),
            end=11.0,
        ),
        "before_arrival": record(
            [a, ("b", "fast", 1, 1.0, 11.0)], completion=(10.0, 11.0), first=(0.0, 1.0)
        ),
        "after_completion": record([a, b, ("b", "fast", 1, 13.0, 14.0)]),
        "work_done": record([("a", "fast", 0, 0.0, 9.0), b], completion=(9.0, 12.0)),
        # b parked for a second on slow, where its rate is 0, before its run on fast
        "no_progress": record(
            [a, ("b", "slow", 0, 2.0, 3.0), ("b", "fast", 1, 3.0, 13.0)],
            completion=(10.0, 13.0),
            end=13.0,
        ),
        # a shares with b, which has no mirror row; a's work is done at the pair rate
        "share_pair": record(
            [("a", "fast", 0, 0.0, 40.0 / 2.4, "b"), b],
            completion=(40.0 / 2.4, 12.0),
            end=40.0 / 2.4,
        ),
        "server_capacity": record([a, ("b", "fast", 0, 2.0, 12.0)]),
        # b waits from its arrival at 2 to 10 while server 1's two GPUs idle
        "work_conserving": record(
            [a, ("b", "fast", 1, 10.0, 20.0)],
            completion=(10.0, 20.0),
            first=(0.0, 10.0),
            end=20.0,
            claims=True,
        ),
    }
    _check_each(validate, CONSTRAINTS, world, valid, broken)


def test_sia_ilp_each_constraint():
    from optsched.goodput.sia_ilp import CONSTRAINTS, SiaAllocation, validate
    from optsched.goodput.sia_instance import SiaGpuType, SiaInstance, SiaJob, SiaOption

    one, other, four = (
        SiaOption(gpu_type="a", gpus=k, goodput=g) for k, g in ((1, 1.0), (1, 2.0), (4, 4.0))
    )
    inst = SiaInstance(
        gpu_types=(SiaGpuType(name="a", gpus=4, gpus_per_node=4),),
        jobs=(
            SiaJob(name="x", options=(one, four), previous=0, pinned=True),
            SiaJob(name="y", options=(one, other, four)),
        ),
    )
    valid = SiaAllocation(x=((1, 0), (1, 0, 0)))
    broken = {
        "shape": SiaAllocation(x=((1, 0),)),
        "binary": SiaAllocation(x=((1, 0), (-1, 0, 0))),
        "one_option": SiaAllocation(x=((1, 0), (1, 1, 0))),  # 3 GPUs of 4
        "capacity": SiaAllocation(x=((1, 0), (0, 0, 1))),  # 1 + 4 > 4
        "pinned": SiaAllocation(x=((0, 0), (0, 0, 1))),
    }
    _check_each(validate, CONSTRAINTS, inst, valid, broken)
