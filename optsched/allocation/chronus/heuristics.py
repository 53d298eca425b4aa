r"""Chronus's greedy admission and the EDF baseline, returning the MILP's :class:`LeasePlan`.

Both are built on one **EDF packing** (:func:`edf_pack`): lease by lease, the unfinished jobs in
order of deadline (then position) each take their whole gang on the fastest GPU type that still
has room (ties: type order), and a job that does not fit is skipped for that lease
(backfilling). Best-effort jobs then fill what is left (:func:`fill_best_effort`): by smallest
remaining GPU-time (leases still needed on the fastest type times the gang, the artifact's
"emergence" of best-effort jobs), each on the fastest type with room.

**Chronus greedy** (:class:`ChronusGreedy`). Guaranteed jobs first, then the others by the
artifact's "emergence" of SLO jobs: smallest slack times gang first, the slack being the leases
to the deadline minus the leases still needed on the fastest type (jobs with negative slack
cannot finish and are never admitted); ties by deadline, then position. A job is admitted when
the EDF packing of the admitted jobs plus it still finishes every one of them by its deadline.
(The ChronusArtifact checks each arriving SLO job the same way, against the jobs it already
accepted, with its own latest-fit packing; it runs its MILP only when that packing fails.)

**EDF baseline** (:class:`EDFBaseline`): no admission control. Every SLO job runs in EDF order,
late jobs keep their priority until they finish (as the simulator's ``edf`` policy does); the
plan admits the jobs that this finishes by their deadline and keeps the grants of those jobs
only.

Exactness. EDF packing decides feasibility exactly when every gang is one GPU of a single type
and every lease has at most one GPU (Jackson's rule: on one machine, earliest due date first
meets every deadline whenever any order does; with unit-length leases and all jobs available
now this is the preemptive single-machine case, proved by the exchange argument). It is not
exact in general: with two GPUs, jobs of 1, 1 and 3 leases due after leases 2, 2 and 3 fit
(run the long one throughout) but EDF runs both short ones first and the long one misses. So
the greedy never admits more than the MILP, may admit fewer, and when EDF cannot pack the
guaranteed jobs themselves it still admits them and its plan fails the validator's
``finish_by_deadline``: the caller learns it from :func:`~optsched.allocation.chronus.validate`.

Complexity: an EDF packing is :math:`O(L (n \log n + nK))` for :math:`n` jobs; the greedy runs
one per SLO job, :math:`O(|S|\, L (|S| \log |S| + |S| K))`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from optsched.allocation.chronus.instance import BestEffortJob, LeaseInstance, SLOJob
from optsched.allocation.chronus.plan import LeasePlan

__all__ = ["HEURISTICS", "ChronusGreedy", "EDFBaseline", "edf_pack", "fill_best_effort"]

Grant = tuple[str, int, str]


def _types_by_speed(instance: LeaseInstance, job: SLOJob | BestEffortJob) -> list[int]:
    """GPU types the job runs on, fastest first (ties: type order)."""
    ks = [k for k in range(instance.n_types) if job.speed[k] > 0]
    return sorted(ks, key=lambda k: (-job.speed[k], k))


def _leases_needed(job: SLOJob | BestEffortJob) -> int:
    fastest = max(job.speed)
    return -(-job.remaining // fastest)


def edf_pack(
    instance: LeaseInstance,
    jobs: Sequence[SLOJob],
    free: list[list[int]],
    *,
    past_deadline: bool = False,
) -> tuple[list[Grant], dict[str, int]]:
    """EDF packing of ``jobs`` into ``free`` GPUs (changed in place).

    Parameters
    ----------
    instance : LeaseInstance
    jobs : sequence of SLOJob
        In tie-break order (EDF sorts by deadline, stably).
    free : list of list of int
        GPUs left per lease and type; the grants are taken from it.
    past_deadline : bool
        Keep running a job after its deadline until it finishes (the EDF baseline); by default
        a job stops at its deadline.

    Returns
    -------
    grants : list of (job, lease, gpu_type)
    left : dict of str to int
        Steps each job still lacks at its deadline (0: finished by it).
    """
    order = sorted(jobs, key=lambda j: j.deadline)  # stable: ties keep the given order
    remaining = {j.job_id: j.remaining for j in order}
    left = {j.job_id: j.remaining for j in order}
    types = {j.job_id: _types_by_speed(instance, j) for j in order}
    grants: list[Grant] = []
    for ell in range(instance.n_leases):
        for j in order:
            if remaining[j.job_id] <= 0 or (ell > j.deadline and not past_deadline):
                continue
            for k in types[j.job_id]:
                if free[ell][k] >= j.gang:
                    free[ell][k] -= j.gang
                    grants.append((j.job_id, ell, instance.gpu_types[k]))
                    remaining[j.job_id] -= j.speed[k]
                    if ell <= j.deadline:
                        left[j.job_id] = max(0, remaining[j.job_id])
                    break
    return grants, left


def fill_best_effort(instance: LeaseInstance, free: list[list[int]]) -> list[Grant]:
    """Best-effort jobs into the GPUs left, smallest remaining GPU-time first (module notes)."""
    order = sorted(
        enumerate(instance.best_effort), key=lambda p: (_leases_needed(p[1]) * p[1].gang, p[0])
    )
    remaining = {b.job_id: b.remaining for b in instance.best_effort}
    grants: list[Grant] = []
    for ell in range(instance.n_leases):
        for _, b in order:
            if remaining[b.job_id] <= 0:
                continue
            for k in _types_by_speed(instance, b):
                if free[ell][k] >= b.gang:
                    free[ell][k] -= b.gang
                    grants.append((b.job_id, ell, instance.gpu_types[k]))
                    remaining[b.job_id] -= b.speed[k]
                    break
    return grants


def _free(instance: LeaseInstance) -> list[list[int]]:
    return [list(row) for row in instance.capacity]


def edf_feasible(instance: LeaseInstance, jobs: Sequence[SLOJob]) -> bool:
    """Whether the EDF packing of ``jobs`` alone finishes each by its deadline."""
    _, left = edf_pack(instance, jobs, _free(instance))
    return all(v <= 0 for v in left.values())


@dataclass(frozen=True)
class ChronusGreedy:
    """Chronus's greedy admission with EDF packing (module notes)."""

    name: str = "chronus-greedy"

    def order(self, instance: LeaseInstance) -> list[SLOJob]:
        """Guaranteed jobs, then the others by slack times gang (hopeless jobs left out)."""
        keyed = []
        for pos, j in enumerate(instance.slo_jobs):
            slack = j.deadline + 1 - _leases_needed(j)
            if slack < 0 and not j.guaranteed:
                continue
            keyed.append(((0 if j.guaranteed else 1, slack * j.gang, j.deadline, pos), j))
        keyed.sort(key=lambda p: p[0])
        return [j for _, j in keyed]

    def run(self, instance: LeaseInstance) -> LeasePlan:
        """The greedy plan."""
        admitted: list[SLOJob] = []
        for j in self.order(instance):
            if j.guaranteed or edf_feasible(instance, [*admitted, j]):
                admitted.append(j)
        free = _free(instance)
        grants, _ = edf_pack(instance, admitted, free)
        grants += fill_best_effort(instance, free)
        ids = {j.job_id for j in admitted}
        return LeasePlan(
            admitted=tuple(j.job_id for j in instance.slo_jobs if j.job_id in ids),
            grants=tuple(grants),
            algorithm=self.name,
        )


@dataclass(frozen=True)
class EDFBaseline:
    """Earliest deadline first without admission control (module notes)."""

    name: str = "edf"

    def run(self, instance: LeaseInstance) -> LeasePlan:
        """The EDF plan."""
        free = _free(instance)
        grants, left = edf_pack(instance, instance.slo_jobs, free, past_deadline=True)
        met = {jid for jid, v in left.items() if v <= 0}
        grants = [g for g in grants if g[0] in met]
        free = _free(instance)  # what the kept grants leave for best-effort jobs
        index = {name: k for k, name in enumerate(instance.gpu_types)}
        gang = {j.job_id: j.gang for j in instance.slo_jobs}
        for job, ell, gpu in grants:
            free[ell][index[gpu]] -= gang[job]
        grants += fill_best_effort(instance, free)
        return LeasePlan(
            admitted=tuple(j.job_id for j in instance.slo_jobs if j.job_id in met),
            grants=tuple(grants),
            algorithm=self.name,
        )


#: Heuristic name -> class (one calling convention: ``HEURISTICS[name]().run(instance)``).
HEURISTICS: dict[str, type[ChronusGreedy] | type[EDFBaseline]] = {
    "chronus-greedy": ChronusGreedy,
    "edf": EDFBaseline,
}
