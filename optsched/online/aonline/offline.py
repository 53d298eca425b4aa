r"""AOnline's offline optimum: the exact minimum of the total weighted completion time.

:func:`solve` runs the time-indexed model of :mod:`optsched.online.aonline.exact` (its
``completion`` mode) through the family's exact path, seeded with the online algorithm's
schedule (:func:`seed`); it lives apart from the model because the online algorithm itself
packs intervals with that model (:func:`~optsched.online.aonline.exact.pack_exact`).
"""

from __future__ import annotations

from typing import Any

from optsched.errors import InvalidInstanceError
from optsched.family.exact import AlgorithmBackend, Formulation
from optsched.online.aonline.exact import _Built, _extract, _last_slots, _trim, build_model
from optsched.online.aonline.instance import AonlineInstance
from optsched.online.aonline.schedule import AonlineSchedule, validate
from optsched.results import ExactResult
from optsched.solvers import BuildClock

__all__ = ["OBJECTIVE_NAME", "formulation", "seed", "solve"]

OBJECTIVE_NAME = "weighted-completion"


def solve(
    instance: AonlineInstance,
    *,
    solver: str = "highs",
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    solver_options: dict[str, Any] | None = None,
    warm_start: None = None,
    accept_feasible: bool = False,
) -> ExactResult[AonlineSchedule]:
    r"""The exact offline minimum of the total weighted completion time.

    Parameters
    ----------
    instance : AonlineInstance
    solver, time_limit, mip_gap, threads, solver_options
        As :func:`optsched.family.exact.exact_solve` (``solver="scip"`` works too).
    warm_start : None
        No MIP start is taken by this model (accepted for the common vocabulary; anything
        else is refused).
    accept_feasible : bool, default False
        Return the incumbent when a limit stops the solver instead of raising.

    Returns
    -------
    ExactResult of AonlineSchedule
        ``objective`` is the solver's :math:`\sum_j w_j C_j`, checked against
        :func:`~optsched.online.aonline.validate` by the exact-solve path (``sense``
        ``"min"``); ``extra["completion_bounds"]`` the per-job windows used.

    Raises
    ------
    NotOptimalError
        Optimality not proven and no incumbent accepted (``error.result`` carries it).
    InconsistentResultError
        The solver's schedule fails the validator, or its value disagrees with the solver's.
    InvalidInstanceError
        An option out of range, or the model would exceed the variable budget.

    Examples
    --------
    >>> from optsched.online.aonline import generate_instance, solve
    >>> res = solve(generate_instance(3, seed=1))
    >>> res.status.value
    'optimal'
    """
    from optsched.family.exact import exact_solve

    if warm_start is not None:
        raise InvalidInstanceError("warm_start", "this model takes no warm start; pass None")
    return exact_solve(
        formulation(instance),
        solver=solver,
        time_limit=time_limit,
        mip_gap=mip_gap,
        threads=threads,
        solver_options=solver_options,
        accept_feasible=accept_feasible,
    )


def formulation(instance: AonlineInstance) -> Formulation[AonlineSchedule]:
    """What :func:`~optsched.family.exact.exact_solve` needs to solve ``instance``."""
    from optsched.family.exact import closed_form

    empty = AonlineSchedule(algorithm="exact")

    def build(clock: BuildClock) -> _Built | AlgorithmBackend:
        if instance.n_jobs == 0:  # nothing to schedule: the empty schedule, proven optimal
            return closed_form(0.0, empty, name="no jobs")
        return build_model(instance, "completion", clock=clock)

    def extract(built: _Built | AlgorithmBackend, point: Any) -> AonlineSchedule:
        if isinstance(built, AlgorithmBackend):
            return empty
        runs = _trim(_extract(instance, built, None), _last_slots(built))
        return AonlineSchedule(runs=tuple(runs), algorithm="exact")

    def size(built: _Built | AlgorithmBackend) -> dict[str, int]:
        windows = {} if isinstance(built, AlgorithmBackend) else built.windows
        return {"jobs": instance.n_jobs, "slots": max([0, *(w.stop for w in windows.values())])}

    def extra(built: _Built | AlgorithmBackend, *_: Any) -> dict[str, Any]:
        windows = {} if isinstance(built, AlgorithmBackend) else built.windows
        return {"completion_bounds": [w.stop for w in windows.values()]}

    return Formulation(
        sense="min",
        objective_name=OBJECTIVE_NAME,
        build=build,
        extract=extract,
        validate=lambda schedule: validate(instance, schedule),
        size=size,
        extra=extra,
        solvable=lambda built: built if isinstance(built, AlgorithmBackend) else built.model,
        seed=lambda: seed(instance),
    )


def seed(instance: AonlineInstance) -> tuple[str, AonlineSchedule] | None:
    """The AOnline algorithm's schedule (one pass over the arrivals), with its name, if valid.

    What a solve stopped by a limit keeps when the solver has no better incumbent
    (:mod:`optsched.family.exact`, *Seeding*).
    """
    from optsched.family.exact import seed_from
    from optsched.online.aonline.algorithms import ALGORITHMS

    return seed_from(ALGORITHMS, instance, validate, "min")
