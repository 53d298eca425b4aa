"""Independent check of an ANDREAS plan, and its cost recomputed from the definitions.

Shares no code with the MILP or the greedy: plain loops over the instance and the plan, in the
constraint names of the formulation page, one function per constraint (:data:`CONSTRAINTS` maps
each name to its function): ``unknown_job``, ``duplicate_job``, ``missing_job``,
``unknown_config`` (a (node type, GPUs) pair the job does not allow), ``node_index`` (a node
that does not exist), ``nodes_per_config`` (a configuration on the wrong number of distinct
nodes), ``node_capacity`` (more GPUs on a node than are free).
"""

from __future__ import annotations

from collections.abc import Callable

from optsched.allocation.andreas.instance import AndreasInstance, AndreasJob
from optsched.allocation.andreas.plan import AndreasPlan, Assignment
from optsched.power import JOULES_PER_KWH
from optsched.results import Report, Violation

__all__ = ["CONSTRAINTS", "decision_cost", "validate"]


def decision_cost(
    instance: AndreasInstance, job: AndreasJob, node_type: str | None, gpus: int
) -> tuple[float, float]:
    """``(energy cost, tardiness cost)`` of one decision for ``job``, from the definitions.

    Running now on ``gpus`` GPUs of ``node_type``, or postponing (``node_type=None``).

    Raises
    ------
    KeyError
        ``(node_type, gpus)`` is not one of the job's configurations.
    """
    power = {t.name: t.power_watts for t in instance.node_types}
    energies = {
        (c.node_type, c.gpus): instance.energy_price
        * power[c.node_type]
        * c.gpus
        * c.runtime
        / JOULES_PER_KWH
        for c in job.configurations
    }
    if node_type is None:
        energy = min(energies.values()) if instance.postponed_energy == "min" else 0.0
        completion = instance.now + instance.period + job.slowest
    else:
        energy = energies[(node_type, gpus)]
        runtime = next(
            c.runtime for c in job.configurations if (c.node_type, c.gpus) == (node_type, gpus)
        )
        completion = instance.now + runtime
    tardy = 0.0 if job.due is None else max(0.0, completion - job.due)
    return energy, job.weight * tardy


def _decided(solution: AndreasPlan) -> dict[str, int]:
    """How many times each named job is decided (run or postponed)."""
    decided: dict[str, int] = {}
    for name in [a.job for a in solution.assignments] + list(solution.postponed):
        decided[name] = decided.get(name, 0) + 1
    return decided


def unknown_job(instance: AndreasInstance, solution: AndreasPlan) -> list[Violation]:
    """``unknown_job``: every job run or postponed is a queued job."""
    jobs = {j.job_id for j in instance.jobs}
    return [
        Violation("unknown_job", f"{name!r} is not a queued job", {"job": name})
        for name in _decided(solution)
        if name not in jobs
    ]


def duplicate_job(instance: AndreasInstance, solution: AndreasPlan) -> list[Violation]:
    r"""``duplicate_job``: a queued job is decided at most once (the :math:`\le` of ``assign``)."""
    jobs = {j.job_id for j in instance.jobs}
    return [
        Violation("duplicate_job", f"{name!r} is decided {times} times", {"job": name})
        for name, times in _decided(solution).items()
        if name in jobs and times > 1
    ]


def missing_job(instance: AndreasInstance, solution: AndreasPlan) -> list[Violation]:
    r"""``missing_job``: every queued job is decided (the :math:`\ge` of ``assign``)."""
    decided = _decided(solution)
    return [
        Violation("missing_job", f"{j.job_id!r} is neither run nor postponed")
        for j in instance.jobs
        if j.job_id not in decided
    ]


def _nodes_needed(instance: AndreasInstance, a: Assignment) -> int:
    """Distinct nodes a configuration occupies: one, or whole nodes of its type."""
    t = next(t for t in instance.node_types if t.name == a.node_type)
    return 1 if a.gpus <= t.gpus_per_node else a.gpus // t.gpus_per_node


def _fault(instance: AndreasInstance, a: Assignment) -> tuple[str, str]:
    """The first per-assignment constraint an assignment of a queued job breaks.

    One of ``unknown_config``, ``nodes_per_config``, ``node_index``, with the message;
    ``("", "")`` when it breaks none.
    """
    job = next(j for j in instance.jobs if j.job_id == a.job)
    if not any(c.node_type == a.node_type and c.gpus == a.gpus for c in job.configurations):
        return "unknown_config", f"{a.job!r} does not allow {a.gpus} GPU(s) of {a.node_type!r}"
    need = _nodes_needed(instance, a)
    if len(a.nodes) != need or len(set(a.nodes)) != len(a.nodes):
        return "nodes_per_config", (
            f"{a.job!r} on {a.gpus} GPU(s) needs {need} distinct node(s), got {list(a.nodes)}"
        )
    t = next(t for t in instance.node_types if t.name == a.node_type)
    bad = [n for n in a.nodes if not 0 <= n < t.nodes]
    if bad:
        return "node_index", f"{a.node_type!r} has no node {bad[0]} ({t.nodes} nodes)"
    return "", ""


