"""Independent check of an ANDREAS plan, and its cost recomputed from the definitions.

Shares no code with the MILP or the greedy: plain loops over the instance and the plan, in the
constraint names of the formulation page: ``unknown_job``, ``duplicate_job``, ``missing_job``,
``unknown_config`` (a (node type, GPUs) pair the job does not allow), ``node_index`` (a node
that does not exist), ``nodes_per_config`` (a configuration on the wrong number of distinct
nodes), ``node_capacity`` (more GPUs on a node than are free).
"""

from __future__ import annotations

from optsched.allocation.andreas.instance import AndreasInstance, AndreasJob
from optsched.allocation.andreas.plan import AndreasPlan
from optsched.power import JOULES_PER_KWH
from optsched.results import Report, Violation

__all__ = ["decision_cost", "validate"]


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
        (c.node_type, c.gpus): instance.energy_price_per_kwh
        * power[c.node_type]
        * c.gpus
        * c.runtime_s
        / JOULES_PER_KWH
        for c in job.configurations
    }
    if node_type is None:
        energy = min(energies.values()) if instance.postponed_energy == "min" else 0.0
        completion = instance.now_s + instance.period_s + job.slowest
    else:
        energy = energies[(node_type, gpus)]
        runtime = next(
            c.runtime_s for c in job.configurations if (c.node_type, c.gpus) == (node_type, gpus)
        )
        completion = instance.now_s + runtime
    tardy = 0.0 if job.due_s is None else max(0.0, completion - job.due_s)
    return energy, job.weight * tardy


def validate(instance: AndreasInstance, plan: AndreasPlan) -> Report:
    """Check ``plan`` against ``instance`` and recompute its cost.

    Returns
    -------
    Report
        ``objective`` is the total cost (energy plus weighted tardiness, jobs without a valid
        decision left out), ``objectives`` splits it into ``energy`` and ``tardiness``;
        ``details["energy_kwh"]`` is the energy of the jobs run now.
    """
    out: list[Violation] = []
    jobs = {j.job_id: j for j in instance.jobs}
    types = {t.name: t for t in instance.node_types}
    decided: dict[str, int] = {}
    used: dict[tuple[str, int], int] = {}
    energy = tardiness = kwh = 0.0
    for a in plan.assignments:
        decided[a.job] = decided.get(a.job, 0) + 1
    for name in plan.postponed:
        decided[name] = decided.get(name, 0) + 1
    for name, times in decided.items():
        if name not in jobs:
            out.append(Violation("unknown_job", f"{name!r} is not a queued job", {"job": name}))
        elif times > 1:
            out.append(
                Violation("duplicate_job", f"{name!r} is decided {times} times", {"job": name})
            )
    for name in jobs:
        if name not in decided:
            out.append(Violation("missing_job", f"{name!r} is neither run nor postponed"))
    for a in plan.assignments:
        job = jobs.get(a.job)
        if job is None:
            continue
        where = {"job": a.job, "node_type": a.node_type, "gpus": a.gpus}
        allowed = any(c.node_type == a.node_type and c.gpus == a.gpus for c in job.configurations)
        if not allowed:
            out.append(
                Violation(
                    "unknown_config",
                    f"{a.job!r} does not allow {a.gpus} GPU(s) of {a.node_type!r}",
                    where,
                )
            )
            continue
        t = types[a.node_type]
        on_one = a.gpus <= t.gpus_per_server
        need = 1 if on_one else a.gpus // t.gpus_per_server
        if len(a.nodes) != need or len(set(a.nodes)) != len(a.nodes):
            out.append(
                Violation(
                    "nodes_per_config",
                    f"{a.job!r} on {a.gpus} GPU(s) needs {need} distinct node(s), "
                    f"got {list(a.nodes)}",
                    where,
                )
            )
            continue
        bad = [n for n in a.nodes if not 0 <= n < t.nodes]
        if bad:
            out.append(
                Violation(
                    "node_index", f"{a.node_type!r} has no node {bad[0]} ({t.nodes} nodes)", where
                )
            )
            continue
        for n in a.nodes:
            key = (a.node_type, n)
            used[key] = used.get(key, 0) + (a.gpus if on_one else t.gpus_per_server)
        if decided[a.job] > 1:
            continue  # a duplicated job has no one decision to cost
        e, w = decision_cost(instance, job, a.node_type, a.gpus)
        energy += e
        tardiness += w
        runtime = next(
            c.runtime_s
            for c in job.configurations
            if (c.node_type, c.gpus) == (a.node_type, a.gpus)
        )
        kwh += t.power_watts * a.gpus * runtime / JOULES_PER_KWH
    for (name, n), gpus in sorted(used.items()):
        t = types[name]
        free = t.gpus_per_server - (t.unavailable[n] if t.unavailable else 0)
        if gpus > free:
            out.append(
                Violation(
                    "node_capacity",
                    f"node {n} of {name!r}: {gpus} GPUs assigned, {free} free",
                    {"node_type": name, "node": n},
                    float(gpus - free),
                )
            )
    for name in plan.postponed:
        job = jobs.get(name)
        if job is None or decided.get(name, 0) > 1:
            continue
        e, w = decision_cost(instance, job, None, 0)
        energy += e
        tardiness += w
    return Report(
        out,
        objective=energy + tardiness,
        objectives={"energy": energy, "tardiness": tardiness},
        details={"energy_kwh": kwh},
    )
