r"""The NIC-sharing policies, one calling convention: ``policy(instance, **options)``.

Every policy runs the same simulator (:func:`~optsched.comm.tensorlights.simulator.simulate`) and
returns the same :class:`~optsched.comm.tensorlights.solution.SimulationResult`, so comparisons are
fair and metrics are computed once. :data:`ALGORITHMS` maps each policy's command-line name to
its function; :func:`run` calls one by name.

* :func:`fair` -- processor sharing of each NIC among its flows (what TCP gives without
  priorities);
* :func:`priority` -- strict static priority in a global order (the *Ordered* variant);
* :func:`rotate` -- the order rotates every period, on every host at once (TensorLights);
* :func:`one_green` -- one rotating green job, the others share fairly (the *One-Green* variant);
* :func:`smith` -- strict priority in Smith's order
  (:func:`~optsched.comm.tensorlights.order.smith_order`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from optsched.comm.tensorlights.instance import TensorLightsInstance
from optsched.comm.tensorlights.order import smith_order
from optsched.comm.tensorlights.simulator import Engine, Policy, simulate
from optsched.comm.tensorlights.solution import Objective, SimulationResult
from optsched.errors import InvalidInstanceError

__all__ = [
    "ALGORITHMS",
    "compare_policies",
    "fair",
    "one_green",
    "priority",
    "rotate",
    "run",
    "smith",
]


def fair(
    instance: TensorLightsInstance,
    *,
    jitter: float = 0.0,
    seed: int = 0,
    trace: bool = True,
    engine: Engine = "numba",
) -> SimulationResult:
    """Fair sharing: every unfinished flow of a host gets an equal (or jitter-weighted) share."""
    return simulate(instance, "fair", jitter=jitter, seed=seed, trace=trace, engine=engine)


def priority(
    instance: TensorLightsInstance,
    *,
    order: Sequence[int] | None = None,
    coordinated: bool = True,
    jitter: float = 0.0,
    seed: int = 0,
    trace: bool = True,
    engine: Engine = "numba",
) -> SimulationResult:
    """Strict static priority in ``order`` (most urgent first; default job-ID order).

    With ``coordinated=False`` every host draws its own random order from ``seed`` (then
    ``order`` must be omitted).
    """
    return simulate(
        instance, "priority", order=order, coordinated=coordinated, jitter=jitter, seed=seed,
        trace=trace, engine=engine,
    )  # fmt: skip


def rotate(
    instance: TensorLightsInstance,
    *,
    order: Sequence[int] | None = None,
    period: float | None = None,
    coordinated: bool = True,
    jitter: float = 0.0,
    seed: int = 0,
    trace: bool = True,
    engine: Engine = "numba",
) -> SimulationResult:
    r"""Rotating priority: the order shifts by one position every ``period`` seconds.

    ``period`` defaults to the median standalone iteration time :math:`c_j + \tau_j`.
    """
    return simulate(
        instance, "rotate", order=order, rotation_period=period, coordinated=coordinated,
        jitter=jitter, seed=seed, trace=trace, engine=engine,
    )  # fmt: skip


def one_green(
    instance: TensorLightsInstance,
    *,
    order: Sequence[int] | None = None,
    period: float | None = None,
    coordinated: bool = True,
    jitter: float = 0.0,
    seed: int = 0,
    trace: bool = True,
    engine: Engine = "numba",
) -> SimulationResult:
    """One green job at a time (rotating every ``period``), the others share fairly."""
    return simulate(
        instance, "one-green", order=order, rotation_period=period, coordinated=coordinated,
        jitter=jitter, seed=seed, trace=trace, engine=engine,
    )  # fmt: skip


def smith(
    instance: TensorLightsInstance,
    *,
    objective: Objective = "mean-jct",
    jitter: float = 0.0,
    seed: int = 0,
    trace: bool = True,
    engine: Engine = "numba",
) -> SimulationResult:
    """Strict priority in Smith's order for ``objective`` (shortest total broadcast first)."""
    return simulate(
        instance, "priority", order=smith_order(instance, objective), jitter=jitter, seed=seed,
        trace=trace, engine=engine,
    )  # fmt: skip


#: Policy name (as on the command line) -> function ``f(instance, **options)``.
ALGORITHMS: dict[str, Callable[..., SimulationResult]] = {
    "fair": fair,
    "priority": priority,
    "rotate": rotate,
    "one-green": one_green,
    "smith": smith,
}


def run(instance: TensorLightsInstance, algorithm: str, **options: Any) -> SimulationResult:
    """Run the policy named ``algorithm`` (a key of :data:`ALGORITHMS`) with ``options``.

    Raises
    ------
    InvalidInstanceError
        Unknown algorithm (field ``algorithm``) or an option it does not take (field named).
    """
    if algorithm not in ALGORITHMS:
        raise InvalidInstanceError(
            "algorithm", f"unknown algorithm {algorithm!r}; known: {', '.join(ALGORITHMS)}"
        )
    func = ALGORITHMS[algorithm]
    accepted = [
        name for name, p in inspect.signature(func).parameters.items() if p.kind is p.KEYWORD_ONLY
    ]
    for name in options:
        if name not in accepted:
            raise InvalidInstanceError(
                name, f"is not an option of {algorithm!r}; it takes {', '.join(accepted)}"
            )
    return func(instance, **options)


def compare_policies(
    instance: TensorLightsInstance,
    policies: Sequence[Policy] = ("fair", "priority", "rotate", "one-green"),
    **options: Any,
) -> dict[str, SimulationResult]:
    """Simulate the same instance under several policies (``options`` go to ``simulate``)."""
    return {p: simulate(instance, p, **options) for p in policies}