def _faults(instance: AndreasInstance, solution: AndreasPlan, name: str) -> list[Violation]:
    """Violations of ``name`` among the assignments of queued jobs."""
    jobs = {j.job_id for j in instance.jobs}
    out: list[Violation] = []
    for a in solution.assignments:
        fault = _fault(instance, a) if a.job in jobs else ("", "")
        if fault[0] == name:
            where = {"job": a.job, "node_type": a.node_type, "gpus": a.gpus}
            out.append(Violation(name, fault[1], where))
    return out


def unknown_config(instance: AndreasInstance, solution: AndreasPlan) -> list[Violation]:
    """``unknown_config``: a job runs only in one of its (node type, GPUs) configurations."""
    return _faults(instance, solution, "unknown_config")


def nodes_per_config(instance: AndreasInstance, solution: AndreasPlan) -> list[Violation]:
    """``nodes_per_config``: a configuration spans exactly the distinct nodes it needs."""
    return _faults(instance, solution, "nodes_per_config")


def node_index(instance: AndreasInstance, solution: AndreasPlan) -> list[Violation]:
    """``node_index``: every node named exists."""
    return _faults(instance, solution, "node_index")


def _placed(instance: AndreasInstance, solution: AndreasPlan) -> list[Assignment]:
    """The assignments of queued jobs that break none of the per-assignment constraints."""
    jobs = {j.job_id for j in instance.jobs}
    return [a for a in solution.assignments if a.job in jobs and not _fault(instance, a)[0]]


def node_capacity(instance: AndreasInstance, solution: AndreasPlan) -> list[Violation]:
    """``node_capacity``: the GPUs assigned on a node are at most the ones free there."""
    types = {t.name: t for t in instance.node_types}
    used: dict[tuple[str, int], int] = {}
    for a in _placed(instance, solution):
        t = types[a.node_type]
        # A configuration on one node takes its GPUs there; a wider one takes whole nodes.
        share = a.gpus if a.gpus <= t.gpus_per_node else t.gpus_per_node
        for n in a.nodes:
            used[(a.node_type, n)] = used.get((a.node_type, n), 0) + share
    out: list[Violation] = []
    for (name, n), gpus in sorted(used.items()):
        t = types[name]
        free = t.gpus_per_node - (t.unavailable[n] if t.unavailable else 0)
        if gpus > free:
            out.append(
                Violation(
                    "node_capacity",
                    f"node {n} of {name!r}: {gpus} GPUs assigned, {free} free",
                    {"node_type": name, "node": n},
                    float(gpus - free),
                )
            )
    return out


#: Every constraint the validator checks, by its name on the formulation page, in check order.
CONSTRAINTS: dict[str, Callable[[AndreasInstance, AndreasPlan], list[Violation]]] = {
    "unknown_job": unknown_job,
    "duplicate_job": duplicate_job,
    "missing_job": missing_job,
    "unknown_config": unknown_config,
    "nodes_per_config": nodes_per_config,
    "node_index": node_index,
    "node_capacity": node_capacity,
}


def _costs(instance: AndreasInstance, solution: AndreasPlan) -> tuple[float, float, float]:
    """Energy cost, tardiness cost and energy (kWh) of the jobs with one valid decision."""
    jobs = {j.job_id: j for j in instance.jobs}
    power = {t.name: t.power_watts for t in instance.node_types}
    decided = _decided(solution)
    energy = tardiness = kwh = 0.0
    # A duplicated job has no one decision to cost.
    for a in _placed(instance, solution):
        if decided[a.job] > 1:
            continue
        job = jobs[a.job]
        e, w = decision_cost(instance, job, a.node_type, a.gpus)
        energy, tardiness = energy + e, tardiness + w
        runtime = next(
            c.runtime for c in job.configurations if (c.node_type, c.gpus) == (a.node_type, a.gpus)
        )
        kwh += power[a.node_type] * a.gpus * runtime / JOULES_PER_KWH
    for name in solution.postponed:
        if name in jobs and decided[name] == 1:
            e, w = decision_cost(instance, jobs[name], None, 0)
            energy, tardiness = energy + e, tardiness + w
    return energy, tardiness, kwh


def validate(instance: AndreasInstance, solution: AndreasPlan) -> Report:
    """Check ``solution`` against ``instance`` and recompute its cost.

    Returns
    -------
    Report
        Every violation of :data:`CONSTRAINTS`; ``objective`` is the total cost (energy plus
        weighted tardiness, jobs without a valid decision left out), ``objectives`` splits it
        into ``energy`` and ``tardiness``; ``details["energy_kwh"]`` is the energy of the jobs
        run now.
    """
    out: list[Violation] = []
    for check in CONSTRAINTS.values():
        out += check(instance, solution)
    energy, tardiness, kwh = _costs(instance, solution)
    return Report(
        out,
        objective=energy + tardiness,
        objectives={"energy": energy, "tardiness": tardiness},
        details={"energy_kwh": kwh},
    )
