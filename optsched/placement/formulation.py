r"""Building blocks shared by the placement formulations.

Each constraint family is added by one function whose name is the family's stable name, used in
the docs' constraint tables (``docs/formulations/placement.rst``):

============================ ===================================================================
builder                      family (Pyomo component)
============================ ===================================================================
:func:`server_order`         interchangeable servers ordered by a scalar such as their load
                             (``server_order``)
:func:`task_assignment`      every task on exactly one server (``task_assignment``)
:func:`server_capacity`      summed demand within capacity per server and resource
                             (``server_capacity``)
:func:`server_symmetry`      identical servers used in the order of their lowest task index
                             (``server_symmetry``, ``server_symmetry_prefix``)
============================ ===================================================================

Symmetry
--------
Servers that no objective can tell apart (:func:`server_classes` with a formulation-specific
key) are interchangeable: relabelling them maps a placement to one of equal value. Within such a
class :math:`h_1, \dots, h_m`, :func:`server_symmetry` admits only the relabelling in which the
servers' lowest task indices increase, which empty servers follow (Jans, 2009):

.. math:: x_{t h_k} \le \sum_{t' < t} x_{t' h_{k-1}} \qquad k \ge 2,

written with prefix sums :math:`P_{th} = P_{t-1,h} + x_{th}` so that it costs :math:`O(TH)`
nonzeros instead of :math:`O(T^2 H)`. This is only valid when every item sits on exactly one
server; where items may split (Harmony's job presence), :func:`server_order` orders the class by
a scalar such as the server's weighted load, which any placement can be relabelled to satisfy.

Every builder takes ``symmetry`` (:data:`SYMMETRY_MODES`):

``"solver"`` (default)
    No symmetry constraints; the solver's own symmetry handling works on the plain model (HiGHS
    detects the permutation symmetry of identical servers and applies orbital fixing). The
    placement benchmark measures this as the fastest choice on every objective with HiGHS.
``"constraints"``
    Add the formulation's symmetry-breaking constraints (``server_symmetry`` or
    ``server_order``). They are valid (brute force agrees on every objective) but, with HiGHS,
    they get in the way of its orbital methods and usually slow the solve down.
``"none"``
    Neither: the model has no symmetry constraints and :func:`~optsched.placement.solve`
    also switches HiGHS's symmetry detection off (the baseline of the benchmark).

References
----------
R. Jans, "Solving lot-sizing problems on parallel identical machines using symmetry-breaking
constraints", INFORMS J. Computing 21(1), 2009.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from optsched.cluster import Server
from optsched.errors import InvalidInstanceError, ModelError
from optsched.placement.instance import PlacementInstance
from optsched.placement.solution import Placement
from optsched.tolerances import FIT_TOL

__all__ = [
    "SYMMETRY_MODES",
    "PlacementModel",
    "allowed_servers",
    "chosen",
    "server_capacity",
    "server_classes",
    "server_order",
    "server_symmetry",
    "task_assignment",
]

T = TypeVar("T")

#: Ways of handling the symmetry between interchangeable servers (see the module notes).
SYMMETRY_MODES: tuple[str, ...] = ("solver", "constraints", "none")


def check_symmetry(mode: str) -> bool:
    """Validate a ``symmetry`` argument; return whether constraints are to be added.

    Raises
    ------
    InvalidInstanceError
        ``mode`` is not in :data:`SYMMETRY_MODES` (field ``symmetry``).
    """
    if mode not in SYMMETRY_MODES:
        raise InvalidInstanceError(
            "symmetry", f"symmetry must be one of {SYMMETRY_MODES}, got {mode!r}"
        )
    return mode == "constraints"


@dataclass
class PlacementModel:
    """A built formulation, ready for :func:`optsched.solvers.solve`.

    Attributes
    ----------
    objective : str
        The objective name (``servers``, ``traffic``...).
    formulation : str
        Which formulation of it (``arcflow``, ``assignment``...).
    model : pyomo.environ.ConcreteModel
        The model; its single objective is minimised and equals the objective's value.
    decode : callable
        Reads the solved model's variables into a :class:`Placement`.
    build_seconds : float
        Time spent building the model.
    size : dict
        Variables and constraints, for reports.
    lp_bound : float, optional
        A relaxation bound already known, for a model that is not a Pyomo model and so has no
        relaxation to solve (the ``servers`` certificate's arc-flow LP value).
    """

    objective: str
    formulation: str
    model: Any
    decode: Callable[[], Placement]
    build_seconds: float = 0.0
    size: dict[str, int] = field(default_factory=dict)
    lp_bound: float | None = None


class Timer:
    """Measures model building for :attr:`PlacementModel.build_seconds`."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def seconds(self) -> float:
        """Seconds since construction."""
        return time.perf_counter() - self.start


def model_size(model: Any) -> dict[str, int]:
    """Counts of variables (all, integer) and constraints of a Pyomo model."""
    import pyomo.environ as pyo

    variables = list(model.component_data_objects(pyo.Var, active=True))
    return {
        "variables": len(variables),
        "integer_variables": sum(1 for v in variables if v.is_integer() or v.is_binary()),
        "constraints": sum(1 for _ in model.component_data_objects(pyo.Constraint, active=True)),
    }


def allowed_servers(instance: PlacementInstance) -> list[list[int]]:
    """For every task, the servers it fits on alone (all resources at once)."""
    demand, capacity = instance.demand, instance.capacity
    slack = FIT_TOL * np.maximum(1.0, np.abs(capacity))
    ok = np.all(demand[:, None, :] <= (capacity + slack)[None, :, :], axis=2)
    return [[int(h) for h in np.flatnonzero(row)] for row in ok]


def server_classes(
    instance: PlacementInstance, key: Callable[[Server], Hashable]
) -> list[list[int]]:
    """Group servers that ``key`` cannot tell apart, each group in server order.

    Only groups of two or more are returned (singletons have no symmetry to break).
    """
    groups: dict[Hashable, list[int]] = {}
    for h, server in enumerate(instance.servers):
        groups.setdefault(key(server), []).append(h)
    return [g for g in groups.values() if len(g) > 1]


def capacity_key(server: Server) -> Hashable:
    """Servers with equal capacity vectors are interchangeable for packing-only objectives."""
    return tuple(sorted(server.capacity.items()))


def task_assignment(model: Any, n_tasks: int, allowed: Sequence[Sequence[int]]) -> None:
    r"""Add binaries :math:`x_{th}` on allowed pairs and :math:`\sum_h x_{th} = 1`.

    Components: ``model.X`` (index set of pairs), ``model.x``, ``model.task_assignment``.
    """
    import pyomo.environ as pyo

    pairs = [(t, h) for t in range(n_tasks) for h in allowed[t]]
    model.X = pyo.Set(initialize=pairs, dimen=2, ordered=True)
    model.x = pyo.Var(model.X, domain=pyo.Binary)
    model.task_assignment = pyo.Constraint(
        range(n_tasks), rule=lambda m, t: pyo.quicksum(m.x[t, h] for h in allowed[t]) == 1
    )


def server_capacity(
    model: Any,
    demand: np.ndarray,
    capacity: np.ndarray,
    on_server: Sequence[Sequence[int]],
    load: Callable[[int, int], Any],
    use: Callable[[int], Any] | None = None,
) -> None:
    r"""Add :math:`\sum_t d_{tr}\, x_{th} \le C_{hr}\,[u_h]` per server and resource.

    Parameters
    ----------
    model : ConcreteModel
    demand : numpy.ndarray
        Demand of each item (a task, or a group of identical tasks), shape
        ``(items, resources)``.
    capacity : numpy.ndarray
        Capacities, shape ``(servers, resources)``.
    on_server : sequence of sequence of int
        ``on_server[h]``: the items that may go on server ``h``.
    load : callable
        ``load(i, h)``: the Pyomo expression counting item ``i`` on server ``h``.
    use : callable, optional
        ``use(h)``: a binary multiplying the capacity (tightens the LP when it is the
        server-used indicator).

    Notes
    -----
    Resources nobody allowed on a server demands are skipped.
    """
    import pyomo.environ as pyo

    rows = []
    for h, items in enumerate(on_server):
        for r in range(capacity.shape[1]):
            users = [i for i in items if demand[i, r] > 0.0]
            if users:
                rows.append((h, r, users))
    model.CAP = pyo.Set(initialize=[(h, r) for h, r, _ in rows], dimen=2, ordered=True)
    users_of = {(h, r): users for h, r, users in rows}

    def rule(m: Any, h: int, r: int) -> Any:
        lhs = pyo.quicksum(float(demand[i, r]) * load(i, h) for i in users_of[h, r])
        rhs = float(capacity[h, r])
        return lhs <= (rhs * use(h) if use is not None else rhs)

    model.server_capacity = pyo.Constraint(model.CAP, rule=rule)


def server_symmetry(
    model: Any,
    classes: Sequence[Sequence[int]],
    n_items: int,
    on: Callable[[int, int], Any],
    allowed: Callable[[int, int], bool],
    name: str = "server_symmetry",
) -> None:
    r"""Add the lowest-index ordering of identical servers (Jans, 2009).

    Within each class :math:`h_1..h_m`: :math:`x_{t h_k} \le P_{t-1, h_{k-1}}` with prefix sums
    :math:`P_{t h} = \sum_{t' \le t} x_{t' h}`, and :math:`x_{0 h_k} = 0` for :math:`k \ge 2`.

    Parameters
    ----------
    model : ConcreteModel
    classes : sequence of sequence of int
        Interchangeable servers, in order.
    n_items : int
        Items (tasks or jobs) being assigned, in index order.
    on : callable
        ``on(i, h)``: the 0/1 expression "item ``i`` is on server ``h``".
    allowed : callable
        ``allowed(i, h)``: whether item ``i`` may go on server ``h`` at all.
    name : str
        Component name; the same ordering serves GPUs within a server (``gpu_symmetry``).

    Components: ``<name>`` (the ordering), ``<name>_prefix`` (the prefix-sum definitions) and
    the prefix variables ``<name>_prefix_value``.
    """
    import pyomo.environ as pyo

    leaders = sorted({h for cls in classes for h in cls[:-1]})
    follower_of = {cls[k]: cls[k - 1] for cls in classes for k in range(1, len(cls))}
    prefix_index = [(i, h) for h in leaders for i in range(n_items)]
    prefix = pyo.Var(prefix_index, bounds=(0, None))
    model.add_component(f"{name}_prefix_value", prefix)
    definitions = pyo.ConstraintList()
    model.add_component(f"{name}_prefix", definitions)
    for h in leaders:
        for i in range(n_items):
            term = on(i, h) if allowed(i, h) else 0
            previous = prefix[i - 1, h] if i > 0 else 0
            definitions.add(prefix[i, h] == previous + term)
    ordering = pyo.ConstraintList()
    model.add_component(name, ordering)
    for h, before in sorted(follower_of.items()):
        for i in range(n_items):
            if not allowed(i, h):
                continue
            if i == 0:
                ordering.add(on(i, h) == 0)
            else:
                ordering.add(on(i, h) <= prefix[i - 1, before])


def server_order(
    model: Any,
    classes: Sequence[Sequence[int]],
    key: Callable[[int], Any],
    name: str = "server_order",
) -> None:
    r"""Order each class of interchangeable servers by a scalar: :math:`k(h_i) \ge k(h_{i+1})`.

    Valid for any model in which relabelling the servers of a class maps solutions to solutions
    of equal value (sort the class by :math:`k`), including models where items split.

    Parameters
    ----------
    model : ConcreteModel
    classes : sequence of sequence of int
        Interchangeable servers, in order.
    key : callable
        ``key(h)``: the Pyomo expression ordering the servers (e.g. a weighted load).
    name : str
        Component name.
    """
    import pyomo.environ as pyo

    ordering = pyo.ConstraintList()
    model.add_component(name, ordering)
    for cls in classes:
        for a, b in itertools.pairwise(cls):
            ordering.add(key(a) >= key(b))


def colocation_pairs(
    weight: np.ndarray, coeff: np.ndarray, present: set[tuple[int, int]], n_servers: int
) -> tuple[dict[tuple[int, int], float], list[tuple[int, int, int]]]:
    r"""Job pairs whose co-location costs something, and the servers where they can meet.

    The pair weight is :math:`\omega_a c_{ab} + \omega_b c_{ba}` (each job's slowdown from the
    other, weighted); co-location variables are only needed for pairs with a positive weight
    on servers where both jobs may be present, which keeps the Harmony and CLWP models small.

    Parameters
    ----------
    weight : numpy.ndarray
        Job weights :math:`\omega_j`.
    coeff : numpy.ndarray
        Pairwise interference :math:`c_{jk}` (slowdown of ``j`` caused by ``k``).
    present : set of (int, int)
        The (job, server) pairs where a job may have tasks.
    n_servers : int
        Number of servers.

    Returns
    -------
    pair_weight : dict
        ``(a, b) -> weight`` for every job pair ``a < b``.
    triples : list of (int, int, int)
        ``(a, b, h)`` with a positive pair weight and both jobs allowed on ``h``.
    """
    n_jobs = len(weight)
    pair_weight = {
        (a, b): float(weight[a] * coeff[a, b] + weight[b] * coeff[b, a])
        for a in range(n_jobs)
        for b in range(a + 1, n_jobs)
    }
    triples = [
        (a, b, h)
        for (a, b), w in pair_weight.items()
        if w > 0
        for h in range(n_servers)
        if (a, h) in present and (b, h) in present
    ]
    return pair_weight, triples


def chosen(variables: Mapping[T, Any]) -> T:
    r"""The option whose solved binary ``variables[option]`` is largest.

    An assignment row :math:`\sum_o x_o = 1` of a solved model has one binary at 1 up to
    the solver's feasibility tolerance, which is relative to the model's coefficients; taking
    the largest (rather than testing each against a fixed threshold) decodes every solution
    the solver accepts. The independent validator then checks the decoded placement.

    Raises
    ------
    ModelError
        No option has a value (the model was not solved).
    """
    import pyomo.environ as pyo

    best: T | None = None
    best_value = -math.inf
    for option, var in variables.items():
        value = pyo.value(var, exception=False)
        if value is not None and value > best_value:
            best, best_value = option, float(value)
    if best is None:
        raise ModelError("the solved model holds no value for an assignment row")
    return best


def integer_value(var: Any) -> int:
    """A solved integer variable, rounded."""
    import pyomo.environ as pyo

    value = pyo.value(var, exception=False)
    return 0 if value is None else round(value)
