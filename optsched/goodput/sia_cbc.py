r"""Sia's round integer program handed to CBC through cvxpy, stated as Sia's policy states it.

The round (:mod:`optsched.goodput.sia_ilp`, docs page ``formulations/sia_ilp``) has many equal
optima once its coefficients are rounded to two decimals, and which one a solver returns
depends on the solver and on the matrix it is handed. Sia's policy (``sia.py``,
``__solve_mip_rescaled``) builds it with cvxpy and solves it with CBC (through cylp) at a
relative gap of :math:`10^{-4}` (``allowablePercentageGap=0.01``). :func:`solve_round` builds the
same cvxpy problem in the same structure, so that CBC receives the same matrix and returns the
same optimum:

* one integer matrix variable :math:`X \in \mathbb{Z}^{J_b \times O_b}` per block of jobs that
  share one option list (in Sia's heterogeneous world every job has the cluster's full
  configuration list, so one block, Sia's ``adaptive_X``; jobs with their own options, such
  as Sia's rigid jobs, form blocks of their own, after the first), jobs and options in the
  instance's order;
* the objective :math:`\sum (w^\top (X \circ A)) + \lambda_n (J - \sum X)`, minimised for
  :math:`p < 0`, with :math:`w` a row of job weights and :math:`A` the coefficients;
* the constraints in Sia's order: :math:`X \ge 0`, :math:`X \le 1` per block; GPUs per type
  :math:`\sum_{\text{rows}} X R \le C` and :math:`\ge 0`, :math:`R` the option-by-type matrix
  of GPU counts; :math:`X \mathbf{1} \le \mathbf{1}` per block, then :math:`X_{j,\mathrm{prev}_j}
  = 1` for each pinned job.

:func:`solve_round` returns CBC's choices; :func:`optsched.goodput.sia_ilp.solve_cbc` (and
``sia_ilp.solve(..., solver="cbc")``) validates them and wraps them in an
:class:`~optsched.results.ExactResult`. cvxpy and cylp are imported only when
:func:`solve_round` runs; without them it raises
:class:`~optsched.errors.SolverUnavailableError`. Cost: cvxpy's canonicalisation,
:math:`O(\sum_j |O_j|)` nonzeros, plus CBC's branch and bound.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from optsched.errors import InconsistentResultError, SolverUnavailableError
from optsched.goodput.sia_instance import SiaInstance

__all__ = ["SIA_GAP", "SIA_THREADS", "CbcRound", "cbc_available", "solve_round"]

#: Sia's relative gap (``sia_solver_thresh``), handed to CBC as ``allowablePercentageGap``.
SIA_GAP = 1e-4
#: Sia's CBC threads (``sia_solver_num_threads``).
SIA_THREADS = 8


def cbc_available() -> bool:
    """Whether cvxpy is importable and lists CBC (cylp) among its installed solvers."""
    try:
        import cvxpy as cp
    except ImportError:
        return False
    return "CBC" in cp.installed_solvers()


def _require_cbc() -> Any:
    try:
        import cvxpy as cp
    except ImportError as exc:
        raise SolverUnavailableError(
            "solver 'cbc' needs cvxpy and cylp: pip install cvxpy cylp"
        ) from exc
    if "CBC" not in cp.installed_solvers():
        raise SolverUnavailableError(
            "solver 'cbc' (CBC through cvxpy) is not installed: pip install cylp"
        )
    return cp


def _blocks(instance: SiaInstance) -> list[list[int]]:
    """Jobs grouped by their option list, in order of first appearance (module notes)."""
    groups: dict[tuple[tuple[str, int, int], ...], list[int]] = {}
    for j, job in enumerate(instance.jobs):
        key = tuple((o.gpu_type, o.nodes, o.gpus) for o in job.options)
        groups.setdefault(key, []).append(j)
    return list(groups.values())


def _build(
    cp: Any, instance: SiaInstance, a: Sequence[np.ndarray]
) -> tuple[Any, list[tuple[list[int], Any]]]:
    """The cvxpy problem and its ``(jobs, X)`` blocks (module notes, Sia's order)."""
    types = instance.type_names
    blocks = []
    obj: Any = 0
    allocated: Any = 0
    for jobs in _blocks(instance):
        mat = np.array([a[j] for j in jobs])
        x = cp.Variable(shape=mat.shape, integer=True)
        weights = np.array([[instance.jobs[j].weight for j in jobs]], dtype=np.float32)
        obj = obj + cp.sum(weights @ cp.multiply(x, mat))
        allocated = allocated + cp.sum(x)
        blocks.append((jobs, x))
    obj = obj + instance.lambda_n * (len(instance.jobs) - allocated)
    objective = cp.Minimize(obj) if instance.sense == "min" else cp.Maximize(obj)
    constraints = []
    for _, x in blocks:
        constraints += [x >= 0, x <= 1]
    used: Any = 0
    for jobs, x in blocks:
        reduce = np.zeros((x.shape[1], len(types)), dtype=np.uint32)
        for o, opt in enumerate(instance.jobs[jobs[0]].options):
            reduce[o, types.index(opt.gpu_type)] = opt.gpus
        used = used + cp.sum(x @ reduce, axis=0)
    capacity = np.array([t.gpus for t in instance.gpu_types], dtype=np.uint32)
    constraints += [used <= capacity, used >= 0]
    for jobs, x in blocks:
        ones_o = np.ones((x.shape[1], 1), dtype=np.uint32)
        constraints.append(x @ ones_o <= np.ones((len(jobs), 1), dtype=np.uint32))
        for r, j in enumerate(jobs):
            job = instance.jobs[j]
            if job.pinned and job.previous is not None:
                constraints.append(x[r, job.previous] == 1)
    return cp.Problem(objective, constraints=constraints), blocks


class CbcRound(NamedTuple):
    """CBC's answer to one round: per job its option (``None``: nothing), and CBC's figures."""

    choices: list[int | None]
    value: float
    status: str
    build_seconds: float
    solve_seconds: float
    variables: int
    blocks: int


def solve_round(
    instance: SiaInstance,
    a: Sequence[np.ndarray],
    *,
    mip_gap: float = SIA_GAP,
    threads: int | None = SIA_THREADS,
) -> CbcRound:
    """Build the round as Sia's policy does (module notes) and solve it with CBC.

    Parameters
    ----------
    instance : SiaInstance
        A round with at least one job.
    a : sequence of arrays
        Each job's objective coefficients (one per option).
    mip_gap : float, default :data:`SIA_GAP`
        Relative gap, handed to CBC as ``allowablePercentageGap = 100 mip_gap``.
    threads : int or None, default :data:`SIA_THREADS`
        CBC's ``numberThreads`` (``None``: CBC's default).

    Raises
    ------
    SolverUnavailableError
        cvxpy or cylp (CBC) is not installed.
    InconsistentResultError
        CBC calls the round anything but optimal (it is always feasible: the pinned options
        fitted last round and every other job may get nothing).
    """
    cp = _require_cbc()
    start = time.perf_counter()
    problem, blocks = _build(cp, instance, a)
    built = time.perf_counter()
    options: dict[str, Any] = {"allowablePercentageGap": mip_gap * 100}
    if threads is not None:
        options["numberThreads"] = threads
    problem.solve(solver=cp.CBC, **options)
    done = time.perf_counter()
    if problem.status != "optimal":
        raise InconsistentResultError(f"CBC returned status {problem.status!r} for the round")
    choices: list[int | None] = [None] * len(instance.jobs)
    for jobs, x in blocks:
        values = np.round(np.asarray(x.value, dtype=float)).astype(int)
        for r, j in enumerate(jobs):
            held = np.flatnonzero(values[r])
            choices[j] = int(held[0]) if held.size else None
    return CbcRound(choices, float(problem.value), str(problem.status), built - start,
                    done - built, sum(int(x.size) for _, x in blocks), len(blocks))  # fmt: skip
