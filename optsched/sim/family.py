"""The simulator as a declared :class:`~optsched.family.Family` (see the registry).

Its instance is a :class:`~optsched.sim.world.jobs.World` (a world document: its ``format`` field
says what it is), its solution a :class:`~optsched.sim.measure.record.SimResult`, and its algorithms
are the registered policies, each run through the one engine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from optsched.family.registry import Family
from optsched.results import ExactResult
from optsched.sim.comparison import auto_round_seconds
from optsched.sim.engine.core import simulate
from optsched.sim.measure.record import SimResult
from optsched.sim.measure.validate import validate
from optsched.sim.optimum.exact import OBJECTIVES
from optsched.sim.optimum.exact import solve as solve_rounds
from optsched.sim.policies import POLICIES, make_policy
from optsched.sim.world.cluster import parse_cluster
from optsched.sim.world.generate import generate_instance, generate_job_table
from optsched.sim.world.jobs import World

__all__ = ["ALGORITHMS", "FAMILY"]


def _policy(name: str) -> Callable[..., SimResult]:
    def run(world: World, *, seed: int = 0) -> SimResult:
        # The registered policies are deterministic: ``seed`` is accepted for the one
        # calling convention.
        return simulate(world, make_policy(name))

    run.__doc__ = f"Simulate ``world`` under the policy {name!r} with its own round length."
    return run


#: ``ALGORITHMS[name](world, *, seed=0) -> SimResult``: every registered policy.
ALGORITHMS: dict[str, Callable[..., SimResult]] = {name: _policy(name) for name in POLICIES}


def solve(
    world: World,
    round_seconds: float | None = None,
    objective: str = "weighted-jct",
    **options: Any,
) -> ExactResult[SimResult]:
    """The exact optimum of ``world`` in rounds (:func:`optsched.sim.optimum.exact.solve`).

    ``round_seconds`` defaults to :func:`~optsched.sim.comparison.auto_round_seconds` (the round
    length ``compare`` uses), so that ``solve(world)`` follows the family protocol; ``options``
    go to :func:`optsched.sim.optimum.exact.solve`.
    """
    length = auto_round_seconds(world) if round_seconds is None else round_seconds
    return solve_rounds(world, length, objective, **options)


def small_instance() -> World:
    """Four single-GPU jobs on two V100s and two K80s.

    Single-GPU jobs, because some policies (AlloX) schedule nothing else and refuse a world
    with gangs; two GPU types, so that the heterogeneity-aware policies differ from the others.
    """
    frame = generate_job_table(4, seed=1, gangs=(1,), gang_weights=(1.0,))
    return World.from_frame(frame, parse_cluster("v100=2,k80=2"))


def _describe(world: World) -> dict[str, Any]:
    return {"jobs": len(world.jobs), "cluster": str(world.cluster)}


FAMILY = Family(
    name="sim",
    package="optsched.sim",
    kind="optsched.sim.world",
    Instance=World,
    Solution=SimResult,
    generate_instance=generate_instance,
    solve=solve,
    validate=validate,
    algorithms=ALGORITHMS,
    objectives=tuple(OBJECTIVES),
    small_instance=small_instance,
    summary="trace-driven simulation of a heterogeneous GPU cluster under a scheduling policy",
    describe=_describe,
)
