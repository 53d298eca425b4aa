r"""The ``clwp`` objective: whole jobs onto nodes by predicted interference (stage 1 of 2).

After Geng et al. (Cluster Computing 2020; formulations §5, an implementable reading [R]): the
cluster level assigns whole jobs to worker nodes by predicted interference (CLWP), the node
level assigns tasks to GPUs by co-runner interference and communication cost (NLWP). The
predicted interference enters as the instance's coefficients
:math:`c_{ab} = \kappa_{ab} + \hat y_{\mathrm{type}(a)\mathrm{type}(b)}`
(:meth:`~optsched.placement.PlacementInstance.with_interference`,
:meth:`~optsched.placement.PlacementInstance.with_type_interference`) and the residents' cost
:math:`R_{ah}`.

``clwp``: cluster-level workload parallelization
    Binaries :math:`o_{jh}` put all of job :math:`j` on server :math:`h`; :math:`D_j` is its
    total demand. With :math:`w_{ab} = \omega_a c_{ab} + \omega_b c_{ba}`:

    .. math::
        \min \sum_{a<b} \sum_h w_{ab}\, q_{abh} + \sum_{j,h} \omega_j R_{jh}\, o_{jh}
        \quad\text{s.t.}\quad
        \sum_h o_{jh} = 1 \;(\texttt{job\_assignment}), \quad
        \sum_j D_{jr} o_{jh} \le C_{hr} \;(\texttt{server\_capacity}), \quad
        q_{abh} \ge o_{ah} + o_{bh} - 1,\; q \ge 0 \;(\texttt{co\_location}).

    Since :math:`w \ge 0`, the minimum sets :math:`q_{abh} = o_{ah} o_{bh}`. With
    ``symmetry="constraints"``, servers equal in capacity and residents are ordered by lowest job
    index (``server_symmetry``; valid because each job sits on exactly one server).

References
----------
X. Geng, H. Zhang, Z. Zhao, H. Ma, "Interference-aware parallelization for deep learning
workload in GPU cluster", Cluster Computing 23, 2020.
W. P. Adams, T. A. Johnson, "Improved linear programming-based lower bounds for the quadratic
assignment problem", DIMACS Series 16, 1994.
"""

from __future__ import annotations

import numpy as np

from optsched.errors import ModelError
from optsched.placement.formulation import (
    PlacementModel,
    Timer,
    check_symmetry,
    chosen,
    colocation_pairs,
    model_size,
    server_capacity,
    server_classes,
    server_symmetry,
)
from optsched.placement.instance import PlacementInstance
from optsched.placement.interference import interference_key
from optsched.placement.solution import Placement
from optsched.tolerances import FIT_TOL

__all__ = ["build_clwp"]


def build_clwp(instance: PlacementInstance, *, symmetry: str = "solver") -> PlacementModel:
    """Build the ``clwp`` model (whole jobs onto servers, least predicted interference).

    Parameters
    ----------
    instance : PlacementInstance
    symmetry : {"solver", "constraints", "none"}, default "solver"
        With "constraints", order interchangeable servers by their lowest job index.

    Returns
    -------
    PlacementModel

    Raises
    ------
    ModelError
        A job fits whole on no server, so no job-atomic placement exists.
    """
    import pyomo.environ as pyo

    timer = Timer()
    n_jobs, n_servers = len(instance.jobs), len(instance.servers)
    total = np.array([instance.demand[list(ts)].sum(axis=0) for ts in instance.job_tasks]).reshape(
        n_jobs, len(instance.resources)
    )
    slack = FIT_TOL * np.maximum(1.0, np.abs(instance.capacity))
    allowed = [
        [h for h in range(n_servers) if np.all(total[j] <= instance.capacity[h] + slack[h])]
        for j in range(n_jobs)
    ]
    for j, hs in enumerate(allowed):
        if not hs:
            raise ModelError(
                f"clwp is infeasible: job {instance.jobs[j].name!r} fits whole on no server"
            )
    allowed_set = {(j, h) for j in range(n_jobs) for h in allowed[j]}
    c = instance.pair_coefficients
    weight = np.array([job.weight for job in instance.jobs])
    resident = instance.resident_costs

    m = pyo.ConcreteModel(name="clwp")
    m.O = pyo.Set(initialize=sorted(allowed_set), dimen=2, ordered=True)
    m.o = pyo.Var(m.O, domain=pyo.Binary)
    m.job_assignment = pyo.Constraint(
        range(n_jobs), rule=lambda m, j: pyo.quicksum(m.o[j, h] for h in allowed[j]) == 1
    )
    on_server = [[j for j in range(n_jobs) if (j, h) in allowed_set] for h in range(n_servers)]
    server_capacity(m, total, instance.capacity, on_server, load=lambda j, h: m.o[j, h])
    pair_weight, co = colocation_pairs(weight, c, allowed_set, n_servers)
    m.Q = pyo.Set(initialize=co, dimen=3, ordered=True)
    m.q = pyo.Var(m.Q, bounds=(0, None))
    m.co_location = pyo.Constraint(
        m.Q, rule=lambda m, a, b, h: m.q[a, b, h] >= m.o[a, h] + m.o[b, h] - 1
    )
    if check_symmetry(symmetry):
        server_symmetry(
            m,
            server_classes(instance, interference_key),
            n_jobs,
            on=lambda j, h: m.o[j, h],
            allowed=lambda j, h: (j, h) in allowed_set,
        )
    m.objective = pyo.Objective(
        expr=pyo.quicksum(pair_weight[a, b] * m.q[a, b, h] for a, b, h in co)
        + pyo.quicksum(
            float(weight[j] * resident[j, h]) * m.o[j, h] for j, h in sorted(allowed_set)
        ),
        sense=pyo.minimize,
    )

    def decode() -> Placement:
        servers = np.full(len(instance.tasks), -1, dtype=np.int64)
        for j in range(n_jobs):
            h = chosen({h: m.o[j, h] for h in allowed[j]})
            servers[list(instance.job_tasks[j])] = h
        return Placement.from_indices(instance, servers.tolist(), method="ilp:clwp")

    return PlacementModel("clwp", "clwp", m, decode, timer.seconds(), model_size(m))
