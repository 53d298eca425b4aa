"""The direct interior-point builds (optsched.allocation.gavel.interior) against cvxpy's twins."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from optsched.allocation.gavel import AllocationInstance, AllocationJob, generate_instance
from optsched.allocation.gavel.interior import (
    gavel_makespan_interior,
    interior_allocation,
    least_makespan,
)
from optsched.allocation.gavel.twin import solve_twin
from optsched.errors import InvalidInstanceError
from optsched.sim import ClusterSpec, GpuType, World, simulate
from optsched.sim.engine.gavel import GavelMechanism
from optsched.sim.policies import make_policy
from optsched.sim.policies.gavel_makespan import gavel_makespan_allocation
from optsched.sim.world.throughputs import throughputs_from_dict
from optsched.tolerances import ROUND_LP_GAP, SOLVER_AGREEMENT_TOL
from tests.strategies.sim import job_frame

LINEAR = [
    "max-min",
    "max-min-perf",
    "max-sum-throughput-perf",
    "min-cost-perf",
    "min-cost-slo-perf",
]


def instances() -> list[AllocationInstance]:
    return [
        generate_instance(n, gpus_per_type=g, multi_gpu=multi, slo_fraction=0.3, seed=seed)
        for n, g, multi, seed in [(3, 1, False, 0), (8, 4, True, 1), (25, 8, True, 2)]
    ]


@pytest.mark.parametrize("policy", LINEAR)
def test_linear_policies_give_the_twins_point(policy: str) -> None:
    for inst in instances():
        _, twin = solve_twin(inst, policy)
        direct = interior_allocation(inst, policy)
        assert direct.shape == twin.shape
        assert np.abs(direct - twin).max() <= SOLVER_AGREEMENT_TOL


@pytest.mark.parametrize("policy", ["ftf-perf", "makespan-perf"])
def test_conic_policies_give_the_twins_point(policy: str) -> None:
    # second-order cones: Clarabel stops further from the centre, within a round's tolerance
    for inst in instances():
        value, twin = solve_twin(inst, policy)
        direct = interior_allocation(inst, policy)
        assert np.abs(direct - twin).max() <= ROUND_LP_GAP
        # the objective of the direct point: max over jobs of rho (ftf) or steps/theta
        theta = (inst.throughputs * direct).sum(axis=1)
        active = inst.steps > 0
        if policy == "makespan-perf":
            got = float((inst.steps[active] / theta[active]).max())
        else:
            from optsched.allocation.gavel.shares import isolated_throughput

            q = isolated_throughput(inst.throughputs, inst.scale_factors, inst.capacities)
            c = inst.isolated_times + inst.steps / q
            got = float(((inst.since_start + inst.steps / theta) / c)[active].max())
        assert got == pytest.approx(value, rel=ROUND_LP_GAP)


def test_interior_point_is_not_a_vertex_where_the_optimum_is_a_face() -> None:
    # two identical jobs on one v100 and one p100, max-sum-throughput: every split giving each
    # type's GPU away in full is optimal; the interior point splits both types evenly, as
    # cvxpy's twin does (a vertex would give each job one type)
    jobs = tuple(
        AllocationJob(job_id=f"j{i}", throughput_steps_per_s=(2.0, 1.0), steps_remaining=10.0)
        for i in range(2)
    )
    inst = AllocationInstance(gpu_types=("v100", "p100"), capacity=(1, 1), jobs=jobs)
    x = interior_allocation(inst, "max-sum-throughput-perf")
    assert x == pytest.approx(np.full((2, 2), 0.5), abs=SOLVER_AGREEMENT_TOL)


def test_packed_and_unknown_policies_are_refused() -> None:
    inst = instances()[0]
    for policy in ("max-min-packed", "nope"):
        with pytest.raises(InvalidInstanceError) as err:
            interior_allocation(inst, policy)
        assert err.value.field == "policy"


@pytest.mark.parametrize("aware", [True, False])
def test_makespan_search_gives_gavels_search_point(aware: bool) -> None:
    for inst in instances():
        ref = gavel_makespan_allocation(inst, aware)
        fast = gavel_makespan_interior(inst, aware)
        every = gavel_makespan_interior(inst, aware, reference=True)
        assert ref is not None and fast is not None and every is not None
        assert np.abs(fast - ref).max() <= SOLVER_AGREEMENT_TOL
        assert np.abs(every - ref).max() <= SOLVER_AGREEMENT_TOL


def test_least_makespan_is_the_exact_bound() -> None:
    # one job of 1000 steps, 2 steps/s on a v100 and 1 on a p100, one GPU each: its time
    # fractions sum to at most 1, so T* = 500 s (the v100 alone); agnostic: 2 steps/s anywhere
    job = AllocationJob(job_id="j0", throughput_steps_per_s=(2.0, 1.0), steps_remaining=1000.0)
    inst = AllocationInstance(gpu_types=("v100", "p100"), capacity=(1, 1), jobs=(job,))
    assert least_makespan(inst, aware=True) == pytest.approx(500.0, rel=SOLVER_AGREEMENT_TOL)
    done = AllocationJob(job_id="j0", throughput_steps_per_s=(2.0, 1.0), steps_remaining=0.0)
    empty = AllocationInstance(gpu_types=("v100", "p100"), capacity=(1, 1), jobs=(done,))
    assert least_makespan(empty, aware=True) == 0.0


TABLE: dict[str, Any] = {
    gpu: {f"('{m}', 1)": {"null": speed * f} for m, f in (("A", 1.0), ("B", 1.7))}
    for gpu, speed in (("v100", 2.0), ("p100", 1.0), ("k80", 0.5))
}


def small_world() -> World:
    rows = [
        {"model": "AB"[i % 2], "arrival": 40.0 * (i // 3), "duration": 300.0 + 170.0 * i}
        for i in range(9)
    ]
    cluster = ClusterSpec(
        gpu_types=tuple(
            GpuType(name=n, count=2, gpus_per_server=1) for n in ("v100", "p100", "k80")
        )
    )
    table = throughputs_from_dict(TABLE, reference="v100")
    return World.from_frame(job_frame(rows), cluster, table)


@pytest.mark.parametrize("policy", ["max-min-perf", "max-min", "makespan-perf", "ftf-perf"])
def test_mechanism_resets_get_the_reference_allocation(policy: str) -> None:
    # a run through cvxpy (the reference); at each of its resets a second policy object, fed
    # the same states, solves directly: the same allocation within the tolerance. (Whole runs
    # may part ways: where two jobs tie exactly, a difference in the last digits reorders the
    # walk, in Gavel as here.)
    w = small_world()
    ref, fast = make_policy(policy), make_policy(policy)
    fast.reset(w)
    tol = ROUND_LP_GAP if policy == "ftf-perf" else SOLVER_AGREEMENT_TOL
    seen = []
    solve_ref = ref.interior_fractional  # type: ignore[attr-defined]

    def both(state: Any, direct: bool = True) -> Any:
        x_ref = solve_ref(state, direct=False)
        x_fast = fast.interior_fractional(state, direct=True)  # type: ignore[attr-defined]
        assert x_ref.keys() == x_fast.keys()
        for jid, row in x_ref.items():
            for t in set(row) | set(x_fast[jid]):
                assert abs(row.get(t, 0.0) - x_fast[jid].get(t, 0.0)) <= tol
        seen.append(state.now)
        return x_ref

    ref.interior_fractional = both  # type: ignore[attr-defined]
    opts = GavelMechanism(reset_interval=60.0)
    result = simulate(w, ref, mechanism=opts, round_seconds=30.0)
    assert result.all_finished
    assert len(seen) == result.extra["resets"] >= 3


def test_direct_option_is_checked() -> None:
    with pytest.raises(InvalidInstanceError) as err:
        GavelMechanism(direct=1)  # type: ignore[arg-type]
    assert err.value.field == "direct"


def test_makespan_search_with_long_jobs_follows_gavels_decisions() -> None:
    # jobs of about 1e8 steps put 1/T* near 1e-6, HiGHS's own tolerance scale: unscaled, the
    # least makespan came out 3.5% high and the search took other midpoints than Gavel's
    base = generate_instance(18, gpus_per_type=6, seed=5)
    rng = np.random.default_rng(5)
    jobs = tuple(
        j.model_copy(update={"steps_remaining": float(s)})
        for j, s in zip(base.jobs, 10.0 ** rng.uniform(4, 8, base.n_jobs), strict=True)
    )
    inst = base.model_copy(update={"jobs": jobs})
    for aware in (True, False):
        star = least_makespan(inst, aware)
        fast = gavel_makespan_interior(inst, aware)
        every = gavel_makespan_interior(inst, aware, reference=True)
        assert fast is not None and every is not None
        assert np.abs(fast - every).max() <= SOLVER_AGREEMENT_TOL
        # T* is the least feasible makespan: every job finishes by it under some allocation,
        # and the search's allocation finishes every job within 5% above it
        theta = (inst.throughputs if aware else np.repeat(inst.throughputs[:, :1], 3, 1)) * fast
        worst = float((inst.steps / theta.sum(axis=1)).max())
        assert star <= worst * (1 + SOLVER_AGREEMENT_TOL)
        assert worst <= star * 1.05 * 1.05


@pytest.mark.parametrize("policy", ["max-min", "max-min-perf", "max-sum-throughput-perf"])
def test_linear_policies_are_laid_out_as_cvxpy_does(policy: str) -> None:
    # the same data in the same order: Clarabel's point to the last digit (ties in Gavel's
    # walk follow those digits)
    for inst in instances():
        _, twin = solve_twin(inst, policy)
        assert np.array_equal(interior_allocation(inst, policy), twin)


def test_makespan_feasibility_is_laid_out_as_cvxpy_does() -> None:
    for inst in instances():
        for aware in (True, False):
            ref = gavel_makespan_allocation(inst, aware)
            assert ref is not None
            assert np.array_equal(gavel_makespan_interior(inst, aware), ref)
