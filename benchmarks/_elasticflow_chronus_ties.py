"""Whether a lease MILP of a Chronus run has a second optimal lease 0 (a tie a solver could break).

Runs optsched's ``chronus`` under ``--mechanism elasticflow`` without the least-slack weights,
so that the objective is the lease-0 GPUs alone. After every lease MILP it solves the same
model again (HiGHS, to optimality) with two rows more: the objective at least its optimum, and
the no-good cut :math:`\\sum_{j \\in S} x_{j0} - \\sum_{j \\notin S} x_{j0} \\le |S| - 1` on the
lease-0 set :math:`S` found. Feasible: another optimal plan gives lease 0 to other jobs.
Infeasible every time: from the run's states no solver and no tie-break picks another lease 0.

Usage: ``python benchmarks/_elasticflow_chronus_ties.py TRACE GPUS``; prints the MILPs solved,
how many have a second optimal lease 0, and the met count.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np
import scipy.sparse as sp

import optsched.solvers as solvers
from optsched import sim
from optsched.errors import NotOptimalError
from optsched.sim.comparison import world_from_trace
from optsched.sim.engine import elasticflow_run as er
from optsched.sim.engine.elasticflow_options import ElasticFlowMechanism
from optsched.sim.policies import make_policy
from optsched.solvers import LinearProgram
from optsched.solvers.matrix import solve_matrix as solve_once  # not the patched name
from optsched.traces import read_trace


def second_lease_zero(lp: LinearProgram, x: np.ndarray) -> bool:
    """Whether ``lp`` (costs on the lease-0 columns only) has an optimum with another lease 0."""
    c = np.asarray(lp.c, dtype=float)
    zero = np.flatnonzero(c)
    x = np.rint(x)
    chosen = [k for k in zero if x[k] > 0.5]
    at_optimum = np.zeros(len(c))
    at_optimum[zero] = c[zero]
    cut = np.zeros(len(c))
    cut[zero] = -1.0
    cut[chosen] = 1.0
    rows = sp.vstack([sp.csr_array(lp.a), sp.csr_array(np.vstack([at_optimum, cut]))]).tocsc()
    lo = np.concatenate([lp.row_lower, [float(c @ x) - 0.5, -np.inf]])
    up = np.concatenate([lp.row_upper, [np.inf, len(chosen) - 1.0]])
    again = LinearProgram(
        list(c),
        rows,
        lo,
        up,
        lp.col_lower,
        lp.col_upper,
        sense=lp.sense,
        integrality=lp.integrality,
    )
    try:
        solve_once(again, mip_gap=0.0)
    except NotOptimalError:
        return False
    return True


def run(trace: str, gpus: int) -> dict[str, Any]:
    """The count of lease MILPs, and of those with a second optimal lease 0, on ``trace``."""
    counts = {"milps": 0, "second_lease_zero": 0}
    solve, make = solvers.solve_matrix, er.chronus_leases

    def solve_(lp: LinearProgram, **kw: Any) -> Any:
        sol = solve(lp, **kw)
        counts["milps"] += 1
        counts["second_lease_zero"] += second_lease_zero(lp, sol.x)
        return sol

    def make_(*a: Any, **k: Any) -> Any:
        leases = make(*a, **k)
        leases.least_slack = False  # the objective: lease 0's GPUs alone
        return leases

    solvers.solve_matrix = solve_  # lease_plan imports it from here when it runs
    er.chronus_leases = make_
    try:
        table = read_trace(trace)
        world = world_from_trace(table, sim.parse_cluster(f"a100={gpus}:8"))
        mech = ElasticFlowMechanism(clock_origin=float(table.jobs["arrival"].min()))
        rec = sim.simulate(world, make_policy("chronus"), round_seconds=60, mechanism=mech)
    finally:
        solvers.solve_matrix = solve
        er.chronus_leases = make
    return {**counts, "met": len(rec.extra["met_by_lease_end"])}


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], int(sys.argv[2]))))
