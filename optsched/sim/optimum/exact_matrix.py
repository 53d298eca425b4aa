r"""The round-based world's exact model as sparse matrices for HiGHS, without Pyomo.

:func:`optsched.sim.optimum.exact.solve` builds this model for HiGHS (``weighted-jct`` and
``makespan``, strengthened); the Pyomo model of :func:`optsched.sim.optimum.exact.build_model`
stays the declared formulation for the other solvers and objectives. Every row of the
strengthened Pyomo model is here under its name (the formulation page,
``docs/formulations/sim_exact.rst``, has the table, with the function that adds each family in
:mod:`optsched.sim.optimum.matrix_rows`), built with numpy in :math:`O(\mathrm{nnz})`, with:

* two exact substitutions that keep the size linear in the rounds: the *remaining* indicator
  :math:`E_{jk} = \sum_{k' \ge k} e_{jk'}` (``remaining[j, k]``), on which
  ``no_run_after_final`` reads :math:`\sum_g x_{jkg} \le E_{jk}` and ``one_final``
  :math:`E_{j k_j} = 1`, and the *cumulative work* :math:`W_{jk} = \sum_{q \le k, g} c_{jg}
  x_{jqg}` (``cumulative[j, k]``), on which ``finished_by`` reads
  :math:`W_{jk} + E_{j,k+1} \ge 1` (equalities defining new continuous variables: the same
  feasible set projected on the old ones, the same LP relaxation);
* for one-round jobs only the rows not implied by ``one_round`` and ``one_run``;
* further valid rows: the last-run type (``end_type`` and its companions), gang cliques
  (``gang_clique``), parity cuts (``parity``);
* only the rounds a compact schedule uses (:func:`compact_last_rounds`, in
  :mod:`optsched.sim.optimum.matrix_compact`; some optimum is compact);
* a root pass (:func:`root_pass`, in :mod:`optsched.sim.optimum.matrix_root`): the LP
  relaxation, a start from it, and reduced-cost fixing with a Lagrangian bound valid for any
  multipliers (:func:`lagrangian_bound`).

The built model is a :class:`~optsched.sim.optimum.matrix_model.MatrixModel`; this module
builds it (:func:`build_matrix`) and hands it to the exact-solve path (:func:`formulation`).

Complexity: :math:`O(n K G)` columns, rows and non-zeros for :math:`n` jobs, :math:`K` rounds and
:math:`G` GPU types (the gang cliques :math:`O(n^2 K G)` at most, over the big gangs).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from optsched import limits
from optsched.errors import InvalidInstanceError, ModelError
from optsched.sim.measure.record import SimResult
from optsched.sim.optimum.matrix_compact import (
    compact_last_rounds,
    compact_start,
    compact_stops,
    compaction_applies,
)
from optsched.sim.optimum.matrix_layout import (
    MatrixLayout,
    Rows,
    column_bounds,
    matrix_layout,
    parity_coefficients,
)
from optsched.sim.optimum.matrix_model import MatrixModel
from optsched.sim.optimum.matrix_root import (
    HEURISTIC_OPTIONS,
    fix_by_reduced_cost,
    lagrangian_bound,
    root_pass,
    start_from_point,
)
from optsched.sim.optimum.matrix_rows import CUT_ROWS, MODEL_ROWS
from optsched.sim.optimum.rounds import (
    OBJECTIVES,
    POLISH,
    MipStart,
    ReplayedPlan,
    check_round_seconds,
    check_world,
    default_rounds,
    earliest_round,
    interchangeable_groups,
    last_run_floor,
    objective_value,
    ordered_start,
    round_stops,
)
from optsched.sim.world.jobs import World
from optsched.solvers.matrix import LinearProgram, MatrixSolution

if TYPE_CHECKING:
    from optsched.family.exact import Formulation
    from optsched.solvers import BuildClock

__all__ = [
    "HEURISTIC_OPTIONS",
    "MATRIX_OBJECTIVES",
    "MatrixModel",
    "build_matrix",
    "check_start",
    "compact_last_rounds",
    "compact_start",
    "compaction_applies",
    "fix_by_reduced_cost",
    "formulation",
    "lagrangian_bound",
    "parity_coefficients",
    "placeholder_start",
    "repaired_point",
    "root_pass",
    "start_from_point",
    "start_solution",
]

#: The objectives the matrix model states (``deadlines`` needs its indicator free when
#: polishing, which the matrix path's polish cannot leave; it stays a Pyomo model).
MATRIX_OBJECTIVES = ("weighted-jct", "makespan")


def _checked_rounds(
    world: World, round_seconds: float, objective: str, rounds: int | None
) -> tuple[float, dict[str, bool], int]:
    """The round length, per type whether placement matters, and the horizon, all checked."""
    if objective not in MATRIX_OBJECTIVES:
        raise InvalidInstanceError(
            "objective",
            f"the matrix model states {', '.join(MATRIX_OBJECTIVES)}, got {objective!r}",
        )
    L = check_round_seconds(round_seconds)
    matters = check_world(world)
    if rounds is None:
        rounds = default_rounds(world, L)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise InvalidInstanceError("rounds", f"must be an integer >= 1, got {rounds!r}")
    G = len(world.cluster.gpu_types)
    n = len(world.jobs)
    limits.check_size("rounds", 2.0 * n * rounds * (G + 1), "max_model_variables", "variables")
    return L, matters, rounds


def _job_rounds(
    world: World,
    L: float,
    objective: str,
    rounds: int,
    eps: float,
    upper_bound: float | None,
    compact: bool,
) -> tuple[list[int], list[int]]:
    """Per job, its first round and one past its last (below ``upper_bound``, compact)."""
    first = [earliest_round(j.arrival, L) for j in world.jobs]
    for j in world.jobs:
        if first[j.index] >= rounds:
            raise InvalidInstanceError(
                "rounds", f"job {j.job_id!r} arrives after the last of the {rounds} rounds"
            )
    stop = round_stops(world, L, objective, first, rounds, eps, upper_bound)
    if compact and compaction_applies(world, objective):
        stop = compact_stops(world, L, eps, first, stop)
    return first, stop


def _matrix_rows(lay: MatrixLayout, clock: BuildClock | None) -> Rows:
    """Every row family, in order, the clock checked after the model's and after the cuts.

    The order is :data:`~optsched.sim.optimum.matrix_rows.MODEL_ROWS` then
    :data:`~optsched.sim.optimum.matrix_rows.CUT_ROWS`.
    """
    rows = Rows()
    for family in MODEL_ROWS:
        family(rows, lay)
    if clock is not None:
        clock.check("model")
    for family in CUT_ROWS:
        family(rows, lay)
    if clock is not None:
        clock.check("cuts")
    return rows


def build_matrix(
    world: World,
    round_seconds: float,
    objective: str = "weighted-jct",
    *,
    rounds: int | None = None,
    upper_bound: float | None = None,
    clock: BuildClock | None = None,
    compact: bool = True,
) -> MatrixModel:
    """Build the strengthened model (module notes) as a :class:`LinearProgram`.

    The rows and bounds are those of :func:`optsched.sim.optimum.exact.build_model` with
    ``strengthen=True`` (the same names, the formulation page's table), with the two exact
    substitutions of the module notes: the columns are laid out by
    :func:`~optsched.sim.optimum.matrix_rows.matrix_layout`, each row family added by its
    function of :mod:`optsched.sim.optimum.matrix_rows`, the bounds, integrality and objective
    set by :func:`~optsched.sim.optimum.matrix_rows.column_bounds`. ``upper_bound`` prunes the
    rounds as there (:func:`optsched.sim.optimum.exact.latest_final_rounds`). ``compact``
    (default) builds only the rounds a compact schedule uses (:func:`compact_last_rounds`; some
    optimum is compact): a start must then be compact too (:func:`compact_start`).

    Raises
    ------
    InvalidInstanceError
        As :func:`~optsched.sim.optimum.exact.build_model`; an objective outside
        :data:`MATRIX_OBJECTIVES` (field ``objective``).
    """
    began = time.perf_counter()
    L, matters, horizon = _checked_rounds(world, round_seconds, objective, rounds)
    names = [t.name for t in world.cluster.gpu_types]
    eps = last_run_floor(world, L, horizon)
    first, stop = _job_rounds(world, L, objective, horizon, eps, upper_bound, compact)
    lay = matrix_layout(world, L, objective, eps, first, stop, names)
    if clock is not None:
        clock.check("columns")
    rows = _matrix_rows(lay, clock)
    lower, upper, ints, cost, offset = column_bounds(lay, horizon)
    lp = LinearProgram(
        cost,
        rows.matrix(lay.ncol),
        np.concatenate(rows.lower),
        np.concatenate(rows.upper),
        lower,
        upper,
        sense="min",
        integrality=ints,
        offset=offset,
    )
    n, nk, ne = lay.n, lay.nk, lay.ne
    size = {
        "jobs": n,
        "rounds": max(stop),
        "gpu_types": len(names),
        "variables": 2 * nk + ne + n,
        "binaries": nk + ne,
        "columns": lay.ncol,
        "rows": rows.m,
        "nonzeros": int(lp.a.nnz),
    }
    return MatrixModel(
        lp=lp,
        world=world,
        round_seconds=L,
        objective=objective,
        matters=matters,
        rounds=max(stop),
        horizon=horizon,
        type_names=names,
        kj=lay.kj,
        kk=lay.kk,
        kg=lay.kg,
        ej=lay.ej,
        ek=lay.ek,
        offsets=lay.off,
        n_full=lay.ncol,
        row_families=rows.families,
        eps=eps,
        first=first,
        stop=stop,
        size=size,
        build_seconds=time.perf_counter() - began,
        interchangeable=interchangeable_groups(world, L),
    )


def start_solution(model: MatrixModel, full: NDArray[np.float64]) -> MatrixSolution:
    """A full-layout start as the :class:`MatrixSolution` the matrix path takes as MIP start."""
    from optsched.solvers.result import SolutionStatus, TerminationCondition, assemble

    result = assemble(
        TerminationCondition.OTHER_LIMIT,
        SolutionStatus.FEASIBLE,
        float(model.lp.objective_value(model.reduced(full))),
        None,
        build_seconds=0.0,
        solve_seconds=0.0,
        solver="start",
        solver_version="",
        native_status="start",
    )
    return MatrixSolution(result=result, x=model.reduced(full))


def _compact_given(
    world: World,
    round_seconds: float,
    objective: str,
    rounds: int | None,
    start: MipStart | None,
) -> MipStart | None:
    """``start`` made compact where the model builds only compact rounds (else as given)."""
    if start is None or not compaction_applies(world, objective):
        return start
    K = default_rounds(world, round_seconds) if rounds is None else rounds
    eps = last_run_floor(world, round_seconds, K)
    return compact_start(world, round_seconds, start, eps, objective)


def _build_below_start(
    world: World,
    round_seconds: float,
    objective: str,
    rounds: int | None,
    start: MipStart | None,
    root: bool,
    handed: MatrixSolution | None,
    clock: BuildClock,
    held: dict[str, Any],
) -> MatrixModel:
    """:func:`formulation`'s build: the model below the start, the root, the start handed on.

    ``held`` keeps the start given (made compact) and its repairs for the result's ``extra``.
    """
    given = _compact_given(world, round_seconds, objective, rounds, start)
    built = build_matrix(
        world,
        round_seconds,
        objective,
        rounds=rounds,
        upper_bound=None if given is None else given.value,
        clock=clock,
    )
    clock.check("model")
    held["given"] = given
    if given is not None:
        # the start must be a point of the model before anything is pruned below it
        held["repairs"] = check_start(built, given)[1]
    if root:
        left = None if clock.time_limit is None else clock.time_limit - clock.elapsed
        if left is None or left > 0:
            given = root_pass(built, given, time_limit=left)
        clock.check("root")
    if given is None:
        return built
    full, _notes = check_start(built, given)
    built.root["start"] = given.policy
    built.root["start_value"] = given.value
    if handed is not None:
        point = start_solution(built, full)
        object.__setattr__(handed, "x", point.x)
        object.__setattr__(handed, "result", point.result)
    return built


def _extra(built: MatrixModel, held: dict[str, Any], replayed: ReplayedPlan) -> dict[str, Any]:
    """The result's ``extra``: rounds, the root's figures, the plan and the start's repairs."""
    last = built.root.get("last_round")
    given = held.get("given")
    return {
        "rounds": built.horizon,
        "model_rounds": built.rounds if last is None else min(built.rounds, int(last) + 1),
        "round_seconds": built.round_seconds,
        "strengthened": True,
        "model": "matrix",
        "root": dict(built.root),
        "polish": list(POLISH),
        "plan": replayed.plan,
        "warm_start": None
        if given is None
        else {**given.summary(), "notes": [*given.notes, *held.get("repairs", [])]},
    }


def formulation(
    world: World,
    round_seconds: float,
    objective: str = "weighted-jct",
    *,
    rounds: int | None = None,
    start: MipStart | None = None,
    root: bool = True,
    handed: MatrixSolution | None = None,
) -> Formulation[SimResult]:
    """What :func:`~optsched.family.exact.exact_solve` needs to solve ``world`` with this model.

    As :func:`optsched.sim.optimum.exact.formulation` (same extract, validation and figures), for
    the matrix model. With ``start`` the model is built below its value, the start is checked
    against every row, fixed column and bound (:meth:`MatrixModel.violations`), and with
    ``root`` the binaries only worse schedules set are removed (:func:`root_pass`); the
    checked start is then written into ``handed``, the :class:`MatrixSolution` the caller passes
    to ``exact_solve`` as its warm start (its columns are known only once the model is built).

    Raises
    ------
    ModelError
        The start violates the model (named row or column).
    """
    from optsched.family.exact import Formulation

    if objective not in MATRIX_OBJECTIVES:
        raise InvalidInstanceError(
            "objective",
            f"the matrix model states {', '.join(MATRIX_OBJECTIVES)}, got {objective!r}",
        )
    replayed = ReplayedPlan(world, objective)
    held: dict[str, Any] = {}

    def build(clock: BuildClock) -> MatrixModel:
        return _build_below_start(
            world, round_seconds, objective, rounds, start, root, handed, clock, held
        )

    def extract(built: MatrixModel, point: Any) -> SimResult:
        return replayed.replay(built.plan(point.x), built.round_seconds)

    return Formulation(
        sense=OBJECTIVES[objective],
        objective_name=objective,
        build=build,
        extract=extract,
        validate=replayed.check,
        objective_of=lambda record, _report: objective_value(world, record, objective),
        size=lambda built: built.size,
        lp_bound=lambda built, _result: built.root.get("lp_bound"),
        extra=lambda built, _record, _result: _extra(built, held, replayed),
        polish=True,
        repair=repaired_point,
        solvable=lambda built: built.lp,
    )


def check_start(model: MatrixModel, start: MipStart) -> tuple[NDArray[np.float64], list[str]]:
    """``start`` (interchangeable jobs sorted) as a full-layout point, checked against the model.

    Raises
    ------
    ModelError
        The start violates a row, a fixed or removed column or a bound (named).
    """
    ordered, notes = ordered_start(model.interchangeable, start)
    full = model.start_point(ordered)
    bad = model.violations(full)
    if bad:
        raise ModelError(f"start of {start.policy} is infeasible in the model: {bad[0]}")
    return full, notes


def repaired_point(model: MatrixModel, point: MatrixSolution) -> NDArray[np.float64] | None:
    """The schedule ``point``'s runs carry out, as a point of ``lp`` to polish (or ``None``).

    As :func:`optsched.sim.optimum.exact.repair_incumbent` for the Pyomo model: the runs re-derived
    exactly (:func:`start_from_point`) and checked against every row (:func:`check_start`), so
    that the integer columns rounded and fixed are a point of the model by construction, not a
    binary a tolerance off 1 rounded up. ``None`` (the plain rounding stands) when the runs are
    no schedule of the model.
    """
    if point.x is None:
        return None
    start = start_from_point(model, point.x)
    if start is None:
        return None
    try:
        full, _notes = check_start(model, start)
    except ModelError:
        return None
    return model.reduced(full)


def placeholder_start() -> MatrixSolution:
    """An empty :class:`MatrixSolution` that :func:`formulation`'s build fills with the start."""
    from optsched.solvers.result import SolutionStatus, TerminationCondition, assemble

    result = assemble(
        TerminationCondition.UNKNOWN,
        SolutionStatus.NO_SOLUTION,
        None,
        None,
        build_seconds=0.0,
        solve_seconds=0.0,
        solver="start",
        solver_version="",
        native_status="start",
    )
    return MatrixSolution(result=result, x=None)
